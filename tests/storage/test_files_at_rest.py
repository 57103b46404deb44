"""SECURITY.md requirements 1 (locked canary scan) and 2 (the database is encrypted).

Canaries go into every content field of a memory (text, speaker, FTS keys) and a recognisable
vector; the scan searches raw bytes (UTF-8, UTF-16-LE, lower case, the vector's first 64
bytes raw and normalised) of every file under the vault folder, the per-test temp directory
and the app's cache directory, both while unlocked (WAL present) and after lock.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import platformdirs
import pytest
import sqlcipher3

from storage.crypto import KdfParams
from storage.sqlcipher import raw_key_literal
from storage.unlock import OpenVault
from tests.storage.conftest import Template
from tests.storage.helpers import (
    entropy,
    files_under,
    needles,
    new_canary,
    scan_files,
    seed_canaries,
    seed_filler,
    stdlib_open_fails,
)

SQLITE_MAGIC = b"SQLite format 3\x00"
SYSTEM_TMP_DIRS = [Path("/tmp"), Path("/var/tmp")]


def _recent_system_temp_files(since: float) -> list[Path]:
    """Top-level files in the OS temp directories changed during the test (other tests' and
    processes' older files are not ours to read)."""
    out = []
    for d in SYSTEM_TMP_DIRS:
        if not d.is_dir():
            continue
        for p in d.iterdir():
            try:
                if p.is_file() and not p.is_symlink() and p.stat().st_mtime >= since:
                    out.append(p)
            except OSError:
                continue
    return out


def _scan_everywhere(vault: Path, tmpdir: Path, needle_list: list[bytes], since: float
                     ) -> tuple[list[Path], list[tuple[str, int]]]:
    cache = Path(platformdirs.user_cache_path("Kept", appauthor=False))
    paths = files_under(vault) + files_under(tmpdir) + _recent_system_temp_files(since)
    if cache.is_dir():
        paths += files_under(cache)
    return paths, scan_files(paths, needle_list)


def _plaintext_export(vault_db: Path, db_key: bytes, dest: Path) -> None:
    """Positive control: a plaintext copy of the same data, made with sqlcipher_export."""
    c = sqlcipher3.connect(str(vault_db), isolation_level=None)
    try:
        c.execute(f"PRAGMA key = {raw_key_literal(db_key)}")
        c.execute(f"ATTACH DATABASE '{dest}' AS plain KEY ''")
        c.execute("SELECT sqlcipher_export('plain')")
        c.execute("DETACH DATABASE plain")
    finally:
        c.close()


def test_canary_scan_unlocked_and_locked(vault_dir: Path, private_tmpdir: Path,
                                         fast_kdf: KdfParams, tmp_path: Path) -> None:
    """Requirement 1: 0 hits while unlocked (WAL present) and after lock; the stdlib sqlite3
    opens no file there. A plaintext export of the same data is the positive control."""
    since = time.time() - 1
    canaries = [new_canary("U1"), new_canary("U2")]
    all_needles = needles(canaries)
    v = OpenVault.create(vault_dir, "pw for canaries", kdf=fast_kdf)
    locked = False
    try:
        ids = seed_canaries(v.db, canaries)
        seed_filler(v.db, 200, with_vectors=True)
        # A reader connection and a temp-dir user in this process, as the app would have.
        texts = v.db.read(lambda c: [r[0] for r in c.execute(
            "SELECT text FROM memory WHERE id IN (?,?) ORDER BY id", ids)])
        assert canaries[0].text in texts[0] and canaries[1].text in texts[1]
        assert v.db.read(lambda c: c.execute(
            "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?", (canaries[0].keys,)
        ).fetchall()) == [(ids[0],)]
        with tempfile.TemporaryFile() as fh:  # proves tempfile really points at private_tmpdir
            assert Path(os.readlink(f"/proc/self/fd/{fh.fileno()}")).parent == private_tmpdir
        wal = vault_dir / "vault.db-wal"
        assert wal.exists() and wal.stat().st_size > 0, "the scan must see a live WAL"
        assert (vault_dir / "vault.db-shm").exists()

        paths, hits = _scan_everywhere(vault_dir, private_tmpdir, all_needles, since)
        assert {p.name for p in paths} >= {"vault.db", "vault.db-wal", "vault.db-shm",
                                           "vault.key.json", "vault.lock"}
        assert hits == [], f"canary bytes on disk while unlocked: {hits}"
        for p in files_under(vault_dir):
            assert stdlib_open_fails(p), p

        # Positive control (outside the scanned folders): the same rows in plaintext are found.
        plain = tmp_path / "control" / "plain.db"
        plain.parent.mkdir()
        v.db.checkpoint()
        _plaintext_export(vault_dir / "vault.db", bytes(v.keys.db_key), plain)
        control = {i for _, i in scan_files([plain], all_needles)}
        per_canary = len(all_needles) // len(canaries)
        for k in range(len(canaries)):
            base = k * per_canary
            # UTF-8 forms of text, speaker and keys (as stored), and the raw vector bytes.
            for j in (0, 4, 8, 12):
                assert base + j in control
        assert not stdlib_open_fails(plain)

        v.lock()
        locked = True
        names = sorted(p.name for p in vault_dir.iterdir())
        assert names == ["vault.db", "vault.key.json", "vault.lock"]
        paths, hits = _scan_everywhere(vault_dir, private_tmpdir, all_needles, since)
        assert hits == [], f"canary bytes on disk after lock: {hits}"
        # No file there opens with the stdlib sqlite3, the lock file included (an empty
        # file would open as an empty database).
        for p in files_under(vault_dir):
            assert stdlib_open_fails(p), p
        assert list(private_tmpdir.iterdir()) == []
    finally:
        if not locked:
            v.lock()


def test_database_is_encrypted(clone_vault: Callable[..., Path], template_vault: Template
                               ) -> None:
    """Requirement 2 on every SQLite file: header, stdlib refusal, entropy, integrity check."""
    folder = clone_vault()
    db = folder / "vault.db"
    data = db.read_bytes()
    assert len(data) >= 16 * 1024
    assert data[:16] != SQLITE_MAGIC
    assert stdlib_open_fails(db)
    probe = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    with pytest.raises(sqlite3.DatabaseError):
        probe.execute("SELECT * FROM sqlite_master").fetchall()
    probe.close()
    e = entropy(data)
    print(f"vault.db: {len(data)} bytes, entropy {e:.4f} bits/byte")
    assert e >= 7.9

    v, _ = OpenVault.unlock(folder, template_vault.password)
    try:
        assert v.db.read(lambda c: c.execute("PRAGMA cipher_integrity_check").fetchall()) == []
        assert v.db.read(lambda c: c.execute("PRAGMA integrity_check").fetchone()[0]) == "ok"
        # While unlocked, with a WAL holding a few hundred KiB of new pages.
        seed_filler(v.db, 150)
        for path in (folder / "vault.db", folder / "vault.db-wal"):
            raw = path.read_bytes()
            assert raw[:16] != SQLITE_MAGIC
            assert stdlib_open_fails(path)
            if len(raw) >= 16 * 1024:
                print(f"{path.name}: {len(raw)} bytes, entropy {entropy(raw):.4f}")
                assert entropy(raw) >= 7.9
        assert (folder / "vault.db-wal").stat().st_size >= 16 * 1024
    finally:
        v.lock()


def test_entropy_threshold_discriminates(tmp_path: Path) -> None:
    """Control for requirement 2: a plaintext SQLite file of similar content is far below 7.9."""
    path = tmp_path / "plain.db"
    c = sqlite3.connect(path)
    c.execute("CREATE TABLE m(text)")
    c.executemany("INSERT INTO m VALUES (?)",
                  [(f"memory {i} about the garden and the weather",) for i in range(3000)])
    c.commit()
    c.close()
    data = path.read_bytes()
    assert data[:16] == SQLITE_MAGIC and not stdlib_open_fails(path)
    assert entropy(data) < 7.0
    assert entropy(os.urandom(64 * 1024)) >= 7.99
