"""Issue 28, recall at the speed of its parts: the shortcuts give the answers of the long way.
Slots from the words a text can start with, the dense candidates and the similarity floor from
one product, known people read again after any write, numpy's BLAS on one thread. Speed itself
is measured by bench/scale.py, never here."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.clock import FixedClock
from app.domain.memory import Store
from app.facade import Vault
from app.services import slots
from storage.vector import VectorIndex
from tests.app.conftest import PW, remember, share_embedder
from tests.inside import inside

ROOT = Path(__file__).resolve().parents[2]


def every_pattern(text: str) -> tuple[str, ...]:
    """slots_of the long way: every slot's pattern tried."""
    return tuple(s for s, rx in slots._patterns().items() if rx.search(text))


def test_slots_of_gives_what_every_pattern_gives() -> None:
    rng = random.Random(28)
    phrases = [w for words in slots.SLOTS.values() for w in words]
    noise = ["the", "I", "it's", "Kitewood", "x-ray", "work-out", "o'clock!", "Café", "1:1s",
             "5k.", "10k,", "sprained?", "don't", "ﬁrst", "straße"]
    texts = ["Got to work late, the bus was cancelled", "Moved to the new flat on Friday",
             "get to work", "my boss's office", "THE OFFICE", "doggo", "re-read the book"]
    for _ in range(3000):
        ws = [rng.choice(phrases + noise) for _ in range(rng.randint(1, 7))]
        text = rng.choice([" ", ", ", "-", "'", " '", "/"]).join(ws)
        texts.append(text.upper() if rng.random() < .3 else text)
    found = [slots.slots_of(t) for t in texts]
    assert found == [every_pattern(t) for t in texts]
    assert sum(1 for f in found if f) > 2000  # the texts do use the vocabulary
    assert slots.slots_of("Got to work late, the bus was cancelled")[:2] == ("job", "commute")


def test_one_product_gives_the_dense_candidates_and_the_floor() -> None:
    rng = np.random.default_rng(28)
    n, dim = 20_000, 16  # over min_similarity's 8,192-row sample: the floor is sampled
    mat = rng.normal(size=(n, dim)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    # the full product's path (the int8 pass answers the same up to float32 rounding, so it
    # is compared in tests/storage/test_vector_int8.py)
    index = VectorIndex(dim, use_chroma=False, int8_min_rows=None)
    index.load(np.arange(1, n + 1), mat)
    index.remove([int(i) for i in rng.choice(np.arange(1, n + 1), 3000, replace=False)])
    for _ in range(20):
        q = rng.normal(size=dim).astype(np.float32)
        q /= np.linalg.norm(q)
        hits, floor = index.search_with_floor(q, 200)
        assert hits == index.search_exact(q, 200)
        assert floor == pytest.approx(index.min_similarity(q), abs=1e-6)
    small = VectorIndex(dim, use_chroma=False)
    small.load(np.arange(1, 4), mat[:3])
    small.remove([2])
    hits, floor = small.search_with_floor(mat[0], 10)
    assert [i for i, _ in hits] == [1, 3]  # fewer live rows than asked: every live one
    assert floor == pytest.approx(min(s for _, s in hits), abs=1e-6)
    assert VectorIndex(dim, use_chroma=False).search_with_floor(mat[0], 10) == ([], 0.0)


@pytest.mark.parametrize("threaded", [False, True])
def test_known_people_follow_every_write(vault_dir: Path, fast_kdf: object, clock: FixedClock,
                                         embedder: object, monkeypatch: pytest.MonkeyPatch,
                                         threaded: bool) -> None:
    share_embedder(monkeypatch, embedder)
    vault = Vault.create(vault_dir, PW, kdf=fast_kdf, threaded=threaded, clock=clock,
                         use_chroma=False).vault
    try:
        service = inside(vault).recall
        remember(vault, "We planted tomatoes in the garden", Store.EPISODIC, speaker="Anna")
        assert "Anna" in service.known_people()
        assert "Zubair" not in service.known_people()  # read, and kept
        remember(vault, "Zubair fixed the old bike", Store.EPISODIC, speaker="Zubair")
        assert "Zubair" in service.known_people()
        hits = vault.recall("what did Zubair fix", touch=False)
        assert hits and hits[0].speaker == "Zubair" and hits[0].breakdown["person"] > 0
    finally:
        vault.lock()


@pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="finds OpenBLAS via /proc")
def test_numpy_blas_runs_on_one_thread_once_there_is_an_index() -> None:
    code = ("import json, numpy\n"  # numpy first, as app.facade does
            "from storage import blas\n"
            "before = blas.threads()\n"
            "from storage.vector import VectorIndex\n"
            "VectorIndex()\n"
            "print(json.dumps([before, blas.threads()]))\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    before, after = json.loads(out.strip().splitlines()[-1])
    if before is None:
        pytest.skip("numpy is not linked against OpenBLAS here")
    if (os.cpu_count() or 1) > 1:
        assert before > 1  # OpenBLAS's own default: a thread per core
    assert after == 1


def test_the_plain_visibility_check_gives_what_the_full_one_gives() -> None:
    from app.api import Filters
    from app.ports import RecallMeta
    from app.services.recall import RecallService, plain, visible_plain
    rng = random.Random(28)
    now = 1.8e9
    day = 86_400.0
    meta: dict[int, RecallMeta] = {}
    for i in range(1, 3001):
        occurred = now + rng.choice([-400, -2, -1.0000001, -1, -0.5, 0, 0.5, 2]) * day
        meta[i] = RecallMeta(
            store=rng.choice(["episodic", "semantic", "short_term", "procedural"]),
            status=rng.choice(["active", "superseded", "archived", "active"]),
            occurred_at=occurred, created_at=occurred, composite=.5, importance=.5,
            emotional=0., social=0., access_count=0, last_accessed_at=None,
            decay_class="normal", agent=rng.choice(["global", "claude"]),
            context=rng.choice([None, "work"]), valid_from=None,
            valid_until=rng.choice([None, now - day]), speaker=None, session=None, seq=None,
            user_validated=0, superseded_at=rng.choice([None, now - 3 * day]))
    ids = list(meta) + [5000, 5001]  # ids without ranking fields are dropped by both
    cases = [Filters(), Filters(happened_by=now), Filters(happened_by=now - day),
             Filters(min_share=.5, entity_id=3, include_archived=True)]
    for f in cases:
        assert plain(f)
        full = [i for i in ids if i in meta and RecallService._visible(
            None, meta[i], f, now)]  # type: ignore[arg-type]  # it reads no state
        got = visible_plain(ids, meta, f, now)
        assert got == full
        assert 0 < len(got) < len(meta)  # some kept, some dropped
    for f in (Filters(stores=("episodic",)), Filters(agent="claude"), Filters(as_of=now),
              Filters(known_at=now), Filters(include_superseded=True), Filters(since=now),
              Filters(until=now), Filters(context="work"), Filters(only_archived=True)):
        assert not plain(f)  # these go through the full check
