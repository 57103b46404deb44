"""ui/warm.py: the throwaway widgets built while the unlock dialog waits leave nothing behind,
and the unlock dialog's controller schedules them."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QCoreApplication, QEvent
from PySide6.QtWidgets import QApplication, QWidget


def _alive() -> int:
    return len([w for w in QApplication.allWidgets() if isinstance(w, QWidget)])


def test_warm_widgets_build_once_and_leave_nothing(qtbot: Any, monkeypatch: Any) -> None:
    from ui import warm
    monkeypatch.setattr(warm, "_done", False)
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # earlier tests' own
    before = _alive()
    warm.warm_widgets()
    assert _alive() > before  # it did build something
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    assert _alive() == before
    warm.warm_widgets()  # once per process: the second call builds nothing
    assert _alive() == before


def test_unlock_dialog_warms_the_widgets_while_waiting(qtbot: Any, tmp_path: Any,
                                                       monkeypatch: Any) -> None:
    from ui import main, warm
    calls: list[int] = []
    monkeypatch.setattr(warm, "warm_widgets", lambda: calls.append(1))
    monkeypatch.setattr(main, "warm_imports", lambda: None)
    ctl = main.Controller.__new__(main.Controller)
    ctl.folder = tmp_path / "vault"
    ctl.window = None
    ctl._return_to = None
    ctl.app = QApplication.instance()
    ctl.ask_unlock()
    assert ctl.dialog is not None
    qtbot.addWidget(ctl.dialog)
    qtbot.waitUntil(lambda: calls == [1], timeout=3000)
    ctl.dialog.rejected.disconnect()  # closing must not quit the test's application
    ctl.dialog.close()


def test_the_app_gives_the_gui_thread_the_gil_back_within_half_a_millisecond(
        monkeypatch: Any) -> None:
    import os
    import sys

    from app.ipc.server import SWITCH_INTERVAL_S
    from ui import main
    before = sys.getswitchinterval()
    mask = os.umask(0o022)
    os.umask(mask)
    monkeypatch.setattr(main, "setup_logging", lambda debug: None)
    monkeypatch.setattr(main, "screen_problem", lambda: "no screen (test)")  # stop right after
    try:
        sys.setswitchinterval(0.005)
        assert main.main([]) == 2
        assert sys.getswitchinterval() == SWITCH_INTERVAL_S
    finally:
        sys.setswitchinterval(before)
        os.umask(mask)  # main() made this process's files private
