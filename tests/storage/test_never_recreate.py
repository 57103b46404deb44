"""SECURITY.md requirement 24: never recreate on failure.

A wrong key, an HMAC failure or a damaged/missing file raises an AppError (WrongKey or
VaultCorrupt), leaves every file in the folder byte-identical and creates no new file; in
particular no new or empty database ever replaces the one that failed (Signal #5097).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from app.errors import AppError, VaultCorrupt, VaultExists, WrongKey
from storage.crypto import KdfParams
from storage.paths import LOCK_MARKER
from storage.unlock import OpenVault
from tests.storage.conftest import Template
from tests.storage.helpers import flip_bytes, sha_tree


def _damage_db_middle(folder: Path) -> None:
    db = folder / "vault.db"
    flip_bytes(db, db.stat().st_size // 2 + 100, 16)


def _damage_db_page1(folder: Path) -> None:
    flip_bytes(folder / "vault.db", 200, 8)


def _damage_db_last_page(folder: Path) -> None:
    db = folder / "vault.db"
    flip_bytes(db, db.stat().st_size - 300, 8)


def _truncate_db_half(folder: Path) -> None:
    db = folder / "vault.db"
    size = db.stat().st_size
    with db.open("r+b") as fh:
        fh.truncate((size // 2) // 4096 * 4096)


def _empty_db(folder: Path) -> None:
    (folder / "vault.db").write_bytes(b"")


def _empty_db_with_wal(folder: Path) -> None:
    """A zero-byte database next to a WAL: SQLite would delete the WAL on open."""
    (folder / "vault.db").write_bytes(b"")
    wal = folder / "vault.db-wal"
    wal.write_bytes(os.urandom(4096 * 3))
    os.chmod(wal, 0o600)


def _missing_db(folder: Path) -> None:
    (folder / "vault.db").unlink()


def _garbage_db(folder: Path) -> None:
    db = folder / "vault.db"
    db.write_bytes(os.urandom(db.stat().st_size))


def _truncated_key_file(folder: Path) -> None:
    kf = folder / "vault.key.json"
    kf.write_bytes(kf.read_bytes()[:57])


def _garbage_key_file(folder: Path) -> None:
    (folder / "vault.key.json").write_bytes(os.urandom(300))


def _empty_key_file(folder: Path) -> None:
    (folder / "vault.key.json").write_bytes(b"")


def _wrong_shape_key_file(folder: Path) -> None:
    (folder / "vault.key.json").write_text(json.dumps({"format": 1, "vault_id": "x"}))


def _future_key_file(folder: Path) -> None:
    obj = json.loads((folder / "vault.key.json").read_text())
    obj["format"] = 2
    (folder / "vault.key.json").write_text(json.dumps(obj))


def _missing_key_file(folder: Path) -> None:
    (folder / "vault.key.json").unlink()


def _wrap_ct_flipped(folder: Path) -> None:
    import base64
    obj = json.loads((folder / "vault.key.json").read_text())
    ct = bytearray(base64.b64decode(obj["wrap"]["ct"]))
    ct[3] ^= 0x40
    obj["wrap"]["ct"] = base64.b64encode(bytes(ct)).decode()
    (folder / "vault.key.json").write_text(json.dumps(obj))


def _other_vaults_key_file(folder: Path) -> None:
    """The key file of another vault (same password): its DEK opens nothing here."""
    other = folder.parent / "other"
    v = OpenVault.create(other, "pw-template-same", kdf=KdfParams(m=65_536), threaded=False)
    v.lock()
    (folder / "vault.key.json").write_bytes((other / "vault.key.json").read_bytes())


CASES: list[tuple[str, Callable[[Path], None], type[AppError]]] = [
    ("db_middle_flipped", _damage_db_middle, VaultCorrupt),
    ("db_page1_flipped", _damage_db_page1, VaultCorrupt),
    ("db_last_page_flipped", _damage_db_last_page, VaultCorrupt),
    ("db_truncated_half", _truncate_db_half, VaultCorrupt),
    ("db_empty", _empty_db, VaultCorrupt),
    ("db_empty_with_wal", _empty_db_with_wal, VaultCorrupt),
    ("db_missing", _missing_db, VaultCorrupt),
    ("db_garbage", _garbage_db, VaultCorrupt),
    ("key_truncated", _truncated_key_file, VaultCorrupt),
    ("key_garbage", _garbage_key_file, VaultCorrupt),
    ("key_empty", _empty_key_file, VaultCorrupt),
    ("key_wrong_shape", _wrong_shape_key_file, WrongKey),
    ("key_future_format", _future_key_file, VaultCorrupt),
    ("key_missing", _missing_key_file, VaultCorrupt),
    ("key_wrap_flipped", _wrap_ct_flipped, WrongKey),
]


def _names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


@pytest.mark.parametrize("name,damage,expected", CASES, ids=[c[0] for c in CASES])
def test_damage_raises_and_changes_nothing(clone_vault: Callable[..., Path],
                                           template_vault: Template, name: str,
                                           damage: Callable[[Path], None],
                                           expected: type[AppError]) -> None:
    folder = clone_vault()
    damage(folder)
    before, names = sha_tree(folder), _names(folder)
    for _ in range(2):  # a retry changes nothing either
        with pytest.raises(AppError) as info:
            OpenVault.unlock(folder, template_vault.password)
        assert isinstance(info.value, (WrongKey, VaultCorrupt))
        assert isinstance(info.value, expected), repr(info.value)
        assert info.value.user_message
        assert _names(folder) == names, "a file appeared or vanished"
        assert sha_tree(folder) == before, "a file changed"
    # And creating a vault over the damaged one is refused.
    with pytest.raises(VaultExists):
        OpenVault.create(folder, "new password", kdf=KdfParams(m=65_536))
    assert sha_tree(folder) == before


def test_other_vaults_key_file(clone_vault: Callable[..., Path]) -> None:
    folder = clone_vault()
    _other_vaults_key_file(folder)
    before, names = sha_tree(folder), _names(folder)
    with pytest.raises(VaultCorrupt):
        OpenVault.unlock(folder, "pw-template-same")
    assert _names(folder) == names and sha_tree(folder) == before


def test_wrong_password_changes_nothing(clone_vault: Callable[..., Path],
                                        template_vault: Template) -> None:
    folder = clone_vault()
    before, names = sha_tree(folder), _names(folder)
    for attempt in ("wrong", "", template_vault.password.upper(), template_vault.password + " "):
        with pytest.raises(WrongKey):
            OpenVault.unlock(folder, attempt)
        assert _names(folder) == names and sha_tree(folder) == before
    with pytest.raises(WrongKey):
        OpenVault.unlock(folder, None)
    assert sha_tree(folder) == before
    v, _ = OpenVault.unlock(folder, template_vault.password)  # the vault itself is fine
    try:
        ids = template_vault.ids
        rows = v.db.read(lambda c: c.execute(
            f"SELECT count(*) FROM memory WHERE id IN ({','.join('?' * len(ids))})", ids
        ).fetchone()[0])
        assert rows == len(ids)
    finally:
        v.lock()


def test_wrong_password_leaves_an_old_empty_lock_file_alone(
        clone_vault: Callable[..., Path], template_vault: Template) -> None:
    """The lock file's marker is written only after a successful unlock, so a vault made
    before it existed (empty lock file) is byte-identical after a wrong password."""
    folder = clone_vault()
    (folder / "vault.lock").write_bytes(b"")
    before = sha_tree(folder)
    with pytest.raises(WrongKey):
        OpenVault.unlock(folder, "wrong")
    assert sha_tree(folder) == before
    v, _ = OpenVault.unlock(folder, template_vault.password)
    v.lock()
    assert (folder / "vault.lock").read_bytes() == LOCK_MARKER


def test_damaged_vault_with_bak_still_refuses_db_damage(clone_vault: Callable[..., Path],
                                                        template_vault: Template) -> None:
    """A good key file backup does not help with a damaged database and is not consumed."""
    folder = clone_vault()
    (folder / "vault.key.json.bak").write_bytes((folder / "vault.key.json").read_bytes())
    os.chmod(folder / "vault.key.json.bak", 0o600)
    _damage_db_middle(folder)
    before = sha_tree(folder)
    with pytest.raises(VaultCorrupt):
        OpenVault.unlock(folder, template_vault.password)
    assert sha_tree(folder) == before
