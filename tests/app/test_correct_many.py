"""``IngestService.correct_many`` (issue 29: another device's edits in one transaction): the
rows ``correct`` writes each, a vector per correction that is its own text's, nothing for what
``correct`` refuses."""

from __future__ import annotations

from typing import Any

import numpy as np

from app.domain.memory import Store
from app.facade import Vault
from app.services.ingest import embed_text
from tests.app.conftest import remember
from tests.inside import inside


def _history(v: Vault, mid: int) -> list[tuple[Any, ...]]:
    return inside(v).db.read(lambda c: c.execute(
        "SELECT action, text, detail FROM history WHERE memory_id = ? ORDER BY id",
        (mid,)).fetchall())


def _vector(v: Vault, mid: int) -> np.ndarray | None:
    row = inside(v).db.read(lambda c: c.execute(
        "SELECT vec FROM vector WHERE memory_id = ?", (mid,)).fetchone())
    return None if row is None else np.frombuffer(row[0], dtype=np.float32)


def test_many_corrections_write_what_one_correction_writes(vault: Vault) -> None:
    ingest = vault._ingest
    one = remember(vault, "The bike lock code is 4512")
    many = [remember(vault, "The gate code is 1934"),
            remember(vault, "Draft note about the gate", Store.SHORT_TERM),
            remember(vault, "The garage code is 7781")]
    replaced = remember(vault, "The shed code is 1111")
    vault.correct(replaced, "The shed code is 2222")
    by_one = int(vault.correct(one, "The bike lock code is 9090").value)
    seen: dict[str, Any] = {}

    def also(conn: Any, done: dict[int, Any], refused: set[int]) -> None:
        seen.update(done=dict(done), refused=set(refused))
    edits = [(many[0], "The gate code is 5050", None),
             (many[1], "Draft note about the gate, corrected", "assistant-x"),
             (replaced, "The shed code is 3333", None),       # superseded here: refused
             (10_000_000, "no such memory", None),            # gone: refused
             (many[2], "The garage code is 6060", None)]
    done = ingest.correct_many(edits, also)
    assert set(done) == {many[0], many[1], many[2]} == set(seen["done"])
    assert seen["refused"] == {replaced, 10_000_000}
    # The same history as one correct: the old text kept on the old row, the new one named.
    assert [h[0] for h in _history(vault, one)] == [h[0] for h in _history(vault, many[0])]
    assert _history(vault, many[0])[-1][1] == "The gate code is 1934"
    assert [h[0] for h in _history(vault, by_one)] == \
        [h[0] for h in _history(vault, int(done[many[0]]))]
    assert _history(vault, int(done[many[1]]))[-1][2].endswith("by assistant-x")
    for mid in many:
        old, new = vault.get(mid), vault.get(int(done[mid]))
        assert old.status.value == "superseded" and old.superseded_by == done[mid]
        assert new.status.value == "active" and new.store is old.store
    assert vault.get(replaced).status.value == "superseded"
    # Each vector is its own text's (made in one model call here: no follower unthreaded);
    # the short-term correction has none, as with correct.
    embedder = inside(vault).embedder
    assert embedder is not None
    for mid in (many[0], many[2]):
        got = _vector(vault, int(done[mid]))
        want = np.asarray(embedder.embed([embed_text(vault.get(int(done[mid])))]),
                          dtype=np.float32)[0]
        assert got is not None and float(np.dot(got, want)) > 0.999
    assert _vector(vault, int(done[many[1]])) is None
    hits = vault.recall("what is the garage code")
    assert hits and hits[0].text == "The garage code is 6060"
