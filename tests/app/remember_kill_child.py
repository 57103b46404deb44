"""Child process of the remember kill -9 test (tests/app/test_remember_kill.py).

Opens the vault (threaded writer, the model), then remembers from ``callers`` threads at once
(1: one caller, one at a time, an assistant's burst), until killed. After each ``remember``
returns it prints ``A <id> <text>``: "A" means the caller was told "saved" (an acknowledged
write). ``sync_within`` (seconds) replaces ``storage.db.SYNC_WITHIN_S``: with a long one the
writer never fsyncs the WAL itself, so what is acknowledged survives the kill through the OS
alone (group commits at ``synchronous=NORMAL``).

    remember_kill_child.py FOLDER ROUND [CALLERS [SYNC_WITHIN]]
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
sys.path.insert(0, str(ROOT))

from app.domain.memory import Draft, Store  # noqa: E402
from app.facade import Vault  # noqa: E402

_out = threading.Lock()


def caller(vault: Vault, tag: str) -> None:
    n = 0
    while True:
        text = f"kill test {tag} note {n} about the blue kettle"
        store = Store.SEMANTIC if n % 3 == 0 else Store.EPISODIC
        mid = vault.remember(Draft(text=text, store=store, speaker="Me")).value
        with _out:
            print(f"A {mid} {text}", flush=True)
        n += 1


def main() -> None:
    folder, round_ = Path(sys.argv[1]), sys.argv[2]
    callers = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    if len(sys.argv) > 4:
        import storage.db
        storage.db.SYNC_WITHIN_S = float(sys.argv[4])
    vault = Vault.open(folder, os.environ["KEPT_PASSWORD"], use_chroma=False, verify="sync")
    print("READY", flush=True)
    threads = [threading.Thread(target=caller, args=(vault, f"r{round_}-t{t}"), daemon=True)
               for t in range(callers)]
    for t in threads:
        t.start()
    threads[0].join()


if __name__ == "__main__":
    main()
