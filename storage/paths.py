"""Where vaults live, their permissions, and the one-owner lock. Layer: storage.

A vault is a folder: ``vault.key.json`` (no secrets), ``vault.db`` (+ ``-wal``/``-shm``) and
``vault.lock``. On POSIX the folder is 0700 and every file 0600, and Kept refuses to start
otherwise (SECURITY.md requirement 22).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import IO

import platformdirs

from app.errors import InsecurePermissions, VaultBusy

log = logging.getLogger(__name__)

APP_NAME = "Kept"
DB_FILE = "vault.db"
LOCK_FILE = "vault.lock"
# Written into the lock file so that it is not an empty file, which SQLite (and so any tool
# probing the folder) would open as an empty database. No content, no pid: just the purpose.
LOCK_MARKER = b"Kept vault lock: the process that has this vault open holds an OS lock here.\n"


def default_vault_dir() -> Path:
    return Path(platformdirs.user_data_path(APP_NAME, appauthor=False)) / "vault"


def config_dir() -> Path:
    return Path(platformdirs.user_config_path(APP_NAME, appauthor=False))


def log_dir() -> Path:
    return Path(platformdirs.user_log_path(APP_NAME, appauthor=False))


def private_umask() -> None:
    """Files created from here on (SQLite's -wal/-shm included) are 0600, folders 0700."""
    if os.name == "posix":
        os.umask(0o077)


def make_private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.name == "posix":
        os.chmod(path, 0o700)


def check_permissions(folder: Path) -> None:
    """Requirement 22: the folder 0700, its files 0600 (no group/other bits at all)."""
    if os.name != "posix":
        return  # Windows: the per-user profile ACL applies; see README
    bad = []
    mode = stat.S_IMODE(folder.stat().st_mode)
    if mode & 0o077:
        bad.append(folder.name)
    for child in folder.iterdir():
        try:
            if stat.S_IMODE(child.lstat().st_mode) & 0o077:
                bad.append(child.name)
        except FileNotFoundError:
            continue
    if bad:
        log.error("insecure permissions on %d path(s)", len(bad))
        raise InsecurePermissions(hint=f"Run: chmod 700 '{folder}' && chmod 600 '{folder}'/*")


class OwnerLock:
    """One owner process per vault: an exclusive, non-blocking OS lock on ``vault.lock``.
    The OS drops it when the process dies, so a crash never leaves the vault stuck."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK_FILE
        self._fh: IO[bytes] | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fh = os.fdopen(fd, "r+b")
        try:
            if os.name == "posix":
                import fcntl
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            else:  # pragma: no cover - Windows
                import msvcrt
                msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError as exc:
            fh.close()
            raise VaultBusy() from exc
        self._fh = fh

    def mark(self) -> None:
        """Write the marker once the vault is known to open (after creation or a successful
        unlock), so a wrong password never changes a byte under the vault."""
        fh = self._fh
        if fh is None:
            return
        try:
            fh.seek(0)
            if fh.read(len(LOCK_MARKER) + 1) != LOCK_MARKER:
                fh.seek(0)
                fh.truncate()
                fh.write(LOCK_MARKER)
                fh.flush()
        except OSError:  # a full disk must not stop an unlock; the lock itself is held
            log.warning("could not write the lock file's marker")

    def release(self) -> None:
        if self._fh is not None:
            self._fh.close()  # closing the descriptor releases the lock
            self._fh = None

    @property
    def held(self) -> bool:
        return self._fh is not None
