"""Child process for the key-in-memory scan (SECURITY.md requirement 20).

Usage: python keymem_child.py <vault folder>   (the password is the first line of stdin)

Unlocks the vault through the facade (threaded, as the app does), remembers, searches and
reads from two threads (so several reader connections are keyed), locks, drops the vault,
``gc.collect()``s, prints ``LOCKED`` and then waits for a line on stdin before exiting: the
parent scans this process's memory in between. With ``rotate`` as second argument it also
rotates the data key (``PRAGMA rekey`` path) before locking.
"""

from __future__ import annotations

import gc
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any


def exercise(vault: Any, password: str, rotate: bool) -> None:
    from app.domain.memory import Draft
    for i in range(5):
        vault.remember(Draft(text=f"Key scan note {i}: lunch with Ada in Lisbon", speaker="me"))
    assert vault.recall("Lisbon"), "search found nothing"

    def read_elsewhere(_: int) -> int:
        return len(vault.recall("Ada lunch", touch=False))
    with ThreadPoolExecutor(2) as pool:
        assert all(pool.map(read_elsewhere, range(4)))
    if rotate:
        vault.rotate_data_key(password)
        assert vault.recall("Lisbon")


def main() -> None:
    folder = Path(sys.argv[1])
    rotate = len(sys.argv) > 2 and sys.argv[2] == "rotate"
    password = sys.stdin.readline().rstrip("\n")
    from app.facade import Vault
    vault = Vault.open(folder, password, load_model=False, use_chroma=False, threaded=True)
    exercise(vault, password, rotate)
    vault.lock()
    del vault, password  # as a dialog would drop it
    gc.collect()
    print("LOCKED", flush=True)
    sys.stdin.readline()


if __name__ == "__main__":
    main()
