"""``kept serve --idle-lock MINUTES``: an owner that locks when idle and stays up (issue 26,
item 6). Layer: app (no Qt). Runs on: ``kept serve``'s main thread (``serve``); ``unlock`` and
``wake`` run on the socket's connection threads.

After ``idle_seconds`` without a request the vault locks exactly as any lock does (the jobs
stop, the keys are wiped: ``VaultAPI.lock``), but the socket stays: every call is then answered
"Kept is locked: open Kept to unlock it" (``app.ipc.server.LOCKED_MESSAGE``), ``kept status``
says so, and the vault opens again with

- ``kept unlock`` (the password, over the socket: the protocol's ``unlock``);
- the window: a locked ``kept serve`` holds no folder lock, so the window opens the vault and
  takes the socket over; ``serve`` sees its socket replaced and stops ("taken");
- an assistant's call, only when the person opted in on this device (Settings > This device;
  ``Vault.set_assistant_unlock``): the vault opens with this device's keychain key. Both the
  vault's setting and this device's keychain mark must say so (storage/device_unlock.py,
  docs/security.md#assistant-unlock).

A vault that opens again is a new ``Vault``; the socket, the assistants' sessions and the jobs
all hold a ``SwitchableVault``, which forwards to whichever is current.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from app.api import VaultAPI
from app.errors import AppError, VaultLocked
from app.owner import OwnerSession

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    _Contract = VaultAPI  # mypy reads every member from the contract itself
else:
    _Contract = object

# Opens the vault in a folder: ``Vault.open``'s password and use_device.
Opener = Callable[[Path, str | None, bool], VaultAPI]


class SwitchableVault(_Contract):
    """The vault ``kept serve`` serves now: every attribute is the current ``Vault``'s, and a
    vault opened again replaces a locked one (``switch``). Build with ``around``."""

    def __init__(self, vault: VaultAPI) -> None:
        self._current = vault

    @classmethod
    def around(cls, vault: VaultAPI) -> SwitchableVault:
        return cls(vault)

    @property
    def current(self) -> VaultAPI:
        return self._current

    def switch(self, vault: VaultAPI) -> None:
        self._current = vault

    def __getattr__(self, name: str) -> Any:
        return getattr(self._current, name)


def _open(folder: Path, password: str | None, use_device: bool) -> VaultAPI:
    from app.facade import Vault
    if use_device:
        return Vault.open(folder, use_device=True)
    return Vault.open(folder, password)


class ServeSession(OwnerSession):
    """``OwnerSession`` for ``kept serve``: locks after ``idle_seconds`` (0: never) and keeps
    serving, locked, until stopped. ``notify`` hears each change of state in words (no
    content); ``opener`` opens the vault again (tests open it without the model)."""

    def __init__(self, vault: VaultAPI, folder: Path, *, idle_seconds: float,
                 notify: Callable[[str], None] | None = None, opener: Opener | None = None,
                 **kwargs: Any) -> None:
        self.switchable = SwitchableVault.around(vault)
        super().__init__(self.switchable, **kwargs)
        self.folder = folder
        self.idle_seconds = max(0.0, idle_seconds)
        self.notify = notify or (lambda _text: None)
        self.opener = opener or _open
        self.unlocked_at = time.monotonic()
        self._assistant_unlock = False  # what the vault said when it last locked
        self._reopen_guard = threading.Lock()
        self._asleep = False  # idle_lock finished (keys wiped, folder lock released)

    @classmethod
    def serve(cls, folder: Path, password: str | None = None, *, device: bool = False,
              idle_seconds: float, notify: Callable[[str], None] | None = None,
              strict: bool | None = None, schedule: bool = True) -> ServeSession:
        """Unlock the vault in ``folder`` (its password, or this device's keychain)."""
        vault = _open(folder, password, device)
        return cls(vault, folder, idle_seconds=idle_seconds, notify=notify, strict=strict,
                   schedule=schedule)

    def start(self) -> None:
        super().start()
        if self.server is not None:
            self.server.unlocker = self.unlock
            self.server.wake = self.wake

    # --- state -------------------------------------------------------------------------------
    @property
    def idle_locked(self) -> bool:
        """Locked when idle, all the way (keys wiped, the folder free for the window), and
        still serving (not stopped)."""
        return self._asleep and not self.locked

    def serve_until_stopped(self, stop: threading.Event) -> Literal["stopped", "taken"]:
        """Serve until ``stop`` is set ("stopped") or another owner took the socket over
        ("taken": the window opened the vault while it was locked); lock when idle."""
        tick = min(1.0, self.idle_seconds / 4) if self.idle_seconds > 0 else 1.0
        while not stop.wait(tick):
            server = self.server
            if server is None:
                return "stopped"
            if not server.still_bound():
                return "taken"
            if (self.idle_seconds > 0 and not self.vault.locked
                    and min(self.idle_for(), time.monotonic() - self.unlocked_at)
                    >= self.idle_seconds):
                self.idle_lock()
        return "stopped"

    # --- lock and unlock ---------------------------------------------------------------------
    def idle_lock(self) -> bool:
        """Stop the jobs and wipe the keys; the socket stays. False if already locked."""
        with self._reopen_guard:
            if self.vault.locked or self.locked:
                return False
            try:
                self._assistant_unlock = bool(self.vault.assistant_unlock())
            except AppError:
                self._assistant_unlock = False
            self.stop_jobs()
            self.vault.lock()
            self._asleep = True
        self.notify(f"Idle for {self.idle_seconds / 60:g} minutes: the vault is locked (keys "
                    "wiped) and still served; `kept unlock` opens it again.")
        return True

    def unlock(self, password: str) -> bool:
        """``kept unlock``: open the vault again with the password. ``WrongKey`` when it is
        not; False when it was not locked."""
        return self._reopen(password, use_device=False, how="with the password")

    def wake(self, agent: str, key: str) -> None:
        """An assistant called while locked: open from this device's keychain if the person
        opted in, here and in the vault (checked again once open), and only for a paired
        assistant's current key (checked on the opened vault before anything can use it: a
        program that makes up a name and key opens nothing). Never raises: whatever fails
        leaves the vault locked and the call answered "locked"."""
        if not self._assistant_unlock:
            return
        from app import bootstrap
        if not bootstrap.assistant_unlock_allowed(self.folder):
            return
        try:
            self._reopen(None, use_device=True, agent=(agent, key),
                         how="from this device's keychain for an assistant")
        except AppError as exc:
            log.warning("assistant unlock failed: %s", type(exc).__name__)

    def _reopen(self, password: str | None, *, use_device: bool, how: str,
                agent: tuple[str, str] | None = None) -> bool:
        with self._reopen_guard:
            if self.locked:
                raise VaultLocked()  # stopped for good
            if not self.vault.locked:
                return False
            vault = self.opener(self.folder, password, use_device)
            try:
                if use_device and not vault.assistant_unlock():  # the vault's own word, now
                    vault.lock()
                    return False
                if agent is not None:
                    vault.verify_agent(*agent)  # AgentNotPaired: never switched in
            except BaseException:
                vault.lock()
                raise
            self.switchable.switch(vault)
            self._asleep = False
            self._start_jobs()
            self.unlocked_at = time.monotonic()
            if self.server is not None:
                self.server.last_request = self.unlocked_at
        self.notify(f"Unlocked {how}.")
        return True

    def lock(self, before_keys: Callable[[], None] | None = None) -> None:
        """For good (Ctrl-C, SIGTERM): never while a vault is being opened again."""
        with self._reopen_guard:
            super().lock(before_keys)
