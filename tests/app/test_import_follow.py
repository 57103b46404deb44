"""A file import does not wait for the model (issue 28): its turns are committed with pending
rows and the vectors follow (app/services/vector_follow.py). The import returns before any
vector exists and recall finds the turns by their words; the vectors land afterwards and
recall finds them by meaning; a lock mid-way leaves the rest pending, a one-shot (unthreaded)
unlock does not make them all before answering, and the next threaded unlock finishes them.
Real SQLCipher vault, the real ONNX model; the follower's model calls are held back by a gate
so "before" is not a race."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app import transfer
from app.facade import Vault
from tests.app.conftest import PW, share_embedder
from tests.inside import inside

TARGET = "My daughter started violin lessons at the conservatory, she practises every evening"
MEANING = "child learning to play a musical instrument"  # no word in common with TARGET
FILLER = ["We repainted the garage door dark green over the long weekend",
          "The quarterly budget review moved to the third floor meeting room",
          "Our neighbour's apple tree dropped branches onto the fence after the storm",
          "I renewed my passport at the post office on the high street",
          "The train to Lisbon was delayed two hours because of a strike"]


class Gate:
    """The real embedder behind a gate: the follower's model calls wait until ``open``."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.model_name = inner, inner.model_name
        self.go = threading.Event()
        self.entered = threading.Event()  # a model call is waiting at the gate
        self.calls = 0

    def embed(self, texts: list[str]) -> Any:
        self.entered.set()
        self.go.wait(60)
        self.calls += 1
        return self.inner.embed(texts)


def _chat_file(path: Path, rounds: int = 8) -> Path:
    texts = [TARGET] + [f"{t} (note {n})" for n in range(rounds) for t in FILLER]
    with path.open("w", encoding="utf-8") as fh:
        for i, text in enumerate(texts):
            fh.write(json.dumps({"session": f"c{i // 10}", "speaker": "Me", "text": text,
                                 "at": f"2026-03-{1 + i % 28:02d}T09:00:00Z",
                                 "ref": f"t{i}"}) + "\n")
    return path


def _episodes(v: Vault) -> list[int]:
    return [r[0] for r in inside(v).db.read(lambda c: c.execute(
        "SELECT id FROM memory WHERE store = 'episodic'").fetchall())]


def _ids(hits: list[Any]) -> set[int]:
    return {int(h.id) for h in hits}


def _target(v: Vault) -> int:
    row = inside(v).db.read(lambda c: c.execute(
        "SELECT id FROM memory WHERE store = 'episodic' AND text = ?", (TARGET,)).fetchone())
    assert row is not None, "the target turn became an episode"
    return int(row[0])


def _wait_all_vectors(v: Vault, deadline_s: float = 120) -> None:
    end = time.monotonic() + deadline_s
    while v.status().vectors_pending and time.monotonic() < end:
        time.sleep(0.1)
    assert v.status().vectors_pending == 0, "every vector landed before the deadline"


@pytest.fixture
def gated(vault_dir: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
          ) -> Iterator[tuple[Vault, Gate]]:
    from tests.conftest import new_vault
    share_embedder(monkeypatch, embedder)
    v = new_vault(vault_dir, PW, use_chroma=False)  # threaded: the follower has its thread
    follower = inside(v).follower
    assert follower is not None
    gate = Gate(embedder)
    follower.embedder = gate
    try:
        yield v, gate
    finally:
        gate.go.set()
        if not v.locked:
            v.lock()


def test_import_returns_before_its_vectors_words_at_once_meaning_once_they_land(
        gated: tuple[Vault, Gate], tmp_path: Path) -> None:
    v, gate = gated
    done = transfer.import_file(v, _chat_file(tmp_path / "chat.jsonl"))
    episodes = _episodes(v)
    assert done.report.added == 41 and len(episodes) > 10
    target = _target(v)
    # Returned with no vector made: every episode waits, none is in the index.
    assert gate.calls == 0
    st = v.status()
    assert st.vectors_pending == len(episodes) and st.vectors_per_s is None
    assert not any(m in inside(v).index for m in episodes)
    assert target in _ids(v.recall("violin lessons conservatory", k=5, touch=False))
    assert target not in _ids(v.recall(MEANING, k=5, touch=False)), "no vector: no meaning"
    gate.go.set()
    _wait_all_vectors(v)
    assert all(m in inside(v).index for m in episodes)
    assert target in _ids(v.recall(MEANING, k=3, touch=False))
    e = inside(v).follower.progress()  # type: ignore[union-attr]
    assert (e.done, e.total) == (len(episodes), len(episodes))


def test_the_follower_reports_progress_and_its_measured_rate(
        gated: tuple[Vault, Gate], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app import facade
    v, gate = gated
    monkeypatch.setattr(facade, "FINDING_MEANING_MIN", 1)
    transfer.import_file(v, _chat_file(tmp_path / "chat.jsonl", rounds=20))
    n = len(_episodes(v))
    [work] = [w for w in v.background_work() if w.startswith("finding meaning")]
    assert work == f"finding meaning: 0 of {n:,}"  # no rate yet: no time promised
    follower = inside(v).follower
    assert follower is not None
    follower.batch = 8  # several batches, so the rate settles from the follower's own
    monkeypatch.setattr("app.eta.SETTLE_S", 0.0)
    gate.go.set()
    seen = []
    end = time.monotonic() + 120
    while time.monotonic() < end and v.status().vectors_pending:
        seen.append(follower.progress())
        time.sleep(0.05)
    _wait_all_vectors(v)
    assert [e.done for e in seen] == sorted(e.done for e in seen)  # never backwards
    rated = [e for e in seen if e.per_s is not None and 0 < e.done < n]
    assert rated, "a rate was measured while the vectors were made"
    assert all(e.left_s is not None and abs(e.left_s - (n - e.done) / e.per_s) < 1e-6
               for e in rated if e.per_s)
    assert v.status().vectors_per_s is not None and v.status().vectors_per_s > 0
    assert not [w for w in v.background_work() if w.startswith("finding meaning")]


def test_lock_midway_keeps_the_rest_pending_and_the_next_unlock_continues(
        gated: tuple[Vault, Gate], tmp_path: Path, vault_dir: Path) -> None:
    v, gate = gated
    follower = inside(v).follower
    assert follower is not None
    follower.batch = 4
    transfer.import_file(v, _chat_file(tmp_path / "chat.jsonl"))
    n = len(_episodes(v))
    assert gate.entered.wait(30)
    threading.Timer(0.3, gate.go.set).start()  # the batch in hand completes during the lock
    v.lock()
    assert 1 <= gate.calls < n // 4, "the lock stopped the follower mid-way"

    # A one-shot command (unthreaded, as the CLI opens it) answers without making them all...
    one_shot = Vault.open(vault_dir, PW, threaded=False, use_chroma=False)
    try:
        left = one_shot.status().vectors_pending
        assert 0 < left < n
        assert _target(one_shot) in _ids(one_shot.recall("violin lessons", k=5, touch=False))
        assert one_shot.status().vectors_pending == left
    finally:
        one_shot.lock()
    # ... and the next threaded unlock makes the rest.
    again = Vault.open(vault_dir, PW, threaded=True, use_chroma=False)
    try:
        _wait_all_vectors(again)
        assert all(m in inside(again).index for m in _episodes(again))
        assert _target(again) in _ids(again.recall(MEANING, k=3, touch=False))
    finally:
        again.lock()


def test_make_vectors_on_a_one_shot_vault_makes_them_all_with_progress(
        vault: Vault, tmp_path: Path) -> None:
    """What ``kept import`` does in its own process after the turns are in."""
    transfer.import_file(vault, _chat_file(tmp_path / "chat.jsonl"))
    n = len(_episodes(vault))
    assert vault.status().vectors_pending == n  # unthreaded: nothing made during the import
    seen: list[Any] = []
    assert vault.make_vectors(progress=seen.append) == 0
    assert vault.status().vectors_pending == 0
    assert seen[-1].done == seen[-1].total == n
    assert _target(vault) in _ids(vault.recall(MEANING, k=3, touch=False))


def test_inline_import_still_embeds_before_it_returns(vault: Vault, tmp_path: Path) -> None:
    """``follow=False`` (benches measuring embedded ingest, callers recalling at once)."""
    transfer.import_file(vault, _chat_file(tmp_path / "chat.jsonl"), follow=False)
    assert vault.status().vectors_pending == 0
    assert all(m in inside(vault).index for m in _episodes(vault))
