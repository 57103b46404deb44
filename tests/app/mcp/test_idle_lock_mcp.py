"""``kept serve --idle-lock MINUTES`` end to end (issue 26, item 6): a real ``kept serve``
subprocess, the official SDK client through ``kept mcp``, ``kept status`` and ``kept unlock``
as a person runs them; and the keychain opt-in with the owner in this process (the
in-memory keychain of tests/conftest.py lives here). Idle times are about a second."""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession

from tests import ROOT
from tests.app.mcp.conftest import (
    child_env,
    kept_argv,
    mcp_params,
    password_file,
    seed_vault,
    stop_serve,
    structured,
    tool_error,
    wait_served,
    with_mcp,
)

_readers: dict[int, queue.Queue[str]] = {}


def line_with(proc: subprocess.Popen[str], text: str, timeout: float = 30.0) -> str:
    """The next line of ``proc``'s stdout holding ``text`` (read on a helper thread, so a
    process that never says it fails the test instead of hanging it)."""
    lines = _readers.get(proc.pid)
    if lines is None:
        lines = _readers[proc.pid] = queue.Queue()
        out = proc.stdout
        assert out is not None
        threading.Thread(target=lambda: [lines.put(x) for x in out], daemon=True).start()
    end = time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.01, end - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"kept serve never said {text!r}") from None
        if text in line:
            return line


def kept(folder: Path, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``kept --vault F --password-file P ARGV`` as the person runs it."""
    done = subprocess.run([*kept_argv(), "--vault", str(folder), "--password-file",
                           str(password_file(folder)), *argv], cwd=ROOT, env=child_env(),
                          text=True, capture_output=True, timeout=120)
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.mark.slow  # long: runs in the slow group (CI runs it)
def test_idle_lock_flag_locked_status_unlock_and_back(tmp_path: Path) -> None:
    seeded = seed_vault(tmp_path / "v", ("a",), {"global": ("Ana moved to Lisbon",)})
    folder = seeded.folder
    proc = subprocess.Popen([*kept_argv(), "--vault", str(folder), "--password-file",
                             str(password_file(folder)), "serve", "--no-schedule",
                             "--idle-lock", "0.03"],
                            cwd=ROOT, env=child_env(KEPT_IDLE_MINUTES="60"), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_served(folder, proc)
        # The flag wins over KEPT_IDLE_MINUTES, and --help-level words say what happens.
        assert "locks after 0.03 idle minutes and keeps serving" in line_with(proc, "Serving")
        params = mcp_params(folder, "a", seeded.keys["a"])

        # Locked after the idle time, still up: the call says what to do, in words.
        line_with(proc, "Idle for")

        async def locked(s: ClientSession, tools: dict[str, Any]) -> str:
            return tool_error(await s.call_tool("recall", {"query": "Lisbon"}))

        assert "locked: open Kept to unlock" in with_mcp(params, locked)
        status = kept(folder, "status")
        assert "Locked" in status.stdout and "kept unlock" in status.stdout
        assert '"locked": true' in kept(folder, "status", "--json").stdout
        wrong = subprocess.run([*kept_argv(), "--vault", str(folder), "unlock"], cwd=ROOT,
                               env=child_env(KEPT_PASSWORD="wrong password"), text=True,
                               capture_output=True, timeout=120)
        assert wrong.returncode != 0 and "Traceback" not in wrong.stderr

        async def unlocked(s: ClientSession, tools: dict[str, Any]) -> tuple[str, Any]:
            before = tool_error(await s.call_tool("recall", {"query": "Lisbon"}))
            done = await anyio.to_thread.run_sync(lambda: kept(folder, "unlock"))
            assert "Unlocked" in done.stdout
            return before, structured(tools, "recall",
                                      await s.call_tool("recall", {"query": "Lisbon"}))

        before, found = with_mcp(params, unlocked)
        assert "locked: open Kept to unlock" in before and "Lisbon" in str(found)
        assert "Unlocked with the password" in line_with(proc, "Unlocked")
    finally:
        err = stop_serve(proc)
    assert proc.returncode == 0, err


def test_unlock_without_an_owner_says_so(tmp_path: Path) -> None:
    seeded = seed_vault(tmp_path / "v", ("a",))
    done = kept(seeded.folder, "unlock", check=False)
    assert done.returncode != 0 and "kept serve" in done.stderr
    assert "Traceback" not in done.stderr


def test_opt_in_unlocks_for_an_assistant_through_mcp(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the opt-in on (Settings > This device), an MCP call after the idle lock opens
    the vault from this device's keychain and is answered; with it off the call says
    locked."""
    import storage.crypto
    from app.facade import Vault
    from app.standby import ServeSession
    from tests.app.mcp.conftest import PW
    monkeypatch.setattr(storage.crypto, "keyring_available", lambda: True)
    seeded = seed_vault(tmp_path / "v", ("a",), {"global": ("Ana moved to Lisbon",)})
    folder = seeded.folder

    def opener(f: Path, password: str | None, device: bool) -> Any:
        return Vault.open(f, password, use_device=device, load_model=False)

    params = mcp_params(folder, "a", seeded.keys["a"])
    for allowed in (True, False):
        vault = opener(folder, PW, False)
        vault.remember_device()
        vault.set_assistant_unlock(allowed)
        session = ServeSession(vault, folder, idle_seconds=0.5, opener=opener, schedule=False)
        session.start()
        stop = threading.Event()
        thread = threading.Thread(target=session.serve_until_stopped, args=(stop,))
        thread.start()
        try:
            result = with_mcp(params, partial(_status_after_lock, session, allowed))
            if allowed:
                assert result["memories"]["semantic"] == 1, result
            else:
                assert "locked: open Kept to unlock" in result
                assert session.idle_locked
        finally:
            stop.set()
            thread.join(10)
            session.lock()


async def _status_after_lock(session: Any, allowed: bool, s: ClientSession,
                             tools: dict[str, Any]) -> Any:
    """Once ``session`` locked itself: the status tool's result, or its error's words."""
    await anyio.to_thread.run_sync(lambda: _wait(lambda: session.idle_locked))
    result = await s.call_tool("status", {})
    return structured(tools, "status", result) if allowed else tool_error(result)


def _wait(what: Any, timeout: float = 15.0) -> None:
    end = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)
