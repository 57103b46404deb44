"""Enter does the dialog's action (issue 25's first trap): in the unlock dialog Enter in the
password field unlocks, a wrong password included (said inline, the recovery page never opens);
in the create dialog Enter in the Repeat field creates the vault. Keys only (QTest), real
vault files; the unlock after Ctrl+L is driven by bench/ui_walkthrough.py and the slow
tests/ui/test_unlock_under_load.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.ui.conftest import try_wrong_password
from tests.ui.test_flows import PASSWORD, WAIT, close_vault, file_hashes

pytestmark = pytest.mark.gui


def test_enter_in_the_password_field_unlocks_and_never_opens_the_recovery_page(
        qtbot: Any, unlock_dialog: tuple[Any, Path, dict[str, str]]) -> None:
    from app.errors import WrongKey
    dlg, folder, before = unlock_dialog
    try_wrong_password(qtbot, dlg, lambda: qtbot.keyClick(dlg.password, Qt.Key.Key_Return))
    assert dlg.error.text() == WrongKey.user_message
    assert not dlg.recovering and not dlg.recovery_page.isVisibleTo(dlg)
    assert dlg.isVisible() and file_hashes(folder) == before

    dlg.password.clear()
    qtbot.keyClicks(dlg.password, PASSWORD)
    with qtbot.waitSignal(dlg.unlocked, timeout=WAIT) as blocker:
        qtbot.keyClick(dlg.password, Qt.Key.Key_Enter)  # the keypad's Enter too
    vault = blocker.args[0]
    try:
        assert not vault.locked and not dlg.recovering
        assert vault.status().totals["semantic"] == 1
    finally:
        close_vault(vault)


def test_enter_in_the_create_dialog_creates_the_vault(
        qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast_kdf: Any) -> None:
    from app.facade import Vault
    from ui.dialogs.unlock import RecoveryCodeDialog, UnlockDialog
    monkeypatch.setattr(RecoveryCodeDialog, "exec", lambda self: 1)

    def factory(folder: Path, pw: str, create: bool, recovery: bool) -> tuple[Any, Any]:
        res = Vault.create(folder, pw, kdf=fast_kdf, recovery=recovery, load_model=False,
                           use_chroma=False)
        return res.vault, res.recovery_code

    folder = tmp_path / "new-vault"
    dlg = UnlockDialog(folder, create=True, vault_factory=factory)
    qtbot.addWidget(dlg)
    dlg.show()
    dlg.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is dlg, timeout=WAIT)
    assert dlg.focusWidget() is dlg.password  # the first field takes the keys
    qtbot.keyClicks(dlg.password, PASSWORD)
    qtbot.keyClick(dlg.password, Qt.Key.Key_Tab)  # to Repeat, as a person goes
    assert dlg.focusWidget() is dlg.repeat
    qtbot.keyClicks(dlg.repeat, PASSWORD + "x")
    qtbot.keyClick(dlg.repeat, Qt.Key.Key_Return)
    assert dlg.error.text() == "The two passwords differ."
    assert dlg.isVisible() and not folder.exists()

    qtbot.keyClick(dlg.repeat, Qt.Key.Key_Backspace)
    with qtbot.waitSignal(dlg.unlocked, timeout=WAIT) as blocker:
        qtbot.keyClick(dlg.repeat, Qt.Key.Key_Return)
    vault = blocker.args[0]
    try:
        assert not vault.locked and (folder / "vault.db").is_file()
    finally:
        close_vault(vault)
