"""Child process for the temp-file test (SECURITY.md requirement 5).

Usage: python tempfile_workload.py <vault folder>, with a JSON request on stdin:
``{"password": ..., "needles": [hex, ...], "unsafe": false}``.

Unlocks the vault and runs the workload of the requirement on connections made by the storage
layer: a sort of every row (60k+) over an unindexed expression, a temp table (plus ORDER BY and
DISTINCT over it), and VACUUM, with tiny page caches so that anything that can spill does. While everything is still open it reads every open file outside
the vault folder through /proc/self/fd (deleted temp files included) and looks for the canary
needles. It prints one JSON line: ``{"rows": n, "open_files": [...], "hits": [...]}``.

``unsafe: true`` is the counter-test: the same workload on a factory connection whose
temp_store was then switched to FILE, which must be caught by the harness.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

SORT_SQL = "SELECT id, text, speaker FROM memory ORDER BY lower(substr(text, 3)) || speaker DESC"
TEMP_SQL = [
    "CREATE TEMP TABLE scratch AS SELECT id, text || ' / ' || speaker AS t FROM memory",
    "SELECT t FROM scratch ORDER BY t DESC LIMIT 3",
    "SELECT count(DISTINCT t) FROM scratch",
]


def _small_cache(conn: Any) -> None:
    """Tiny page caches, so anything that could spill to a file does."""
    conn.execute("PRAGMA cache_size = 50")
    conn.execute("PRAGMA temp.cache_size = 50")


def _workload(conn: Any) -> int:
    _small_cache(conn)
    rows = conn.execute(SORT_SQL).fetchall()
    for sql in TEMP_SQL:
        conn.execute(sql).fetchall()
    return len(rows)


def _scan_open_files(folder: Path, needles: list[bytes]) -> tuple[list[str], list[str]]:
    """Open regular files outside the vault folder, and which of them hold a needle. The vault's
    own files are left alone (reopening them here could drop SQLite's POSIX locks)."""
    seen, hits = [], []
    for fd in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if not target.startswith("/") or target.startswith(str(folder) + "/"):
            continue
        if target.startswith(("/dev/", "/proc/")):
            continue
        seen.append(target)
        try:
            with open(f"/proc/self/fd/{fd}", "rb") as fh:  # works for deleted files too
                data = fh.read()
        except OSError:
            continue
        if any(n in data for n in needles):
            hits.append(target)
    return seen, hits


def main() -> None:
    folder = Path(sys.argv[1]).resolve()
    req = json.loads(sys.stdin.readline())
    needles = [bytes.fromhex(h) for h in req["needles"]]
    from storage.sqlcipher import open_connection
    from storage.unlock import OpenVault

    vault, _ = OpenVault.unlock(folder, req["password"])
    try:
        if req.get("unsafe"):
            conn = open_connection(folder / "vault.db", vault.keys.db_key)
            conn.execute("PRAGMA temp_store = FILE")
            rows = _workload(conn)
            seen, hits = _scan_open_files(folder, needles)  # temp table still alive
            conn.execute("VACUUM")
            conn.close()
        else:
            rows = vault.db.read(lambda c: (_small_cache(c), len(c.execute(SORT_SQL).fetchall()))[1])
            vault.db.write_sync(_workload)
            conn = open_connection(folder / "vault.db", vault.keys.db_key)
            rows = max(rows, _workload(conn))
            seen, hits = _scan_open_files(folder, needles)
            conn.execute("VACUUM")
            conn.close()
            s2, h2 = _scan_open_files(folder, needles)
            seen, hits = seen + s2, hits + h2
    finally:
        vault.lock()
    print(json.dumps({"rows": rows, "open_files": seen, "hits": hits}), flush=True)


if __name__ == "__main__":
    main()
