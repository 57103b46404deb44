"""Syncthing set up through its REST API (issue 29, item 5; ``app/sync/syncthing.py`` and
``kept sync syncthing``) against real Syncthing instances on 127.0.0.1 (slow: ~15 s).

- a new folder at the sync path, shared with the other device, ``ignorePerms`` set, said in
  words; the other instance is offered the folder; a second call changes nothing;
- an existing folder at that path is found, not duplicated; a device Syncthing did not know
  is added;
- each failure is one clear error: the key refused (403), nothing listening, an address that
  is not Syncthing, one that is not this computer (refused before any connection), a device
  id that is not one, this Syncthing's own id;
- the CLI does it, and under ``strace -f`` every socket call it makes is to 127.0.0.1.
"""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.sync.syncthing import SyncthingApi, SyncthingError, set_up_folder
from tests.sync_loopback.harness import (
    Syncthing,
    free_port,
    loopback,
    needs_syncthing,
    network_calls,
    wait_for,
)

pytestmark = needs_syncthing()
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Syncthing, Syncthing]]:
    with loopback(tmp_path_factory.mktemp("st")) as (a, b):
        yield a, b


def _api(node: Syncthing) -> SyncthingApi:
    return SyncthingApi(f"127.0.0.1:{node.api_port}", node.api_key)


def _folder(node: Syncthing, fid: str) -> dict[str, Any]:
    got: dict[str, Any] = node.get(f"/rest/config/folders/{fid}")
    return got


def test_a_new_folder_is_shared_with_the_other_device(
        nodes: tuple[Syncthing, Syncthing], tmp_path: Path) -> None:
    a, b = nodes
    path = tmp_path / "Kept sync"
    path.mkdir()
    report = set_up_folder(_api(a), path, b.device_id.lower())  # typed in lower case
    assert report.folder_added and report.shared and not report.device_added
    assert report.folder_id.startswith("kept-")
    conf = _folder(a, report.folder_id)
    assert conf["path"] == str(path) and conf["label"] == "Kept" and conf["ignorePerms"]
    assert {d["deviceID"] for d in conf["devices"]} == {a.device_id, b.device_id}
    assert any(str(path) in line for line in report.lines)
    assert any(f"Shared it with {b.device_id[:7]}" in line for line in report.lines)

    # The other Syncthing is offered it (the person accepts it there).
    def offered() -> bool:
        pending = b.get("/rest/cluster/pending/folders") or {}
        return report.folder_id in pending
    wait_for("the folder offered on B", offered, 60, 0.2)

    # B's side the same way (the join dialog's Syncthing step): it accepts that folder, same
    # id, at its own path; then a file written on A arrives there.
    there = tmp_path / "Kept sync on B"
    there.mkdir()
    joined = set_up_folder(_api(b), there, a.device_id)
    assert joined.folder_id == report.folder_id and joined.folder_added
    assert any(f"Accepted the folder {a.device_id[:7]} offers" in line for line in joined.lines)
    assert _folder(b, report.folder_id)["path"] == str(there)
    (path / "hello").write_bytes(b"from A")
    a.post("/rest/db/scan", folder=report.folder_id)
    wait_for("A's file on B", lambda: (there / "hello").exists(), 60, 0.2)

    # Again: nothing changes, and it says so.
    again = set_up_folder(_api(a), path, b.device_id)
    assert (again.folder_added, again.shared, again.device_added, again.perms_ignored) == \
        (False, False, False, False)
    assert again.folder_id == report.folder_id
    assert any("already" in line for line in again.lines)
    ids = [f["id"] for f in a.get("/rest/config/folders")]
    assert len(ids) == len(set(ids)) and ids.count(report.folder_id) == 1


def test_an_existing_folder_is_found_and_an_unknown_device_added(
        nodes: tuple[Syncthing, Syncthing], tmp_path: Path) -> None:
    a, _b = nodes
    third = Syncthing("c", tmp_path / "home-c", tmp_path / "folder-c")
    third.generate()  # a real device id Syncthing A has never heard of
    # The harness's shared folder "kept" is at a.folder: found, not added; perms were not
    # ignored there, so they are now.
    assert not _folder(a, "kept")["ignorePerms"]
    report = set_up_folder(_api(a), a.folder / ".." / a.folder.name, third.device_id,
                           device_name="phone")
    assert report.folder_id == "kept" and not report.folder_added
    assert report.device_added and report.shared and report.perms_ignored
    assert _folder(a, "kept")["ignorePerms"]
    assert third.device_id in {d["deviceID"] for d in _folder(a, "kept")["devices"]}
    dev = a.get(f"/rest/config/devices/{third.device_id}")
    assert dev["name"] == "phone"
    assert any("Added the device" in line for line in report.lines)


class _NotSyncthing(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_each_failure_is_one_clear_error(nodes: tuple[Syncthing, Syncthing],
                                         tmp_path: Path) -> None:
    a, b = nodes
    with pytest.raises(SyncthingError, match=r"refused the API key \(403\)") as wrong:
        set_up_folder(SyncthingApi(f"127.0.0.1:{a.api_port}", "not-the-key"), tmp_path,
                      b.device_id)
    assert "not-the-key" not in str(wrong.value)
    with pytest.raises(SyncthingError, match="not answering at 127.0.0.1"):
        _api_at(free_port(), a.api_key).my_id()
    server = http.server.HTTPServer(("127.0.0.1", 0), _NotSyncthing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(SyncthingError, match="not as Syncthing's REST API"):
            _api_at(server.server_address[1], a.api_key).my_id()
    finally:
        server.shutdown()
    for address in ("192.168.1.20:8384", "syncthing.example.org:8384", "http://10.0.0.1"):
        with pytest.raises(SyncthingError, match="not this computer"):
            SyncthingApi(address, a.api_key)
    with pytest.raises(SyncthingError, match="not a Syncthing device id"):
        set_up_folder(_api(a), tmp_path, "hello")
    with pytest.raises(SyncthingError, match="own Syncthing device id"):
        set_up_folder(_api(a), tmp_path, a.device_id)
    with pytest.raises(SyncthingError, match="No API key"):
        SyncthingApi(f"127.0.0.1:{a.api_port}", " ")
    # Nothing was added by any of these.
    assert not any(f["path"] == str(tmp_path) for f in a.get("/rest/config/folders"))


def _api_at(port: int, key: str) -> SyncthingApi:
    return SyncthingApi(f"127.0.0.1:{port}", key)


def _kept(*args: str, traced: Path | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "app.cli", *args]
    if traced is not None:
        cmd = ["strace", "-f", "-qq", "-e", "trace=%network", "-o", str(traced), *cmd]
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_the_cli_sets_it_up_and_talks_to_127_0_0_1_only(
        nodes: tuple[Syncthing, Syncthing], tmp_path: Path) -> None:
    a, b = nodes
    path = tmp_path / "sync"
    path.mkdir()
    address = f"127.0.0.1:{a.api_port}"
    bad = _kept("sync", "syncthing", "--folder", str(path), "--device", b.device_id,
                "--address", address, "--api-key", "wrong")
    assert bad.returncode == 2 and "refused the API key (403)" in bad.stderr
    assert "wrong" not in bad.stderr.replace("refused", "")
    trace = tmp_path / "strace.txt"
    ok = _kept("sync", "syncthing", "--folder", str(path), "--device", b.device_id,
               "--address", address, "--api-key", a.api_key, traced=trace)
    assert ok.returncode == 0, ok.stderr
    assert f"Added the folder {path}" in ok.stdout and "Shared it with" in ok.stdout
    assert any(f["path"] == str(path) for f in a.get("/rest/config/folders"))
    calls = network_calls(trace.read_text())
    assert calls.outside == []
    assert f"connect 127.0.0.1:{a.api_port}" in calls.loopback
