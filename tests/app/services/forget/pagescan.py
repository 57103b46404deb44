"""A decrypting page scanner for SQLCipher 4 files (database and WAL), for forget tests.

SQLCipher 4 with a raw key: every page is AES-256-CBC under the key itself; the last 80 bytes
of a page are the reserve (16-byte IV, 64-byte HMAC-SHA512); page 1 starts with the 16-byte
salt in place of the SQLite header. A WAL is a 32-byte header, then frames of a 24-byte header
plus one encrypted page. Free pages and stale frames are decrypted too: that is the point.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

PAGE = 4096
RESERVE = 80


def decrypt_page(raw: bytes, key: bytes, first: bool) -> bytes:
    start = 16 if first else 0
    body = raw[start:PAGE - RESERVE]
    iv = raw[PAGE - RESERVE:PAGE - RESERVE + 16]
    dec = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    plain = dec.update(body) + dec.finalize()
    return (b"SQLite format 3\x00" if first else b"") + plain


def db_pages(path: Path, key: bytes) -> Iterator[tuple[int, bytes]]:
    data = path.read_bytes()
    for n in range(len(data) // PAGE):
        yield n + 1, decrypt_page(data[n * PAGE:(n + 1) * PAGE], key, n == 0)


def wal_pages(path: Path, key: bytes) -> Iterator[tuple[int, bytes]]:
    if not path.exists():
        return
    data = path.read_bytes()
    pos = 32
    while pos + 24 + PAGE <= len(data):
        pgno = int.from_bytes(data[pos:pos + 4], "big")
        yield pgno, decrypt_page(data[pos + 24:pos + 24 + PAGE], key, pgno == 1)
        pos += 24 + PAGE


def forms(canary: str) -> list[bytes]:
    return [canary.encode("utf-8"), canary.encode("utf-16-le"), canary.lower().encode("utf-8"),
            canary.lower().encode("utf-16-le")]


def scan_decrypted(folder: Path, key: bytes, canary: str) -> list[str]:
    """Places where a canary form occurs in a decrypted page of the vault's db or WAL."""
    hits = []
    needles = forms(canary)
    for name, pages in (("db", db_pages(folder / "vault.db", key)),
                        ("wal", wal_pages(folder / "vault.db-wal", key))):
        for pgno, plain in pages:
            if any(n in plain for n in needles):
                hits.append(f"{name}:page{pgno}")
    return hits


def scan_raw(paths: list[Path], canary: str) -> list[str]:
    needles = forms(canary)
    hits = []
    for root in paths:
        if not root.exists():
            continue
        files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
        for f in files:
            try:
                data = f.read_bytes()
            except OSError:
                continue
            if any(n in data for n in needles):
                hits.append(str(f))
    return hits
