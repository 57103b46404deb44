"""Two Kept owners over two real Syncthing instances, for the engine loopback tests and
bench/sync_engine_syncthing.py (issue 29, "Tests and targets").

``make_vaults`` creates the two real vaults of one synced vault as the engine tests do
(``tests/app/sync/fleet.py``): A the founder, B certified by A, one epoch key. Each vault then
runs in its own process (``tests/sync_loopback/owner_proc.py``), so a test can kill -9 it;
``OwnerProc`` sends it JSON commands and reads its replies. Each vault's synced folder is a
subfolder of its own Syncthing instance's copy of the shared folder (one pair of instances
serves several scenarios, each in its own subfolder).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.sync_loopback.harness import FOLDER_ID, Syncthing

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "pw"
T_CERT = 1_764_150_000
READY_S = 120.0       # opening a vault and loading the model, on a loaded machine
REPLY_S = 120.0


def make_vaults(base: Path, names: tuple[str, ...] = ("a", "b")) -> list[Path]:
    """Real vaults of one synced vault in ``base/vault-<name>``, locked again (the owner
    processes open them). The first is the founder."""
    from app.facade import Vault
    from app.sync.keys import DeviceSecret, EpochKey, issue_certificate, new_vault_id
    from storage import sync_keys
    from tests.inside import inside

    vault_id = new_vault_id()
    secrets_ = [DeviceSecret.generate() for _ in names]
    founder = secrets_[0]
    key = EpochKey.generate(1)
    certs = [issue_certificate(founder, vault_id, s.sign_public, s.box_public, n, T_CERT)
             for n, s in zip(names, secrets_, strict=True)]
    out = []
    for n, s in zip(names, secrets_, strict=True):
        path = base / f"vault-{n}"
        shutil.copytree(_blank(base), path)
        v = Vault.open(path, PASSWORD, threaded=False, use_chroma=False, load_model=False,
                       verify="sync")

        def setup(conn: Any, s: DeviceSecret = s, n: str = n) -> None:
            sync_keys.put_self(conn, vault_id, s.device_id, s.to_bytes(), n,
                               founder.sign_public, T_CERT)
            for c in certs:
                sync_keys.put_device(conn, c.device_id, c.to_bytes(), T_CERT)
            sync_keys.put_epoch_key(conn, key.epoch, key.key, T_CERT)
        inside(v).db.write_sync(setup)
        v.lock()
        out.append(path)
    return out


_BLANK: dict[str, Path] = {}


def _blank(base: Path) -> Path:
    """An empty vault with every migration, made once per process and copied for each vault
    (a create costs a derive and every migration; a copy opens with one derive). Floor
    Argon2id parameters, as the tests' ``fast_kdf``."""
    from app.facade import Vault
    from storage.crypto import KdfParams
    if "v" not in _BLANK or not _BLANK["v"].exists():
        path = base / "blank-vault"
        Vault.create(path, PASSWORD, kdf=KdfParams(m=65_536, t=3, p=4), threaded=False,
                     use_chroma=False, load_model=False).vault.lock()
        _BLANK["v"] = path
    return _BLANK["v"]


class OwnerDied(RuntimeError):
    pass


@dataclass
class OwnerProc:
    """One owner process: ``vault`` synced through ``node``'s copy, in subfolder ``sub``."""

    name: str
    vault: Path
    node: Syncthing
    sub: str
    skew: float = 0.0
    proc: subprocess.Popen[str] | None = None
    acked: list[str] = field(default_factory=list)   # every memory a loop said it committed

    @property
    def folder(self) -> Path:
        return self.node.folder / self.sub

    def start(self) -> None:
        self.spawn()
        self.ready()

    def spawn(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        cmd = [sys.executable, "-m", "tests.sync_loopback.owner_proc", str(self.vault),
               str(self.folder), "--api", f"127.0.0.1:{self.node.api_port}",
               "--api-key", self.node.api_key, "--folder-id", FOLDER_ID, "--sub", self.sub,
               "--skew", str(self.skew)]
        log = open(self.vault.parent / f"owner-{self.name}.log", "a")  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)
        log.close()
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(self.proc, self._lines), daemon=True).start()

    def ready(self) -> None:
        first = self._next(READY_S)
        if not first.get("ready"):
            raise OwnerDied(f"{self.name}: {first}")

    @staticmethod
    def _pump(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def _next(self, timeout: float) -> dict[str, Any]:
        """The next reply; ``acked`` lines of a loop are collected on the way."""
        end = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"{self.name}: no reply within {timeout:.0f} s") from None
            if line is None:
                raise OwnerDied(f"{self.name} exited ({self._log_tail()})")
            msg: dict[str, Any] = json.loads(line)
            if "acked" in msg:
                self.acked.append(msg["acked"])
                continue
            return msg

    def _log_tail(self) -> str:
        try:
            return (self.vault.parent / f"owner-{self.name}.log").read_text()[-1500:]
        except OSError:
            return ""

    def send(self, op: str, **kw: Any) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **kw}) + "\n")
        self.proc.stdin.flush()

    def reply(self, timeout: float = REPLY_S) -> Any:
        msg = self._next(timeout)
        if "error" in msg:
            raise RuntimeError(f"{self.name}: {msg['error']}: {msg.get('detail')}")
        return msg["ok"]

    def cmd(self, op: str, timeout: float = REPLY_S, **kw: Any) -> Any:
        self.send(op, **kw)
        return self.reply(timeout)

    def drain_acks(self) -> None:
        """Collect the ``acked`` lines already printed (after a kill: what was promised)."""
        while True:
            try:
                line = self._lines.get(timeout=0.5)
            except queue.Empty:
                return
            if line is None:
                return
            msg = json.loads(line)
            if "acked" in msg:
                self.acked.append(msg["acked"])

    def kill(self) -> None:
        """kill -9, mid-whatever."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.drain_acks()
        self.proc = None

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            self.send("quit")
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.proc = None


def start_pair(base: Path, a_node: Syncthing, b_node: Syncthing, sub: str,
               skew: dict[str, float] | None = None) -> tuple[OwnerProc, OwnerProc]:
    """Two new vaults, each in its own owner process over its own Syncthing instance."""
    va, vb = make_vaults(base)
    a = OwnerProc("a", va, a_node, sub, (skew or {}).get("a", 0.0))
    b = OwnerProc("b", vb, b_node, sub, (skew or {}).get("b", 0.0))
    # Started together: each loads the model (~2-5 s under load).
    for o in (a, b):
        o.spawn()
    for o in (a, b):
        o.ready()
    return a, b


def settle(owners: tuple[OwnerProc, ...], timeout: float = 60.0) -> str:
    """Tick every owner until all state hashes agree and stay so for one more round; the
    hash."""
    end = time.monotonic() + timeout
    while True:
        for o in owners:
            o.cmd("tick")
        hashes = {o.cmd("state")["hash"] for o in owners}
        if len(hashes) == 1:
            for o in owners:
                o.cmd("tick")
            again = {o.cmd("state")["hash"] for o in owners}
            if again == hashes:
                return hashes.pop()
        if time.monotonic() > end:
            raise TimeoutError(f"state hashes still differ after {timeout:.0f} s: {hashes}")
        time.sleep(0.2)
