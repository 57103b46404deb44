"""The window's "Reset demo" action (issue 12, item 7): the demo vault is created once, and a
restart keeps what was forgotten in it; this explicit action brings the original back. Driven
through the real Controller (ui/main.py) on a real demo vault."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QThreadPool
from PySide6.QtGui import QAction

from tests.ui.conftest import answer_confirm

WAIT = 60_000
CAT = "allergic to cats"


def test_reset_demo_action_replaces_the_demo_vault(qtbot: Any, qapp: Any, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import app.jobs
    from ui.main import Controller
    real_build = app.jobs.build_scheduler

    def build_unstarted(*args: Any, **kwargs: Any) -> Any:
        sched = real_build(*args, **kwargs)  # the real wiring, never started in a test
        sched.start = lambda *a, **k: None
        return sched
    monkeypatch.setattr(app.jobs, "build_scheduler", build_unstarted)
    monkeypatch.setattr(qapp, "quit", lambda: None)
    ctl = Controller(qapp, tmp_path / "demo-vault", demo=True)
    try:
        ctl.start()
        qtbot.waitUntil(lambda: ctl.window is not None, timeout=WAIT)
        first = ctl.window
        first_vault = ctl.vault
        cats = first_vault.forget_plan(query=CAT)
        assert cats.memory_ids
        first_vault.forget(cats)
        assert not first_vault.forget_plan(query=CAT).memory_ids
        action = first.findChild(QAction, "resetDemoAction")
        assert action is not None and action.text() == "Reset demo…"

        action.trigger()
        words = answer_confirm(qtbot, accept=False)  # Enter: Cancel
        assert "Everything added, corrected or forgotten in it is lost" in words
        assert ctl.window is first and ctl.vault is first_vault  # nothing changed

        action.trigger()
        answer_confirm(qtbot, accept=True)
        assert first_vault.locked
        qtbot.waitUntil(lambda: ctl.window is not None, timeout=WAIT)
        assert ctl.vault is not first_vault
        assert ctl.vault.forget_plan(query=CAT).memory_ids
        assert ctl.window.findChild(QAction, "resetDemoAction") is not None
    finally:
        ctl.shutdown()
        if ctl.window is not None:
            ctl.window.close()
            ctl.window.deleteLater()  # a window left to the garbage collector crashes Qt
            ctl.window = None
        QThreadPool.globalInstance().waitForDone(WAIT)
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        QCoreApplication.processEvents()
