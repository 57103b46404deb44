"""``OwnerSession`` (app/owner.py): unlock, serve, schedule, idle and lock in one place, on a
real vault, a real socket and a real scheduler. What the window and ``kept serve`` both rely
on: the socket goes first, then the jobs, then the keys."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from app.errors import OwnerNotRunning, VaultLocked
from app.ipc.client import RemoteVault
from app.ipc.protocol import socket_path
from app.owner import OwnerSession, idle_minutes
from tests.app.cli.conftest import PW, make_vault


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return make_vault(tmp_path / "v", ("Ana moved to Lisbon in May",))


def _opened(folder: Path, **kwargs: Any) -> OwnerSession:
    """A session over the vault unlocked without the model (the socket, the jobs and the lock
    order do not need it); ``kept serve``'s tests go through ``OwnerSession.open``."""
    from app.facade import Vault
    return OwnerSession(Vault.open(folder, PW, load_model=False), **kwargs)


def test_start_serves_and_schedules_then_lock_goes_socket_jobs_keys(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = OwnerSession.open(folder, PW)
    session.start()
    sock = socket_path(folder)
    try:
        assert session.server is not None and sock.is_socket()
        assert session.scheduler is not None and session.scheduler.running
        assert {j.id for j in session.scheduler.get_jobs()} >= {"heartbeat", "consolidation"}
        client = RemoteVault.at(folder, timeout=10)
        assert client.status().counts == session.vault.status().counts
        # What each step sees when it runs: the order is the point.
        seen: list[tuple[str, bool, bool, bool]] = []
        scheduler, vault = session.scheduler, session.vault
        real_shutdown, real_lock = scheduler.shutdown, vault.lock

        def shutdown(*a: Any, **k: Any) -> Any:
            seen.append(("jobs", sock.exists(), scheduler.running, vault.locked))
            return real_shutdown(*a, **k)

        def lock() -> Any:
            seen.append(("keys", sock.exists(), scheduler.running, vault.locked))
            return real_lock()
        monkeypatch.setattr(scheduler, "shutdown", shutdown)
        monkeypatch.setattr(vault, "lock", lock)
        between: list[bool] = []
        session.lock(before_keys=lambda: between.append(scheduler.running))
    finally:
        session.lock()  # twice is a no-op
    # The socket was gone when the jobs stopped; the jobs had stopped when the keys went.
    assert seen == [("jobs", False, True, False), ("keys", False, False, False)]
    assert between == [False]
    assert session.locked and session.vault.locked and not sock.exists()
    with pytest.raises((OwnerNotRunning, VaultLocked)):
        client.status()
    client.close()


def test_a_job_running_at_lock_is_cancelled_and_waited_for(folder: Path) -> None:
    session = _opened(folder, schedule=False)
    session.start()
    assert session.jobs is not None and session.scheduler is None
    session.lock()
    assert session.jobs.cancel.cancelled and session.vault.locked
    # A job the scheduler would start now is skipped, not run on a locked vault.
    assert not session.jobs.heartbeat().ok


def test_idle_ends_serving_and_a_request_keeps_it(folder: Path) -> None:
    session = _opened(folder, schedule=False)
    session.start()
    try:
        stop = threading.Event()
        client = RemoteVault.at(folder, timeout=10)

        def keep_busy() -> None:
            while not stop.wait(0.1):
                try:
                    client.status()
                except (OwnerNotRunning, VaultLocked):
                    return
        busy = threading.Thread(target=keep_busy)
        busy.start()
        began = time.monotonic()
        timer = threading.Timer(1.5, stop.set)
        timer.start()
        assert session.serve_until(stop, idle_seconds=0.6) == "stopped"  # requests came
        assert time.monotonic() - began >= 1.4
        busy.join()
        client.close()
        began = time.monotonic()
        assert session.serve_until(threading.Event(), idle_seconds=0.6) == "idle"
        assert 0.5 <= time.monotonic() - began < 10
    finally:
        session.lock()


def test_a_socket_that_cannot_be_made_leaves_the_rest_working(folder: Path) -> None:
    socket_path(folder).mkdir()  # something else is in the socket's place
    session = _opened(folder)
    session.start()
    try:
        assert session.server is None and session.serve_error
        assert session.scheduler is not None and session.scheduler.running
        assert session.vault.recall("Lisbon")
    finally:
        session.lock()
    assert session.vault.locked and session.scheduler is None


def test_strict_and_idle_minutes_come_from_the_session(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = _opened(folder, strict=True, schedule=False)
    session.start()
    try:
        assert session.server is not None and session.server.strict
        monkeypatch.delenv("KEPT_IDLE_MINUTES", raising=False)
        assert idle_minutes(session.vault) == float(session.vault.setting("lock.idle_minutes"))
        monkeypatch.setenv("KEPT_IDLE_MINUTES", "0.5")
        assert idle_minutes(session.vault) == 0.5
    finally:
        session.lock()
