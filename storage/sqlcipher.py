"""The one import of the SQLCipher driver and the one place every connection is prepared.
Layer: storage. Runs on: the thread that owns the connection.

``open_connection`` never creates a database unless asked (``create=True``); a wrong key, an
HMAC failure or a damaged file raises instead of leaving a fresh empty database behind
(docs/security.md#24-never-recreate-on-failure). ``assert_pragmas`` fails closed unless every pragma
of docs/security.md#4-pragmas-checked-at-every-open holds.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlcipher3 as sqlcipher3  # re-exported: storage/lexicon.py's in-memory tokenizer

from app.errors import StorageFull, VaultCorrupt, WrongKey

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    # sqlcipher3 ships no type information; its API is the stdlib sqlite3's.
    from sqlite3 import Connection as Connection
else:
    Connection = sqlcipher3.Connection
DatabaseError = sqlcipher3.DatabaseError
OperationalError = sqlcipher3.OperationalError
IntegrityError = sqlcipher3.IntegrityError

MIN_SQLITE = (3, 52, 0)
CIPHER_MAJOR = "4."
BUSY_TIMEOUT_MS = 10_000


class PragmaViolation(VaultCorrupt):
    user_message = "The vault's database is not configured safely; it was not opened."


def raw_key_literal(key: bytes | bytearray) -> str:
    """SQLCipher raw-key syntax as SQL text, for tests and tools only: the ``str`` outlives
    the connection in freed memory. The app keys through ``key_connection``."""
    if len(key) != 32:
        raise ValueError("raw key must be 32 bytes")
    return "\"x'" + bytes(key).hex() + "'\""


# --- Keying without a Python string (docs/security.md#20-auto-lock-and-memory-hygiene) ------------
# ``PRAGMA key = "x'<hex>'"`` builds a str holding the key as hex; it also stays in the
# connection's statement cache until close, and its memory is freed without being zeroed:
# after lock, 2 to 4 copies of K_db as hex were found by scanning /proc/PID/mem. Instead the
# key goes to SQLCipher's C API (``sqlite3_key``/``sqlite3_rekey``, exported by sqlcipher3's
# extension, which links SQLCipher statically) from a bytearray that is zeroed right after.
# SQLCipher copies it into its own context, which ``cipher_memory_security`` wipes on close.

_HEX_DIGITS = b"0123456789abcdef"


def _load_c_api() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL(sqlcipher3._sqlite3.__file__)
        for name in ("sqlite3_key", "sqlite3_rekey"):
            fn = getattr(lib, name)
            fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
            fn.restype = ctypes.c_int
        lib.sqlite3_db_filename.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.sqlite3_db_filename.restype = ctypes.c_char_p
        return lib
    except (OSError, AttributeError):
        log.warning("sqlite3_key is not exported by the driver: keying through PRAGMA text")
        return None


_C_API = _load_c_api()


def _load_config_api() -> ctypes.CDLL | None:
    """``sqlite3_db_config`` and ``sqlite3_db_status`` (the lookaside pool, issue 28): apart
    from the keying functions, so a driver without them still keys through the C API."""
    if _C_API is None:
        return None
    try:
        # Variadic: only the fixed arguments are declared, so that ctypes passes the rest as
        # variadic ones (as Apple's arm64 calling convention needs).
        _C_API.sqlite3_db_config.argtypes = [ctypes.c_void_p, ctypes.c_int]
        _C_API.sqlite3_db_config.restype = ctypes.c_int
        _C_API.sqlite3_db_status.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                             ctypes.c_void_p, ctypes.c_int]
        _C_API.sqlite3_db_status.restype = ctypes.c_int
        return _C_API
    except AttributeError:
        log.warning("sqlite3_db_config is not exported by the driver: default lookaside")
        return None


_CONFIG_API = _load_config_api()


def keys_without_text() -> bool:
    """True when connections are keyed through the C API (no key text in Python memory)."""
    return _C_API is not None


def _db_handle(conn: Connection, path: Path | None = None) -> int:
    """The ``sqlite3*`` of a connection: the first field after ``PyObject_HEAD`` in the
    driver's connection struct (pysqlite and sqlcipher3 alike). With ``path``, checked
    against the file SQLite says it opened, so a changed layout fails closed."""
    handle = ctypes.c_void_p.from_address(id(conn) + object.__basicsize__).value
    if not handle:
        raise DatabaseError("connection has no database handle")
    if path is not None:
        assert _C_API is not None
        name = _C_API.sqlite3_db_filename(handle, b"main")
        try:
            same = bool(name) and os.path.samefile(os.fsdecode(name), path)
        except OSError:
            same = False
        if not same:
            raise DatabaseError("unexpected driver layout: refusing to key the connection")
    return handle


def _hex_key_buffer(key: bytes | bytearray) -> bytearray:
    """``x'<hex>'`` in a bytearray, digit by digit: no str or bytes copy is ever made."""
    if len(key) != 32:
        raise ValueError("raw key must be 32 bytes")
    buf = bytearray(3 + 2 * len(key))
    buf[0], buf[1], buf[-1] = 0x78, 0x27, 0x27  # x ' '
    for i, byte in enumerate(key):
        buf[2 + 2 * i] = _HEX_DIGITS[byte >> 4]
        buf[3 + 2 * i] = _HEX_DIGITS[byte & 0x0F]
    return buf


def _call_with_key(conn: Connection, key: bytes | bytearray, fn_name: str,
                   path: Path | None) -> None:
    assert _C_API is not None
    handle = _db_handle(conn, path)
    buf = _hex_key_buffer(key)
    try:
        cbuf = (ctypes.c_char * len(buf)).from_buffer(buf)
        rc = getattr(_C_API, fn_name)(handle, ctypes.addressof(cbuf), len(buf))
        del cbuf
    finally:
        for i in range(len(buf)):
            buf[i] = 0
    if rc != 0:
        raise DatabaseError(f"{fn_name} failed (SQLite code {rc})")


def key_connection(conn: Connection, key: bytes | bytearray, path: Path | None = None) -> None:
    """``PRAGMA key`` with a raw key, without the key ever being Python text."""
    if _C_API is None:
        conn.execute(f"PRAGMA key = {raw_key_literal(key)}")
        return
    _call_with_key(conn, key, "sqlite3_key", path)


def rekey_connection(conn: Connection, key: bytes | bytearray) -> None:
    """``PRAGMA rekey`` with a raw key (rewrites every page), without key text."""
    if _C_API is None:
        conn.execute(f"PRAGMA rekey = {raw_key_literal(key)}")
        return
    _call_with_key(conn, key, "sqlite3_rekey", None)


def _parse_version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def open_connection(path: Path, key: bytes | bytearray, *, create: bool = False,
                    query_only: bool = False, check_same_thread: bool = True) -> Connection:
    """Open and prepare one connection. Raises ``WrongKey`` or ``VaultCorrupt``, never creates
    a database in place of one that failed to open."""
    mode = "rwc" if create else "rw"
    if not create and not path.exists():
        raise VaultCorrupt("The vault's database file is missing; nothing was created.")
    if not create and path.stat().st_size == 0:
        # SQLite would treat it as a new database (and delete a WAL next to it): refuse.
        raise VaultCorrupt("The vault's database file is empty; nothing was created.")
    if create and not path.exists():
        # SQLite would create it 0644 & ~umask, and the -wal/-shm copy its mode: make it 0600
        # whatever the umask (docs/security.md#22-file-permissions). An empty file is a valid new
        # database.
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    uri = f"{path.resolve().as_uri()}?mode={mode}"
    try:
        conn: Connection = sqlcipher3.connect(uri, uri=True, isolation_level=None,
                                              check_same_thread=check_same_thread)
    except OperationalError as exc:
        raise VaultCorrupt() from exc
    try:
        prepare(conn, key, query_only=query_only, path=path)
    except DatabaseError as exc:
        conn.close()
        if is_corrupt(exc):  # a damaged schema page read after the key check
            raise VaultCorrupt() from exc
        raise
    except BaseException:
        conn.close()
        raise
    return conn


def prepare(conn: Connection, key: bytes | bytearray, *, query_only: bool = False,
            path: Path | None = None) -> None:
    # docs/security.md#20-auto-lock-and-memory-hygiene: memory security on before the first key is
    # handed over (and before the lookaside below is allocated, so it is locked and wiped too).
    # executescript: not kept in the statement cache, so no lookaside slot stays in use.
    conn.executescript("PRAGMA cipher_memory_security = ON")
    enlarge_lookaside(conn, path)
    conn.execute("PRAGMA cipher_log_level = NONE")
    key_connection(conn, key, path)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except DatabaseError as exc:
        # With a key that unwrapped correctly this is damage; the facade words it accordingly.
        raise WrongKey("The vault's database could not be decrypted.") from exc
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA secure_delete = ON")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if not query_only:
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode != "wal":
            raise PragmaViolation()
    conn.execute("PRAGMA synchronous = FULL")
    if query_only:
        conn.execute("PRAGMA query_only = 1")
    assert_pragmas(conn)


# --- Lookaside (issue 28) ----------------------------------------------------------------------
# With cipher_memory_security on, SQLCipher mlocks every allocation SQLite makes and wipes and
# munlocks it when freed: two system calls per malloc/free pair. SQLite serves small allocations
# from the connection's lookaside pool without the allocator, but the default pool (123 slots
# here) is held for good by the prepared statements Python caches (128 per connection), so
# every allocation missed it: ~330 mlock + munlock calls per remember, 3.2 ms of CPU of a
# 4.8 ms transaction (strace/perf and sqlite3_db_status, bench/remember_profile.py, dev). With
# a pool of LOOKASIDE_SLOT x LOOKASIDE_SLOTS bytes the misses are 0 and the transaction's CPU
# falls to 1.2 ms. The pool itself is one allocation through the same allocator: locked while
# the connection lives, wiped when it closes (lock), as every other allocation; a freed slot
# keeps its bytes until reused or closed, as SQLite's page cache keeps decrypted pages anyway.
LOOKASIDE_SLOT = 1200     # bytes: SQLite's default slot size (it also carves 128-byte slots)
LOOKASIDE_SLOTS = 1000    # ~940 in use at most in a remember after the statement cache filled
_DBCONFIG_LOOKASIDE = 1001
_DBSTATUS_LOOKASIDE_MISS_FULL = 6


def enlarge_lookaside(conn: Connection, path: Path | None = None) -> bool:
    """Give ``conn`` a lookaside pool of ``LOOKASIDE_SLOT * LOOKASIDE_SLOTS`` bytes. Must run
    before the connection's first cached statement; False (and slower writes, nothing else)
    where the C API is unavailable or SQLite refuses."""
    if _C_API is None or _CONFIG_API is None:
        return False
    rc: int = _CONFIG_API.sqlite3_db_config(_db_handle(conn, path), _DBCONFIG_LOOKASIDE,
                                  ctypes.c_void_p(None), ctypes.c_int(LOOKASIDE_SLOT),
                                  ctypes.c_int(LOOKASIDE_SLOTS))
    if rc != 0:
        log.warning("lookaside not enlarged (SQLite code %d)", rc)
    return rc == 0


def lookaside_misses(conn: Connection, reset: bool = False) -> int | None:
    """Allocations since the last reset that found the lookaside pool full (each one an mlock
    and a munlock with memory security on); None without the C API."""
    if _C_API is None or _CONFIG_API is None:
        return None
    cur, high = ctypes.c_int(), ctypes.c_int()
    _CONFIG_API.sqlite3_db_status(_db_handle(conn), _DBSTATUS_LOOKASIDE_MISS_FULL, ctypes.byref(cur),
                             ctypes.byref(high), int(reset))
    return high.value


def _one(conn: Connection, sql: str) -> Any:
    row = conn.execute(sql).fetchone()
    return None if row is None else row[0]


def fts5_tables(conn: Connection) -> list[str]:
    rows = conn.execute(  # "fts5(": not the fts5vocab views (migration 0037)
        "SELECT name FROM sqlite_master WHERE type='table' AND sql LIKE '%USING fts5(%'"
    ).fetchall()
    return [r[0] for r in rows]


def pragma_report(conn: Connection) -> dict[str, Any]:
    return {
        "cipher_version": str(_one(conn, "PRAGMA cipher_version") or ""),
        "sqlite_version": str(_one(conn, "SELECT sqlite_version()")),
        "cipher_hmac_algorithm": str(_one(conn, "PRAGMA cipher_hmac_algorithm") or ""),
        "cipher_plaintext_header_size": int(_one(conn, "PRAGMA cipher_plaintext_header_size")
                                            or 0),
        "temp_store": int(_one(conn, "PRAGMA temp_store")),
        "secure_delete": int(_one(conn, "PRAGMA secure_delete")),
        "journal_mode": str(_one(conn, "PRAGMA journal_mode")),
        "synchronous": int(_one(conn, "PRAGMA synchronous")),
    }


def assert_pragmas(conn: Connection) -> None:
    """docs/security.md#4-pragmas-checked-at-every-open: refuse to serve unless every safety pragma
    holds."""
    r = pragma_report(conn)
    problems = []
    if not r["cipher_version"].startswith(CIPHER_MAJOR):
        problems.append("cipher_version")
    if _parse_version(r["sqlite_version"]) < MIN_SQLITE:
        problems.append("sqlite_version")
    if r["cipher_hmac_algorithm"] != "HMAC_SHA512":
        problems.append("cipher_hmac_algorithm")
    if r["cipher_plaintext_header_size"] != 0:
        problems.append("cipher_plaintext_header_size")
    if r["temp_store"] != 2:
        problems.append("temp_store")
    if r["secure_delete"] != 1:
        problems.append("secure_delete")
    if r["journal_mode"] != "wal":
        problems.append("journal_mode")
    if r["synchronous"] != 2:
        problems.append("synchronous")
    for table in fts5_tables(conn):
        value = _one(conn, f"SELECT v FROM \"{table}_config\" WHERE k = 'secure-delete'")
        if value != 1:
            problems.append(f"fts5 secure-delete on {table}")
    if problems:
        log.error("refusing connection: unsafe pragmas %s", ",".join(problems))
        raise PragmaViolation(
            "The vault's database is not configured safely (" + ", ".join(problems)
            + "); it was not opened.")


def is_disk_full(exc: BaseException) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (13, 10)  # SQLITE_FULL, SQLITE_IOERR_*


def is_corrupt(exc: BaseException) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in (11, 26)  # SQLITE_CORRUPT*, SQLITE_NOTADB


def translate(exc: BaseException) -> BaseException:
    """Map driver errors to AppErrors by code (never by message text)."""
    if is_disk_full(exc):
        return StorageFull()
    return exc
