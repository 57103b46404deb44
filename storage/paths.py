"""Where vaults live, their permissions, and the one-owner lock. Layer: storage.

A vault is a folder: ``vault.key.json`` (no secrets), ``vault.db`` (+ ``-wal``/``-shm``) and
``vault.lock``. On POSIX the folder is 0700 and every file 0600, and Kept refuses to start
otherwise (docs/security.md#22-file-permissions).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import IO

import platformdirs

from app.errors import InsecurePermissions, ValidationError, VaultBusy

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


def check_new_vault_folder(folder: Path) -> None:
    """A vault is made only in a new folder or an empty one (a lone ``vault.lock`` left by a
    creation cut short counts as empty). ``kept init`` once set a folder of someone's files
    to 0700 and told them to chmod 600 every file (issue 11, item 12); now nothing changes."""
    if not os.path.lexists(folder):
        return
    if not folder.is_dir():
        raise ValidationError(f"{folder} is a file, not a folder. Nothing was changed.")
    try:
        others = [p for p in folder.iterdir() if p.name != LOCK_FILE]
    except OSError as exc:
        raise ValidationError(f"Cannot read {folder}: {exc.strerror}. Nothing was "
                              "changed.") from exc
    if others:
        raise ValidationError(f"{folder} already holds other files; Kept makes a vault only in "
                              "a new or empty folder. Nothing was changed.")


def make_private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.name == "posix":
        os.chmod(path, 0o700)


def check_permissions(folder: Path) -> None:
    """docs/security.md#22-file-permissions: the folder 0700, its files 0600 (no group/other bits at
    all)."""
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
    """One owner process per vault: exclusive, non-blocking OS locks that the OS drops when
    the process dies, so a crash never leaves the vault stuck.

    POSIX: the lock that excludes is a ``flock`` on a descriptor of the vault folder itself.
    A lock on ``vault.lock`` alone sits on that file's inode: ``rm vault.lock`` let a second
    process create a new file, lock it and write behind the window's back (issue 11, item 9).
    The folder cannot be replaced under its owner without moving the whole vault. ``vault.lock``
    is locked as well: on Windows (a folder cannot be locked there, and an open file cannot be
    deleted) it is the lock, and earlier Kept versions look only at it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / LOCK_FILE
        self._fh: IO[bytes] | None = None
        self._dir_fd: int | None = None

    def _lock_folder(self) -> int | None:
        if os.name != "posix":
            return None  # pragma: no cover - Windows
        import fcntl
        fd = os.open(self.folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            os.close(fd)
            raise VaultBusy() from exc
        except OSError as exc:
            # A file system without flock on folders (some network mounts): the file lock
            # below still excludes other Kept processes, as long as vault.lock stays.
            os.close(fd)
            log.warning("cannot lock the vault folder (%s); relying on %s", type(exc).__name__,
                        LOCK_FILE)
            return None
        return fd

    def acquire(self) -> None:
        dir_fd = self._lock_folder()
        try:
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
        except BaseException:
            if dir_fd is not None:
                os.close(dir_fd)
            raise
        self._fh = fh
        self._dir_fd = dir_fd

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
            self._fh.close()  # closing a descriptor releases its lock
            self._fh = None
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None

    @property
    def held(self) -> bool:
        return self._fh is not None
