"""Issue 11, items 11 and 12, in the window (pytest-qt, offscreen, real vault files).

Item 11: the unlock dialog's "Use recovery code…" opens the vault with the code and sets a
new password; Settings makes a new code (after the current password). Item 12: the create
dialog refuses a folder that holds other files, before any password is typed, and changes
nothing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from tests.storage.test_create_folder import snapshot, someones_folder
from tests.ui.test_flows import PASSWORD, WAIT, close_vault, file_hashes, make_vault

pytestmark = pytest.mark.gui
NEW = "a brand new password"


def test_unlock_with_recovery_code_sets_a_new_password(qtbot: Any, tmp_path: Path,
                                                       fast_kdf: Any) -> None:
    from storage import crypto
    from ui.dialogs.unlock import UnlockDialog
    folder = tmp_path / "vault"
    vault = make_vault(folder, fast_kdf, facts=("Sam likes green tea.",))
    code = vault.add_recovery_code()
    close_vault(vault)
    before = file_hashes(folder)

    dlg = UnlockDialog(folder)
    qtbot.addWidget(dlg)
    dlg.show()
    assert dlg.use_code.isVisible() and not dlg.code.isVisible()
    qtbot.mouseClick(dlg.use_code, Qt.MouseButton.LeftButton)
    assert dlg.code.isVisible() and dlg.new_password.isVisible()
    assert not dlg.password.isVisible() and dlg.ok.text() == "Unlock and set password"

    # Checked inline before any work: the new password twice.
    qtbot.keyClicks(dlg.code, code)
    qtbot.keyClicks(dlg.new_password, NEW)
    qtbot.keyClicks(dlg.new_repeat, NEW + "x")
    qtbot.mouseClick(dlg.ok, Qt.MouseButton.LeftButton)
    assert dlg.error.text() == "The two passwords differ."

    # A wrong code: said inline, nothing changed on disk.
    dlg.code.clear()
    dlg.new_repeat.clear()
    qtbot.keyClicks(dlg.new_repeat, NEW)
    qtbot.keyClicks(dlg.code, crypto.new_recovery_code())
    qtbot.mouseClick(dlg.ok, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dlg.ok.isEnabled() and dlg.error.text() != "", timeout=WAIT)
    assert dlg.error.text().startswith("Wrong recovery code")
    assert file_hashes(folder) == before

    # The real code, typed loosely.
    dlg.code.clear()
    qtbot.keyClicks(dlg.code, code.lower().replace("-", " "))
    with qtbot.waitSignal(dlg.unlocked, timeout=WAIT) as blocker:
        qtbot.mouseClick(dlg.ok, Qt.MouseButton.LeftButton)
    opened = blocker.args[0]
    try:
        assert not opened.locked and opened.status().totals["semantic"] == 1
        assert "New password set" in dlg.notice
        assert dlg.code.text() == dlg.new_password.text() == dlg.new_repeat.text() == ""
    finally:
        close_vault(opened)
    kf = crypto.read_key_file(folder)
    from app.errors import WrongKey
    with pytest.raises(WrongKey):
        crypto.unwrap(kf, PASSWORD)
    assert bytes(crypto.unwrap(kf, NEW)) == bytes(crypto.unwrap_recovery(kf, code))


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_create_dialog_refuses_a_folder_with_other_files(qtbot: Any, tmp_path: Path) -> None:
    from ui.dialogs.unlock import UnlockDialog
    folder = someones_folder(tmp_path)
    before = snapshot(folder)
    dlg = UnlockDialog(folder, create=True)
    qtbot.addWidget(dlg)
    dlg.show()
    qtbot.waitUntil(lambda: "already holds other files" in dlg.error.text(), timeout=WAIT)
    assert not dlg.ok.isEnabled()
    qtbot.keyClicks(dlg.password, "a good long password")
    assert "already holds other files" in dlg.error.text()  # typing does not clear it
    assert snapshot(folder) == before


def test_settings_make_a_new_recovery_code(qtbot: Any, open_page: Any, demo_vault: Any,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from app.demo import DEMO_PASSWORD
    from storage import crypto
    from ui.dialogs.unlock import RecoveryCodeDialog
    shown: list[str] = []

    def record(self: RecoveryCodeDialog) -> int:
        shown.append(self.code.text())
        return 1
    monkeypatch.setattr(RecoveryCodeDialog, "exec", record)
    page = open_page("settings")
    key_file = (demo_vault.folder / crypto.KEY_FILE).read_bytes()

    qtbot.mouseClick(page.recovery_btn, Qt.MouseButton.LeftButton)
    assert page.pw_status.text() == "Type your current password."
    qtbot.keyClicks(page.old_pw, "not the password")
    qtbot.mouseClick(page.recovery_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.recovery_btn.isEnabled() and page.pw_status.text() != "",
                    timeout=WAIT)
    assert "Wrong password" in page.pw_status.text() and not shown
    assert (demo_vault.folder / crypto.KEY_FILE).read_bytes() == key_file

    page.old_pw.clear()
    qtbot.keyClicks(page.old_pw, DEMO_PASSWORD)
    qtbot.mouseClick(page.recovery_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=WAIT)
    qtbot.waitUntil(lambda: page.recovery_btn.isEnabled(), timeout=WAIT)
    assert page.old_pw.text() == ""
    kf = crypto.read_key_file(demo_vault.folder)
    assert bytes(crypto.unwrap_recovery(kf, shown[0])) == bytes(crypto.unwrap(kf, DEMO_PASSWORD))
