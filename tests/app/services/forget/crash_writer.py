"""Child process of the kill -9 test (SECURITY.md requirement 11 harness).

Loops: print "P n f" (intent; f = the item it will forget, or -1) -> one transaction inserting
item n (memory + FTS row) and, when n % 7 == 0, forgetting item n-3 through the real forget
SQL -> after COMMIT returns, print "A n" and "D f". "A" means the person was told "saved".
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# The project folder (holds pyproject.toml), however deep this file sits.
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
sys.path.insert(0, str(ROOT))

from app.domain.memory import Draft, Scores, Store  # noqa: E402
from storage import lifecycle, repo  # noqa: E402
from storage.unlock import OpenVault  # noqa: E402


def main() -> None:
    folder, start = Path(sys.argv[1]), int(sys.argv[2])
    opened, _ = OpenVault.unlock(folder, os.environ["KEPT_PASSWORD"], threaded=False)
    n = start
    while True:
        forget = n - 3 if n % 7 == 0 else -1
        print(f"P {n} {forget}", flush=True)

        def tx(conn: object, n: int = n, forget: int = forget) -> None:
            repo.insert_memory(conn, Draft(text=f"item-{n} canary", store=Store.EPISODIC,  # type: ignore[arg-type]
                                           occurred_at=1.0), now=1.0, decay_class="episodic",
                               scores=Scores(), confidence=0.5)
            if forget >= 0:
                ids = {r[0] for r in conn.execute(  # type: ignore[attr-defined]
                    "SELECT id FROM memory WHERE text = ?", (f"item-{forget} canary",))}
                lifecycle.execute_forget(conn, ids, set())  # type: ignore[arg-type]
        opened.db.write_sync(tx)
        # One write for "A" and "D": a kill between two writes left a forget that committed
        # and was acknowledged as "A" looking like a lost row (seen once in 200 kills).
        print(f"A {n}" + (f"\nD {forget}" if forget >= 0 else ""), flush=True)
        n += 1


if __name__ == "__main__":
    main()
