"""The set-up and join dialogs' "Use Syncthing on this computer" step against two real
Syncthing instances on 127.0.0.1 (issue 29 item 5; slow, ~1 min): the founder's window sets
sync up and shares the folder with the other device's Syncthing; the new device's window
accepts that folder in its own Syncthing (same folder id, its own path), says to press Join
again while the files are on their way, then joins with the code, the pairing going through
Syncthing both ways. Real vaults (SQLCipher, no model), real widgets offscreen, driven with
keys; the harness's instances (tests/sync_loopback/harness.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt, QThreadPool
from PySide6.QtWidgets import QApplication

from tests.conftest import new_vault
from tests.sync_loopback.harness import Syncthing, loopback, needs_syncthing

pytestmark = [*needs_syncthing(), pytest.mark.gui]
PW = "syncthing dialog password"
WAIT = 60_000


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[list[Syncthing]]:
    with loopback(tmp_path / "st") as nodes:
        yield nodes


def _scan_all(nodes: list[Syncthing]) -> None:
    """What a watcher would do: rescan every folder each instance has (Kept's own folders
    here, the harness's "kept" besides)."""
    for node in nodes:
        for f in node.get("/rest/config/folders"):
            node.post("/rest/db/scan", folder=f["id"])


def _fill(qtbot: Any, dlg: Any, folder: Path, peer: Syncthing, me: Syncthing) -> None:
    dlg.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is dlg, timeout=WAIT)
    dlg.folder.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.keyClicks(dlg.folder, str(folder))
    dlg.use_syncthing.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.keyClick(dlg.use_syncthing, Qt.Key.Key_Space)
    qtbot.keyClicks(dlg.st_device, peer.device_id)
    qtbot.keyClick(dlg.st_device, Qt.Key.Key_Tab)
    qtbot.keyClicks(dlg.st_key, me.api_key)
    qtbot.keyClick(dlg.st_key, Qt.Key.Key_Tab)
    dlg.st_address.selectAll()
    qtbot.keyClicks(dlg.st_address, f"127.0.0.1:{me.api_port}")


def test_set_up_and_join_through_real_syncthing_from_the_dialogs(
        qtbot: Any, nodes: list[Syncthing], tmp_path: Path) -> None:
    from ui.bridge import CoreBridge
    from ui.dialogs.sync_pair import SyncJoinDialog, _Stepping
    _Stepping.POLL_MS = 100
    st_a, st_b = nodes
    pa, pb = tmp_path / "A sync", tmp_path / "B sync"
    pa.mkdir()
    pb.mkdir()
    a = new_vault(tmp_path / "a", PW, load_model=False, use_chroma=False)
    b = new_vault(tmp_path / "b", PW, load_model=False, use_chroma=False)
    try:
        up = SyncJoinDialog(a, CoreBridge(), set_up=True)
        qtbot.addWidget(up)
        up.show()
        _fill(qtbot, up, pa, st_b, st_a)
        qtbot.keyClick(up.st_address, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: "Sync is set up" in up.said.text(), timeout=WAIT)
        assert "Syncthing: Added the folder" in up.said.text()
        (fid,) = [f["id"] for f in st_a.get("/rest/config/folders") if f["path"] == str(pa)]
        shared = {d["deviceID"] for d in st_a.get(f"/rest/config/folders/{fid}")["devices"]}
        assert st_b.device_id in shared and a.sync_status().set_up
        code = a.sync_invite().value.code

        join = SyncJoinDialog(b, CoreBridge())
        qtbot.addWidget(join)
        join.show()
        _fill(qtbot, join, pb, st_a, st_b)
        join.code.setFocus(Qt.FocusReason.OtherFocusReason)
        qtbot.keyClicks(join.code, code)
        qtbot.keyClick(join.code, Qt.Key.Key_Return)
        # b's Syncthing takes a's folder (same id, its own path); the files are on their way.
        qtbot.waitUntil(lambda: join.syncthing_done and join.go_btn.isEnabled(), timeout=WAIT)
        got = {f["id"]: f["path"] for f in st_b.get("/rest/config/folders")}
        assert got.get(fid) == str(pb)
        assert "press Join again" in join.said.text() or "Waiting" in join.said.text()

        def arrived() -> bool:
            _scan_all(nodes)
            return (pb / "kept-sync-root.v1").exists() and (pb / "v1" / "pair").exists()
        qtbot.waitUntil(arrived, timeout=WAIT)
        if join.go_btn.isEnabled():  # pressed Join once more, as the message says
            join.code.setFocus(Qt.FocusReason.OtherFocusReason)
            qtbot.keyClick(join.code, Qt.Key.Key_Return)

        def paired() -> bool:  # a's window steps its side (Vault.sync_pair_step)
            _scan_all(nodes)
            a.sync_pair_step()
            return "This device joined" in join.said.text()
        qtbot.waitUntil(paired, timeout=90_000)
        assert b.sync_status().vault_id == a.sync_status().vault_id
        assert not join.use_syncthing.isEnabled()  # done once; not asked again
    finally:
        QThreadPool.globalInstance().waitForDone(WAIT)
        a.lock()
        b.lock()
