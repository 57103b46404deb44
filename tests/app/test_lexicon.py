"""The in-RAM lexical mirror (storage/lexicon.py) against FTS5 itself, on a real vault.

The mirror must give FTS5's own ``bm25(memory_fts, 1, 1, .5)`` scores for the same rows, stay
equal through every kind of write (import with neighbour context, remember, correct,
consolidation, forget, a rolled-back transaction, writes during a background build), drop a
forgotten memory's terms from RAM at once, and make recall rank exactly as without it."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.clock import FixedClock
from app.domain.memory import Draft, Store
from app.facade import Vault
from app.services.importer import parse_import
from app.services.recall import RecallService, query_tokens
from app.threads import foreground
from storage import lexicon, repo
from tests.conftest import new_vault
from tests.fake_embedder import use_fake_embedder
from tests.inside import inside

from .conftest import PW, T0

TEXTS = [
    "Caroline went to the LGBTQ support group on Tuesday; it was really powerful.",
    "Melanie painted a sunrise over the lake, she's been painting since 2016.",
    "We're running the half-marathon in Lisbon; runners start at 7am!",
    "The café in São Paulo serves naïve art and crème brûlée. Straße, İstanbul, Ærø.",
    "Running, ran, runs: the porter stemmer folds some of these and not others.",
    "My daughter's birthday is on 14 March; she loves dinosaurs and pancakes.",
    "Adoption agencies called back about the interview next week, fingers crossed.",
    "I've been reading 'Charlotte's Web' to the kids at night, they adore the pig.",
    "Pottery class was messy but fun: I made a bowl, a cup and a very wonky vase.",
    "Jon lost his job at the bank and wants to open a dance studio in the city.",
    "Gina's clothing store opened online; she sells hoodies and dance shoes.",
    "Tokyo in spring: cherry blossoms, ramen at 2am, and the Ghibli museum.",
]
QUERIES = [
    "When did Caroline go to the support group?", "What did Melanie paint?",
    "running marathon Lisbon", "cafe Sao Paulo creme brulee", "strasse istanbul aero",
    "runs ran running runner", "daughter birthday dinosaurs", "adoption interview",
    "Charlotte's Web pig", "pottery bowl vase", "Jon bank dance studio",
    "Gina hoodies store", "Tokyo ramen museum", "nothing matches zzyzx", "the and of",
    "Melanie Caroline", "dance", "2016 2am 7am",
]


def turns(n_sessions: int = 4, per_session: int = 15) -> list[dict[str, Any]]:
    out = []
    for s in range(n_sessions):
        for i in range(per_session):
            text = TEXTS[(s * 7 + i) % len(TEXTS)]
            out.append({"session": f"S{s}", "speaker": ["Caroline", "Melanie"][i % 2],
                        "text": f"{text} ({s}-{i})", "ref": f"D{s}:{i}",
                        "at": f"2026-05-{s + 1:02d}T10:{i:02d}:00Z"})
    return out


def fts(vault: Vault, query: str, limit: int = 200) -> list[tuple[int, float]]:
    match = repo.fts_query(query_tokens(query))
    return inside(vault).db.read(lambda c: repo.fts_search(c, match, limit))


def assert_same(vault: Vault, queries: list[str] = QUERIES, limit: int = 200) -> None:
    assert inside(vault).lexicon.ready
    for q in queries:
        a = fts(vault, q, limit)
        b = inside(vault).lexicon.search(query_tokens(q), limit)
        assert b is not None
        assert len(a) == len(b), q
        if not a:
            continue
        sa, sb = dict(a), dict(b)
        for mid in set(sa) & set(sb):
            assert sb[mid] == pytest.approx(sa[mid], rel=1e-9, abs=1e-12), (q, mid)
        # Ties at the cut may pick different rows; above it both must hold the same rows.
        cut = min(a[-1][1], b[-1][1]) + 1e-9
        assert {i for i, s in a if s > cut} == {i for i, s in b if s > cut}, q
        assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-9), q


@pytest.fixture
def lex_vault(vault_dir: Path, fast_kdf: Any,
              monkeypatch: pytest.MonkeyPatch) -> Iterator[Vault]:
    # Lexical scores and the equality of two rankings: the fake embedder's vectors serve
    # (tests/fake_embedder.py); recall quality is tested with the real model elsewhere.
    fake = use_fake_embedder(monkeypatch)
    v = new_vault(vault_dir, PW, threaded=True, clock=FixedClock(T0), use_chroma=False)
    assert v.import_turns(parse_import([json.dumps(t) for t in turns()])).value.added == 60
    assert inside(v).embedder is fake and fake.calls >= 60
    try:
        yield v
    finally:
        v.lock()


def test_small_vaults_do_not_build_the_mirror(lex_vault: Vault) -> None:
    assert len(inside(lex_vault).lexicon) == 0 and not inside(lex_vault).lexicon.ready
    assert inside(lex_vault).lexicon.search(["caroline"], 10) is None  # FTS5 answers


def test_scores_equal_fts5(lex_vault: Vault) -> None:
    inside(lex_vault).lexicon.build(inside(lex_vault).db.read)
    assert len(inside(lex_vault).lexicon) == inside(lex_vault).db.read(
        lambda c: c.execute("SELECT count(*) FROM memory_fts").fetchone()[0]) == 120
    assert_same(lex_vault)
    assert_same(lex_vault, limit=7)  # a cut inside the matches


def test_stays_equal_through_writes(lex_vault: Vault) -> None:
    v = lex_vault
    inside(v).lexicon.build(inside(v).db.read)
    # More turns: new rows plus neighbour context rewritten in older ones.
    more = [{**t, "ref": t["ref"] + "b", "session": "S1" if i % 2 else "S9",
             "text": "Lisbon trip planning with Jon: trams, custard tarts and fado"}
            for i, t in enumerate(turns(1, 6))]
    assert v.import_turns(parse_import([json.dumps(t) for t in more])).value.added == 6
    assert_same(v, [*QUERIES, "Lisbon trams fado"])
    mid = v.remember(Draft(text="The quokka at Rottnest island smiled at me",
                           store=Store.EPISODIC, speaker="Melanie")).value
    assert [i for i, _ in inside(v).lexicon.search(["quokka"], 5) or []] == [mid]
    new = v.correct(mid, "The quokka on Rottnest island ignored me completely").value
    assert_same(v, [*QUERIES, "quokka rottnest smiled ignored"])
    v.consolidate()
    assert_same(v, [*QUERIES, "Caroline support group", "quokka"])
    # Forget: the rows go, and so do their terms (nothing of them stays in RAM).
    plan = v.forget_plan(query="quokka")
    assert {mid, new} <= set(plan.memory_ids)
    v.forget(plan)
    assert inside(v).lexicon.search(["quokka"], 5) == []
    assert "quokka" not in inside(v).lexicon._post and "rottnest" not in inside(v).lexicon._post
    assert_same(v, [*QUERIES, "quokka rottnest"])


def test_a_rolled_back_write_leaves_no_trace(lex_vault: Vault) -> None:
    v = lex_vault
    inside(v).lexicon.build(inside(v).db.read)

    def fails(conn: Any) -> None:
        repo.replace_fts_row(conn, 999_999, "platypus in the rollback")
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError):
        inside(v).db.write_sync(fails)
    assert inside(v).lexicon.search(["platypus"], 5) == []
    assert "platypu" not in inside(v).lexicon._post and "platypus" not in inside(v).lexicon._post
    assert_same(v)


def test_background_build_with_concurrent_writes(lex_vault: Vault) -> None:
    v = lex_vault
    inside(v).lexicon.build_in_background(inside(v).db.read)
    for i in range(20):
        v.remember(Draft(text=f"Background write {i}: the narwhal sang in Oslo",
                         store=Store.EPISODIC))
    assert inside(v).lexicon.wait_ready(60)
    assert len(inside(v).lexicon.search(["narwhal"], 50) or []) == 20
    assert_same(v, [*QUERIES, "narwhal Oslo"])


def test_recall_ranks_the_same_with_the_mirror(lex_vault: Vault) -> None:
    v = lex_vault
    now = T0 + 86_400 * 40
    parts = inside(v)
    without = RecallService(parts.db, parts.index, parts.embedder, lexicon=None, rows=repo)
    before = [[(h.id, h.score) for h in without.recall(q, k=10, now=now)] for q in QUERIES]
    parts.lexicon.build(parts.db.read)
    with_mirror = parts.recall
    assert with_mirror.lexicon is parts.lexicon and parts.lexicon.ready
    after = [[(h.id, h.score) for h in with_mirror.recall(q, k=10, now=now)] for q in QUERIES]
    assert after == before


def test_lock_drops_the_mirror(vault_dir: Path, fast_kdf: Any,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_embedder(monkeypatch)
    v = Vault.create(vault_dir, PW, kdf=fast_kdf, threaded=True, use_chroma=False).vault
    assert v.import_turns(parse_import([json.dumps(t) for t in turns(2, 10)])).value.added == 20
    v.lock()
    # Opening a vault at or above the threshold builds the mirror in the background.
    monkeypatch.setattr(lexicon, "MIN_ROWS", 10)
    v = Vault.open(vault_dir, PW, use_chroma=False)
    try:
        assert inside(v).lexicon.wait_ready(60)
        assert len(inside(v).lexicon) == 40 and inside(v).lexicon._post
        assert_same(v)
    finally:
        lex = inside(v).lexicon
        v.lock()
    assert not lex.ready and len(lex) == 0 and not lex._post and lex._tok is None


def test_while_building_fts5_skips_the_context_column(lex_vault: Vault) -> None:
    """Before the mirror is ready on a big vault, FTS5 answers without the neighbour-context
    column (5x fewer rows to score); rows matching only through a neighbour drop out."""
    v = lex_vault
    now = T0 + 86_400 * 40
    only_ctx = inside(v).db.read(lambda c: {r[0] for r in c.execute(
        "SELECT rowid FROM memory_fts WHERE memory_fts MATCH 'ctx : \"dinosaurs\"' "
        "EXCEPT SELECT rowid FROM memory_fts WHERE memory_fts MATCH '{text keys} : "
        "\"dinosaurs\"'")})
    assert only_ctx, "the fixture has turns next to a dinosaur turn"
    def lexical_hits() -> set[int]:
        hits = inside(v).recall.recall("dinosaurs", k=200, now=now)
        return {h.id for h in hits if h.breakdown["lexical"] > 0}
    normal = lexical_hits()
    assert normal & only_ctx
    inside(v).lexicon._building = True  # as between unlock and the end of the build
    try:
        quick = lexical_hits()
    finally:
        inside(v).lexicon._building = False
    assert quick and not quick & only_ctx


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="per-thread niceness is Linux's; elsewhere nothing is done")
def test_the_lexicon_builds_below_the_threads_that_search(lex_vault: Vault) -> None:
    """The lexicon's build thread reads the vault at the lower priority; a recall on this
    thread meanwhile keeps its own."""
    parts = inside(lex_vault)
    read = parts.db.read
    niceness: list[int] = []

    def spy(fn: object) -> object:
        if threading.current_thread().name == "lexicon":
            niceness.append(_nice())
        return read(fn)  # type: ignore[arg-type]

    from app.threads import BULK_NICENESS

    def _nice() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    mine = _nice()
    parts.lexicon.build_in_background(spy)
    assert parts.lexicon.wait_ready(60)
    assert niceness and all(n == min(19, mine + BULK_NICENESS) for n in niceness)
    assert _nice() == mine


def test_the_build_waits_while_a_recall_is_under_way(lex_vault: Vault,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Until the mirror is ready, its build scans no slice while a recall is under way
    (``app.threads.foreground``: the recall has the GIL and a core to itself), goes on after
    it, and a recall that never
    ends holds it back at most ``_GIVE_WAY_MAX_S`` a slice: the build still finishes."""
    monkeypatch.setattr(lexicon, "_SLICE", 20)  # several slices from the fixture's turns
    monkeypatch.setattr(lexicon, "_GIVE_WAY_MAX_S", 0.4)
    lex = inside(lex_vault).lexicon
    read = inside(lex_vault).db.read
    slices: list[float] = []

    def counting(fn: Any) -> Any:
        def scan(conn: Any) -> Any:
            real = conn.execute

            class Conn:  # counts the scan's slices as they are read
                def execute(self, sql: str, *a: Any) -> Any:
                    if "FROM memory_fts WHERE rowid >" in sql:
                        slices.append(time.monotonic())
                    return real(sql, *a)
            return fn(Conn())
        return read(scan)

    with foreground():  # a recall under way when the build starts
        lex.build_in_background(counting)
        time.sleep(0.25)
        held = len(slices)
        assert held <= 1, "the build scanned slices while a recall was under way"
        assert lex.wait_ready(60), "a recall that does not end held the build for good"
    assert len(slices) > 2  # it scanned on in slices, each after at most 0.4 s
    assert lex.ready
    with foreground():  # once ready, nothing is held: no waiting
        assert lex.search(["garden"], 5) is not None
