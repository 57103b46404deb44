"""Child process for the key-file kill -9 test (SECURITY.md requirement 7).

Usage: python pwchange_child.py <vault folder> <generation>

Unlocks the vault with password ``pw-<generation>``, prints ``READY``, then changes the
password to ``pw-<generation+1>``, ``pw-<generation+2>``, ... forever, printing ``A <n>`` (and
flushing) only after ``change_password`` has returned, i.e. after the person would have been
told "password changed". The parent SIGKILLs it at a random moment.
"""

from __future__ import annotations

import sys
from pathlib import Path


def password(gen: int) -> str:
    return f"pw-{gen}"


def main() -> None:
    folder, gen = Path(sys.argv[1]), int(sys.argv[2])
    from storage.unlock import OpenVault
    vault, _ = OpenVault.unlock(folder, password(gen), threaded=False)
    print("READY", flush=True)
    while True:
        vault.change_password(password(gen), password(gen + 1))
        gen += 1
        print(f"A {gen}", flush=True)


if __name__ == "__main__":
    main()
