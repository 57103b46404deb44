"""SECURITY.md requirement 8: password change = rewrap only.

Whatever the database size (a few MB by default, ~1 GB under ``-m slow``), a change costs two
key derivations (the old password checked, the new one wrapped) and nothing else: the database
file's SHA-256, size and mtime are unchanged, and afterwards the old password fails and the new
one works. (Counted, not timed: a wall-clock bound failed when the machine was busy; the
figures are printed for reference.)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.errors import WrongKey
from storage import crypto
from storage.crypto import KdfParams
from storage.unlock import OpenVault
from tests.storage.conftest import Template
from tests.storage.helpers import sha_file

MB = 1024 * 1024


def _grow(v: OpenVault, total_bytes: int, blob: int = MB, per_txn: int = 128) -> None:
    """Append incompressible blobs in a few large transactions, checkpointing between them so
    the WAL never holds more than one transaction."""
    v.db.write_sync(lambda c: c.execute("CREATE TABLE IF NOT EXISTS bulk(b BLOB NOT NULL)"))
    n = total_bytes // blob
    done = 0
    while done < n:
        k = min(per_txn, n - done)
        v.db.write_sync(lambda c, k=k: c.executemany(
            "INSERT INTO bulk(b) VALUES (randomblob(?))", [(blob,)] * k))
        done += k
        busy, _, _ = v.db.checkpoint()
        assert busy == 0


def _kdf_seconds(params: KdfParams, runs: int = 2) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        crypto.wipe(crypto.derive_kek("timing", params))
        times.append(time.perf_counter() - start)
    return max(times)


def _check_rewrap(folder: Path, old: str, new: str,
                  monkeypatch: pytest.MonkeyPatch) -> tuple[float, float]:
    db = folder / "vault.db"
    before = sha_file(db)
    size = db.stat().st_size
    mtime = db.stat().st_mtime_ns
    v, _ = OpenVault.unlock(folder, old)
    derives: list[tuple[int, int, int]] = []
    real_derive = crypto.derive_kek

    def counting(password: str, params: KdfParams) -> bytearray:
        derives.append((params.m, params.t, params.p))
        return real_derive(password, params)
    try:
        kdf = _kdf_seconds(v.key_file.kdf)
        monkeypatch.setattr(crypto, "derive_kek", counting)
        start = time.perf_counter()
        v.change_password(old, new)
        took = time.perf_counter() - start
        monkeypatch.setattr(crypto, "derive_kek", real_derive)
        assert sha_file(db) == before  # untouched even while unlocked
    finally:
        v.lock()
    print(f"db {size / MB:.1f} MiB: password change {took * 1000:.0f} ms, KDF {kdf * 1000:.0f} ms")
    assert len(derives) == 2  # the old password checked, the new one wrapped: nothing else
    assert sha_file(db) == before and db.stat().st_mtime_ns == mtime
    assert db.stat().st_size == size
    with pytest.raises(WrongKey):
        OpenVault.unlock(folder, old)
    v, _ = OpenVault.unlock(folder, new)
    try:
        assert v.db.read(lambda c: c.execute("PRAGMA quick_check").fetchone()[0]) == "ok"
    finally:
        v.lock()
    assert sha_file(db) == before
    return took, kdf


def test_password_change_is_rewrap_only(clone_vault: Callable[..., Path],
                                        template_vault: Template,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    folder = clone_vault()
    v, _ = OpenVault.unlock(folder, template_vault.password)
    try:
        _grow(v, 4 * MB)
    finally:
        v.lock()
    assert (folder / "vault.db").stat().st_size > 4 * MB
    _check_rewrap(folder, template_vault.password, "a new passphrase", monkeypatch)


def test_change_password_requires_old_and_nonempty_new(clone_vault: Callable[..., Path],
                                                       template_vault: Template) -> None:
    folder = clone_vault()
    before = (folder / "vault.key.json").read_bytes()
    v, _ = OpenVault.unlock(folder, template_vault.password)
    try:
        with pytest.raises(WrongKey):
            v.change_password("not the password", "x")
        with pytest.raises(WrongKey):
            v.change_password(template_vault.password, "")
        assert (folder / "vault.key.json").read_bytes() == before
        assert not (folder / "vault.key.json.bak").exists()
        # The new wrap uses a fresh salt and keeps the stored cost parameters.
        kf = v.change_password(template_vault.password, "x")
        old = crypto.KeyFile.from_json(json.loads(before))
        assert kf.kdf.salt != old.kdf.salt
        assert (kf.kdf.m, kf.kdf.t, kf.kdf.p) == (old.kdf.m, old.kdf.t, old.kdf.p)
        assert kf.vault_id == old.vault_id
    finally:
        v.lock()


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_password_change_is_rewrap_only_1gb(tmp_path: Path, fast_kdf: KdfParams,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "vault"
    v = OpenVault.create(folder, "old one", kdf=fast_kdf)
    try:
        start = time.perf_counter()
        _grow(v, 1024 * MB)
        print(f"filled 1 GiB in {time.perf_counter() - start:.1f} s")
    finally:
        v.lock()
    assert (folder / "vault.db").stat().st_size >= 1024 * MB
    _check_rewrap(folder, "old one", "new one", monkeypatch)
