"""Named migrations (``NNNN_name.sql``) and their runner. Layer: storage. Runs on: db-writer.

Each file is applied once, in name order, inside one transaction, and recorded in
``schema_version``. A database newer than this code is refused rather than touched.
"""

from __future__ import annotations

import logging
import time
from importlib import resources

from app.errors import VaultCorrupt
from storage.sqlcipher import Connection

log = logging.getLogger(__name__)


def migration_names() -> list[str]:
    files = resources.files(__package__)
    return sorted(p.name for p in files.iterdir() if p.name.endswith(".sql"))


def _sql(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text("utf-8")


def applied(conn: Connection) -> list[str]:
    rows = conn.execute("SELECT name FROM schema_version ORDER BY name").fetchall()
    return [r[0] for r in rows]


def schema_version(conn: Connection) -> str:
    names = applied(conn)
    return names[-1] if names else ""


def pending_migrations(conn: Connection) -> list[str]:
    """Names not applied yet (a fresh database: all of them)."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                          "name = 'schema_version'").fetchone()
    done = set(applied(conn)) if exists else set()
    return [n for n in migration_names() if n not in done]


def migrate(conn: Connection) -> list[str]:
    """Apply what is missing; returns the names applied now."""
    c = conn  # prepared, autocommit mode
    c.execute(
        "CREATE TABLE IF NOT EXISTS schema_version (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    done = set(applied(c))
    known = migration_names()
    unknown = done - set(known)
    if unknown:
        raise VaultCorrupt("This vault was written by a newer version of Kept; update Kept to open it.")
    new = [n for n in known if n not in done]
    for name in new:
        c.execute("BEGIN IMMEDIATE")
        try:
            for statement in _split(_sql(name)):
                c.execute(statement)
            c.execute("INSERT INTO schema_version (name, applied_at) VALUES (?, ?)",
                      (name, time.time()))
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        log.info("applied migration %s", name)
    return new


def _split(script: str) -> list[str]:
    """Split a migration script into statements (no triggers in our scripts, so ';' ends one)."""
    import sqlite3
    statements, buf = [], ""
    for line in script.splitlines(keepends=True):
        if line.lstrip().startswith("--") and not buf.strip():
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            statements.append(buf.strip())
            buf = ""
    if buf.strip():
        statements.append(buf.strip())
    return statements
