"""SECURITY.md requirement 3: no plaintext vector store on disk.

- A memory whose embedding is known (the real embedder's vector of a canary text) leaves
  0 raw-byte hits of that vector (first 64 bytes, raw and L2-normalised float32) in any file
  under the vault folder, the temp directory, HOME or the working directory, with the Chroma
  index built and queried before lock.
- No ``chroma.sqlite3``, ``data_level0.bin`` or Chroma directory exists in any of them.
- The vector layer opens no file for writing while it builds the Chroma (EphemeralClient) index
  and answers a query: checked in-process with psutil and a directory listing, and in a
  subprocess under strace.
- The index is built with ``Settings(anonymized_telemetry=False)`` and never creates Chroma's
  default (downloading) embedding function or a PersistentClient.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest

import storage.vector
from app.domain.memory import Draft, Store
from app.facade import Vault
from tests.app.conftest import PW, share_embedder
from tests.inside import inside

ROOT = Path(__file__).resolve().parents[2]
CHROMA_NAMES = ("chroma.sqlite3", "data_level0.bin", "header.bin", "length.bin",
                "link_lists.bin", "index_metadata.pickle")


@dataclass(frozen=True)
class Dirs:
    tmp: Path
    home: Path
    cwd: Path

    def all(self) -> list[Path]:
        return [self.tmp, self.home, self.cwd]


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Dirs]:
    """Private TMPDIR, HOME and working directory, so anything written there is ours."""
    d = Dirs(tmp_path / "tmp", tmp_path / "home", tmp_path / "cwd")
    for p in d.all():
        p.mkdir(mode=0o700)
    monkeypatch.setenv("TMPDIR", str(d.tmp))
    monkeypatch.setenv("SQLITE_TMPDIR", str(d.tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(d.tmp))
    monkeypatch.setenv("HOME", str(d.home))
    for var in ("XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(d.cwd)
    yield d


def files_under(*roots: Path) -> list[Path]:
    out = []
    for root in roots:
        if root.is_file():
            out.append(root)
        elif root.is_dir():
            out += [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    return out


def listing(*roots: Path) -> set[str]:
    return {str(p) for root in roots if root.exists() for p in [root, *root.rglob("*")]}


def scan(paths: list[Path], needles: list[bytes]) -> list[tuple[str, int]]:
    hits = []
    for p in paths:
        try:
            data = p.read_bytes()
        except OSError:
            continue
        for n, needle in enumerate(needles):
            if needle in data:
                hits.append((str(p), n))
    return hits


def chroma_artifacts(*roots: Path) -> list[str]:
    found = []
    for root in roots:
        if not root.exists():
            continue
        for p in root.rglob("*"):
            if p.name in CHROMA_NAMES or "chroma" in p.name.lower():
                found.append(str(p))
    return found


def recent_system_temp_files(since: float) -> list[Path]:
    out = []
    for d in (Path("/tmp"), Path("/var/tmp")):
        if not d.is_dir():
            continue
        for p in d.iterdir():
            try:
                if p.is_file() and not p.is_symlink() and p.stat().st_mtime >= since:
                    out.append(p)
            except OSError:
                continue
    return out


def vector_needles(vec: np.ndarray) -> list[bytes]:
    raw = np.asarray(vec, dtype=np.float32)
    normed = (raw / np.linalg.norm(raw)).astype(np.float32)
    return list(dict.fromkeys([raw.tobytes()[:64], normed.tobytes()[:64]]))


def test_reference_vector_leaves_no_bytes_and_no_chroma_files(
        vault_dir: Path, fast_kdf: Any, embedder: Any, dirs: Dirs, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    start = time.time()
    share_embedder(monkeypatch, embedder)
    monkeypatch.setattr(storage.vector, "CHROMA_MIN_ROWS", 1)
    canary = f"vector canary {uuid.uuid4().hex} zebra quartz lighthouse"
    vec = embedder.embed_one(canary)
    needles = vector_needles(vec)

    v = Vault.create(vault_dir, PW, kdf=fast_kdf, threaded=False, use_chroma=True).vault
    try:
        mid = v.remember(Draft(text=canary, store=Store.SEMANTIC)).value
        for n in range(12):
            v.remember(Draft(text=f"Filler memory number {n} about the weather"))
        # The vault holds exactly the reference vector (so the scan looks for the right bytes).
        blob = inside(v).db.read(lambda c: c.execute("SELECT vec FROM vector WHERE memory_id = ?",
                                                     (mid,)).fetchone()[0])
        assert bytes(blob) == np.asarray(vec, dtype=np.float32).tobytes()
    finally:
        v.lock()

    # Reopen: the in-RAM Chroma index is built from the vectors and serves a query.
    v = Vault.open(vault_dir, PW, threaded=False, use_chroma=True)
    try:
        assert inside(v).index.wait_ready(60), "the Chroma index was not built"
        assert v.status().index == "chroma"
        assert v.recall(canary, touch=False)[0].id == mid
        hits_unlocked = scan(files_under(vault_dir, *dirs.all()), needles)
    finally:
        v.lock()
    assert hits_unlocked == []

    paths = files_under(vault_dir, *dirs.all()) + recent_system_temp_files(start)
    assert any(p.name == "vault.db" for p in paths)
    assert scan(paths, needles) == []
    assert chroma_artifacts(vault_dir, *dirs.all()) == []

    # Positive control: the scanner finds the needle in a plaintext copy.
    control = tmp_path / "control" / "plain.bin"
    control.parent.mkdir()
    control.write_bytes(b"\x00" * 100 + np.asarray(vec, dtype=np.float32).tobytes())
    assert scan([control], needles) == [(str(control), 0)]
    (tmp_path / "control" / "chroma.sqlite3").write_bytes(b"")
    assert chroma_artifacts(tmp_path / "control")


class OpenFileSampler:
    """Polls this process's open files (psutil, with modes) until stopped."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, str]] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def snapshot() -> set[tuple[str, str]]:
        return {(f.path, getattr(f, "mode", "?")) for f in psutil.Process().open_files()}

    def _run(self) -> None:
        while not self._stop.is_set():
            self.seen |= self.snapshot()
            time.sleep(0.002)

    def __enter__(self) -> OpenFileSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.seen |= self.snapshot()


def test_chroma_build_and_query_write_no_file(
        embedder: Any, dirs: Dirs, monkeypatch: pytest.MonkeyPatch) -> None:
    import chromadb
    import chromadb.api.rust  # noqa: F401  (imports done before the "before" snapshot)
    from chromadb.config import Settings
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

    monkeypatch.setattr(storage.vector, "CHROMA_MIN_ROWS", 1)
    # The code, not the test environment, must turn telemetry off.
    monkeypatch.delenv("ANONYMIZED_TELEMETRY", raising=False)
    settings_seen: list[Settings | None] = []
    real_ephemeral = chromadb.EphemeralClient

    def ephemeral(settings: Settings | None = None, **kw: Any) -> Any:
        settings_seen.append(settings)
        return real_ephemeral(settings=settings, **kw)
    monkeypatch.setattr(chromadb, "EphemeralClient", ephemeral)
    forbidden: list[str] = []
    monkeypatch.setattr(chromadb, "PersistentClient",
                        lambda *a, **k: forbidden.append("PersistentClient"))
    real_ef_init = ONNXMiniLM_L6_V2.__init__

    def ef_init(self: Any, *a: Any, **k: Any) -> None:
        forbidden.append("ONNXMiniLM_L6_V2")
        real_ef_init(self, *a, **k)
    monkeypatch.setattr(ONNXMiniLM_L6_V2, "__init__", ef_init)

    texts = [f"Note {n}: {w} in the garden" for n, w in enumerate(
        "roses tulips weeds compost sparrows rain frost bees snails hedges".split() * 4)]
    mat = embedder.embed(texts)
    ids = np.arange(101, 101 + len(texts), dtype=np.int64)
    idx = storage.vector.VectorIndex(use_chroma=True)
    idx.load(ids, mat)
    exact_calls = []
    real_exact = idx.search_exact

    def counted_exact(*a: Any, **k: Any) -> Any:
        exact_calls.append(1)
        return real_exact(*a, **k)
    monkeypatch.setattr(idx, "search_exact", counted_exact)

    watched = dirs.all()
    # Positive control: the sampler sees a file held open for writing for a moment.
    with OpenFileSampler() as control:
        with open(dirs.tmp / "control.bin", "wb") as f:
            f.write(b"x")
            time.sleep(0.05)
    assert (str(dirs.tmp / "control.bin"), "w") in control.seen
    (dirs.tmp / "control.bin").unlink()

    before_open = OpenFileSampler.snapshot()
    before_fds = set(os.listdir("/proc/self/fd"))
    before_list = listing(*watched)
    try:
        with OpenFileSampler() as sampler:
            idx.start_chroma_build()
            assert idx.wait_ready(60), "the Chroma index was not built"
            hits = idx.search(mat[7], 3)
            idx.add([999], mat[3:4])            # an upsert while Chroma serves
        after_open = OpenFileSampler.snapshot()
        after_list = listing(*watched)
        assert hits[0][0] == 108 and hits[0][1] == pytest.approx(1.0, abs=1e-4)
        assert exact_calls == [], "the query was not answered by Chroma"

        new_during = {(p, m) for p, m in sampler.seen if (p, m) not in before_open}
        assert [x for x in new_during if x[1] != "r"] == [], "opened for writing"
        assert after_open - before_open == set()
        assert after_list == before_list
        assert chroma_artifacts(*watched) == []
        for fd in set(os.listdir("/proc/self/fd")) - before_fds:
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            assert not target.startswith("/"), target   # anon_inode:/pipe:, never a file

        # Requirement 18: telemetry off, Chroma's downloading embedding function never made.
        assert settings_seen and all(s is not None and s.anonymized_telemetry is False
                                     for s in settings_seen)
        assert idx._client.get_settings().anonymized_telemetry is False
        assert idx._client.get_settings().is_persistent is False
        assert forbidden == []
    finally:
        idx.close()
    assert len(idx) == 0 and not idx.chroma_ready


STRACE_CHILD = r"""
import os, sys
mode = sys.argv[1]
if mode == "control":
    os.access("/KEPT_VECTOR_BEGIN", os.F_OK)
    with open("written.txt", "w") as f:
        f.write("x")
    os.access("/KEPT_VECTOR_END", os.F_OK)
    sys.exit(0)
import numpy as np
import chromadb, chromadb.api.rust
import storage.vector as sv
from storage.embedder import Embedder, find_model_dir
sv.CHROMA_MIN_ROWS = 1
emb = Embedder(find_model_dir())
mat = emb.embed([f"note {n} about the garden and the weather" for n in range(40)])
idx = sv.VectorIndex(use_chroma=True)
idx.load(np.arange(1, 41, dtype=np.int64), mat)
q = emb.embed_one("the garden")
os.access("/KEPT_VECTOR_BEGIN", os.F_OK)
idx.start_chroma_build()
assert idx.wait_ready(60)
hits = idx.search(q, 5)
idx.add([77], mat[:1])
os.access("/KEPT_VECTOR_END", os.F_OK)
assert idx.chroma_ready and len(hits) == 5
idx.close()
print("ok")
"""

WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
WRITE_CALLS = ("creat(", "mkdir(", "mkdirat(", "rename(", "renameat(", "renameat2(",
               "unlink(", "unlinkat(", "link(", "linkat(", "symlink(", "symlinkat(",
               "truncate(", "rmdir(")


def _strace_writes(tmp_path: Path, mode: str) -> list[str]:
    strace = shutil.which("strace")
    assert strace, "strace is required for the requirement 3 write check"
    out = tmp_path / f"strace-{mode}.txt"
    work = tmp_path / f"work-{mode}"
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1",
               HOME=str(work), TMPDIR=str(work))
    env.pop("ANONYMIZED_TELEMETRY", None)
    r = subprocess.run([strace, "-f", "-qq", "-e", "trace=%file", "-o", str(out),
                        sys.executable, "-c", STRACE_CHILD, mode], cwd=work, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = out.read_text().splitlines()
    begin = next(n for n, x in enumerate(lines) if "KEPT_VECTOR_BEGIN" in x)
    end = next(n for n, x in enumerate(lines) if "KEPT_VECTOR_END" in x)
    window = lines[begin:end]
    assert len(window) > 1 or mode == "control"
    bad = []
    for line in window:
        call = re.sub(r"^\d+\s+", "", line)
        if "resumed>" in call.split("(", 1)[0]:
            continue
        if call.startswith(("open(", "openat(", "openat2(")) and any(
                f in call for f in WRITE_FLAGS):
            bad.append(call)
        elif call.startswith(WRITE_CALLS):
            bad.append(call)
    return bad


def test_vector_layer_opens_no_file_for_writing_under_strace(tmp_path: Path) -> None:
    # Positive control: a write between the markers is seen.
    control = _strace_writes(tmp_path, "control")
    assert any("written.txt" in c for c in control)
    assert _strace_writes(tmp_path, "chroma") == []
