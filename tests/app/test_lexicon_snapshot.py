"""The RAM lexicon saved inside the vault (issue 28, migration 0032): lock writes it, the next
unlock loads it instead of building it (no scan, no seconds of FTS5), and it is never loaded
over rows it does not hold: a write through ``mark_fts`` records its rows in its own transaction
(migration 0041), so an unlock after a crash loads the saved mirror and re-reads only those; a
write that bypasses that still changes FTS5's records (checked at load), forget and a text
rewrite delete it, a damaged one is rebuilt. Real vault, fake embedder (lexical only)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app import bootstrap
from app.domain.memory import Draft, Store
from app.facade import Vault
from app.services.importer import parse_import
from storage import lexicon
from tests.conftest import new_vault
from tests.fake_embedder import use_fake_embedder
from tests.inside import inside

from .conftest import PW
from .test_lexicon import assert_same, turns


def _rows(v: Vault, table: str) -> int:
    return int(inside(v).db.read(
        lambda c: c.execute(f"SELECT count(*) FROM {table}").fetchone()[0]))


class Scans:
    """Counts the rows the mirror tokenizes (a scan or a refresh); a load tokenizes none."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.rows = 0
        real = lexicon.Lexicon._add_rows

        def add_rows(lex: lexicon.Lexicon, rows: Any) -> None:
            self.rows += len(rows)
            real(lex, rows)
        monkeypatch.setattr(lexicon.Lexicon, "_add_rows", add_rows)


@pytest.fixture
def saved(vault_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A vault of 40 full-text rows whose mirror was built and then saved by lock."""
    use_fake_embedder(monkeypatch)
    monkeypatch.setattr(lexicon, "MIN_ROWS", 10)
    monkeypatch.setattr(bootstrap, "BACKGROUND_GRACE_S", 0.0)
    v = new_vault(vault_dir, PW, threaded=True, use_chroma=False)
    assert v.import_turns(parse_import([json.dumps(t) for t in turns(2, 10)])).value.added == 20
    v.lock()
    v = Vault.open(vault_dir, PW, use_chroma=False)
    assert inside(v).lexicon.wait_ready(60)
    assert _rows(v, "lexicon_snapshot") == 0  # built by a scan: nothing saved yet
    v.lock()
    yield vault_dir


def _open(folder: Path) -> Vault:
    v = Vault.open(folder, PW, use_chroma=False)
    assert inside(v).lexicon.wait_ready(60)
    return v


def test_unlock_loads_the_saved_mirror_without_a_scan(saved: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    scans = Scans(monkeypatch)
    v = _open(saved)
    try:
        assert scans.rows == 0  # loaded, not tokenized again
        assert len(inside(v).lexicon) == 40
        assert_same(v)  # FTS5's own scores, as a built mirror gives
        # It keeps working as a mirror: a new memory is found and a second lock saves again.
        v.remember(Draft(text="The axolotl in Porto waved", store=Store.EPISODIC))
        assert scans.rows == 1
        # That write is recorded beside the saved mirror, in its own transaction (0041).
        assert _rows(v, "lexicon_snapshot_dirty") == 1
        assert [i for i, _ in inside(v).lexicon.search(["axolotl"], 5) or []]
    finally:
        v.lock()
    scans.rows = 0
    v = _open(saved)
    try:
        assert scans.rows == 0 and len(inside(v).lexicon) == 41
        assert_same(v, ["axolotl Porto", "Caroline support group"])
    finally:
        v.lock()


def _crash_after(folder: Path, monkeypatch: pytest.MonkeyPatch, texts: list[str]) -> None:
    """Open, remember ``texts``, and end the session as a crash does: without the lock's save
    of the mirror (the process dies; what is on disk is what the writes committed)."""
    v = _open(folder)
    for text in texts:
        v.remember(Draft(text=text, store=Store.EPISODIC))
    with monkeypatch.context() as m:
        m.setattr(lexicon.Lexicon, "save_snapshot", lambda self, conn: False)
        v.lock()


def test_after_a_crash_the_saved_mirror_loads_and_only_the_new_rows_are_read(
        saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _crash_after(saved, monkeypatch, ["The axolotl in Porto waved",
                                      "Caroline fed the axolotl on Tuesday",
                                      "A quokka smiled at the support group"])
    scans = Scans(monkeypatch)
    v = _open(saved)
    try:
        assert scans.rows == 3  # the saved 40 loaded, the 3 written since read again
        assert len(inside(v).lexicon) == 43
        assert_same(v, ["axolotl Porto", "quokka support group", "Caroline support group"])
        assert _rows(v, "lexicon_snapshot_dirty") == 3  # until a lock saves the mirror
    finally:
        v.lock()
    again = Vault.open(saved, PW, use_chroma=False)
    try:
        assert _rows(again, "lexicon_snapshot_dirty") == 0  # that lock saved it
    finally:
        again.lock()


def test_too_many_rows_written_since_means_a_scan(saved: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexicon, "_REREAD_MAX", 0)  # and 21 > half of the 40 saved
    _crash_after(saved, monkeypatch, [f"The wombat number {i} dug a hole" for i in range(21)])
    scans = Scans(monkeypatch)
    v = _open(saved)
    try:
        assert scans.rows == 61  # built from memory_fts, all of it
        assert_same(v, ["wombat hole", "Caroline support group"])
    finally:
        v.lock()


def test_a_write_that_skips_mark_fts_is_still_caught(saved: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    v = Vault.open(saved, PW, use_chroma=False)
    inside(v).lexicon.wait_ready(60)

    def raw(conn: Any) -> None:  # as a writer that forgot mark_fts would
        conn.execute("INSERT INTO memory_fts (rowid, text, keys, ctx) "
                     "VALUES (424242, 'the okapi', '', '')")
    inside(v).db.write_sync(raw)
    assert _rows(v, "lexicon_snapshot_state") == 1  # the state row says valid ...
    inside(v).lexicon.clear()  # ... so lock must not save over it: drop the mirror first
    v.lock()
    scans = Scans(monkeypatch)
    v = _open(saved)
    try:
        assert scans.rows == 41  # FTS5's records changed: rebuilt, not loaded
        assert [i for i, _ in inside(v).lexicon.search(["okapi"], 5) or []] == [424242]
    finally:
        v.lock()


def test_forget_and_rewrites_delete_the_saved_mirror(saved: Path) -> None:
    v = _open(saved)
    try:
        assert _rows(v, "lexicon_snapshot") == 1
        plan = v.forget_plan(query="dinosaurs")
        assert plan.memory_ids
        v.forget(plan)
        # Its terms are gone from the vault with the memory, not only made unreachable.
        assert _rows(v, "lexicon_snapshot") == _rows(v, "lexicon_snapshot_state") == 0
        assert inside(v).lexicon.search(["dinosaur"], 5) == []
    finally:
        v.lock()
    v = _open(saved)  # lock saved the mirror without them
    try:
        assert _rows(v, "lexicon_snapshot") == 1
        assert inside(v).lexicon.search(["dinosaur"], 5) == []
        assert_same(v)
    finally:
        v.lock()


def test_a_damaged_saved_mirror_is_rebuilt(saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    v = _open(saved)
    inside(v).lexicon.clear()  # lock then saves nothing over the damage below
    inside(v).db.write_sync(lambda c: c.execute(
        "UPDATE lexicon_snapshot SET counts = substr(counts, 9)"))
    v.lock()
    scans = Scans(monkeypatch)
    v = _open(saved)
    try:
        assert scans.rows == 40
        assert_same(v)
    finally:
        v.lock()


def test_recall_fields_are_preloaded_before_a_scan_and_after_a_load(
        vault_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 28, the first minute: a scan of the mirror takes long, so recall's fields are read
    into RAM before it (recall during the scan then needs no SQL for them); loading a saved
    mirror is quicker, so they follow it."""
    from storage import recall_cache
    use_fake_embedder(monkeypatch)
    monkeypatch.setattr(lexicon, "MIN_ROWS", 10)
    monkeypatch.setattr(bootstrap, "BACKGROUND_GRACE_S", 0.0)
    events: list[str] = []
    real_add, real_preload = lexicon.Lexicon._add_rows, recall_cache.RecallRows.preload

    def add_rows(lex: lexicon.Lexicon, rows: Any) -> None:
        events.append("scan")
        real_add(lex, rows)

    def preload(rows: recall_cache.RecallRows, *a: Any, **k: Any) -> int:
        kept = real_preload(rows, *a, **k)
        events.append(f"preload {kept}")
        return kept
    monkeypatch.setattr(lexicon.Lexicon, "_add_rows", add_rows)
    monkeypatch.setattr(recall_cache.RecallRows, "preload", preload)
    v = new_vault(vault_dir, PW, threaded=True, use_chroma=False)
    assert v.import_turns(parse_import([json.dumps(t) for t in turns(2, 10)])).value.added == 20
    v.lock()
    for scanned in (True, False):  # no saved mirror yet; then the one the lock saved
        events.clear()
        v = _open(vault_dir)
        try:
            thread = inside(v).lexicon._thread
            assert thread is not None
            thread.join(60)
            preloads = [e for e in events if e.startswith("preload")]
            assert preloads == ["preload 40"], events
            if scanned:
                assert events[0] == "preload 40" and "scan" in events, events
            else:
                assert events == ["preload 40"], events
        finally:
            v.lock()
