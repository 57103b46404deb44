"""remember's vector follows the acknowledgement (issue 28): the memory is found lexically at
once; its vector is made by the follower, or at the next unlock when the session ended first
(a lock here; a kill -9 in tests/app/test_remember_kill.py); a memory forgotten before its
vector was made gets none. A threaded vault, the real model, a real SQLCipher file."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.domain.memory import Draft, Store
from app.facade import Vault
from tests.app.conftest import PW, share_embedder
from tests.inside import inside


@pytest.fixture
def threaded(vault_dir: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
             ) -> Iterator[Vault]:
    from tests.conftest import new_vault
    share_embedder(monkeypatch, embedder)
    v = new_vault(vault_dir, PW, use_chroma=False)
    try:
        yield v
    finally:
        v.lock()


def _pending(v: Vault) -> list[int]:
    return [r[0] for r in inside(v).db.read(
        lambda c: c.execute("SELECT memory_id FROM vector_pending").fetchall())]


def _stored_vector(v: Vault, mid: int) -> np.ndarray | None:
    row = inside(v).db.read(lambda c: c.execute(
        "SELECT vec FROM vector WHERE memory_id = ?", (mid,)).fetchone())
    return None if row is None else np.frombuffer(row[0], dtype=np.float32)


def test_found_at_once_and_the_vector_follows_even_across_a_lock(
        threaded: Vault, vault_dir: Path, embedder: Any) -> None:
    v = threaded
    follower = inside(v).follower
    assert follower is not None
    mid = v.remember(Draft(text="We moved the pottery class to Thursday evenings",
                           store=Store.EPISODIC, speaker="Me")).value
    assert follower.wait_idle(30)
    assert mid in inside(v).index and _pending(v) == []
    # The session ends before the next one's vector is made: its row stays pending.
    follower.stop()
    late = v.remember(Draft(text="Kiri's new bakery opens on the harbour road",
                            store=Store.EPISODIC, speaker="Me")).value
    hits = v.recall("when does the bakery on the harbour road open", k=3, touch=False)
    assert hits and hits[0].id == late, "found lexically before its vector exists"
    assert late not in inside(v).index and _pending(v) == [late]
    v.lock()
    v2 = Vault.open(vault_dir, PW, use_chroma=False, verify="sync")
    try:
        assert inside(v2).follower is not None and inside(v2).follower.wait_idle(30)
        assert _pending(v2) == []
        made = _stored_vector(v2, late)
        assert made is not None and late in inside(v2).index
        want = np.asarray(embedder.embed(["Me: Kiri's new bakery opens on the harbour road"]),
                          dtype=np.float32)[0]
        assert float(made @ want) > 0.999, "the same text the inline path embeds"
        hits = v2.recall("a bakery by the sea opening", k=3, touch=False)
        assert late in [h.id for h in hits]
    finally:
        v2.lock()


def test_a_memory_forgotten_before_its_vector_gets_none(
        threaded: Vault, vault_dir: Path) -> None:
    v = threaded
    follower = inside(v).follower
    assert follower is not None
    follower.stop()
    mid = v.remember(Draft(text="My locker code at the climbing gym is 4471",
                           store=Store.SEMANTIC)).value
    v.forget(v.forget_plan(ids=[mid]))
    assert _pending(v) == []  # went with the memory
    v.lock()
    v2 = Vault.open(vault_dir, PW, use_chroma=False, verify="sync")
    try:
        assert inside(v2).follower is not None and inside(v2).follower.wait_idle(30)
        assert _stored_vector(v2, mid) is None and mid not in inside(v2).index
    finally:
        v2.lock()


def _burst(v: Vault, n: int, tag: str) -> list[int]:
    return [v.remember(Draft(text=f"{tag} note {i} about the harbour ferry times",
                             store=Store.EPISODIC, speaker="Me")).value for i in range(n)]


def test_the_model_waits_for_the_burst_to_pause(threaded: Vault) -> None:
    """While one caller remembers back to back (for longer than a pause, and more than a
    batch), no vector is made: the model would take the cores the acknowledgements need. Once
    it pauses, every one is."""
    v = threaded
    follower = inside(v).follower
    assert follower is not None and follower.wait_idle(30)
    follower.gather_s, follower.max_defer_s = 1.0, 60.0  # a pause is 1 s without a remember
    ids: list[int] = []
    t0 = time.monotonic()
    while len(ids) < 200 and (len(ids) <= follower.batch or time.monotonic() - t0 < 2.5):
        ids += _burst(v, 1, f"burst {len(ids)}")
    assert sorted(_pending(v)) == sorted(ids), "a vector was made during the burst"
    assert follower.backlog == len(ids)
    assert follower.wait_idle(60)
    assert _pending(v) == [] and all(i in inside(v).index for i in ids)


def test_a_steady_stream_or_a_full_queue_does_not_hold_the_vectors_back(
        threaded: Vault) -> None:
    v = threaded
    follower = inside(v).follower
    assert follower is not None and follower.wait_idle(30)
    # No pause for a minute: the oldest memory's wait (0.2 s) starts the model.
    follower.gather_s, follower.max_defer_s = 60.0, 0.2
    first = _burst(v, 1, "stream")
    assert follower.wait_idle(20) and all(i in inside(v).index for i in first)
    # Neither a pause nor the wait: four due (a caller about to wait) start it.
    follower.max_defer_s, follower.start_at = 60.0, 4
    more = _burst(v, 4, "queue")
    assert follower.wait_idle(20) and all(i in inside(v).index for i in more)


def test_a_burst_longer_than_the_queue_never_waits_for_the_model(
        threaded: Vault, embedder: Any) -> None:
    """Past ``max_queued`` a remember keeps only its pending row (the caller used to wait for
    the model there); once the burst pauses, the follower reads those back from the vault and
    every memory gets the vector of its own text."""
    v = threaded
    follower = inside(v).follower
    assert follower is not None and follower.wait_idle(30)
    # The model runs only after a 5 s pause: during the burst nothing frees the queue, so a
    # caller that waited for room would wait 5 s.
    follower.max_queued, follower.start_at = 8, 10**6
    follower.gather_s, follower.max_defer_s = 5.0, 600.0
    texts = [f"spill note {i}: the {w} ferry leaves at {7 + i % 9} o'clock"
             for i, w in enumerate(["north", "harbour", "island", "river", "early"] * 6)]
    t0 = time.monotonic()
    ids = [v.remember(Draft(text=t, store=Store.EPISODIC, speaker="Me")).value for t in texts]
    assert time.monotonic() - t0 < 4.5, "a remember waited for the model"
    assert follower.spills == len(texts) - 8 and follower.spilled
    assert sorted(_pending(v)) == sorted(ids)
    assert follower.wait_idle(120)
    assert _pending(v) == [] and not follower.spilled
    want = np.asarray(embedder.embed([f"Me: {t}" for t in texts]), dtype=np.float32)
    for n, mid in enumerate(ids):
        made = _stored_vector(v, mid)
        assert made is not None and mid in inside(v).index
        assert float(made @ want[n]) > 0.999, "each memory got its own text's vector"
