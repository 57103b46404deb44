"""Encrypted backups: one file, authenticated end to end, streamed (issue 16,
docs/security.md#15-backups-honour-forget). Layer: storage. Runs on: a worker thread (blocks: disk,
Argon2id).

Making one never copies the live file: ``VACUUM INTO`` on a connection of its own writes a
consistent snapshot to a temp file next to the target. With SQLCipher the copy is encrypted
under the vault's own database key (measured: no plaintext header, no canary, and it opens with
K_db), so nothing decrypted ever reaches the disk. That file is then streamed into the backup.

File layout::

    b"KEPTBAK\\x01" | u32 header length | header (canonical JSON)
    chunk* = u32 length | AES-256-GCM(K_stream, nonce = index as 12 bytes, plaintext, AAD)

The header holds the vault id, Argon2id parameters and salt, and a wrap of the vault's data key
exactly as the key file holds it (by default a copy of the key file's own wrap, so the backup
opens with the vault's password at the time; or a wrap under a password of its own), plus a
random file id. K_stream = HKDF(DEK, info "kept/v1 backup-stream", salt file id): a key per
file, so counter nonces never repeat. The AAD of every chunk is SHA-256(magic | length |
header), the chunk index and a last-chunk flag: a changed header byte, a changed, dropped or
reordered chunk, a truncated file or trailing bytes are all refused. Chunk 0 is a small JSON
manifest (counts, schema); then the SQLCipher database in chunks of 1 MiB.

The file is written as a hidden temp file beside the target, fsynced, read back and decrypted
whole (its plaintext hash compared with what was written), then renamed over the target and
the folder fsynced. Any failure removes both temp files; a process killed outright leaves them
(encrypted) and the next backup to the same target sweeps them.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import IO, Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from app.api import BackupRecord
from app.errors import StorageFull, ValidationError, VaultCorrupt, VaultExists, WrongKey
from storage import crypto, sqlcipher
from storage.crypto import KdfParams, KeyFile, Keys
from storage.paths import DB_FILE, OwnerLock, check_new_vault_folder, make_private_dir

log = logging.getLogger(__name__)

MAGIC = b"KEPTBAK\x01"
FORMAT = 1
CHUNK = 1 << 20            # plaintext bytes per chunk: what RAM a backup needs, about
MAX_HEADER = 64 * 1024
MAX_MANIFEST = 64 * 1024
TAG = 16
INFO_STREAM = b"kept/v1 backup-stream"
INFO_DEK_ID = b"kept/v1 dek-id"
TMP_MARK = ".kept-"        # temp files beside a target: .<name>.<hex>.kept-db / .kept-tmp

Progress = Callable[[int, int], None]

DAMAGED = ("The backup file is damaged, truncated or was changed ({what}); nothing was "
           "restored or written.")


def _bad(message: str) -> VaultCorrupt:
    exc = VaultCorrupt(message)
    exc.hint = ""  # one line: the vault's own recovery hint does not apply to a backup file
    return exc


def _damaged(what: str) -> VaultCorrupt:
    return _bad(DAMAGED.format(what=what))


def _b64(data: bytes) -> str:
    import base64
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    import base64
    return base64.b64decode(text.encode("ascii"), validate=True)


def dek_id(dek: bytes | bytearray) -> str:
    """A one-way name of a data key: whether a backup's wrap still wraps the current DEK."""
    return crypto.hkdf(dek, INFO_DEK_ID)[:16].hex()


def _stream_key(dek: bytes | bytearray, file_id: bytes) -> bytearray:
    out = bytearray(32)
    HKDF(algorithm=hashes.SHA256(), length=32, salt=file_id, info=INFO_STREAM
         ).derive_into(dek, out)
    return out


def _nonce(idx: int) -> bytes:
    return idx.to_bytes(12, "big")


def _aad(digest: bytes, idx: int, last: bool) -> bytes:
    return digest + idx.to_bytes(8, "big") + (b"\x01" if last else b"\x00")


# --- header and manifest ---------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Header:
    vault_id: str
    kdf: KdfParams
    wrap: dict[str, str]
    file_id: bytes
    raw: bytes  # magic | length | JSON, exactly as in the file

    @property
    def digest(self) -> bytes:
        return hashlib.sha256(self.raw).digest()

    @property
    def key_file(self) -> KeyFile:
        return KeyFile(vault_id=self.vault_id, kdf=self.kdf, wrap=self.wrap)

    def unwrap(self, password: str) -> bytearray:
        try:
            return crypto.unwrap(self.key_file, password)
        except WrongKey as exc:
            raise WrongKey("Wrong password for this backup, or its header was changed. "
                           "Nothing was restored or written.") from exc


def encode_header(vault_id: str, kdf: KdfParams, wrap: dict[str, str], file_id: bytes
                  ) -> Header:
    body = json.dumps({"format": FORMAT, "vault_id": vault_id, "kdf": kdf.to_json(),
                       "wrap": wrap, "file_id": _b64(file_id), "cipher": "A256GCM",
                       "chunk": CHUNK}, sort_keys=True, separators=(",", ":")).encode()
    raw = MAGIC + len(body).to_bytes(4, "big") + body
    return Header(vault_id, kdf, dict(wrap), file_id, raw)


def read_header(fh: IO[bytes]) -> Header:
    head = fh.read(len(MAGIC) + 4)
    if len(head) < len(MAGIC) + 4 or head[:len(MAGIC)] != MAGIC:
        if head[:7] == MAGIC[:7]:
            raise _damaged("its header")
        raise _bad("This is not a Kept backup file; nothing was restored or written.")
    n = int.from_bytes(head[len(MAGIC):], "big")
    if not 2 <= n <= MAX_HEADER:
        raise _damaged("its header")
    body = fh.read(n)
    if len(body) != n:
        raise _damaged("its header is cut short")
    try:
        obj = json.loads(body.decode("utf-8"))
        if not isinstance(obj, dict) or obj.get("format") != FORMAT \
                or obj.get("cipher") != "A256GCM" or obj.get("chunk") != CHUNK:
            raise ValueError("format")
        kf = KeyFile.from_json({"format": crypto.FORMAT, "vault_id": obj["vault_id"],
                                "kdf": obj["kdf"], "wrap": obj["wrap"]})
        file_id = _unb64(obj["file_id"])
        if len(file_id) != 16:
            raise ValueError("file id")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, WrongKey,
            VaultCorrupt) as exc:
        raise _damaged("its header") from exc
    return Header(kf.vault_id, kf.kdf, dict(kf.wrap), file_id, head + body)


@dataclass(frozen=True, slots=True)
class Manifest:
    """Chunk 0: what the backup holds, in counts (never content)."""
    vault_id: str
    created_at: float
    schema_version: str
    db_bytes: int
    memories: int
    links: int
    history: int
    vectors: int
    settings: int
    max_memory_id: int

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Manifest:
        try:
            obj = json.loads(data.decode("utf-8"))
            return cls(**{f.name: obj[f.name] for f in fields(cls)})
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            raise _damaged("its manifest") from exc


def _counts(conn: sqlcipher.Connection) -> dict[str, int]:
    def one(sql: str) -> int:
        row = conn.execute(sql).fetchone()
        return int(row[0] or 0) if row else 0
    return {"memories": one("SELECT count(*) FROM memory"),
            "links": one("SELECT count(*) FROM link"),
            "history": one("SELECT count(*) FROM history"),
            "vectors": one("SELECT count(*) FROM vector"),
            "settings": one("SELECT count(*) FROM settings"),
            "max_memory_id": one("SELECT max(id) FROM memory")}


def _schema(conn: sqlcipher.Connection) -> str:
    row = conn.execute("SELECT max(name) FROM schema_version").fetchone()
    return str(row[0] or "") if row else ""


# --- the chunk stream ------------------------------------------------------------------------

def _write_stream(fh: IO[bytes], key: bytearray, digest: bytes, parts: Iterator[bytes],
                  plain_hash: Any) -> None:
    """Encrypt ``parts`` (chunk 0 first), flagging the last one; needs one chunk of lookahead."""
    aes = AESGCM(key)
    idx = 0
    pending = next(parts)
    for nxt in parts:
        plain_hash.update(pending)
        ct = aes.encrypt(_nonce(idx), pending, _aad(digest, idx, False))
        fh.write(len(ct).to_bytes(4, "big") + ct)
        idx += 1
        pending = nxt
    plain_hash.update(pending)
    ct = aes.encrypt(_nonce(idx), pending, _aad(digest, idx, True))
    fh.write(len(ct).to_bytes(4, "big") + ct)


def _read_stream(fh: IO[bytes], key: bytearray, digest: bytes) -> Iterator[bytes]:
    """Decrypted chunks, in order; ``VaultCorrupt`` for any damage, truncation or extra bytes."""
    aes = AESGCM(key)
    idx = 0
    while True:
        head = fh.read(4)
        if len(head) != 4:
            raise _damaged("it ends before its last part: truncated")
        n = int.from_bytes(head, "big")
        if not TAG <= n <= max(CHUNK, MAX_MANIFEST) + TAG:
            raise _damaged(f"part {idx}")
        ct = fh.read(n)
        if len(ct) != n:
            raise _damaged("it ends before its last part: truncated")
        last = False
        try:
            plain = aes.decrypt(_nonce(idx), ct, _aad(digest, idx, False))
        except InvalidTag:
            try:
                plain = aes.decrypt(_nonce(idx), ct, _aad(digest, idx, True))
                last = True
            except InvalidTag as exc:
                raise _damaged(f"part {idx} fails its check") from exc
        yield plain
        idx += 1
        if last:
            if fh.read(1):
                raise _damaged("bytes after its last part")
            return


def _file_chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        while True:
            block = fh.read(CHUNK)
            if not block:
                return
            yield block


# --- temp files ------------------------------------------------------------------------------

def _temp_name(target: Path, kind: str) -> Path:
    return target.with_name(f".{target.name}.{secrets.token_hex(4)}{TMP_MARK}{kind}")


def sweep(target: Path) -> int:
    """Remove temp files a killed backup to ``target`` left beside it (encrypted, but dead)."""
    n = 0
    with suppress(OSError):
        for stale in target.parent.glob(f".{target.name}.*{TMP_MARK}*"):
            with suppress(FileNotFoundError):
                stale.unlink()
                n += 1
    return n


def _unlink_db(path: Path) -> None:
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"),
              path.with_name(path.name + "-journal")):
        with suppress(FileNotFoundError):
            p.unlink()


def _new_private_file(path: Path) -> None:
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _full(exc: BaseException) -> bool:
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG)
    return sqlcipher.is_disk_full(exc)


def _storage_full(exc: BaseException) -> StorageFull:
    log.warning("backup failed: %s", type(exc).__name__)
    return StorageFull("The disk filled up (or failed) while writing the backup; no backup was "
                       "written and the vault is unchanged.",
                       hint="Free some space where the backup goes and try again.")


def check_target(target: Path, vault_folder: Path, *, replace_ok: bool = False) -> Path:
    """``ValidationError`` unless ``target`` can be a new backup file (said before any work)."""
    target = Path(os.path.abspath(target.expanduser()))
    if target.is_dir():
        raise ValidationError(f"{target} is a folder; name the backup file to write.")
    if not replace_ok and os.path.lexists(target):
        raise ValidationError(f"{target} already exists; Kept does not overwrite a file with "
                              "a backup. Choose a new name.")
    if not target.parent.is_dir():
        raise ValidationError(f"The folder {target.parent} does not exist.")
    vf = Path(os.path.abspath(vault_folder))
    if vf == target.parent or vf in target.parents:
        raise ValidationError("A backup inside the vault's own folder is lost with it; "
                              "choose another place.")
    return target


# --- create ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Made:
    path: Path
    file_id: str
    bytes: int
    manifest: Manifest
    dek_id: str
    own_password: bool


def create(folder: Path, keys: Keys, key_file: KeyFile, target: Path, *,
           password: str | None = None, header: Header | None = None,
           replace_ok: bool = False, progress: Progress | None = None,
           now: float | None = None) -> Made:
    """A backup of the vault in ``folder`` at ``target``. The wrap: ``header``'s (a re-made
    backup keeps its password), else one under ``password``, else the key file's own.
    ``replace_ok``: ``target`` is replaced atomically (re-making a backup)."""
    target = check_target(target, folder, replace_ok=replace_ok)
    sweep(target)
    file_id = os.urandom(16)
    own = password is not None or header is not None
    if header is not None:
        kdf, wrap = header.kdf, header.wrap
    elif password is not None:
        if not password:
            raise ValidationError("The backup password is empty.")
        params = replace(key_file.kdf, salt=KdfParams().salt)
        if params.below_floor:
            params = crypto.policy_params()
        kf = crypto.rewrap(key_file, keys.dek, password, params)
        kdf, wrap = kf.kdf, kf.wrap
    else:
        kdf, wrap = key_file.kdf, key_file.wrap
    head = encode_header(key_file.vault_id, kdf, wrap, file_id)
    tmp_db = _temp_name(target, "db")
    tmp_out = _temp_name(target, "tmp")
    stream = _stream_key(keys.dek, file_id)
    try:
        # 1. A consistent, encrypted snapshot (VACUUM INTO: under the same key, K_db).
        _new_private_file(tmp_db)
        src = sqlcipher.open_connection(folder / DB_FILE, keys.db_key)
        try:
            src.execute("VACUUM INTO ?", (str(tmp_db),))
        finally:
            src.close()
        snap = sqlcipher.open_connection(tmp_db, keys.db_key)
        try:
            if snap.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise VaultCorrupt("The vault's snapshot failed its check; no backup was "
                                   "written. Run `kept status` and see README (recovery).")
            counts, schema = _counts(snap), _schema(snap)
        finally:
            snap.close()
        size = tmp_db.stat().st_size
        manifest = Manifest(vault_id=key_file.vault_id,
                            created_at=time.time() if now is None else now,
                            schema_version=schema, db_bytes=size, **counts)
        # 2. Stream it into the backup's temp file, then fsync.
        written = hashlib.sha256()
        total = size + 1
        done = [0]

        def parts() -> Iterator[bytes]:
            yield manifest.to_bytes()
            for block in _file_chunks(tmp_db):
                done[0] += len(block)
                if progress is not None:
                    progress(done[0], total)
                yield block
        _new_private_file(tmp_out)
        with open(tmp_out, "r+b") as fh:
            fh.write(head.raw)
            _write_stream(fh, stream, head.digest, parts(), written)
            fh.flush()
            os.fsync(fh.fileno())
        _unlink_db(tmp_db)
        # 3. Read it back whole: every tag, and the plaintext hash.
        check = hashlib.sha256()
        with open(tmp_out, "rb") as rb:
            back = read_header(rb)
            if back.raw != head.raw:
                raise _damaged("its header did not read back as written")
            for plain in _read_stream(rb, stream, back.digest):
                check.update(plain)
        if check.digest() != written.digest():
            raise _damaged("it did not read back as written")
        if password is not None:
            crypto.wipe(back.unwrap(password))
        nbytes = tmp_out.stat().st_size
        # 4. In place, atomically.
        os.replace(tmp_out, target)
        try:
            crypto.fsync_dir(target.parent)
        except OSError:
            log.warning("could not fsync the backup's folder")
        if progress is not None:
            progress(total, total)
        return Made(target, file_id.hex(), nbytes, manifest, dek_id(keys.dek), own)
    except (OSError, sqlcipher.DatabaseError) as exc:
        if _full(exc):
            raise _storage_full(exc) from exc
        raise
    finally:
        crypto.wipe(stream)
        _unlink_db(tmp_db)
        with suppress(FileNotFoundError):
            tmp_out.unlink()


# --- verify and restore ----------------------------------------------------------------------

def _decrypt_to(path: Path, password: str, out: Path) -> tuple[Header, Manifest, bytearray]:
    """Decrypt the backup at ``path`` into the (SQLCipher-encrypted) database file ``out``;
    the DEK is returned for the caller to wipe."""
    try:
        fh = open(path, "rb")
    except FileNotFoundError as exc:
        raise ValidationError(f"No file at {path}.") from exc
    with fh:
        head = read_header(fh)
        dek = head.unwrap(password)
        stream = _stream_key(dek, head.file_id)
        try:
            chunks = _read_stream(fh, stream, head.digest)
            manifest = Manifest.from_bytes(next(chunks))
            if manifest.vault_id != head.vault_id:
                raise _damaged("its manifest names another vault")
            n = 0
            _new_private_file(out)
            with open(out, "r+b") as dst:
                for plain in chunks:
                    dst.write(plain)
                    n += len(plain)
                dst.flush()
                os.fsync(dst.fileno())
            if n != manifest.db_bytes:
                raise _damaged("its database is not the size recorded")
        except StopIteration as exc:
            raise _damaged("it holds no database") from exc
        except BaseException:
            crypto.wipe(dek)
            raise
        finally:
            crypto.wipe(stream)
    return head, manifest, dek


def _check_db(db: Path, dek: bytearray, manifest: Manifest) -> None:
    keys = Keys.from_dek(dek)
    try:
        conn = sqlcipher.open_connection(db, keys.db_key)
    except (WrongKey, VaultCorrupt) as exc:
        raise _damaged("its database does not open") from exc
    finally:
        keys.wipe()
    try:
        ok = conn.execute("PRAGMA integrity_check").fetchone()[0]
        cipher = conn.execute("PRAGMA cipher_integrity_check").fetchall()
        counts = _counts(conn)
    except sqlcipher.DatabaseError as exc:
        raise _damaged("its database fails its check") from exc
    finally:
        conn.close()
    if ok != "ok" or cipher:
        raise _damaged("its database fails its check")
    if any(counts[k] != getattr(manifest, k) for k in counts):
        raise _damaged("its counts differ from its manifest")


def _new_device(db: Path, dek: bytearray) -> None:
    """A restored vault is another computer: it drops the sync device identity it was backed
    up with (``storage.sync_apply.drop_device_identity``, issue 29)."""
    from storage.sync_apply import drop_device_identity
    keys = Keys.from_dek(dek)
    try:
        conn = sqlcipher.open_connection(db, keys.db_key)
    finally:
        keys.wipe()
    try:
        conn.execute("BEGIN IMMEDIATE")
        drop_device_identity(conn)
        conn.execute("COMMIT")
    finally:
        conn.close()


def _scratch(near: Path) -> Path:
    """A private temp folder beside ``near`` (the inner database is still encrypted), or in
    the system's temp folder when that one is read-only."""
    try:
        return Path(tempfile.mkdtemp(prefix=f".{near.name}.", suffix=f"{TMP_MARK}verify",
                                     dir=near.parent))
    except OSError:
        return Path(tempfile.mkdtemp(prefix="kept-verify-"))


def verify(path: Path, password: str) -> Manifest:
    """Decrypt and check everything (every tag, ``integrity_check``, the counts), writing no
    vault: the database goes to a temp folder, still encrypted, removed afterwards."""
    path = Path(os.path.abspath(path.expanduser()))
    scratch = _scratch(path)
    try:
        _head, manifest, dek = _decrypt_to(path, password, scratch / DB_FILE)
        try:
            _check_db(scratch / DB_FILE, dek, manifest)
        finally:
            crypto.wipe(dek)
        return manifest
    except OSError as exc:
        if _full(exc):
            raise _storage_full(exc) from exc
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def restore(path: Path, password: str, folder: Path) -> Manifest:
    """A new vault in ``folder`` (new or empty, never an existing vault) from the backup at
    ``path``: the database, checked, then the key file (from the backup's header: the vault
    opens with the backup's password). On any failure nothing is left in ``folder``."""
    path = Path(os.path.abspath(path.expanduser()))
    folder = Path(os.path.abspath(folder.expanduser()))
    from storage.unlock import vault_exists
    if vault_exists(folder):
        raise VaultExists("A vault already exists there; restoring never overwrites one. "
                          "Name a new or empty folder.")
    check_new_vault_folder(folder)
    if not path.is_file():
        raise ValidationError(f"No backup file at {path}.")
    made_folder = not folder.exists()
    make_private_dir(folder)
    lock = OwnerLock(folder)
    lock.acquire()
    partial = folder / (DB_FILE + ".restoring")
    done = False
    try:
        head, manifest, dek = _decrypt_to(path, password, partial)
        try:
            _check_db(partial, dek, manifest)
            _new_device(partial, dek)
        finally:
            crypto.wipe(dek)
        _unlink_db(folder / DB_FILE)
        os.replace(partial, folder / DB_FILE)
        # The key file last, as at creation: a crash before it leaves no openable half-vault.
        crypto.write_key_file(folder, head.key_file)
        crypto.drop_backup(folder)
        lock.mark()
        done = True
        return manifest
    except OSError as exc:
        if _full(exc):
            raise _storage_full(exc) from exc
        raise
    finally:
        lock.release()
        if not done:
            _unlink_db(partial)
            for name in (DB_FILE, crypto.KEY_FILE, crypto.KEY_FILE + ".bak"):
                _unlink_db(folder / name)
            if made_folder:
                shutil.rmtree(folder, ignore_errors=True)
            else:
                with suppress(FileNotFoundError):
                    (folder / "vault.lock").unlink()


# --- the vault's record of its backups -------------------------------------------------------

_COLS = ("id, path, file_id, created_at, bytes, memories, links, history, vectors, "
         "max_memory_id, own_password, dek_id")


def record(conn: sqlcipher.Connection, made: Made) -> int:
    """Record a backup the vault made (one row per path: an older record of the same path
    described a file that was replaced)."""
    m = made.manifest
    conn.execute("DELETE FROM backup WHERE path = ?", (str(made.path),))
    cur = conn.execute(
        "INSERT INTO backup (path, file_id, created_at, bytes, memories, links, history, "
        "vectors, max_memory_id, own_password, dek_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (str(made.path), made.file_id, m.created_at, made.bytes, m.memories, m.links,
         m.history, m.vectors, m.max_memory_id, int(made.own_password), made.dek_id))
    return int(cur.lastrowid or 0)


def records(conn: sqlcipher.Connection) -> list[tuple[BackupRecord, str]]:
    """Every recorded backup, newest first, whether its file is still there (and still the
    one made: same file id), with the data-key name of its wrap."""
    out = []
    for row in conn.execute(f"SELECT {_COLS} FROM backup ORDER BY created_at DESC, id DESC"):
        rec = BackupRecord(id=row[0], path=row[1], created_at=row[3], bytes=row[4],
                           memories=row[5], links=row[6], history=row[7], vectors=row[8],
                           max_memory_id=row[9], own_password=bool(row[10]),
                           exists=file_id_of(Path(row[1])) == row[2])
        out.append((rec, str(row[11])))
    return out


def file_id_of(path: Path) -> str | None:
    """The file id in the header of the backup at ``path``; None if it is not one."""
    try:
        with open(path, "rb") as fh:
            return read_header(fh).file_id.hex()
    except (OSError, VaultCorrupt):
        return None


def header_of(path: Path) -> Header:
    with open(path, "rb") as fh:
        return read_header(fh)


class VaultBackups:
    """``app.ports.Backups`` for one unlocked vault (``storage.unlock.OpenVault``)."""

    def __init__(self, opened: Any) -> None:
        self._opened = opened

    def create(self, target: Path, *, password: str | None = None,
               progress: Progress | None = None, now: float | None = None) -> BackupRecord:
        o = self._opened
        made = create(o.folder, o.keys, o.key_file, target, password=password,
                      progress=progress, now=now)
        return self._record(made)

    def _record(self, made: Made) -> BackupRecord:
        rid = self._opened.db.write_sync(lambda c: record(c, made))
        m = made.manifest
        return BackupRecord(id=rid, path=str(made.path), created_at=m.created_at,
                            bytes=made.bytes, memories=m.memories, links=m.links,
                            history=m.history, vectors=m.vectors,
                            max_memory_id=m.max_memory_id, own_password=made.own_password,
                            exists=True)

    def records(self) -> list[BackupRecord]:
        return [r for r, _d in self._opened.db.read(records)]

    def remake(self, rec: BackupRecord, *, progress: Progress | None = None,
               now: float | None = None) -> tuple[BackupRecord, bool]:
        """Make the backup ``rec`` again from the vault as it is now, at the same path, in
        place (atomically); it keeps its own password while the data key is the same. The
        flag: it opens with the vault's current password now (it had one of its own)."""
        o = self._opened
        found = {r.id: d for r, d in o.db.read(records)}
        if rec.id not in found:
            raise ValidationError(f"No recorded backup {rec.id}.")
        path = Path(rec.path)
        old = header_of(path)
        if old.vault_id != o.key_file.vault_id:
            raise ValidationError(f"{path} is a backup of another vault; it was left alone.")
        header = None
        changed = False
        if rec.own_password:
            if found[rec.id] == dek_id(o.keys.dek):
                header = old
            else:
                changed = True  # the data key was rotated: its own password wraps the old one
        made = create(o.folder, o.keys, o.key_file, path, header=header, replace_ok=True,
                      progress=progress, now=now)
        return self._record(made), changed
