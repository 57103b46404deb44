"""Recall before the RAM lexicon is ready (issue 28: no slow first minute after a first unlock
or a crash). While the mirror builds, ``Lexicon.search`` scores the query's terms straight
from FTS5's index (``memory_fts_instance``, migration 0037) instead of handing recall to
FTS5's ``bm25()``: the scores must be FTS5's own, stay so through writes made during the
build, and recall must rank exactly as once the mirror is built. Real vault, fake embedder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.clock import FixedClock
from app.domain.memory import Draft, Store
from app.facade import Vault
from app.services.importer import parse_import
from app.services.recall import query_tokens
from storage import lexicon
from tests.conftest import new_vault
from tests.fake_embedder import use_fake_embedder
from tests.inside import inside

from .conftest import PW, T0
from .test_lexicon import QUERIES, fts, turns

# Long enough that FTS5 stores its token counts in two-byte varints (128 or more a column).
LONG = ("A long letter about the garden, the allotment and the greenhouse tomatoes. " * 12)


@pytest.fixture
def building(vault_dir: Path, fast_kdf: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Vault]:
    """30 turns and a long letter, the mirror's build started but held back (its delay), as
    in the seconds after an unlock with nothing saved to load."""
    use_fake_embedder(monkeypatch)
    v = new_vault(vault_dir, PW, threaded=True, clock=FixedClock(T0), use_chroma=False)
    assert v.import_turns(parse_import([json.dumps(t) for t in turns(2, 15)])).value.added == 30
    v.remember(Draft(text=LONG, store=Store.EPISODIC, speaker="Melanie"))
    follower = inside(v).follower
    assert follower is None or follower.wait_idle(30)  # its vector too: rankings compared
    lex = inside(v).lexicon
    lex.build_in_background(inside(v).db.read, delay=600)  # lock cancels it
    assert lex.building and not lex.ready
    try:
        yield v
    finally:
        v.lock()


def assert_fts5_scores(v: Vault, queries: list[str], limit: int = 200) -> None:
    lex = inside(v).lexicon
    assert not lex.ready
    for q in queries:
        a = fts(v, q, limit)
        b = lex.search(query_tokens(q), limit)
        assert b is not None, q
        assert [i for i, _ in a] == [i for i, _ in b] or len(a) == limit, q
        assert [s for _, s in b] == pytest.approx([s for _, s in a], rel=1e-9), q
        sa = dict(a)
        for mid, score in b:
            if mid in sa:
                assert score == pytest.approx(sa[mid], rel=1e-9), (q, mid)


def test_before_the_mirror_scores_are_fts5s(building: Vault) -> None:
    long_rows = inside(building).db.read(lambda c: c.execute(
        "SELECT count(*) FROM memory_fts_docsize WHERE length(sz) > 3").fetchone()[0])
    assert long_rows >= 1  # the letter's counts need more than one byte
    queries = [*QUERIES, "garden allotment greenhouse tomatoes", "letter Melanie"]
    assert_fts5_scores(building, queries)
    assert_fts5_scores(building, queries, limit=7)  # a cut inside the matches
    assert_fts5_scores(building, queries)  # the terms now come from the cache


def test_before_the_mirror_writes_are_seen_at_once(building: Vault) -> None:
    v = building
    lex = inside(v).lexicon
    assert lex.search(["quokka"], 5) == []  # cached as absent...
    mid = v.remember(Draft(text="The quokka at Rottnest island smiled at me",
                           store=Store.EPISODIC, speaker="Melanie")).value
    assert [i for i, _ in lex.search(["quokka"], 5) or []] == [mid]  # ...until a write
    assert_fts5_scores(v, [*QUERIES, "quokka rottnest smiled"])
    plan = v.forget_plan(query="quokka")
    assert mid in plan.memory_ids
    v.forget(plan)
    assert lex.search(["quokka"], 5) == []
    assert_fts5_scores(v, [*QUERIES, "quokka rottnest"])


def test_recall_ranks_the_same_before_and_after_the_build(building: Vault) -> None:
    v = building
    now = T0 + 86_400 * 40
    parts = inside(v)
    queries = [*QUERIES, "garden tomatoes"]
    before = [[(h.id, round(h.score, 9)) for h in parts.recall.recall(q, k=10, now=now)]
              for q in queries]
    assert any(before)
    built = lexicon.Lexicon(parts.lexicon.weights)
    built.build(parts.db.read)
    assert built.ready
    parts.recall.lexicon = built
    try:
        after = [[(h.id, round(h.score, 9)) for h in parts.recall.recall(q, k=10, now=now)]
                 for q in queries]
    finally:
        parts.recall.lexicon = parts.lexicon
        built.clear()
    assert after == before


def test_row_sizes_decode_varints_and_refuse_bytes_that_do_not_fit() -> None:
    ids = np.array([3, 1], dtype=np.int64)
    # Row 3: counts 1, 2, 3; row 1: 129 (two bytes), 10, 11. Sorted by rowid.
    got = lexicon._row_sizes(ids, bytes.fromhex("010203" + "81010A0B"))
    assert got is not None
    assert got[0].tolist() == [1, 3] and got[1].tolist() == [150.0, 6.0]
    assert lexicon._row_sizes(ids, bytes.fromhex("010203" + "81010A0B0C")) is None  # one more
    assert lexicon._row_sizes(ids, bytes.fromhex("010203" + "81010A81")) is None  # cut short
    assert lexicon._row_sizes(ids, b"") is None
    empty = lexicon._row_sizes(np.zeros(0, dtype=np.int64), b"")
    assert empty is not None and len(empty[0]) == len(empty[1]) == 0
