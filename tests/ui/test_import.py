"""Import from the window: a JSON Lines file with progress in the status bar, the list growing,
a malformed file refused whole with its line numbers; and the status bar saying what is still
being prepared after unlock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.inside import inside

WAIT = 60_000


@pytest.fixture
def popups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[BaseException]]:
    import ui.errors
    seen: list[BaseException] = []
    monkeypatch.setattr(ui.errors, "show_error", lambda _parent, exc: seen.append(exc))
    yield seen


def turns_file(path: Path, n: int, bad_lines: tuple[int, ...] = ()) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(1, n + 1):
            if i in bad_lines:
                fh.write('{"session": "s1", "speaker": "Ana", "text": \n')
                continue
            fh.write(json.dumps({"session": f"imp{i // 50}", "speaker": ["Ana", "Me"][i % 2],
                                 "text": f"Imported turn {i} about the garden and the bees",
                                 "at": f"2026-03-{1 + i % 28:02d}T09:00:00Z",
                                 "ref": f"imp-{i}"}) + "\n")
    return path


def total(vault: Any) -> int:
    return sum(vault.status().totals.values())


def test_import_shows_progress_and_adds_the_turns(qtbot: Any, window: Any, tmp_path: Path,
                                                  popups: list[BaseException],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import ui.progress
    # The bar's 600 ms delay has its own test (test_ui_structure.py); here it shows at once,
    # so an import that is quick on a fast machine still shows its numbers.
    monkeypatch.setattr(ui.progress, "SHOW_AFTER_MS", 0)
    vault = window.vault
    before = total(vault)
    path = turns_file(tmp_path / "talk.jsonl", 600)
    seen_progress: list[tuple[int, int]] = []
    window.progress.polled.connect(
        lambda *_: seen_progress.append((window.progress_bar.value(),
                                         window.progress_bar.maximum()))
        if window.progress_bar.isVisible() else None)
    window.show()
    window.start_import(path)
    assert window.progress.active and not window.import_action.isEnabled()
    assert not window.run_action.isEnabled()
    qtbot.waitUntil(lambda: "Imported 600 turns" in window.statusBar().currentMessage(),
                    timeout=WAIT)
    assert not popups
    assert not window.progress_bar.isVisible() and window.import_action.isEnabled()
    assert window.run_action.isEnabled()
    assert total(vault) == before + 1200  # each turn: short-term + episodic
    assert seen_progress, "the progress bar was never polled while visible"
    # Importing the same file again adds nothing and says so.
    window.start_import(path)
    qtbot.waitUntil(lambda: "were already there" in window.statusBar().currentMessage(),
                    timeout=WAIT)
    assert total(vault) == before + 1200


def test_malformed_file_is_refused_whole(qtbot: Any, window: Any, tmp_path: Path,
                                         popups: list[BaseException]) -> None:
    from app.errors import ValidationError
    vault = window.vault
    before = total(vault)
    window.start_import(turns_file(tmp_path / "bad.jsonl", 50, bad_lines=(7, 31)))
    qtbot.waitUntil(lambda: bool(popups), timeout=WAIT)
    assert isinstance(popups[0], ValidationError)
    assert "7" in str(popups[0]) and "31" in str(popups[0])
    assert total(vault) == before
    assert not window.progress_bar.isVisible() and window.import_action.isEnabled()
    window.start_import(tmp_path / "missing.jsonl")
    qtbot.waitUntil(lambda: len(popups) == 2, timeout=WAIT)
    assert isinstance(popups[1], ValidationError) and "missing.jsonl" in str(popups[1])


def test_status_bar_says_what_is_being_prepared(qtbot: Any, window: Any) -> None:
    vault = window.vault
    inside(vault).lexicon._building = True  # as in the seconds after unlocking a big vault
    try:
        window._bg_timer.start()
        qtbot.waitUntil(lambda: "indexing text…" in window.status_label.text(), timeout=WAIT)
    finally:
        inside(vault).lexicon._building = False
    qtbot.waitUntil(lambda: "indexing" not in window.status_label.text(), timeout=WAIT)
    assert not window._bg_timer.isActive()


def test_the_window_searches_during_an_import_and_cancel_keeps_what_it_imported(
        qtbot: Any, window: Any, tmp_path: Path, popups: list[BaseException],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 28: while an import runs, a search typed in the window answers; Cancel stops the
    import after the call under way and what it imported stays. The import is held at its
    first commit by a write task that waits (the vault's one writer), so the search really
    happens during the import however fast the machine is."""
    import threading

    from PySide6.QtCore import Qt

    import ui.progress
    from app import transfer
    monkeypatch.setattr(ui.progress, "SHOW_AFTER_MS", 0)
    monkeypatch.setattr(transfer, "IMPORT_CALL", 40)
    vault = window.vault
    before = vault.status().totals["short_term"]
    path = turns_file(tmp_path / "talk.jsonl", 200)
    gate = threading.Event()
    held = inside(vault).db.write(lambda _conn: gate.wait(WAIT / 1000))
    try:
        window.show()
        qtbot.waitExposed(window)
        window.start_import(path)
        assert window.cancel_button.isVisible() and window.cancel_button.isEnabled()
        browse = window.browse
        browse.search.setFocus()
        qtbot.keyClicks(browse.search, "films")
        qtbot.keyClick(browse.search, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: "for “films”, best first" in browse.title.text(), timeout=WAIT)
        assert browse.model.rowCount() > 0
        assert window.progress.active and not window.import_action.isEnabled()  # still running
        qtbot.mouseClick(window.cancel_button, Qt.MouseButton.LeftButton)
        assert not window.cancel_button.isEnabled()
    finally:
        gate.set()
    held.result(timeout=WAIT / 1000)
    qtbot.waitUntil(lambda: "Import cancelled" in window.statusBar().currentMessage(),
                    timeout=WAIT)
    assert not popups
    kept = vault.status().totals["short_term"] - before
    assert kept == 40  # the call under way when Cancel was clicked, whole
    assert "40 turns imported and kept" in window.statusBar().currentMessage()
    assert not window.cancel_button.isVisible() and window.import_action.isEnabled()


def test_the_import_bar_says_the_rate_and_the_time_left(qtbot: Any, window: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The window's wiring of ``app.eta``: the status bar says the rate and the time left, the
    bar the time left, once the rate has settled (a fake clock: nothing waits for real)."""
    from app.eta import Rate
    box, _cancel = window._begin_import_work()
    try:
        now = [0.0]
        window._work.rate = Rate(lambda: now[0])
        for done in (0, 400, 800, 1200):  # 200 turns/s, 2 s apart
            if done:
                now[0] += 2.0
            box.report(done, 5000)
            said = f"{done:,} of 5,000"
            qtbot.waitUntil(lambda said=said: said in window.statusBar().currentMessage(),
                            timeout=WAIT)
        message = window.statusBar().currentMessage()
        assert message == "Importing… 1,200 of 5,000 turns · 200 turns/s · about 20 s left"
        assert window.progress_bar.format() == "%p% · about 20 s left"
    finally:
        window._end_work()
    assert window.progress_bar.format() == "%p%" and not window.cancel_button.isVisible()
