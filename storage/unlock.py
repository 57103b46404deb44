"""Vault lifecycle: create, unlock, change password, rotate the data key, lock.
Layer: storage. Runs on: a worker thread (Argon2id takes ~0.6 s; never the GUI thread).

Unlock sequence (docs/security.md#unlock): read the key file -> Argon2id -> unwrap -> HKDF -> open
the database (memory security, raw key, fail-fast check, pragma assertions). A failure at any step
leaves every file byte-identical: nothing here writes before the key has been proven.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path

from app.errors import VaultCorrupt, VaultExists, VaultNotFound, WrongKey
from storage import crypto
from storage.crypto import KdfParams, KeyFile, Keys
from storage.db import Database
from storage.paths import (
    DB_FILE,
    OwnerLock,
    check_new_vault_folder,
    check_permissions,
    make_private_dir,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class UnlockInfo:
    seconds: float
    kdf_upgraded: bool
    recovered_from_backup: bool


def vault_exists(folder: Path) -> bool:
    return (folder / crypto.KEY_FILE).exists() or (folder / DB_FILE).exists()


def check_recovery_code(folder: Path, code: str) -> None:
    """Raise ``ValidationError`` / ``WrongKey`` unless ``code`` unwraps this vault's key (a
    fast HKDF; nothing written, no lock taken), so a prompt can say so before asking for a
    new password. ``OpenVault.recover`` checks again under the lock."""
    crypto.wipe(crypto.unwrap_recovery(crypto.read_key_file(folder), code))


class OpenVault:
    """An unlocked vault: keys, the owner lock and the Database. Owner: the Vault facade."""

    def __init__(self, folder: Path, keys: Keys, kf: KeyFile, db: Database,
                 lock: OwnerLock) -> None:
        self.folder = folder
        self.keys = keys
        self.key_file = kf
        self.db = db
        self._lock = lock

    # --- creation ----------------------------------------------------------------------
    @classmethod
    def create(cls, folder: Path, password: str, *, kdf: KdfParams | None = None,
               threaded: bool = True) -> OpenVault:
        if vault_exists(folder):
            raise VaultExists()
        if not password:
            raise WrongKey("A password is required.")
        if kdf is not None:
            crypto.check_new_params(kdf)  # before anything is made on disk
        check_new_vault_folder(folder)
        make_private_dir(folder)
        check_permissions(folder)
        lock = OwnerLock(folder)
        lock.acquire()
        try:
            params = kdf if kdf is not None else crypto.calibrate().params
            kf, dek = crypto.new_key_file(password, params)
            keys = Keys.from_dek(dek)
            crypto.wipe(dek)
            # Database first, key file last: a crash in between leaves no key file, so the
            # half-made vault is recognisable and never mistaken for a damaged one.
            db = Database(folder / DB_FILE, keys.db_key, create=True, threaded=threaded)
            crypto.write_key_file(folder, kf)
            lock.mark()
            return cls(folder, keys, kf, db, lock)
        except BaseException:
            lock.release()
            raise

    # --- unlock ------------------------------------------------------------------------
    @classmethod
    def unlock(cls, folder: Path, password: str | None = None, *, recovery_code: str | None = None,
               use_device: bool = False, threaded: bool = True, verify: str = "sync"
               ) -> tuple[OpenVault, UnlockInfo]:
        """``verify="background"``: the database's page self-test runs while the caller
        loads and searches; writes wait for it (``Database``). Key-file repairs below (a
        ``.bak``, an interrupted rotation, weak KDF parameters) always verify first."""
        start = time.perf_counter()
        if not folder.exists() or not vault_exists(folder):
            raise VaultNotFound()
        check_permissions(folder)
        kf = crypto.read_key_file(folder)
        lock = OwnerLock(folder)
        lock.acquire()
        try:
            dek: bytearray | None = None
            if use_device:
                dek = crypto.unwrap_device(kf)
            if dek is None and recovery_code is not None:
                dek = crypto.unwrap_recovery(kf, recovery_code)
            if dek is None:
                if password is None:
                    raise WrongKey("A password is required.")
                dek = crypto.unwrap(kf, password)
            if kf.wrap_pending is not None:
                crypto.check_pending(kf, dek)  # not sealed under this DEK: tampered, refused
            if (kf.wrap_pending is not None or kf.kdf.below_floor
                    or (folder / (crypto.KEY_FILE + ".bak")).exists()):
                verify = "sync"
            db, keys = cls._open_db(folder, dek, kf, threaded, verify)
            rotated = keys.dek != dek  # opened with the pending DEK of an interrupted rotation
            crypto.wipe(dek)
            vault = cls(folder, keys, kf, db, lock)
            upgraded = False
            if kf.wrap_pending is not None and password is not None:
                if rotated and kf.wrap_recovery is not None:
                    # The recovery wrap holds the old DEK; once the pending wrap goes it would
                    # open nothing (and look like damage). ``kept recovery-code`` makes anew.
                    log.warning("interrupted rotation: the old recovery code is removed")
                    vault.key_file = replace(kf, wrap_recovery=None)
                vault.change_password(password, password)  # finish an interrupted rotation
            if password is not None and kf.kdf.weaker_than(crypto.policy_params()):
                # Stored parameters weaker than this machine's default (a busy machine's old
                # calibration stopped at the 64 MiB floor): re-derive with the default.
                vault.change_password(password, password, kdf=crypto.policy_params())
                upgraded = True
            # A key file read from .bak goes back in place before the backup is retired.
            recovered = crypto.restore_main_key_file(folder, vault.key_file)
            crypto.drop_backup(folder)  # a successful unlock retires the previous key file
            lock.mark()
            return vault, UnlockInfo(time.perf_counter() - start, upgraded, recovered)
        except BaseException:
            crypto.wipe(dek)  # a key freed unwiped stays readable in the process's memory
            lock.release()
            raise

    @classmethod
    def recover(cls, folder: Path, code: str, new_password: str, *, threaded: bool = True,
                verify: str = "sync") -> tuple[OpenVault, UnlockInfo]:
        """Unlock with the recovery code and set a new password, in one step: a failure
        leaves the vault locked and the key file as it was."""
        if not new_password:
            raise WrongKey("The new password is empty.")
        crypto.normalise_recovery_code(code)  # a malformed code: said before the vault opens
        vault, info = cls.unlock(folder, None, recovery_code=code, threaded=threaded,
                                 verify=verify)
        try:
            vault.reset_password(code, new_password)
        except BaseException:
            vault.lock()
            raise
        return vault, info

    @staticmethod
    def _open_db(folder: Path, dek: bytearray, kf: KeyFile, threaded: bool,
                 verify: str = "sync") -> tuple[Database, Keys]:
        """Open with the DEK; if a rotation was interrupted, the pending DEK opens it."""
        keys = Keys.from_dek(dek)
        try:
            return Database(folder / DB_FILE, keys.db_key, threaded=threaded,
                            verify=verify), keys
        except WrongKey:
            keys.wipe()
        pending = crypto.open_pending(kf, dek)
        if pending is None:
            raise VaultCorrupt()
        log.warning("finishing an interrupted data-key rotation")
        keys = Keys.from_dek(pending)
        crypto.wipe(pending)
        try:
            return Database(folder / DB_FILE, keys.db_key, threaded=threaded), keys
        except WrongKey:
            keys.wipe()
            raise VaultCorrupt() from None

    # --- password and keys -------------------------------------------------------------
    def verify_password(self, password: str) -> None:
        crypto.wipe(crypto.unwrap(self.key_file, password))

    def change_password(self, old: str, new: str, *, kdf: KdfParams | None = None) -> KeyFile:
        """Rewrap only: O(1), the database file is not touched
        (docs/security.md#8-password-change-rewraps)."""
        if not new:
            raise WrongKey("The new password is empty.")
        self.verify_password(old)
        params = kdf if kdf is not None else replace(self.key_file.kdf,
                                                     salt=crypto.KdfParams().salt)
        if params.below_floor:
            params = crypto.policy_params()
        kf = crypto.rewrap(self.key_file, self.keys.dek, new, params)
        kf = replace(kf, wrap_pending=None)
        crypto.write_key_file(self.folder, kf)
        self.key_file = kf
        return kf

    def rotate_data_key(self, password: str) -> tuple[KeyFile, str | None]:
        """New DEK, ``PRAGMA rekey`` of every page, new wraps. Wraps of the old DEK would open
        nothing: the device wrap is dropped (the caller offers it again), and a vault that had
        a recovery code gets a new one in the same key-file write, returned for the caller to
        show (a rotation that silently removed the only way back was issue 11, item 11)."""
        self.verify_password(password)
        new_dek = crypto.random_key()
        new_keys = Keys.from_dek(new_dek)
        # 1. Record the new DEK under the old one, so a crash during rekey loses nothing.
        crypto.write_key_file(self.folder, crypto.seal_pending(self.key_file, self.keys.dek,
                                                               new_dek))
        # 2. Rewrite every page under the new key.
        self.db.rekey(new_keys.db_key)
        # 3. The password now wraps the new DEK; old wraps go.
        kf = crypto.rewrap(self.key_file, new_dek, password,
                           replace(self.key_file.kdf, salt=crypto.KdfParams().salt))
        kf = replace(kf, wrap_pending=None, wrap_recovery=None, wrap_device=None)
        code = None
        if self.key_file.wrap_recovery is not None:
            kf, code = crypto.add_recovery(kf, new_dek)
        if self.key_file.wrap_device is not None:
            crypto.forget_device(self.key_file)
        crypto.write_key_file(self.folder, kf)
        crypto.drop_backup(self.folder)  # the backup wraps the old DEK, which opens nothing now
        crypto.wipe(new_dek)
        self.keys.wipe()
        self.keys = new_keys
        self.key_file = kf
        return kf, code

    def add_recovery_code(self) -> str:
        """A new recovery code (any previous one stops opening the vault)."""
        kf, code = crypto.add_recovery(self.key_file, self.keys.dek)
        crypto.write_key_file(self.folder, kf)
        self.key_file = kf
        return code

    def reset_password(self, code: str, new: str) -> KeyFile:
        """Forgotten password: the recovery code, checked again here, allows a new password
        without the old one. The code keeps opening the vault; if the vault was opened through
        an interrupted rotation, the code is sealed around the current DEK."""
        if not new:
            raise WrongKey("The new password is empty.")
        code_dek = crypto.unwrap_recovery(self.key_file, code)
        try:
            stale = code_dek != self.keys.dek
        finally:
            crypto.wipe(code_dek)
        params = replace(self.key_file.kdf, salt=crypto.KdfParams().salt)
        if params.below_floor:
            params = crypto.policy_params()
        kf = crypto.rewrap(self.key_file, self.keys.dek, new, params)
        if stale:
            kf = crypto.seal_recovery(kf, self.keys.dek, code)
        kf = replace(kf, wrap_pending=None)
        crypto.write_key_file(self.folder, kf)
        self.key_file = kf
        return kf

    def remember_device(self) -> None:
        kf = crypto.remember_device(self.key_file, self.keys.dek)
        crypto.write_key_file(self.folder, kf)
        self.key_file = kf

    def forget_device(self) -> None:
        kf = crypto.forget_device(self.key_file)
        crypto.write_key_file(self.folder, kf)
        self.key_file = kf

    def allow_assistant_unlock(self, on: bool) -> None:
        """This device's keychain mark for assistant unlock (``storage/device_unlock.py``)."""
        from storage import device_unlock
        if on:
            device_unlock.allow(self.key_file)
        else:
            device_unlock.deny(self.key_file)

    def assistant_unlock_allowed(self) -> bool:
        from storage import device_unlock
        return device_unlock.allowed(self.key_file)

    # --- lock --------------------------------------------------------------------------
    def lock(self) -> None:
        """Close every connection (checkpoints the WAL), wipe keys, release the owner lock."""
        try:
            self.db.close()
        finally:
            self.keys.wipe()
            self._lock.release()

    @property
    def locked(self) -> bool:
        return self.db.closed
