"""``kept serve --idle-lock`` (app/standby.py), in this process: a real vault, a real socket,
real clients (the person's and an assistant's ``RemoteVault``), and the in-memory keychain
from tests/conftest.py standing in for the OS one. The idle time is a fraction of a second."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.errors import RemoteRefused, VaultLocked, WrongKey
from app.ipc.client import RemoteVault
from app.standby import ServeSession
from tests.app.mcp.conftest import PW, seed_vault

IDLE_S = 0.6


def _opener(folder: Path, password: str | None, use_device: bool) -> Any:
    from app.facade import Vault
    return Vault.open(folder, password, use_device=use_device, load_model=False)


def _wait(what: Callable[[], bool], timeout: float = 15.0) -> None:
    end = time.monotonic() + timeout
    while not what():
        if time.monotonic() > end:
            raise AssertionError("timed out")
        time.sleep(0.02)


def _wait_locked(session: ServeSession) -> None:
    _wait(lambda: session.idle_locked)


@pytest.fixture
def seeded(tmp_path: Path) -> Any:
    return seed_vault(tmp_path / "v", ("a",), {"global": ("Ana lives in Lisbon",)})


@pytest.fixture
def keychain(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-memory backend counts as an allowlisted OS keychain."""
    import storage.crypto
    monkeypatch.setattr(storage.crypto, "keyring_available", lambda: True)


@contextlib.contextmanager
def _serve(folder: Path, prepare: Callable[[Any], None] | None = None
           ) -> Iterator[ServeSession]:
    vault = _opener(folder, PW, False)
    if prepare is not None:
        prepare(vault)
    session = ServeSession(vault, folder, idle_seconds=IDLE_S, opener=_opener, schedule=False)
    session.start()
    stop = threading.Event()
    outcome: list[str] = []
    thread = threading.Thread(target=lambda: outcome.append(session.serve_until_stopped(stop)))
    thread.start()
    try:
        yield session
    finally:
        stop.set()
        thread.join(10)
        session.lock()
    assert outcome == ["stopped"]


def _agent(seeded: Any) -> RemoteVault:
    return RemoteVault.at(seeded.folder, agent="a", key=seeded.keys["a"], timeout=20)


def test_idle_locks_keeps_serving_says_locked_and_unlocks_with_the_password(
        seeded: Any) -> None:
    with _serve(seeded.folder) as session:
        agent = _agent(seeded)
        assert agent.status().totals["semantic"] == 1  # unlocked: served
        _wait_locked(session)
        assert session.server is not None and session.server.still_bound()
        assert session.vault.current.locked  # the keys are gone, not only the door
        with pytest.raises(VaultLocked, match="locked: open Kept to unlock"):
            agent.status()
        fresh = _agent(seeded)  # a new assistant connection: refused at hello, same words
        with pytest.raises(VaultLocked, match="locked: open Kept to unlock"):
            fresh.status()
        person = RemoteVault.at(seeded.folder, timeout=20)
        with pytest.raises(VaultLocked):
            person.status()
        with pytest.raises(WrongKey):
            person.unlock_owner("not the password")
        assert session.idle_locked  # a wrong password opens nothing
        with pytest.raises((RemoteRefused, VaultLocked)):  # refused at hello, or after
            _agent_unlock(seeded)
        assert session.idle_locked
        assert person.unlock_owner(PW) is True
        assert not session.vault.locked
        assert person.unlock_owner(PW) is False  # not locked: nothing to do
        # The assistant's next call works again (it reconnects after "locked").
        agent.close()
        assert _agent(seeded).status().totals["semantic"] == 1
        # And it locks again after the next idle spell: the timer starts over.
        _wait_locked(session)
        person.close()


def _agent_unlock(seeded: Any) -> None:
    """An assistant's connection asks to unlock with the password: refused, whatever it
    holds."""
    agent = _agent(seeded)
    try:
        agent.unlock_owner(PW)
    finally:
        agent.close()


def test_zero_never_locks(seeded: Any) -> None:
    vault = _opener(seeded.folder, PW, False)
    session = ServeSession(vault, seeded.folder, idle_seconds=0, opener=_opener,
                           schedule=False)
    session.start()
    stop = threading.Event()
    thread = threading.Thread(target=session.serve_until_stopped, args=(stop,))
    thread.start()
    try:
        time.sleep(1.2)
        assert not session.vault.locked
        assert _agent(seeded).status().totals["semantic"] == 1
    finally:
        stop.set()
        thread.join(10)
        session.lock()
    assert session.vault.locked


def test_opt_in_lets_an_assistant_call_unlock_from_the_keychain(
        seeded: Any, keychain: None, _memory_keyring: Any) -> None:
    def opt_in(vault: Any) -> None:
        vault.remember_device()
        vault.set_assistant_unlock(True)
        assert vault.assistant_unlock()
    with _serve(seeded.folder, opt_in) as session:
        _wait_locked(session)
        # The assistant's call opens the vault from this device's keychain and is answered.
        assert _agent(seeded).status().totals["semantic"] == 1
        assert not session.vault.locked
        _wait_locked(session)  # and it locks again when idle
        assert _agent(seeded).status().totals["semantic"] == 1


def test_without_the_opt_in_a_remembered_device_still_waits_for_the_person(
        seeded: Any, keychain: None) -> None:
    with _serve(seeded.folder, lambda v: v.remember_device()) as session:
        _wait_locked(session)
        with pytest.raises(VaultLocked, match="locked: open Kept to unlock"):
            _agent(seeded).status()
        assert session.idle_locked


@pytest.mark.parametrize("half", ["keychain mark", "vault setting"])
def test_both_halves_are_needed(seeded: Any, keychain: None, _memory_keyring: Any,
                                half: str) -> None:
    """The keychain mark alone (a same-user program wrote it, or it is left from another
    vault setting) or the vault's setting alone (this device never chose it) opens
    nothing."""
    def opt_in_half(vault: Any) -> None:
        vault.remember_device()
        vault.set_assistant_unlock(True)
        if half == "keychain mark":  # the mark goes: the setting alone remains
            del _memory_keyring.items[("app.kept.vault", f"assistant-unlock-v1:"
                                       f"{vault.status().vault_id}")]
        else:
            vault.set_setting("owner.assistant_unlock", False)
        assert not vault.assistant_unlock()
    with _serve(seeded.folder, opt_in_half) as session:
        _wait_locked(session)
        with pytest.raises(VaultLocked):
            _agent(seeded).status()
        assert session.idle_locked


def test_a_mark_from_an_earlier_device_key_proves_nothing(
        seeded: Any, keychain: None, _memory_keyring: Any) -> None:
    """Forgetting and remembering the device again makes a new device key: the old mark no
    longer matches, so the opt-in must be given again."""
    from app.facade import Vault
    vault = Vault.open(seeded.folder, PW, load_model=False)
    try:
        vault.remember_device()
        vault.set_assistant_unlock(True)
        marks = {k: v for k, v in _memory_keyring.items.items()
                 if k[1].startswith("assistant-unlock-v1:")}
        vault.forget_device()
        assert not vault.assistant_unlock()
        vault.remember_device()
        _memory_keyring.items.update(marks)  # the old mark put back
        assert vault.setting("owner.assistant_unlock") is True
        assert not vault.assistant_unlock()
    finally:
        vault.lock()


def test_opting_in_needs_a_remembered_device(seeded: Any, keychain: None) -> None:
    from app.errors import KeyUnavailable
    from app.facade import Vault
    vault = Vault.open(seeded.folder, PW, load_model=False)
    try:
        with pytest.raises(KeyUnavailable, match="Remember on this device"):
            vault.set_assistant_unlock(True)
        assert vault.setting("owner.assistant_unlock") is False  # nothing half-done
        assert not vault.assistant_unlock()
    finally:
        vault.lock()


def test_the_window_takes_over_a_locked_serve(seeded: Any) -> None:
    """A locked ``kept serve`` holds no folder lock: another owner (the window) opens the
    vault and replaces the socket; ``kept serve`` then stops and leaves that socket alone."""
    from app.ipc.protocol import socket_path
    from app.owner import OwnerSession
    vault = _opener(seeded.folder, PW, False)
    session = ServeSession(vault, seeded.folder, idle_seconds=IDLE_S, opener=_opener,
                           schedule=False)
    session.start()
    stop = threading.Event()
    outcome: list[str] = []
    thread = threading.Thread(target=lambda: outcome.append(session.serve_until_stopped(stop)))
    thread.start()
    window: OwnerSession | None = None
    try:
        _wait_locked(session)
        window = OwnerSession(_opener(seeded.folder, PW, False), schedule=False)
        window.start()
        thread.join(10)
        assert outcome == ["taken"]
        session.lock()
        assert socket_path(seeded.folder).is_socket()  # the window's, still there
        assert _agent(seeded).status().totals["semantic"] == 1  # served by the window
    finally:
        stop.set()
        thread.join(10)
        session.lock()
        if window is not None:
            window.lock()


def test_only_a_paired_assistants_key_wakes_it(seeded: Any, keychain: None) -> None:
    """With the opt-in on, a program that makes up a name or a key opens nothing: the key
    is checked on the vault opened from the keychain before anything can use it."""
    def opt_in(vault: Any) -> None:
        vault.remember_device()
        vault.set_assistant_unlock(True)
    with _serve(seeded.folder, opt_in) as session:
        _wait_locked(session)
        for name, key in (("a", "not-the-key"), ("nobody", seeded.keys["a"])):
            with pytest.raises(VaultLocked):
                RemoteVault.at(seeded.folder, agent=name, key=key, timeout=20).status()
            assert session.idle_locked
        person = RemoteVault.at(seeded.folder, timeout=20)
        with pytest.raises(VaultLocked):  # nor did it leave a way in for the person's socket
            person.status()
        person.close()
        assert _agent(seeded).status().totals["semantic"] == 1  # the real key does
