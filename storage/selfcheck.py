"""``kept self-check``: do the native parts this build depends on actually work here?
Layer: storage. Runs on: the caller's thread.

Run against every frozen build (docs/architecture.md#self-check-and-packaging): a PyInstaller bundle
that misses a hidden import or a native library (sqlcipher3's, onnxruntime's, chromadb's Rust core)
fails here, by name, instead of at a person's first unlock. Each check uses throwaway data only: a
random key for a temporary encrypted database in a private temporary folder, random vectors for an
in-RAM Chroma collection, and a fixed sentence for the model. Nothing is written to any vault.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    # A missing optional part (the model, a real OS keychain) is reported but not a failure:
    # Kept runs without them (lexical recall only; password unlock only).
    required: bool = True


def _sqlcipher() -> str:
    from storage.sqlcipher import open_connection, pragma_report
    with tempfile.TemporaryDirectory(prefix="kept-selfcheck-") as tmp:
        os.chmod(tmp, 0o700)
        path = Path(tmp) / "check.db"
        key = bytearray(os.urandom(32))
        conn = open_connection(path, key, create=True)
        try:
            conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61')")
            conn.execute("INSERT INTO t(t, rank) VALUES ('secure-delete', 1)")
            conn.execute("INSERT INTO t(x) VALUES ('self check')")
            hits = conn.execute("SELECT count(*) FROM t WHERE t MATCH 'check'").fetchone()[0]
            report = pragma_report(conn)
        finally:
            conn.close()
        header = path.read_bytes()[:16]
        if header == b"SQLite format 3\x00":
            raise RuntimeError("the test database was written unencrypted")
        if hits != 1:
            raise RuntimeError("FTS5 did not find the test row")
    return f"SQLCipher {report['cipher_version']}, SQLite {report['sqlite_version']}, FTS5 ok"


def _chroma() -> str:
    import chromadb
    import numpy as np
    from chromadb.config import Settings

    from storage.embedder import EMBED_DIM
    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    col = client.create_collection(name=f"selfcheck-{os.getpid()}-{time.monotonic_ns()}",
                                   embedding_function=None, metadata={"hnsw:space": "cosine"})
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((8, EMBED_DIM)).astype(np.float32)
    col.add(ids=[str(i) for i in range(8)], embeddings=vecs)
    got = col.query(query_embeddings=vecs[3:4], n_results=1)["ids"][0]
    client.delete_collection(col.name)
    if got != ["3"]:
        raise RuntimeError(f"nearest neighbour was {got}, expected ['3']")
    return f"chromadb {chromadb.__version__}, in-RAM collection round trip ok"


def _model() -> str:
    import numpy as np

    from storage.embedder import EMBED_DIM, Embedder, find_model_dir
    folder = find_model_dir()
    if folder is None:
        raise FileNotFoundError("no model found: semantic search is off (set KEPT_MODEL_DIR)")
    vec = Embedder(folder, threads=1).embed(["Kept checks its embedding model."])[0]
    norm = float(np.linalg.norm(vec))
    if vec.shape != (EMBED_DIM,) or abs(norm - 1.0) > 1e-3:
        raise RuntimeError(f"unexpected embedding: shape {vec.shape}, norm {norm:.4f}")
    return f"all-MiniLM-L6-v2 at {folder}"


def _keyring() -> str:
    from storage.crypto import _backend_name, keychain, keyring_available
    kr = keychain()
    name = _backend_name(kr)
    priority = getattr(kr, "priority", "?")
    if not keyring_available():
        raise LookupError(f"{name} (priority {priority}) is not an allowed OS keychain: "
                          "'remember on this device' is off")
    return f"{name} (priority {priority})"


def _crypto() -> str:
    from storage.crypto import KdfParams, derive_kek
    params = KdfParams(m=65_536, t=3, p=4)
    t0 = time.perf_counter()
    kek = derive_kek("self-check", params)
    took = time.perf_counter() - t0
    if len(kek) != 32:
        raise RuntimeError("Argon2id returned a key of the wrong size")
    return f"Argon2id 64 MiB/t=3/p=4 in {took:.2f} s"


CHECKS: tuple[tuple[str, Callable[[], str], bool], ...] = (
    ("sqlcipher", _sqlcipher, True),
    ("argon2id", _crypto, True),
    ("chroma", _chroma, True),
    ("model", _model, False),
    ("keyring", _keyring, False),
)


def run_checks(extra: tuple[tuple[str, Callable[[], str], bool], ...] = ()) -> list[Check]:
    out = []
    for name, fn, required in (*CHECKS, *extra):
        try:
            out.append(Check(name, True, fn(), required))
        except Exception as exc:  # the point is to report every failure, by name
            log.debug("self-check %s failed: %s", name, type(exc).__name__)
            out.append(Check(name, False, f"{type(exc).__name__}: {exc}", required))
    return out


def passed(checks: list[Check]) -> bool:
    return all(c.ok for c in checks if c.required)


def report_lines(checks: list[Check]) -> list[str]:
    """One line a check: ok, FAIL (required, broken) or off (optional, unavailable)."""
    return [f"{'ok' if c.ok else ('FAIL' if c.required else 'off'):<5} {c.name:<10} {c.detail}"
            for c in checks]
