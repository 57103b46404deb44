"""kill -9 of the owner during writes (issue 14, tests 3): ``RemoteVault`` clients (the person's
and two assistants') write from threads through a headless ``kept serve``; the owner is killed
with SIGKILL mid-stream. Each client then gets ``OwnerNotRunning`` (a clear error, at once,
not a hang), and the vault opens in this process with every acknowledged write in it."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from app.facade import Vault
from tests.app.mcp.conftest import PW, seed_vault, start_serve, stop_serve

CLIENT_TIMEOUT = 5.0  # seconds a client waits for an answer: a hang fails the test


def _one_kill(folder: Path, keys: dict[str, str], before_kill: int) -> dict[int, tuple[str, str]]:
    """Serve, write from three threads until ``before_kill`` writes are acknowledged, kill -9,
    check what the clients saw. Returns the acknowledged writes (id -> scope, text)."""
    from app.domain.memory import Draft
    from app.errors import OwnerNotRunning
    from app.ipc.client import RemoteVault
    proc = start_serve(folder)
    acked: dict[int, tuple[str, str]] = {}
    guard = threading.Lock()
    errors: dict[str, BaseException] = {}

    def writer(scope: str) -> None:
        remote = (RemoteVault.at(folder, timeout=CLIENT_TIMEOUT) if scope == "global" else
                  RemoteVault.at(folder, agent=scope, key=keys[scope], timeout=CLIENT_TIMEOUT))
        n = 0
        try:
            while n < 100_000:
                text = f"{scope} write {n} at pid {proc.pid}"
                mid = int(remote.remember(Draft(text=text)).value)
                with guard:
                    acked[mid] = (scope, text)
                n += 1
        except BaseException as exc:  # noqa: BLE001 - what the client saw is the result
            errors[scope] = exc
        finally:
            remote.close()

    threads = [threading.Thread(target=writer, args=(s,), daemon=True)
               for s in ("global", "a", "b")]
    try:
        for t in threads:
            t.start()
        end = time.monotonic() + 60
        while len(acked) < before_kill and time.monotonic() < end and not errors:
            time.sleep(0.005)
        assert not errors, errors
        assert len(acked) >= before_kill
        os.kill(proc.pid, signal.SIGKILL)
        for t in threads:
            t.join(timeout=CLIENT_TIMEOUT + 10)
            assert not t.is_alive(), "a client hung after the owner died"
    finally:
        stop_serve(proc)
    assert proc.returncode == -signal.SIGKILL
    assert set(errors) == {"global", "a", "b"}
    for scope, exc in errors.items():
        assert isinstance(exc, OwnerNotRunning), (scope, repr(exc))
        assert "Kept is not running" in exc.user_message
    # A new client: the stale socket file is there, nothing answers; clear and immediate.
    with pytest.raises(OwnerNotRunning):
        RemoteVault.at(folder, timeout=CLIENT_TIMEOUT).status()
    return acked


def _check_vault(folder: Path, acked: dict[int, tuple[str, str]]) -> int:
    from app.api import MemoryQuery
    vault: Any = Vault.open(folder, PW, load_model=False, use_chroma=False)
    try:
        for mid, (scope, text) in acked.items():
            m = vault.get(mid)
            assert (m.agent, m.text) == (scope, text)
        count = int(vault.count_memories(MemoryQuery()))
        # At most one write per client was in flight (sent, not acknowledged) at the kill.
        assert len(acked) <= count
        return count
    finally:
        vault.lock()


def test_kill_9_during_writes_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    seeded = seed_vault(tmp_path / "v", ("a", "b"))
    acked = _one_kill(seeded.folder, seeded.keys, before_kill=30)
    _check_vault(seeded.folder, acked)


@pytest.mark.slow
def test_kill_9_loop(tmp_path: Path) -> None:
    """Ten owners killed at varying points on the same vault; a new ``kept serve`` starts
    each time on the stale socket, and nothing acknowledged is ever lost."""
    seeded = seed_vault(tmp_path / "v", ("a", "b"))
    acked: dict[int, tuple[str, str]] = {}
    for round_ in range(10):
        got = _one_kill(seeded.folder, seeded.keys, before_kill=20 + 37 * round_)
        assert not set(got) & set(acked)  # an id is never given twice
        acked.update(got)
        _check_vault(seeded.folder, acked)
