"""The bulk import path (issue 28): embedding on its own thread, a few texts a call, shortest
first, must still give each memory the vector of its own text; a cancelled file import keeps
the turns it wrote and importing the file again adds only the rest. Real vault, real model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.api import CancelToken
from app.domain.memory import Draft, Store
from app.facade import Vault
from tests.app.conftest import T0, turn
from tests.inside import inside

WORDS = "garden trip sister doctor budget recipe Lisbon train knee meeting because".split()


def _text(i: int) -> str:
    n = (3, 12, 40, 280)[i % 4]  # short to longer than the model's 256 tokens
    return f"Turn {i}: " + " ".join(WORDS[(i + k) % len(WORDS)] for k in range(n)) + "."


def test_every_imported_memory_gets_the_vector_of_its_own_text(
        vault: Vault, embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.services import ingest
    monkeypatch.setattr(ingest, "IMPORT_EMBED_CALL", 5)  # several calls per batch, re-sorted
    turns = [turn(f"s{i // 8}", ("Ana", "Me")[i % 2], _text(i), T0 - 3600 * (40 - i), f"r{i}")
             for i in range(24)]
    report = vault.import_turns(turns, batch=8).value  # three batches, pipelined
    assert report.added == 24
    rows = inside(vault).db.read(lambda c: c.execute(
        "SELECT m.id, m.text, m.speaker, m.occurred_at, v.vec FROM memory m "
        "JOIN vector v ON v.memory_id = m.id WHERE m.store = 'episodic' ORDER BY m.id"
    ).fetchall())
    assert len(rows) >= 12  # routing keeps some turns short-term only (not embedded)
    expected = embedder.embed([ingest.embed_text(Draft(text=t, store=Store.EPISODIC,
                                                       speaker=sp, occurred_at=at))
                               for _id, t, sp, at, _v in rows])
    got = np.stack([np.frombuffer(r[4], dtype=np.float32) for r in rows])
    # Each vector is its own text's, not a neighbour's in the length order.
    assert np.allclose(got, expected, atol=1e-5)
    assert (got @ expected.T).argmax(axis=1).tolist() == list(range(len(rows)))


def _turns_file(path: Path, n: int) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"session": f"c{i // 20}", "speaker": ("Ana", "Me")[i % 2],
                                 "text": f"Turn {i} about the garden and the bees",
                                 "at": f"2026-03-{1 + i % 28:02d}T09:00:00Z",
                                 "ref": f"t{i}"}) + "\n")
    return path


def test_a_cancelled_import_keeps_what_it_wrote_and_again_adds_the_rest(
        vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app import transfer
    monkeypatch.setattr(transfer, "IMPORT_CALL", 30)
    path = _turns_file(tmp_path / "talk.jsonl", 90)
    cancel = CancelToken()
    seen: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        seen.append((done, total))
        if done >= 30:
            cancel.cancel()  # the person's Cancel, during the first call
    first = transfer.import_file(vault, path, progress=progress, cancel=cancel)
    assert first.cancelled and first.total == 90
    assert first.report.turns == 30 and first.report.added == 30
    assert vault.status().totals["short_term"] == 30
    assert all(total == 90 for _d, total in seen)
    assert [d for d, _t in seen] == sorted(d for d, _t in seen)  # never backwards

    again = transfer.import_file(vault, path)
    assert not again.cancelled
    assert again.report.skipped_duplicates == 30 and again.report.added == 60
    assert vault.status().totals["short_term"] == 90
