"""Shared helpers for the storage security tests: canaries, raw-byte scans, hashes, entropy.

A canary is a unique word put into every content field of a memory (text, speaker, FTS keys)
plus a recognisable float32 vector. ``needles`` turns them into the byte strings a raw scan
looks for: UTF-8, UTF-16-LE and their lower-case forms, and the first 64 bytes of the vector,
raw and L2-normalised (SECURITY.md requirements 1 and 3).
"""

from __future__ import annotations

import hashlib
import math
import os
import secrets
import sqlite3
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from storage.db import Database
from storage.embedder import EMBED_DIM

DIM = EMBED_DIM


@dataclass(frozen=True)
class Canary:
    text: str
    speaker: str
    keys: str
    vec: np.ndarray

    def words(self) -> list[str]:
        return [self.text, self.speaker, self.keys]


def new_canary(tag: str = "") -> Canary:
    """Unique, mixed-case words (so the lower-case form is a distinct needle)."""
    token = secrets.token_hex(6)
    rng = np.random.default_rng(int(token, 16))
    vec = rng.standard_normal(DIM).astype(np.float32)
    return Canary(text=f"CanaryText{tag}Q{token}", speaker=f"CanarySpeaker{tag}Z{token}",
                  keys=f"CanaryKeys{tag}W{token}", vec=vec)


def needles(canaries: Iterable[Canary]) -> list[bytes]:
    out: list[bytes] = []
    for c in canaries:
        for word in c.words():
            for form in (word, word.lower()):
                out.append(form.encode("utf-8"))
                out.append(form.encode("utf-16-le"))
        raw = c.vec.astype(np.float32)
        out.append(raw.tobytes()[:64])
        out.append((raw / np.linalg.norm(raw)).astype(np.float32).tobytes()[:64])
    return out


def insert_memory(conn: object, text: str, speaker: str = "someone", keys: str = "",
                  vec: np.ndarray | None = None, ts: float = 1_700_000_000.0) -> int:
    """Runs inside a write transaction: memory row + FTS row (rowid = id) + vector row."""
    cur = conn.execute(  # type: ignore[attr-defined]
        "INSERT INTO memory(store,text,created_at,occurred_at,decay_class,speaker) "
        "VALUES ('episodic',?,?,?,'episodic',?)", (text, ts, ts, speaker))
    mid = int(cur.lastrowid)
    conn.execute("INSERT INTO memory_fts(rowid, text, keys) VALUES (?,?,?)",  # type: ignore[attr-defined]
                 (mid, text, keys))
    if vec is not None:
        conn.execute("INSERT INTO vector(memory_id, model, dim, vec) VALUES (?,?,?,?)",  # type: ignore[attr-defined]
                     (mid, "test-model", int(vec.shape[0]), vec.astype(np.float32).tobytes()))
    return mid


def seed_canaries(db: Database, canaries: Iterable[Canary]) -> list[int]:
    items = list(canaries)

    def run(conn: object) -> list[int]:
        return [insert_memory(conn, f"We talked about {c.text} at length", c.speaker, c.keys,
                              c.vec) for c in items]
    return db.write_sync(run)


def seed_filler(db: Database, n: int, text_len: int = 200, *, with_vectors: bool = False) -> None:
    """``n`` plain memories with varied text (so pages are full and the file is large)."""
    rng = np.random.default_rng(n)

    def run(conn: object) -> None:
        for i in range(n):
            words = " ".join(f"w{int(x)}" for x in rng.integers(0, 50_000, text_len // 6))
            vec = rng.standard_normal(DIM).astype(np.float32) if with_vectors else None
            insert_memory(conn, f"filler {i} {words}"[:text_len], f"speaker{i % 17}", "", vec)
    db.write_sync(run)


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def scan_files(paths: Iterable[Path], needle_list: list[bytes]) -> list[tuple[str, int]]:
    """(path, needle index) for every hit. Files that vanish mid-scan are skipped."""
    hits: list[tuple[str, int]] = []
    for path in paths:
        try:
            data = path.read_bytes()
        except (FileNotFoundError, PermissionError, IsADirectoryError):
            continue
        for i, needle in enumerate(needle_list):
            if needle in data:
                hits.append((str(path), i))
    return hits


def sha_tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in files_under(folder)}


def sha_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def entropy(data: bytes) -> float:
    """Shannon entropy in bits per byte."""
    if not data:
        return 0.0
    n = len(data)
    return -sum(c / n * math.log2(c / n) for c in Counter(data).values())


def stdlib_open_fails(path: Path) -> bool:
    """True when the stdlib (unencrypted) sqlite3 refuses the file as a database.
    Opened read-only through a URI so the probe itself can never create or change a file."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.DatabaseError:
        return True
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        return False
    except sqlite3.DatabaseError:
        return True
    finally:
        conn.close()


def flip_bytes(path: Path, offset: int, n: int = 16) -> None:
    data = bytearray(path.read_bytes())
    for i in range(offset, offset + n):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def random_key() -> bytes:
    return os.urandom(32)
