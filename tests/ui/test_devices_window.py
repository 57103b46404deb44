"""Settings > Devices and the pairing dialogs (issue 29, items 5-6), driven with keys as a
person drives them: set sync up, pair a device (its code and QR code on screen), join with a
wrong then the right code, remove a device after the question says what happens, and the
status bar's few words. Real vaults (SQLCipher, no model), real widgets offscreen, the real
sync folder in a temp dir; the other device is driven through the contract."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt, QThreadPool
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from tests.conftest import new_vault
from tests.ui.conftest import answer_confirm, main_window

pytestmark = pytest.mark.gui
PW = "devices window password"
WAIT = 15_000


@pytest.fixture
def vaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any, Path]]:
    from ui.dialogs import sync_pair
    monkeypatch.setattr(sync_pair._Stepping, "POLL_MS", 50)
    shared = tmp_path / "Sync"
    shared.mkdir()
    a = new_vault(tmp_path / "a", PW, load_model=False, use_chroma=False)
    b = new_vault(tmp_path / "b", PW, load_model=False, use_chroma=False)
    yield a, b, shared
    QThreadPool.globalInstance().waitForDone(WAIT)
    a.lock()
    b.lock()


def _panel(qtbot: Any, vault: Any) -> Any:
    from ui.bridge import CoreBridge
    from ui.views.devices import DevicesPanel
    panel = DevicesPanel(vault, CoreBridge())
    qtbot.addWidget(panel)
    panel.show()
    qtbot.waitUntil(lambda: panel.status is not None, timeout=WAIT)
    return panel


def _press(qtbot: Any, button: Any) -> None:
    button.setFocus()
    qtbot.keyClick(button, Qt.Key.Key_Space)


def _dialog(qtbot: Any, panel: Any, cls: str) -> Any:
    qtbot.waitUntil(lambda: type(panel.dialog).__name__ == cls and panel.dialog.isVisible(),
                    timeout=WAIT)
    return panel.dialog


def test_set_up_then_pair_shows_the_code_and_its_qr_and_remove_asks(
        qtbot: Any, vaults: Any) -> None:
    a, b, shared = vaults
    panel = _panel(qtbot, a)
    assert not panel.pair_btn.isVisibleTo(panel) and panel.set_up_btn.isVisibleTo(panel)
    _press(qtbot, panel.set_up_btn)
    dlg = _dialog(qtbot, panel, "SyncJoinDialog")
    qtbot.keyClicks(dlg.folder, str(shared))
    dlg.name.selectAll()
    qtbot.keyClicks(dlg.name, "laptop")
    qtbot.keyClick(dlg.name, Qt.Key.Key_Return)  # the default button: Set up
    qtbot.waitUntil(lambda: "Sync is set up" in dlg.said.text(), timeout=WAIT)
    qtbot.waitUntil(lambda: panel.pair_btn.isVisibleTo(panel), timeout=WAIT)
    assert str(shared.resolve()) in panel.state.text().replace("\u200b", "")
    dlg.close()

    _press(qtbot, panel.pair_btn)
    pair = _dialog(qtbot, panel, "SyncPairDialog")
    qtbot.waitUntil(lambda: len(pair.code.text()) == 14, timeout=WAIT)
    code = pair.code.text()
    # The QR code on screen is the code's: every module drawn as the matrix says.
    import segno
    want = segno.make(f"kept-pair:v1:{a.sync_status().vault_id}:{code}", error="m").matrix
    assert pair.qr.matrix == tuple(want)
    picture = pair.qr.grab().toImage()
    for r, row in enumerate(want):
        for c, dark in enumerate(row):
            centre = pair.qr.module_rect(r, c).center()
            assert (QColor(picture.pixel(centre)).lightness() < 128) == bool(dark)

    assert b.sync_join(shared, code, "desktop").value.state == "waiting"
    qtbot.waitUntil(lambda: "desktop joined" in pair.said.text(), timeout=WAIT)
    assert b.sync_pair_step().value.state == "joined"
    qtbot.waitUntil(lambda: len(panel.remove_buttons) == 1, timeout=WAIT)
    pair.close()
    (btn,) = panel.remove_buttons.values()
    assert btn.accessibleName() == "Remove desktop"

    _press(qtbot, btn)
    said = answer_confirm(qtbot, accept=False)
    assert "Remove desktop" in said and "refuse what desktop writes" in said
    assert not any(d.revoked for d in a.sync_status().devices)
    _press(qtbot, btn)
    answer_confirm(qtbot, accept=True)
    qtbot.waitUntil(lambda: "desktop is removed" in panel.message.text(), timeout=WAIT)
    assert [d.revoked for d in a.sync_status().devices] == [False, True]
    qtbot.waitUntil(lambda: not panel.remove_buttons, timeout=WAIT)


def test_a_panel_with_remove_buttons_goes_with_its_last_reference(
        qtbot: Any, vaults: Any) -> None:
    """The crash this guards against (malloc_consolidate / SIGSEGV in ~QObject, about one run in
    ten of the test above): each Remove… button held a lambda over the panel, so once the test
    dropped the panel the button's connection was its last Python reference; the button's
    deferred deletion (the fill after a removal) then released it from inside the button's
    destructor, which deleted the panel, its table, and the button a second time. Nothing a
    row button holds may keep its panel: dropped, the panel is deleted at once, here."""
    import gc
    import weakref

    import shiboken6
    a, b, shared = vaults
    a.sync_set_up(shared, "laptop")
    assert b.sync_join(shared, a.sync_invite().value.code, "desktop").value.state == "waiting"
    assert a.sync_pair_step().value.state == "joined"
    panel = _panel(qtbot, a)
    qtbot.waitUntil(lambda p=panel: len(p.remove_buttons) == 1, timeout=WAIT)
    (btn,) = panel.remove_buttons.values()
    _press(qtbot, btn)  # the button still asks for its own device
    said = answer_confirm(qtbot, accept=False)
    assert "Remove desktop" in said
    QThreadPool.globalInstance().waitForDone(WAIT)
    qtbot.wait(10)  # the loads' callbacks are released a loop turn later (ui.tasks)
    ref = weakref.ref(panel)
    del panel
    gc.collect()
    assert ref() is None and not shiboken6.isValid(btn)


def test_join_with_a_mistyped_code_then_the_right_one(qtbot: Any, vaults: Any) -> None:
    a, b, shared = vaults
    a.sync_set_up(shared, "laptop")
    code = a.sync_invite().value.code
    panel = _panel(qtbot, b)
    _press(qtbot, panel.join_btn)
    dlg = _dialog(qtbot, panel, "SyncJoinDialog")
    qtbot.keyClicks(dlg.folder, str(shared))
    qtbot.keyClicks(dlg.name, "desktop")
    qtbot.keyClicks(dlg.code, "12")
    qtbot.keyClick(dlg.code, Qt.Key.Key_Return)
    assert "12 digits" in dlg.said.text()  # said inline, nothing sent
    dlg.code.clear()
    wrong = code[:5] + ("0000" if code[5:9] != "0000" else "1111") + code[9:]
    qtbot.keyClicks(dlg.code, wrong)
    qtbot.keyClick(dlg.code, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: (shared / "v1" / "pair").exists() and
                    a.sync_pair_step().value.state != "waiting", timeout=WAIT)
    qtbot.waitUntil(lambda: "2 more tries" in dlg.said.text(), timeout=WAIT)
    assert QApplication.focusWidget() is dlg.code and dlg.go_btn.isEnabled()
    assert not b.sync_status().set_up
    qtbot.keyClicks(dlg.code, code)  # the mistyped code is selected: typing replaces it
    qtbot.keyClick(dlg.code, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: a.sync_pair_step().value.state != "waiting", timeout=WAIT)
    qtbot.waitUntil(lambda: "This device joined" in dlg.said.text(), timeout=WAIT)
    qtbot.waitUntil(lambda: panel.status is not None and panel.status.set_up, timeout=WAIT)
    assert [d.name for d in panel.status.devices] == ["desktop", "laptop"]
    assert panel.status.vault_id == a.sync_status().vault_id
    qtbot.waitUntil(lambda: "The founder is laptop" in panel.state.text(), timeout=WAIT)
    assert not panel.pair_btn.isVisibleTo(panel) and not panel.join_btn.isVisibleTo(panel)


def test_escape_in_the_join_dialog_closes_it_and_joins_nothing(qtbot: Any, vaults: Any) -> None:
    a, b, shared = vaults
    a.sync_set_up(shared, "laptop")
    code = a.sync_invite().value.code
    panel = _panel(qtbot, b)
    _press(qtbot, panel.join_btn)
    dlg = _dialog(qtbot, panel, "SyncJoinDialog")
    dlg.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is dlg, timeout=WAIT)
    dlg.folder.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is dlg.folder, timeout=WAIT)
    qtbot.keyClicks(dlg.folder, str(shared))
    qtbot.keyClick(dlg.folder, Qt.Key.Key_Tab)
    choose = QApplication.focusWidget()
    assert choose is not None and choose.accessibleName() == "Choose the sync folder"
    qtbot.keyClick(choose, Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is dlg.name
    qtbot.keyClicks(dlg.name, "desktop")
    qtbot.keyClick(dlg.name, Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is dlg.code
    qtbot.keyClicks(dlg.code, code)
    qtbot.keyClick(dlg.code, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not dlg.isVisible(), timeout=WAIT)
    QThreadPool.globalInstance().waitForDone(WAIT)
    assert not b.sync_status().set_up
    assert a.sync_pair_step().value.state == "waiting"  # Escape before Join sent nothing


def test_the_status_bar_says_sync_only_once_it_is_set_up(qtbot: Any, vaults: Any) -> None:
    a, _b, shared = vaults
    win = main_window(qtbot, a)
    QThreadPool.globalInstance().waitForDone(WAIT)
    qtbot.waitUntil(lambda: bool(win.status_label.text()), timeout=WAIT)
    assert "Sync" not in win.status_label.text() and not win.sync_button.isVisibleTo(win)
    result = a.sync_set_up(shared, "laptop")
    win.bridge.apply_changes(result.changes, None)
    # No owner ticks this vault here (tests/ui/test_sync_status_window.py has one).
    qtbot.waitUntil(lambda: win.sync_button.isVisibleTo(win), timeout=WAIT)
    assert win.sync_button.text() == "Sync starting"
    assert "Sync: no other device yet" in win.sync_button.toolTip()


def test_the_successor_sees_the_founder_and_takes_over_after_the_question(
        qtbot: Any, vaults: Any) -> None:
    a, b, shared = vaults
    a.sync_set_up(shared, "laptop")
    assert b.sync_join(shared, a.sync_invite().value.code, "desktop").value.state == "waiting"
    assert a.sync_pair_step().value.state == "joined"
    assert b.sync_pair_step().value.state == "joined"
    panel = _panel(qtbot, b)
    qtbot.waitUntil(lambda: "if it is lost, desktop can take over" in panel.state.text(),
                    timeout=WAIT)
    assert "The founder is laptop" in panel.state.text()
    assert panel.take_over_btn.isVisibleTo(panel) and not panel.pair_btn.isVisibleTo(panel)
    # Escape on the question cancels: nothing written.
    _press(qtbot, panel.take_over_btn)
    said = answer_confirm(qtbot, accept=False)
    assert "Take over from laptop?" in said and "lost for good" in said
    assert not (shared / "v1" / "founders").exists() and not b.sync_status().founder
    from PySide6.QtWidgets import QMessageBox
    _press(qtbot, panel.take_over_btn)
    qtbot.waitUntil(lambda: any(isinstance(w, QMessageBox) and w.isVisible()
                                for w in QApplication.topLevelWidgets()), timeout=WAIT)
    box = next(w for w in QApplication.topLevelWidgets()
               if isinstance(w, QMessageBox) and w.isVisible())
    qtbot.keyClick(box, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not box.isVisible(), timeout=WAIT)
    QThreadPool.globalInstance().waitForDone(WAIT)
    assert not (shared / "v1" / "founders").exists()
    # Confirmed: this device is the founder, laptop removed, pairing offered here.
    _press(qtbot, panel.take_over_btn)
    answer_confirm(qtbot, accept=True)
    qtbot.waitUntil(lambda: "founder now" in panel.message.text(), timeout=WAIT)
    qtbot.waitUntil(lambda: panel.pair_btn.isVisibleTo(panel), timeout=WAIT)
    assert not panel.take_over_btn.isVisibleTo(panel)
    assert "The founder is desktop" in panel.state.text()
    st = b.sync_status()
    assert st.founder and [d.name for d in st.devices if d.revoked] == ["laptop"]


class _Syncthing403:
    """A small server on 127.0.0.1 that answers as Syncthing's REST API does to a wrong key:
    403 for every call, and counts what it was asked (nothing may change there)."""

    def __init__(self) -> None:
        import http.server
        import threading
        self.calls: list[tuple[str, str]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _refuse(self) -> None:
                outer.calls.append((self.command, self.path))
                self.send_response(403)
                self.end_headers()
                self.wfile.write(b"Forbidden\n")

            do_GET = do_POST = do_PATCH = do_PUT = _refuse  # noqa: N815 (http.server's names)

            def log_message(self, *args: Any) -> None:
                pass
        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _tab_to(qtbot: Any, dlg: Any, widget: Any, limit: int = 12) -> None:
    for _ in range(limit):
        if QApplication.focusWidget() is widget:
            return
        qtbot.keyClick(QApplication.focusWidget() or dlg, Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is widget


def test_syncthing_step_in_set_up_says_each_failure_and_changes_nothing(
        qtbot: Any, vaults: Any) -> None:
    from tests.sync_loopback.harness import free_port
    a, _b, shared = vaults
    panel = _panel(qtbot, a)
    _press(qtbot, panel.set_up_btn)
    dlg = _dialog(qtbot, panel, "SyncJoinDialog")
    dlg.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is dlg, timeout=WAIT)
    dlg.folder.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.keyClicks(dlg.folder, str(shared))
    assert not dlg.st_device.isVisibleTo(dlg)
    _tab_to(qtbot, dlg, dlg.use_syncthing)  # folder, Choose, name, then the box
    qtbot.keyClick(dlg.use_syncthing, Qt.Key.Key_Space)
    assert dlg.use_syncthing.isChecked() and dlg.st_device.isVisibleTo(dlg)
    assert QApplication.focusWidget() is dlg.st_device
    qtbot.keyClick(dlg.st_device, Qt.Key.Key_Return)  # the default button: Set up
    assert "Syncthing ID" in dlg.said.text()  # said inline, nothing sent
    qtbot.keyClicks(dlg.st_device, "P56IOI7-MZJNU2Y-IQGDREY-DM2MGTI-MGL3BXN-PQ6W5BM-TBBZ4TJ-"
                    "XZWICQ2")
    qtbot.keyClick(dlg.st_device, Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is dlg.st_key
    qtbot.keyClick(dlg.st_key, Qt.Key.Key_Return)
    assert "API key" in dlg.said.text()
    key = "wrong-key-0123456789"
    qtbot.keyClicks(dlg.st_key, key)
    assert dlg.st_key.echoMode() == dlg.st_key.EchoMode.Password
    fake = _Syncthing403()
    try:
        qtbot.keyClick(dlg.st_key, Qt.Key.Key_Tab)
        assert QApplication.focusWidget() is dlg.st_address
        dlg.st_address.selectAll()
        qtbot.keyClicks(dlg.st_address, f"127.0.0.1:{fake.port}")
        qtbot.keyClick(dlg.st_address, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: "refused the API key (403)" in dlg.said.text(), timeout=WAIT)
        assert dlg.said.text().startswith("Syncthing not set up: ")
        assert key not in dlg.said.text()
        assert QApplication.focusWidget() is dlg.st_key and dlg.go_btn.isEnabled()
        assert [m for m, _p in fake.calls] == ["GET"]  # refused at the first call
    finally:
        fake.close()
    assert not a.sync_status().set_up and list(shared.iterdir()) == []
    # Nothing listening at the address: said, the cursor on the address.
    dlg.st_address.setText(f"127.0.0.1:{free_port()}")
    dlg.st_key.setFocus(Qt.FocusReason.OtherFocusReason)
    qtbot.keyClick(dlg.st_key, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "not answering" in dlg.said.text(), timeout=WAIT)
    assert QApplication.focusWidget() is dlg.st_address
    # An address that is not this computer: refused before any connection.
    dlg.st_address.setText("192.168.1.20:8384")
    qtbot.keyClick(dlg.st_address, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "is not this computer" in dlg.said.text(), timeout=WAIT)
    assert not a.sync_status().set_up and list(shared.iterdir()) == []
    # Untick it: Set up goes on without Syncthing.
    dlg.use_syncthing.setFocus(Qt.FocusReason.OtherFocusReason)
    qtbot.keyClick(dlg.use_syncthing, Qt.Key.Key_Space)
    assert not dlg.st_device.isVisibleTo(dlg)
    dlg.name.setFocus(Qt.FocusReason.OtherFocusReason)
    qtbot.keyClick(dlg.name, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "Sync is set up" in dlg.said.text(), timeout=WAIT)
    assert a.sync_status().set_up
    dlg.close()
