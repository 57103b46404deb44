"""Encrypted backups (issue 16, SECURITY.md requirement 15): a round trip keeps every row; any
damage is refused with one line and writes no vault; no backup or temp file holds plaintext;
an interrupted or disk-full backup leaves no partial file and the vault untouched."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.api import MemoryQuery
from app.domain.memory import Draft, Store
from app.errors import StorageFull, ValidationError, VaultCorrupt, VaultExists, WrongKey
from app.facade import Vault
from storage import backup
from tests.app.cli.conftest import PW, kept_in_process
from tests.app.services.forget.pagescan import scan_decrypted, scan_raw
from tests.conftest import new_vault
from tests.inside import inside

CANARY = "Zebracanary7731"


def _open(folder: Path, password: str = PW, **kw: Any) -> Vault:
    return Vault.open(folder, password, threaded=False, use_chroma=False, **kw)


def dump(v: Vault, skip: tuple[str, ...] = ("backup",)) -> dict[str, str]:
    """A checksum per table of every row of every table (memories, links, history, settings,
    vectors, FTS shadow tables...), rows sorted, so two vaults compare table by table."""
    def run(c: Any) -> dict[str, str]:
        out = {}
        names = [r[0] for r in c.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for name in names:
            if name in skip or name == "sqlite_sequence":
                continue
            cols = [r[1] for r in c.execute(f'PRAGMA table_info("{name}")')]
            if not cols:  # a virtual table: its shadow tables carry its rows
                continue
            rows = sorted(repr(tuple(r)) for r in c.execute(f'SELECT * FROM "{name}"'))
            out[name] = hashlib.sha256("\n".join(rows).encode()).hexdigest()
        return out
    return dict(inside(v).db.read(run))


@pytest.fixture
def vault(tmp_path: Path, fast_kdf: object, shared_model: None) -> Iterator[Path]:
    """A vault with memories, vectors (the real model), a correction (a link and history),
    an imported conversation and a changed setting."""
    from app.services.importer import parse_import
    folder = tmp_path / "vault"
    v = new_vault(folder, PW, threaded=False, use_chroma=False)
    try:
        ids = [v.remember(Draft(text=f"note {i}: the garden needs water on day {i}",
                                store=Store.SEMANTIC)).value for i in range(12)]
        v.remember(Draft(text=f"my secret is {CANARY}", store=Store.SEMANTIC))
        v.correct(ids[3], "note 3: the garden needs water every second day")
        lines = [f'{{"session": "s1", "speaker": "me", "text": "turn {i} about tea", '
                 f'"at": "2026-01-0{1 + i % 5}T10:00:00Z", "ref": "r{i}"}}' for i in range(8)]
        v.import_turns(parse_import(lines))
        v.set_setting("recall.context_budget", 3210)
    finally:
        v.lock()
    yield folder


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_round_trip_keeps_every_row(vault: Path, tmp_path: Path) -> None:
    v = _open(vault)
    try:
        before = dump(v)
        rec = v.backup(tmp_path / "b.kept-backup").value
        assert rec.memories == v.count_memories(MemoryQuery(status=None))
        assert [r.path for r in v.backups()] == [rec.path]
    finally:
        v.lock()
    assert {"memory", "link", "history", "settings", "vector"} <= set(before)
    check = backup.verify(tmp_path / "b.kept-backup", PW)
    assert check.memories == rec.memories and check.vectors == rec.vectors > 0
    assert check.links == rec.links > 0 and check.history == rec.history > 0
    backup.restore(tmp_path / "b.kept-backup", PW, tmp_path / "restored")
    assert _files(tmp_path / "restored") == ["vault.db", "vault.key.json", "vault.lock"]
    r = _open(tmp_path / "restored")
    try:
        assert dump(r) == before
        ok = inside(r).db.read(lambda c: c.execute("PRAGMA integrity_check").fetchone()[0])
        assert ok == "ok"
        assert r.recall("watering the garden", k=3)  # vectors and text index work
    finally:
        r.lock()
    # Requirement 2 for the restored database: encrypted, not SQLite's plain header.
    assert (tmp_path / "restored" / "vault.db").read_bytes()[:16] != b"SQLite format 3\0"
    # Nothing but the backup beside it: no temp file left.
    assert _files(tmp_path) == ["b.kept-backup", "restored", "vault"]


def test_own_password_and_restore_never_overwrites(vault: Path, tmp_path: Path) -> None:
    v = _open(vault, load_model=False)
    try:
        v.backup(tmp_path / "own.bak", "a different backup password")
        with pytest.raises(ValidationError, match="already exists"):
            v.backup(tmp_path / "own.bak")
        with pytest.raises(ValidationError, match="vault's own folder"):
            v.backup(vault / "inside.bak")
    finally:
        v.lock()
    with pytest.raises(WrongKey):
        backup.verify(tmp_path / "own.bak", PW)
    backup.verify(tmp_path / "own.bak", "a different backup password")
    before = {p.name: p.read_bytes() for p in vault.iterdir() if p.is_file()}
    with pytest.raises(VaultExists):
        backup.restore(tmp_path / "own.bak", "a different backup password", vault)
    assert {p.name: p.read_bytes() for p in vault.iterdir() if p.is_file()} == before
    other = tmp_path / "busy"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(ValidationError, match="new or empty"):
        backup.restore(tmp_path / "own.bak", "a different backup password", other)
    assert _files(other) == ["notes.txt"]


@pytest.fixture
def chunked(monkeypatch: pytest.MonkeyPatch) -> None:
    """16 KiB chunks, so a small test vault spans many (both sides read the constant)."""
    monkeypatch.setattr(backup, "CHUNK", 16 * 1024)


def _chunk_offsets(path: Path) -> list[int]:
    data = path.read_bytes()
    pos = len(backup.MAGIC) + 4 + int.from_bytes(data[8:12], "big")
    out = []
    while pos < len(data):
        out.append(pos)
        pos += 4 + int.from_bytes(data[pos:pos + 4], "big")
    return out


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    offs = _chunk_offsets(path)
    assert len(offs) > 4
    if how == "magic":
        data[2] ^= 0x01
    elif how == "header-json":
        data[20] ^= 0x20
    elif how == "header-salt":
        i = data.index(b'"salt":"') + 12
        data[i] = ord("A") if data[i] != ord("A") else ord("B")
    elif how == "header-file-id":
        i = data.index(b'"file_id":"') + 14
        data[i] = ord("A") if data[i] != ord("A") else ord("B")
    elif how == "manifest":
        data[offs[0] + 10] ^= 0x01
    elif how == "middle-chunk":
        data[offs[len(offs) // 2] + 100] ^= 0x01
    elif how == "last-chunk":
        data[-3] ^= 0x80
    elif how == "length-field":
        data[offs[2] + 1] ^= 0x01
    elif how == "truncated":
        del data[-1000:]
    elif how == "last-chunk-dropped":
        del data[offs[-1]:]
    elif how == "chunks-swapped":
        a, b, c = offs[1], offs[2], offs[3]
        data[a:c] = data[b:c] + data[a:b]
    elif how == "trailing-bytes":
        data += b"\0"
    path.write_bytes(bytes(data))


DAMAGE = ["magic", "header-json", "header-salt", "header-file-id", "manifest", "middle-chunk",
          "last-chunk", "length-field", "truncated", "last-chunk-dropped", "chunks-swapped",
          "trailing-bytes"]


def test_any_damage_is_refused_with_one_line(vault: Path, tmp_path: Path, chunked: None) -> None:
    v = _open(vault, load_model=False)
    try:
        v.backup(tmp_path / "good.bak")
    finally:
        v.lock()
    good = (tmp_path / "good.bak").read_bytes()
    assert len(_chunk_offsets(tmp_path / "good.bak")) > 4
    for how in DAMAGE:
        bad = tmp_path / f"{how}.bak"
        bad.write_bytes(good)
        _damage(bad, how)
        assert bad.read_bytes() != good, how
        if how in ("middle-chunk", "truncated"):  # verify reads as restore does (one derive each)
            with pytest.raises((VaultCorrupt, WrongKey)):
                backup.verify(bad, PW)
        target = tmp_path / f"restore-{how}"
        r = kept_in_process(tmp_path / "unused", "backup", "restore", str(bad), str(target))
        assert r.returncode == 2, (how, r.stderr)
        lines = [x for x in r.stderr.splitlines() if x.strip()]
        assert len(lines) == 1 and "Traceback" not in r.stderr, (how, r.stderr)
        assert "damaged" in lines[0] or "Wrong password" in lines[0] \
            or "not a Kept backup" in lines[0], (how, lines)
        assert not target.exists(), how  # no vault written, not even an empty folder
        bad.unlink()
    assert _files(tmp_path) == ["good.bak", "vault"]  # no temp file left by any check


def test_no_backup_or_temp_file_holds_plaintext(vault: Path, tmp_path: Path, chunked: None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    seen: list[tuple[str, list[str]]] = []
    real = backup._file_chunks

    def spy(path: Path) -> Iterator[bytes]:
        for n, block in enumerate(real(path)):
            if n == 3:  # mid-stream: the snapshot and the half-written backup both exist
                files = [p for p in out.iterdir() if p.is_file()]
                seen.append((",".join(sorted(p.name for p in files)), scan_raw(files, CANARY)))
            yield block
    monkeypatch.setattr(backup, "_file_chunks", spy)
    v = _open(vault, load_model=False)
    try:
        key = bytes(v._opened.keys.db_key)
        assert scan_decrypted(vault, key, CANARY)  # the scanner sees the canary in the vault
        v.backup(out / "b.bak")
    finally:
        v.lock()
    assert len(seen) == 1
    names, hits = seen[0]
    assert ".kept-db" in names and ".kept-tmp" in names, names
    assert hits == []
    assert scan_raw([out], CANARY) == []


def test_exception_mid_stream_leaves_nothing(vault: Path, tmp_path: Path, chunked: None,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    real = backup._file_chunks

    def failing(path: Path) -> Iterator[bytes]:
        for n, block in enumerate(real(path)):
            if n == 2:
                raise RuntimeError("interrupted")
            yield block
    monkeypatch.setattr(backup, "_file_chunks", failing)
    v = _open(vault, load_model=False)
    try:
        with pytest.raises(RuntimeError):
            v.backup(tmp_path / "b.bak")
        assert v.backups() == []
    finally:
        v.lock()
    assert _files(tmp_path) == ["vault"]


def test_disk_full_mid_stream_reports_and_leaves_the_vault_untouched(
        vault: Path, tmp_path: Path, chunked: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    real = backup._write_stream

    def full(fh: Any, *args: Any) -> None:
        fh.write(b"x" * 5000)
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(backup, "_write_stream", full)
    before = {n: hashlib.sha256((vault / n).read_bytes()).hexdigest()
              for n in ("vault.db", "vault.key.json")}
    r = kept_in_process(vault, "backup", "create", str(tmp_path / "b.bak"))
    assert r.returncode == 5, r.stderr
    assert "disk filled up" in r.stderr and "Traceback" not in r.stderr
    assert _files(tmp_path) == ["vault"]
    after = {n: hashlib.sha256((vault / n).read_bytes()).hexdigest()
             for n in ("vault.db", "vault.key.json")}
    assert after == before
    monkeypatch.setattr(backup, "_write_stream", real)
    assert kept_in_process(vault, "backup", "create", str(tmp_path / "b.bak")).returncode == 0


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "small"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs",
                          str(mnt)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({res.stderr.strip()}); the injected ENOSPC "
                    "test covers the same path")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_real_full_disk_during_backup(vault: Path, small_disk: Path) -> None:
    """The target on a 256 KiB tmpfs: the snapshot (VACUUM INTO) or the stream runs out of
    space; StorageFull, nothing left on the small disk, the vault opens and is unchanged."""
    v = _open(vault, load_model=False)
    try:
        before = dump(v, skip=())
        with pytest.raises(StorageFull):
            v.backup(small_disk / "b.bak")
        assert dump(v, skip=()) == before
        assert v.backups() == []
        assert inside(v).db.read(
            lambda c: c.execute("PRAGMA integrity_check").fetchone()[0]) == "ok"
    finally:
        v.lock()
    assert list(small_disk.iterdir()) == []


CHILD = """
import sys, time
from pathlib import Path
from storage import backup
real = backup._file_chunks
def slow(path):
    for block in real(path):
        print("chunk", flush=True)
        time.sleep(0.2)
        yield block
backup._file_chunks = slow
backup.CHUNK = 8 * 1024
from app.facade import Vault
v = Vault.open(Path(sys.argv[1]), sys.argv[2], threaded=False, load_model=False,
               use_chroma=False)
v.backup(Path(sys.argv[3]))
"""


def test_kill_9_during_backup_leaves_no_partial_file(vault: Path, tmp_path: Path,
                                                     python: str) -> None:
    target = tmp_path / "out" / "b.bak"
    target.parent.mkdir()
    child = subprocess.Popen([python, "-c", CHILD, str(vault), PW, str(target)],
                             stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
    try:
        assert child.stdout is not None
        for _ in range(3):  # streaming: the snapshot and the half-written file exist
            assert child.stdout.readline().strip() == "chunk"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    assert not target.exists()
    left = sorted(p.name for p in target.parent.iterdir())
    assert left and all(".kept-" in n for n in left)  # what a kill cannot clean up ...
    assert scan_raw([target.parent], CANARY) == []  # ... is encrypted
    v = _open(vault, load_model=False)
    try:
        assert v.backups() == []  # never recorded
        v.backup(target)  # the next backup to the same file sweeps them
    finally:
        v.lock()
    assert sorted(p.name for p in target.parent.iterdir()) == ["b.bak"]
    backup.verify(target, PW)


def test_stream_memory_is_bounded_by_the_chunk(vault: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Streamed: no read of the snapshot or of the backup asks for more than a chunk (plus
    its length and tag), whatever the size of the vault."""
    monkeypatch.setattr(backup, "CHUNK", 4096)
    sizes: list[int] = []
    import builtins
    real_open = builtins.open

    class Spy:
        def __init__(self, fh: Any) -> None:
            self._fh = fh

        def read(self, n: int = -1) -> bytes:
            sizes.append(n)
            return bytes(self._fh.read(n))

        def __getattr__(self, name: str) -> Any:
            return getattr(self._fh, name)

        def __enter__(self) -> Spy:
            return self

        def __exit__(self, *a: object) -> None:
            self._fh.close()

    def spy_open(file: Any, mode: str = "r", *a: Any, **kw: Any) -> Any:
        fh = real_open(file, mode, *a, **kw)
        return Spy(fh) if "b" in mode and "r" in mode and "+" not in mode else fh
    monkeypatch.setattr(backup, "open", spy_open, raising=False)
    v = _open(vault, load_model=False)
    try:
        v.backup(tmp_path / "b.bak")
    finally:
        v.lock()
    backup.verify(tmp_path / "b.bak", PW)
    assert sizes and -1 not in sizes
    assert max(sizes) <= max(4096 + 16, backup.MAX_HEADER)
    assert (tmp_path / "b.bak").stat().st_size > 20 * 4096  # many chunks went through


def test_header_holds_no_counts(vault: Path, tmp_path: Path) -> None:
    v = _open(vault, load_model=False)
    try:
        v.backup(tmp_path / "b.bak")
    finally:
        v.lock()
    with open(tmp_path / "b.bak", "rb") as fh:
        head = backup.read_header(fh)
    assert len(head.raw) < 1024 and head.vault_id
    assert b"memories" not in head.raw  # counts are inside the encrypted stream only
