"""Screenshot baselines for the screens issue 25's audit found without one (STYLE B9): the empty
vault's greeting (three ways to begin) at 1024x640, the forget dialog's report after forgetting
(the plan before confirming is ``forget_dialog``), and the unlock dialog's recovery-code page,
each in the light and dark themes, compared as ``test_screens`` compares (its ``check``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSize, Qt, QThreadPool

from tests.conftest import time_zone
from tests.ui.screens.look import find_memory, fixed_demo_vault, release_words_clock
from tests.ui.screens.test_screens import WAIT, check, look, settle

__all__ = ["look"]  # the module-scoped theme fixture, shared with test_screens

pytestmark = [pytest.mark.screenshot, pytest.mark.gui,
              pytest.mark.skipif(sys.platform != "linux", reason="baselines are Linux renders")]


@pytest.fixture
def utc() -> Iterator[None]:
    with time_zone("UTC"):
        yield
        release_words_clock()


def test_empty_vault_greeting(qtbot: Any, look: str, tmp_path: Path, utc: None) -> None:
    from unittest import mock

    from app import bootstrap
    from app.facade import Vault
    from ui.bridge import CoreBridge
    from ui.main_window import MainWindow
    with mock.patch.object(bootstrap, "load_embedder", lambda _load: (None, None)):
        vault = Vault.create(tmp_path / "vault", "a long enough password 1",
                             kdf=bootstrap.kdf_params(65_536, 3), threaded=True,
                             use_chroma=False).vault
    win = MainWindow(vault, CoreBridge(), idle_minutes=5)
    try:
        win.resize(QSize(1024, 640))
        win.show()
        qtbot.waitExposed(win)
        qtbot.waitUntil(lambda: win.browse.welcome.isVisible(), timeout=WAIT)
        qtbot.waitUntil(lambda: win.status_label.text() != "", timeout=WAIT)
        settle(qtbot)
        assert win.size() == QSize(1024, 640)
        check(win, "empty_vault_greeting", look)
    finally:
        QThreadPool.globalInstance().waitForDone(WAIT)
        win.clear_for_lock()
        win.close()
        win.deleteLater()
        QThreadPool.globalInstance().waitForDone(WAIT)
        vault.lock()


def test_forget_report(qtbot: Any, look: str, tmp_path: Path, utc: None) -> None:
    """After forgetting: the report in the plan's words, Close the only button left."""
    from ui.bridge import CoreBridge
    from ui.dialogs.forget import ForgetDialog
    vault = fixed_demo_vault(tmp_path / "demo", load_model=False)
    try:
        mid = find_memory(vault, "I moved to Porto; the Lisbon flat was too expensive.",
                          "episodic")
        dlg = ForgetDialog(vault, CoreBridge(), None, ids=[mid])
        qtbot.addWidget(dlg)
        dlg.resize(QSize(640, 520))
        dlg.show()
        qtbot.waitUntil(lambda: dlg.plan is not None and dlg.confirm.isEnabled(), timeout=WAIT)
        dlg.confirm.setFocus()
        qtbot.keyClick(dlg.confirm, Qt.Key.Key_Space)  # ticked as a person ticks it
        assert dlg.forget_btn.isEnabled()
        qtbot.mouseClick(dlg.forget_btn, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: dlg.report is not None, timeout=WAIT)
        settle(qtbot)
        assert dlg.summary.text().startswith("Forgot ") and not dlg.forget_btn.isVisible()
        check(dlg, "forget_report", look)
        dlg.close()
    finally:
        QThreadPool.globalInstance().waitForDone(WAIT)
        vault.lock()


def test_recovery_code_page(qtbot: Any, look: str, tmp_path: Path) -> None:
    from ui.dialogs.unlock import UnlockDialog
    folder = tmp_path / "Household"
    folder.mkdir()
    dlg = UnlockDialog(folder, create=False)
    qtbot.addWidget(dlg)
    dlg.resize(QSize(460, 260))
    dlg.show()
    qtbot.waitExposed(dlg)
    qtbot.mouseClick(dlg.use_code, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dlg.recovery_page.isVisible(), timeout=WAIT)
    settle(qtbot)
    check(dlg, "recovery_code_page", look)
    dlg.reject()
