"""How the window and ``kept sync`` say what devices there are (issue 29, item 6). Layer: app
(plain words, no I/O). Runs on: any thread. One place, so Settings > Devices and the CLI say
the same thing the same way."""

from __future__ import annotations

from app import words
from app.api import SyncDeviceRow, SyncStatus


def role(row: SyncDeviceRow) -> str:
    """"this device, set sync up", "removed"... ("" for a plain other device)."""
    parts = (["this device"] if row.this_device else []) + \
        (["set sync up"] if row.founder else []) + (["removed"] if row.revoked else [])
    return ", ".join(parts)


def last_seen(row: SyncDeviceRow, *, now: float | None = None) -> str:
    if row.last_seen is None:
        return "has written nothing yet"
    return "last wrote " + words.when(row.last_seen, now=now)


def waiting(row: SyncDeviceRow) -> str:
    n = row.waiting
    if row.this_device:
        return "" if n == 0 else f"{n:,} {'change' if n == 1 else 'changes'} to write"
    if row.revoked:
        return ""
    return "" if n == 0 else f"{n:,} {'change' if n == 1 else 'changes'} to apply here"


def line(row: SyncDeviceRow, *, now: float | None = None) -> str:
    """One device in one line: "desktop: last wrote today 09:14; 3 changes to apply here"."""
    who = row.name + (f" ({role(row)})" if role(row) else "")
    rest = "; ".join(p for p in (last_seen(row, now=now), waiting(row)) if p)
    return f"{who}: {rest}"


def summary(status: SyncStatus) -> str:
    """The status bar's few words: "" when this device does not sync."""
    if not status.set_up:
        return ""
    if not status.folder_found:
        return "Sync: folder missing"
    others = [d for d in status.devices if not d.this_device and not d.revoked]
    pending = sum(d.waiting for d in status.devices if not d.revoked)
    n = len(others)
    said = f"Sync: {n} other {'device' if n == 1 else 'devices'}" if n else "Sync: no other device yet"
    return f"{said}, {pending:,} waiting" if pending else said


def revoke_consequence(name: str) -> str:
    """What removing a device does, said before the person confirms."""
    return (f"Remove {name} from this vault's devices? Every device will refuse what {name} "
            "writes from now on, and it gets no key for changes made after the next key "
            f"change. What {name} already received stays on it (in its own vault, behind its "
            "own password). This cannot be undone; to use it again, pair it as a new device.")
