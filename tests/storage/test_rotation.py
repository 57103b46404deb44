"""SECURITY.md requirement 9: data-key rotation.

``rotate_data_key`` rewrites every page under a new DEK. Afterwards the old DEK's SQLCipher key
opens nothing (not the database, not the WAL, not an old key-file copy's DEK), the recovery and
device wraps of the old DEK are gone, the password unlocks the rotated vault with every row
intact, and the locked canary scan (requirement 1) still finds nothing. An interrupted rotation
is finished at the next unlock. (The AES-GCM file format is unit-tested in test_crypto.py.)
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keyring
import pytest

from app.errors import VaultCorrupt, WrongKey
from storage import crypto
from storage.db import Database
from storage.sqlcipher import open_connection
from storage.unlock import OpenVault
from tests.storage.conftest import Template
from tests.storage.helpers import files_under, needles, scan_files, stdlib_open_fails
from tests.storage.test_keyring_device import FakeSecretService


def _dump(v: OpenVault) -> dict[str, Any]:
    """Everything that must survive rotation: memories, FTS rows and matches, vectors."""
    def run(c: Any) -> dict[str, Any]:
        return {
            "memory": c.execute("SELECT id, text, speaker, occurred_at FROM memory ORDER BY id"
                                ).fetchall(),
            "fts": c.execute("SELECT rowid, text, keys FROM memory_fts ORDER BY rowid").fetchall(),
            "vector": c.execute("SELECT memory_id, dim, vec FROM vector ORDER BY memory_id"
                                ).fetchall(),
            "schema": c.execute("SELECT name FROM schema_version").fetchall(),
        }
    return v.db.read(run)


def _old_key_opens_nothing(folder: Path, old_db_key: bytes) -> None:
    # Not the -shm: opening it as a database from this process while the vault is open could
    # drop the vault's own POSIX locks on it when the probe closes.
    for path in files_under(folder):
        if path.name in ("vault.db", "vault.db-wal") and path.stat().st_size:
            with pytest.raises((WrongKey, VaultCorrupt)):
                open_connection(path, old_db_key, query_only=True)


def test_rotate_data_key(clone_vault: Callable[..., Path], template_vault: Template,
                         tmp_path: Path) -> None:
    keyring.set_keyring(FakeSecretService())
    folder = clone_vault()
    pw = template_vault.password
    v, _ = OpenVault.unlock(folder, pw)
    try:
        code = v.add_recovery_code()
        v.remember_device()
        before = _dump(v)
        old_dek, old_db_key = bytes(v.keys.dek), bytes(v.keys.db_key)
        old_file_key = bytes(v.keys.file_key)
        old_key_file = (folder / "vault.key.json").read_bytes()
        db_before = (folder / "vault.db").read_bytes()

        kf, new_code = v.rotate_data_key(pw)

        assert bytes(v.keys.dek) != old_dek and bytes(v.keys.db_key) != old_db_key
        assert bytes(v.keys.file_key) != old_file_key
        assert kf.wrap_device is None and kf.wrap_pending is None
        # The vault had a recovery code: a new one wraps the new DEK (issue 11, item 11).
        assert new_code is not None and new_code != code
        assert bytes(crypto.unwrap_recovery(kf, new_code)) == bytes(v.keys.dek)
        assert keyring.get_password(crypto.KEYRING_SERVICE,
                                    f"device-key-v1:{kf.vault_id}") is None
        assert not (folder / "vault.key.json.bak").exists()
        assert _dump(v) == before
        # Already on disk while still unlocked: every page of the file was rewritten.
        db_now = (folder / "vault.db").read_bytes()
        assert len(db_now) == len(db_before)
        same = sum(db_now[i:i + 4096] == db_before[i:i + 4096]
                   for i in range(0, len(db_now), 4096))
        assert same == 0, f"{same} pages unchanged by rekey"
        copy = tmp_path / "copy-while-open"
        copy.mkdir()
        shutil.copy2(folder / "vault.db", copy / "vault.db")
        with pytest.raises((WrongKey, VaultCorrupt)):
            open_connection(copy / "vault.db", old_db_key, query_only=True)
        v.db.write_sync(lambda c: c.execute(
            "INSERT INTO settings(key, value) VALUES ('after-rotation', 'yes')"))
        _old_key_opens_nothing(folder, old_db_key)  # includes the live WAL
    finally:
        v.lock()

    # After lock: the old DEK's database key opens nothing in the folder.
    _old_key_opens_nothing(folder, old_db_key)
    # The old key file (e.g. in a backup) still unwraps the *old* DEK with the password...
    old_kf = crypto.KeyFile.from_json(json.loads(old_key_file))
    assert bytes(crypto.unwrap(old_kf, pw)) == old_dek
    # ...which opens nothing any more; an unlock with that old key file fails closed.
    restored = tmp_path / "old-key-file"
    shutil.copytree(folder, restored)
    (restored / "vault.key.json").write_bytes(old_key_file)
    with pytest.raises(VaultCorrupt):
        OpenVault.unlock(restored, pw)
    # Old recovery code and device key are dead; the password works.
    with pytest.raises(WrongKey):
        OpenVault.unlock(folder, None, recovery_code=code)
    with pytest.raises(WrongKey):
        OpenVault.unlock(folder, None, use_device=True)
    v, _ = OpenVault.unlock(folder, pw)
    try:
        after = _dump(v)
        assert after == before
        assert v.db.read(lambda c: c.execute(
            "SELECT value FROM settings WHERE key='after-rotation'").fetchone()) == ("yes",)
        assert v.db.read(lambda c: c.execute("PRAGMA cipher_integrity_check").fetchall()) == []
        c0 = template_vault.canaries[0]
        assert v.db.read(lambda c: c.execute(
            "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?", (c0.keys,)).fetchall()
        ) == [(template_vault.ids[0],)]
    finally:
        v.lock()

    # Requirement 1 still holds after rotation.
    assert scan_files(files_under(folder), needles(template_vault.canaries)) == []
    for p in files_under(folder):
        assert p.stat().st_size == 0 or stdlib_open_fails(p)


def test_rotate_requires_password(clone_vault: Callable[..., Path],
                                  template_vault: Template) -> None:
    folder = clone_vault()
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    v, _ = OpenVault.unlock(folder, template_vault.password)
    try:
        with pytest.raises(WrongKey):
            v.rotate_data_key("wrong")
        assert v.db.read(lambda c: c.execute("SELECT count(*) FROM memory").fetchone()[0]) == 303
    finally:
        v.lock()
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_interrupted_rotation_is_finished_at_next_unlock(clone_vault: Callable[..., Path],
                                                         template_vault: Template,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    """Crash after the database was rekeyed but before the new wrap was written: the pending
    wrap (new DEK under the old one) lets the password open it, and unlock completes the
    rotation. Also checked: a copy of the files taken right after the rekey opens."""
    folder = clone_vault()
    pw = template_vault.password
    v, _ = OpenVault.unlock(folder, pw)
    before = _dump(v)
    old_db_key = bytes(v.keys.db_key)
    real_rekey = Database.rekey
    snapshot = tmp_path / "snapshot"

    def rekey_then_copy(self: Database, new_key: bytes | bytearray) -> None:
        real_rekey(self, new_key)
        shutil.copytree(folder, snapshot)  # what a power cut right here would leave

    def crash(*a: object, **k: object) -> None:
        raise OSError(5, "simulated crash after rekey")
    monkeypatch.setattr(Database, "rekey", rekey_then_copy)
    monkeypatch.setattr(crypto, "rewrap", crash)
    try:
        with pytest.raises(OSError):
            v.rotate_data_key(pw)
    finally:
        monkeypatch.undo()
        v.lock()
    kf = crypto.read_key_file(folder)
    assert kf.wrap_pending is not None
    for target in (folder, snapshot):
        v, _ = OpenVault.unlock(target, pw)
        try:
            assert _dump(v) == before
            assert v.key_file.wrap_pending is None
        finally:
            v.lock()
        assert crypto.read_key_file(target).wrap_pending is None
        _old_key_opens_nothing(target, old_db_key)
        v, _ = OpenVault.unlock(target, pw)  # a plain unlock afterwards
        v.lock()
