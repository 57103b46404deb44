"""A real owner: ``kept serve`` in a subprocess on a real vault, the CLI through it without a
password, raw frames against it, the in-process OwnerServer for lock and peer checks."""

from __future__ import annotations

import os
import socket
import stat
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.facade import Vault
from app.ipc import protocol as p
from tests import ROOT
from tests.app.cli.conftest import PW, hashes, kept_in_process, make_vault


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KEPT_PASSWORD"}
    env.update(PYTHONPATH=str(ROOT), **extra)
    return env


def _wait_served(folder: Path, proc: subprocess.Popen[str], timeout: float = 90.0) -> None:
    from app.ipc.client import owner_running
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"kept serve exited: {proc.stderr.read() if proc.stderr else ''}")
        if owner_running(folder):
            return
        time.sleep(0.05)
    raise AssertionError("kept serve did not start serving")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    folder = make_vault(tmp_path / "v", ("Ana moved to Lisbon in May", "Bruno likes tea"))
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "--vault", str(folder), "serve"],
                            cwd=ROOT, env=_env(KEPT_PASSWORD=PW), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_served(folder, proc)
        yield folder, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    assert not p.socket_path(folder).exists()


def _kept(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app.cli", "--vault", str(folder), *args],
                          cwd=ROOT, env=_env(), text=True, capture_output=True, timeout=60)


def test_cli_through_owner_without_password(served: tuple[Path, subprocess.Popen[str]]) -> None:
    folder, _ = served
    sock = p.socket_path(folder)
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    r = kept_in_process(folder, "remember", "Carla starts at Acme on Monday", password=None)
    assert r.returncode == 0, r.stderr
    mid = int(r.stdout.strip())
    r = kept_in_process(folder, "recall", "Carla Acme", password=None)
    assert r.returncode == 0, r.stderr
    assert f"[{mid}]" in r.stdout and "Carla starts at Acme" in r.stdout
    for args in (("status",), ("history", str(mid)), ("explain", str(mid)),
                 ("context", "Lisbon"), ("contradictions",), ("recall", "Lisbon", "--json")):
        r = kept_in_process(folder, *args, password=None)
        assert r.returncode == 0, (args, r.stderr)
    # What the owner does not serve still refuses as before (the owner holds the vault).
    r = kept_in_process(folder, "forget", "--id", str(mid), "--yes", password=None)
    assert r.returncode == 2


def test_two_cli_processes_at_once(served: tuple[Path, subprocess.Popen[str]]) -> None:
    folder, _ = served
    argv = [sys.executable, "-m", "app.cli", "--vault", str(folder)]
    procs = [subprocess.Popen([*argv, "recall", "Lisbon"], cwd=ROOT, env=_env(), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE),
             subprocess.Popen([*argv, "remember", "Dora called about the flat"], cwd=ROOT,
                              env=_env(), text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)]
    outs = [pr.communicate(timeout=60) for pr in procs]
    assert [pr.returncode for pr in procs] == [0, 0], outs
    assert "Ana moved to Lisbon" in outs[0][0]
    assert "Dora called" in _kept(folder, "recall", "Dora flat").stdout


def _raw(folder: Path, data: bytes) -> bytes | None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(p.socket_path(folder)))
        s.sendall(data)
        return p.read_frame(s.recv)


def test_malformed_and_oversized_frames_change_nothing(
        served: tuple[Path, subprocess.Popen[str]]) -> None:
    folder, _ = served
    before = hashes(folder)
    bad = [b"{not json", b"\xff\xfe\x00", b'{"v":1,"id":3,"method":"forget","args":{}}',
           b'{"v":1,"id":4,"method":"remember","args":{"draft":{"text":5}}}',
           b'{"v":9,"id":5,"method":"ping","args":{}}']
    for payload in bad:
        reply = p.decode_reply(_raw(folder, struct.pack(">I", len(payload)) + payload) or b"")
        assert not reply.ok and reply.kind == "ProtocolError"
    reply = p.decode_reply(_raw(folder, struct.pack(">I", p.MAX_FRAME + 1) + b"x" * 100) or b"")
    assert not reply.ok and reply.kind == "ProtocolError" and "too large" in reply.message
    assert hashes(folder) == before
    r = kept_in_process(folder, "recall", "Bruno", password=None)  # the owner still serves
    assert r.returncode == 0 and "Bruno likes tea" in r.stdout


def test_idle_lock_keeps_serving_locked(tmp_path: Path) -> None:
    """``KEPT_IDLE_MINUTES`` (the alias of ``kept serve --idle-lock``): idle, the vault locks
    and the socket stays, answering "locked"; SIGTERM still ends it cleanly."""
    from tests.app.mcp.test_idle_lock_mcp import line_with
    folder = make_vault(tmp_path / "v")
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "--vault", str(folder), "serve"],
                            cwd=ROOT, env=_env(KEPT_PASSWORD=PW, KEPT_IDLE_MINUTES="0.02"),
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert "the vault is locked (keys wiped) and still served" in line_with(proc, "Idle")
        assert proc.poll() is None and p.socket_path(folder).is_socket()
        r = kept_in_process(folder, "status", password=None)
        assert r.returncode == 0 and "Locked" in r.stdout, r.stderr
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert not p.socket_path(folder).exists()


# --- in process: lock, peers -----------------------------------------------------------------

@pytest.fixture
def owner(tmp_path: Path) -> Iterator[object]:
    from app.ipc.server import OwnerServer
    folder = make_vault(tmp_path / "v", ("Ana moved to Lisbon",))
    vault = Vault.open(folder, PW, load_model=False, use_chroma=False)
    server = OwnerServer(vault)
    server.start()
    try:
        yield server
    finally:
        server.lock_vault()


def test_locked_vault_refuses_with_clear_message(owner: object) -> None:
    from app.errors import OwnerNotRunning, VaultLocked
    from app.ipc.client import RemoteVault
    from app.ipc.server import OwnerServer
    assert isinstance(owner, OwnerServer)
    remote = RemoteVault.at(owner.vault.folder)
    assert remote.recall("Lisbon", k=3)[0].text == "Ana moved to Lisbon"
    owner.vault.lock()  # locked under a live socket: every call refuses clearly
    with pytest.raises(VaultLocked, match="Kept is locked: open Kept to unlock it"):
        remote.recall("Lisbon")
    owner.stop()  # what locking does first: the socket goes
    assert not owner.path.exists()
    with pytest.raises(OwnerNotRunning, match="locked"):
        remote.status()
    with pytest.raises(OwnerNotRunning):
        RemoteVault.at(owner.vault.folder).status()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another uid")
def test_other_uid_cannot_use_the_owner(owner: object, tmp_path: Path) -> None:
    from app.ipc.server import OwnerServer
    assert isinstance(owner, OwnerServer)
    # A second listener on a world-open path, so the peer-credential check itself is tested
    # (the 0700 folder alone already stops another user at connect()).
    import shutil
    import tempfile
    open_dir = Path(tempfile.mkdtemp(prefix="kept-open-", dir="/tmp"))
    os.chmod(open_dir, 0o777)
    second = OwnerServer(owner.vault, path=open_dir / "kept.sock")
    second.start()
    os.chmod(second.path, 0o666)
    try:
        for path, expect in ((owner.path, "refused"), (second.path, "PermissionDenied")):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # child: become nobody and try
                os.close(r)
                try:
                    os.setgid(65534)
                    os.setuid(65534)
                    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                        s.settimeout(30)
                        s.connect(str(path))
                        try:  # the owner may have said no and closed before this is sent
                            s.sendall(p.encode_request(1, "recall", {"query": "Lisbon"}))
                        except BrokenPipeError:
                            pass  # its answer is waiting in the socket all the same
                        reply = p.decode_reply(p.read_frame(s.recv) or b"")
                        out = reply.kind if not reply.ok else "ANSWERED"
                except PermissionError:
                    out = "refused"
                except BaseException as exc:  # noqa: BLE001
                    out = type(exc).__name__
                os.write(w, out.encode())
                os._exit(0)
            os.close(w)
            got = os.read(r, 200).decode()
            os.waitpid(pid, 0)
            assert got == expect, (path, got)
    finally:
        second.stop()
        shutil.rmtree(open_dir, ignore_errors=True)
