"""The Consolidation page against a real demo vault (which already has run 1)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from PySide6.QtCore import Qt

from tests.ui.conftest import answer_confirm
from ui.models.run_table import Column, RunRow, RunTableModel

pytestmark = pytest.mark.gui


def _loaded(qtbot: Any, view: Any, n_runs: int) -> None:
    qtbot.waitUntil(lambda: view.model.rowCount() == n_runs
                    and len(view.undo_buttons) == n_runs, timeout=10_000)


def test_shows_last_run_schedule_and_passes_the_model_tester(
        qtbot: Any, qtmodeltester: Any, open_page: Any, demo_vault: Any) -> None:
    view = open_page("consolidation")
    _loaded(qtbot, view, 1)
    (run,) = demo_vault.runs(10)
    assert "Last run:" in view.last_run.text()
    assert run.report is not None
    learned = run.report.counts["facts_created"]
    assert learned > 0 and f"{learned} facts learned" in view.last_changes.text()
    assert "1 sent to your inbox" in view.last_changes.text()
    assert view.model.rows[0].id == run.id
    assert view.model.data(view.model.index(0, Column.STATUS)) == "done"
    assert view.undo_buttons[run.id].isEnabled()
    assert view.schedule["consolidation.heartbeat_minutes"].text() == "every 15 minutes"
    assert view.schedule["consolidation.interval_minutes"].text().startswith("every 4 hours")
    assert view.schedule["consolidation.decay_hour"].text() == "daily at 03:00"
    assert view.schedule["consolidation.synthesis_weekday"].text() == "Sundays at 00:00"
    qtmodeltester.check(view.model)


def test_run_now_adds_a_run_and_undo_reverts_it(qtbot: Any, open_page: Any, window: Any,
                                                demo_vault: Any) -> None:
    view = open_page("consolidation")
    _loaded(qtbot, view, 1)
    before = demo_vault.status().counts
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=30_000):
        qtbot.mouseClick(view.run_btn, Qt.MouseButton.LeftButton)
        # Busy at once: the button (and the toolbar action) cannot start a second run.
        assert not view.run_btn.isEnabled()
        assert not window.run_action.isEnabled()
        # The bar itself appears once the run has taken 600 ms (ui.progress).
        assert view.progress_helper.active and view.cancel_btn.isVisible()
    runs = demo_vault.runs(10)
    assert len(runs) == 2
    new_id = runs[0].id
    _loaded(qtbot, view, 2)
    assert view.model.rows[0].id == new_id
    assert view.run_btn.isEnabled() and window.run_action.isEnabled()
    assert not view.progress.isVisible()
    assert f"Run {new_id} finished" in view.message.text()
    # Only the newest run may be undone; the older one says why not.
    assert view.undo_buttons[new_id].isEnabled()
    old = view.undo_buttons[runs[1].id]
    assert not old.isEnabled()
    assert f"Undo the newer run {new_id} first" in old.toolTip()

    qtbot.mouseClick(view.undo_buttons[new_id], Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=30_000):
        answer_confirm(qtbot, accept=True)
    qtbot.waitUntil(lambda: view.model.rowCount() == 2
                    and view.model.rows[0].undone_at is not None, timeout=10_000)
    assert demo_vault.runs(1)[0].undone_at is not None
    assert demo_vault.status().counts == before
    assert f"Run {new_id} undone" in view.message.text()
    assert "undone" in view.model.data(view.model.index(0, Column.STATUS))
    # Now run 1 is the newest one not undone.
    qtbot.waitUntil(lambda: view.undo_buttons[runs[1].id].isEnabled(), timeout=10_000)
    assert not view.undo_buttons[new_id].isEnabled()
    assert "already undone" in view.undo_buttons[new_id].toolTip()


def test_undo_the_demo_run_removes_what_it_learned(qtbot: Any, open_page: Any, window: Any,
                                                   demo_vault: Any) -> None:
    view = open_page("consolidation")
    _loaded(qtbot, view, 1)
    (run,) = demo_vault.runs(10)
    contradictions = len(demo_vault.contradictions(None))
    assert contradictions
    before = demo_vault.status().counts
    # It asks first and says what will change; Enter takes Cancel and nothing changes.
    qtbot.mouseClick(view.undo_buttons[run.id], Qt.MouseButton.LeftButton)
    words = answer_confirm(qtbot, accept=False)
    assert f"Undoing run {run.id} removes" in words
    made = re.search(r"(\d+) memories it made", words)
    assert made is not None and "people and projects it found" in words
    assert (f"{contradictions} contradictions it raised (they leave the Inbox)" in words
            if contradictions > 1 else "contradiction it raised" in words)
    assert "conversations and notes it learned from stay" in words
    assert "#" not in words and "_" not in words
    assert demo_vault.status().counts == before and demo_vault.runs(1)[0].undone_at is None
    # Asked again and answered with the action's own button: undone.
    qtbot.mouseClick(view.undo_buttons[run.id], Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=30_000):
        answer_confirm(qtbot, accept=True)
    qtbot.waitUntil(lambda: view.model.rowCount() == 1
                    and view.model.rows[0].undone_at is not None, timeout=10_000)
    assert demo_vault.contradictions(None) == []
    assert demo_vault.insights().by_store.get("semantic", 0) == 0
    # The words added up: as many memories went as it said.
    after = demo_vault.status()
    assert sum(after.totals.values()) == sum(sum(c.values()) for c in before.values()) - int(
        made.group(1))


def test_run_table_model_undo_rules(qtmodeltester: Any) -> None:
    def row(i: int, *, undone: float | None = None, status: str = "done",
            finished: float | None = 1.0) -> RunRow:
        return RunRow(i, "consolidation", 1_780_000_000.0 + i, finished, status,
                      {"facts_created": i}, 0.5, 0, undone)
    model = RunTableModel()
    qtmodeltester.check(model)  # empty
    model.set_rows([row(4, status="running", finished=None), row(3), row(2, undone=5.0),
                    row(1)])
    qtmodeltester.check(model)
    assert model.undoable_id() is None  # the newest is still running
    assert model.undo_state(0) == (False, "This run is still going; wait for it to finish.")
    model.set_rows([row(3), row(2, undone=5.0), row(1)])
    assert model.undoable_id() == 3
    assert model.undo_state(0)[0]
    assert not model.undo_state(1)[0] and "already undone" in model.undo_state(1)[1]
    assert not model.undo_state(2)[0] and "run 3 first" in model.undo_state(2)[1]
    assert model.data(model.index(2, Column.CHANGES)) == "1 fact learned"
    assert model.data(model.index(0, Column.RUN)) == "3"
    qtmodeltester.check(model)


def test_failed_batches_and_llm_fallbacks_show_on_the_page_and_in_the_status_bar(
        qtbot: Any, open_page: Any, window: Any, demo_vault: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 12: a run whose extraction batch failed (here the endpoint is down and the rules
    raise too) is said on the page, in the run's tooltip and in the status bar, with the
    error's class only; the next clean run clears the status bar."""
    import socket

    import app.services.consolidation.extraction as cons
    from app.domain.memory import Draft

    def boom(ep: Any) -> Any:
        raise ValueError(f"cannot read {ep.text!r}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    demo_vault.set_setting("extraction.provider", "llm")
    demo_vault.set_setting("extraction.llm_base_url", f"http://127.0.0.1:{port}/v1")
    demo_vault.set_setting("extraction.llm_model", "tiny")
    demo_vault.remember(Draft(text="I moved to Ghent last week.", speaker="Sam"))
    monkeypatch.setattr(cons, "extract", boom)
    view = open_page("consolidation")
    _loaded(qtbot, view, 1)
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=30_000):
        qtbot.mouseClick(view.run_btn, Qt.MouseButton.LeftButton)
    _loaded(qtbot, view, 2)
    qtbot.waitUntil(lambda: view.last_problems.isVisible(), timeout=10_000)
    problems = view.last_problems.text()
    assert "1 batch failed in extract (ValueError)" in problems
    assert "The LLM endpoint could not be used for 1 batch (endpoint unreachable" in problems
    assert "Ghent" not in problems
    assert "1 failed batch (extract: ValueError)" in view.message.text()
    assert "partial" in view.model.data(view.model.index(0, Column.STATUS))
    assert "extract (ValueError)" in view.model.data(view.model.index(0, Column.STATUS),
                                                     Qt.ItemDataRole.ToolTipRole)
    qtbot.waitUntil(lambda: "last consolidation had 1 failed batch"
                    in window.status_label.text(), timeout=10_000)

    monkeypatch.undo()  # the rules work again: the retried batch goes through
    demo_vault.set_setting("extraction.provider", "rules")
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=30_000):
        qtbot.mouseClick(view.run_btn, Qt.MouseButton.LeftButton)
    _loaded(qtbot, view, 3)
    qtbot.waitUntil(lambda: "failed batch" not in window.status_label.text(), timeout=10_000)
    assert not view.last_problems.isVisible()
