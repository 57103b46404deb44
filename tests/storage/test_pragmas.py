"""SECURITY.md requirement 4: pragmas asserted at every open; changing any one makes it fail.

Each test starts from a connection the factory accepted, changes exactly one setting and checks
that ``assert_pragmas`` (or the open itself) raises ``PragmaViolation`` naming that setting.
Keys are random 32-byte raw keys: no Argon2id is needed at this level.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlcipher3

from app.errors import VaultCorrupt, WrongKey
from storage import sqlcipher
from storage.db import Database
from storage.sqlcipher import PragmaViolation, assert_pragmas, open_connection, raw_key_literal
from tests.storage.helpers import random_key


@pytest.fixture
def key() -> bytes:
    return random_key()


@pytest.fixture
def conn(tmp_path: Path, key: bytes) -> Iterator[sqlcipher3.Connection]:
    c = open_connection(tmp_path / "p.db", key, create=True)
    c.execute("CREATE TABLE t(x)")
    yield c
    c.close()


@pytest.fixture
def vault_db(tmp_path: Path, key: bytes) -> Path:
    """A database with the real schema (FTS5 table included), closed."""
    path = tmp_path / "schema.db"
    Database(path, key, create=True, threaded=False).close()
    return path


def _violates(conn: sqlcipher3.Connection, name: str) -> None:
    with pytest.raises(PragmaViolation) as info:
        assert_pragmas(conn)
    assert name in str(info.value)


def test_factory_connection_passes_and_reports_expected_values(conn: sqlcipher3.Connection
                                                               ) -> None:
    assert_pragmas(conn)
    r = sqlcipher.pragma_report(conn)
    assert r["cipher_version"].startswith("4.")
    assert r["cipher_hmac_algorithm"] == "HMAC_SHA512"
    assert r["cipher_plaintext_header_size"] == 0
    assert (r["temp_store"], r["secure_delete"], r["journal_mode"], r["synchronous"]) == (
        2, 1, "wal", 2)
    assert tuple(int(x) for x in r["sqlite_version"].split(".")) >= (3, 52, 0)
    assert conn.execute("PRAGMA cipher_memory_security").fetchone()[0] in (1, "1")


@pytest.mark.parametrize("sql,name", [
    ("PRAGMA temp_store = FILE", "temp_store"),
    ("PRAGMA temp_store = DEFAULT", "temp_store"),
    ("PRAGMA secure_delete = 0", "secure_delete"),
    ("PRAGMA secure_delete = FAST", "secure_delete"),
    ("PRAGMA journal_mode = DELETE", "journal_mode"),
    ("PRAGMA journal_mode = MEMORY", "journal_mode"),
    ("PRAGMA synchronous = NORMAL", "synchronous"),
    ("PRAGMA synchronous = OFF", "synchronous"),
    ("PRAGMA synchronous = EXTRA", "synchronous"),
])
def test_changing_one_pragma_on_open_connection_fails(conn: sqlcipher3.Connection, sql: str,
                                                       name: str) -> None:
    conn.execute(sql).fetchall()
    _violates(conn, name)


def test_plaintext_header_fails(tmp_path: Path, key: bytes) -> None:
    c = sqlcipher3.connect(str(tmp_path / "hdr.db"), isolation_level=None)
    try:
        c.execute(f"PRAGMA key = {raw_key_literal(key)}")
        c.execute("PRAGMA cipher_plaintext_header_size = 32")
        c.execute("PRAGMA temp_store = MEMORY")
        c.execute("PRAGMA secure_delete = ON")
        c.execute("PRAGMA journal_mode = WAL")
        c.execute("PRAGMA synchronous = FULL")
        _violates(c, "cipher_plaintext_header_size")
    finally:
        c.close()


def test_hmac_sha1_fails(tmp_path: Path, key: bytes) -> None:
    c = sqlcipher3.connect(str(tmp_path / "sha1.db"), isolation_level=None)
    try:
        c.execute(f"PRAGMA key = {raw_key_literal(key)}")
        c.execute("PRAGMA cipher_hmac_algorithm = HMAC_SHA1")  # before the first page access
        c.execute("PRAGMA temp_store = MEMORY")
        c.execute("PRAGMA secure_delete = ON")
        c.execute("PRAGMA journal_mode = WAL")
        c.execute("PRAGMA synchronous = FULL")
        c.execute("CREATE TABLE t(x)")
        _violates(c, "cipher_hmac_algorithm")
    finally:
        c.close()
    # The factory never opens such a database (SHA-512 HMAC check fails on page 1).
    with pytest.raises(WrongKey):
        open_connection(tmp_path / "sha1.db", key)


@pytest.mark.parametrize("default_sql,reset_sql,name", [
    ("PRAGMA cipher_default_hmac_algorithm = HMAC_SHA1",
     "PRAGMA cipher_default_hmac_algorithm = HMAC_SHA512", "cipher_hmac_algorithm"),
    ("PRAGMA cipher_default_plaintext_header_size = 32",
     "PRAGMA cipher_default_plaintext_header_size = 0", "cipher_plaintext_header_size"),
])
def test_weakened_process_defaults_make_create_fail(tmp_path: Path, key: bytes,
                                                    default_sql: str, reset_sql: str,
                                                    name: str) -> None:
    """If anything in the process weakens SQLCipher's defaults, the factory refuses the
    connection it just made, on the real open path."""
    probe = sqlcipher3.connect(":memory:")
    probe.execute(default_sql)
    try:
        with pytest.raises(PragmaViolation) as info:
            open_connection(tmp_path / "d.db", key, create=True)
        assert name in str(info.value)
    finally:
        probe.execute(reset_sql)
        probe.close()
    c = open_connection(tmp_path / "ok.db", key, create=True)  # defaults restored
    c.close()


def test_fts5_secure_delete_off_makes_reopen_fail(vault_db: Path, key: bytes) -> None:
    c = open_connection(vault_db, key)
    assert sqlcipher.fts5_tables(c) == ["memory_fts"]
    assert c.execute("SELECT v FROM memory_fts_config WHERE k='secure-delete'").fetchone()[0] == 1
    c.execute("INSERT INTO memory_fts(memory_fts, rank) VALUES('secure-delete', 0)")
    _violates(c, "fts5 secure-delete on memory_fts")
    c.close()
    with pytest.raises(PragmaViolation):
        open_connection(vault_db, key)
    with pytest.raises(PragmaViolation):
        open_connection(vault_db, key, query_only=True)
    with pytest.raises(PragmaViolation):
        Database(vault_db, key, threaded=False)


def test_fts5_table_without_secure_delete_setting_fails(conn: sqlcipher3.Connection) -> None:
    """A new FTS5 table that never had secure-delete turned on is refused too."""
    assert_pragmas(conn)
    conn.execute("CREATE VIRTUAL TABLE extra_fts USING fts5(body)")
    _violates(conn, "fts5 secure-delete on extra_fts")
    conn.execute("INSERT INTO extra_fts(extra_fts, rank) VALUES('secure-delete', 1)")
    assert_pragmas(conn)


def test_reader_connections_are_asserted_too(vault_db: Path, key: bytes) -> None:
    db = Database(vault_db, key, threaded=True)
    try:
        assert db.read(lambda c: c.execute("SELECT count(*) FROM memory").fetchone()[0]) == 0
        db.write_sync(lambda c: c.execute(
            "INSERT INTO memory_fts(memory_fts, rank) VALUES('secure-delete', 0)"))
        errors: list[BaseException] = []

        def other_thread() -> None:
            try:
                db.read(lambda c: c.execute("SELECT 1").fetchone())
            except BaseException as exc:  # noqa: BLE001 - collected for the assert
                errors.append(exc)
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        assert len(errors) == 1 and isinstance(errors[0], PragmaViolation)
    finally:
        db.close()


def test_query_only_open_of_non_wal_database_fails(tmp_path: Path, key: bytes) -> None:
    """Readers do not switch the journal mode themselves; a rollback-journal file is refused."""
    path = tmp_path / "rollback.db"
    c = sqlcipher3.connect(str(path), isolation_level=None)
    c.execute(f"PRAGMA key = {raw_key_literal(key)}")
    c.execute("CREATE TABLE t(x)")
    assert c.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    c.close()
    with pytest.raises(PragmaViolation) as info:
        open_connection(path, key, query_only=True)
    assert "journal_mode" in str(info.value)


def test_sqlite_version_floor(conn: sqlcipher3.Connection, monkeypatch: pytest.MonkeyPatch,
                              tmp_path: Path, key: bytes) -> None:
    assert_pragmas(conn)
    monkeypatch.setattr(sqlcipher, "MIN_SQLITE", (99, 0, 0))
    _violates(conn, "sqlite_version")
    with pytest.raises(PragmaViolation):
        open_connection(tmp_path / "p.db", key)


def test_cipher_version_major(conn: sqlcipher3.Connection, monkeypatch: pytest.MonkeyPatch,
                              tmp_path: Path, key: bytes) -> None:
    assert_pragmas(conn)
    monkeypatch.setattr(sqlcipher, "CIPHER_MAJOR", "5.")
    _violates(conn, "cipher_version")
    with pytest.raises(PragmaViolation):
        open_connection(tmp_path / "p.db", key)


def test_version_parsing() -> None:
    assert sqlcipher._parse_version("3.52.0") == (3, 52, 0)
    assert sqlcipher._parse_version("3.53.4") > (3, 52, 0)
    assert sqlcipher._parse_version("3.9.0") < (3, 52, 0)  # numeric, not lexical


@pytest.mark.parametrize("n", [0, 16, 31, 33, 64])
def test_raw_key_literal_rejects_wrong_length(n: int) -> None:
    with pytest.raises(ValueError):
        raw_key_literal(b"k" * n)


def test_raw_key_literal_format() -> None:
    key = bytes(range(32))
    assert raw_key_literal(key) == "\"x'" + key.hex() + "'\""
    assert raw_key_literal(bytearray(key)) == raw_key_literal(key)


def test_raw_key_mode_is_used(tmp_path: Path, key: bytes) -> None:
    """The database is keyed with the raw key itself, not a passphrase run through SQLCipher's
    PBKDF2: the same hex as a passphrase does not open it, the raw literal does."""
    path = tmp_path / "raw.db"
    c = open_connection(path, key, create=True)
    c.execute("CREATE TABLE t(x)")
    c.close()
    p = sqlcipher3.connect(str(path))
    p.execute(f"PRAGMA key = '{key.hex()}'")
    with pytest.raises(sqlcipher3.DatabaseError):
        p.execute("SELECT count(*) FROM sqlite_master").fetchone()
    p.close()
    r = sqlcipher3.connect(str(path))
    r.execute(f"PRAGMA key = {raw_key_literal(key)}")
    assert r.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 1
    r.close()


def test_wrong_key_and_missing_file_never_create(tmp_path: Path, key: bytes) -> None:
    path = tmp_path / "w.db"
    open_connection(path, key, create=True).close()
    before = path.read_bytes()
    with pytest.raises(WrongKey):
        open_connection(path, random_key())
    assert path.read_bytes() == before
    with pytest.raises(VaultCorrupt):
        open_connection(tmp_path / "absent.db", key)
    assert not (tmp_path / "absent.db").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.db"]


# --- Keying without key text (SECURITY.md requirement 20; issue 11 item 8) --------------------

@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="measured on Linux")
def test_connections_are_keyed_through_the_c_api() -> None:
    """sqlcipher3's extension exports sqlite3_key/sqlite3_rekey; the text fallback (which
    leaves the key as hex in freed memory) is not in use here."""
    assert sqlcipher.keys_without_text()


def test_c_api_key_is_the_same_raw_key_as_the_pragma_text(tmp_path: Path, key: bytes) -> None:
    """Files keyed with ``PRAGMA key = "x'..'"`` (every vault made so far) open through
    ``sqlite3_key``, and a ``sqlite3_rekey`` gives a file the PRAGMA text opens."""
    path = tmp_path / "compat.db"
    c = sqlcipher3.connect(str(path))
    c.execute(f"PRAGMA key = {raw_key_literal(key)}")
    c.execute("CREATE TABLE t(x)")
    c.close()
    conn = open_connection(path, bytearray(key))
    new = bytearray(random_key())
    sqlcipher.rekey_connection(conn, new)
    conn.close()
    with pytest.raises(WrongKey):
        open_connection(path, key)
    r = sqlcipher3.connect(str(path))
    r.execute(f"PRAGMA key = {raw_key_literal(new)}")
    assert r.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 1
    r.close()


def test_key_buffer_is_built_without_text_and_wiped(tmp_path: Path, key: bytes,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    buf = sqlcipher._hex_key_buffer(key)
    assert isinstance(buf, bytearray) and bytes(buf) == b"x'" + key.hex().encode() + b"'"
    seen: list[bytearray] = []
    real = sqlcipher._hex_key_buffer

    def spy(k: bytes | bytearray) -> bytearray:
        seen.append(real(k))
        return seen[-1]
    monkeypatch.setattr(sqlcipher, "_hex_key_buffer", spy)
    open_connection(tmp_path / "w.db", key, create=True).close()
    assert seen and all(b == bytearray(len(b)) for b in seen)  # zeroed after the call


def test_handle_check_fails_closed(tmp_path: Path, key: bytes) -> None:
    """The sqlite3* is read from the driver's struct; if it does not name the file this
    connection opened, nothing is keyed."""
    c = open_connection(tmp_path / "a.db", key, create=True)
    (tmp_path / "b.db").write_bytes(b"")
    try:
        assert sqlcipher._db_handle(c, tmp_path / "a.db")
        with pytest.raises(sqlcipher3.DatabaseError):
            sqlcipher._db_handle(c, tmp_path / "b.db")
    finally:
        c.close()


def test_text_fallback_still_opens_when_the_c_api_is_missing(tmp_path: Path, key: bytes,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """Where a driver build does not export sqlite3_key, connections are keyed through the
    PRAGMA text (with its known leak, logged) rather than not at all."""
    path = tmp_path / "f.db"
    open_connection(path, key, create=True).close()
    monkeypatch.setattr(sqlcipher, "_C_API", None)
    assert not sqlcipher.keys_without_text()
    conn = open_connection(path, key)
    new = random_key()
    sqlcipher.rekey_connection(conn, new)
    conn.close()
    monkeypatch.undo()
    open_connection(path, new).close()


def test_writes_find_room_in_the_lookaside_pool_and_memory_security_stays_on(
        tmp_path: Path, key: bytes) -> None:
    """Issue 28: with memory security on, an allocation that misses the connection's lookaside
    pool costs an mlock and a munlock; the factory's connections have a pool large enough that a
    remember-shaped transaction (memory, full-text, side and history rows) never misses it once
    the statement cache is warm, and memory security is still on."""
    db = Database(tmp_path / "l.db", key, create=True, threaded=False)
    conn = db._write_conn
    assert conn is not None

    def remember_like(c: sqlcipher3.Connection) -> None:
        mid = c.execute("INSERT INTO memory (store, text, created_at, occurred_at, decay_class) "
                        "VALUES ('episodic', 'a walk by the river', 1, 1, 'episodic')").lastrowid
        c.execute("INSERT INTO memory_fts (rowid, text, keys, ctx) VALUES (?, ?, '', '')",
                  (mid, "a walk by the river"))
        c.execute("INSERT INTO episode (memory_id) VALUES (?)", (mid,))
        c.execute("INSERT INTO history (memory_id, at, action) VALUES (?, 1, 'created')", (mid,))
    try:
        for _ in range(5):
            db.write_sync(remember_like)
        assert sqlcipher.lookaside_misses(conn, reset=True) is not None
        for _ in range(20):
            db.write_sync(remember_like)
        assert sqlcipher.lookaside_misses(conn) == 0
        assert conn.execute("PRAGMA cipher_memory_security").fetchone()[0] in (1, "1")
        assert conn.execute("SELECT count(*) FROM memory").fetchone()[0] == 25
    finally:
        db.close()
