"""How the window and ``kept sync`` say what devices there are (issue 29, item 6). Layer: app
(plain words, no I/O). Runs on: any thread. One place, so Settings > Devices and the CLI say
the same thing the same way."""

from __future__ import annotations

from app import words
from app.api import SyncActivity, SyncDeviceRow, SyncStatus

FOLDER_MISSING = "Sync folder missing"


def role(row: SyncDeviceRow) -> str:
    """"this device, set sync up", "removed"... ("" for a plain other device)."""
    parts = (["this device"] if row.this_device else []) + \
        (["founder"] if row.founder else []) + \
        (["successor"] if row.successor and not row.revoked else []) + \
        (["removed"] if row.revoked else [])
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
        return FOLDER_MISSING
    others = [d for d in status.devices if not d.this_device and not d.revoked]
    pending = sum(d.waiting for d in status.devices if not d.revoked)
    n = len(others)
    said = f"Sync: {n} other {'device' if n == 1 else 'devices'}" if n else "Sync: no other device yet"
    return f"{said}, {pending:,} waiting" if pending else said


def revoke_consequence(name: str) -> str:
    """What removing a device does, said before the person confirms."""
    return (f"Remove {name} from this vault's devices? Every device will refuse what {name} "
            "writes from now on, and the others change to a new key it never gets, so it "
            f"cannot read what is written after. What {name} already received stays on it "
            "(in its own vault, behind its own password). This cannot be undone; to use it "
            "again, pair it as a new device.")


def founder_line(status: SyncStatus) -> str:
    """Who signs who belongs, and who takes over: "The founder is laptop (pairs and removes
    devices); if it is lost, desktop can take over."."""
    founder = next((d.name for d in status.devices if d.founder), "")
    heir = next((d.name for d in status.devices if d.successor and not d.revoked), "")
    said = f"The founder is {founder} (it pairs and removes devices)" if founder else \
        "No founder known"
    if heir:
        return f"{said}; if it is lost, {heir} can take over."
    return said + "; no successor is named yet (pair a second device, or name one)."


def take_over_consequence(status: SyncStatus) -> str:
    """What taking over does, said before the person confirms."""
    founder = next((d.name for d in status.devices if d.founder), "the founder")
    return (f"Take over from {founder}? Do this only if {founder} is lost for good. This "
            f"device becomes the founder: {founder} is removed (every device refuses what it "
            "writes from now on and it never gets a new key), the others change to a new key, "
            "and new devices pair through this one. This cannot be undone.")


def ago(seconds: float) -> str:
    """"12 s ago", "4 min ago", "3 h ago", "2 days ago"."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s ago"
    if s < 3600:
        return f"{s // 60} min ago"
    if s < 2 * 86_400:
        return f"{s // 3600} h ago"
    return f"{s // 86_400} days ago"


def changes(n: int) -> str:
    return f"{n:,} {'change' if n == 1 else 'changes'}"


def activity(status: SyncStatus, act: SyncActivity) -> str:
    """The status bar's sync words: "Synced 12 s ago", "Sync folder missing", "Sending 3
    changes"; "" when this device does not sync."""
    if not status.set_up:
        return ""
    if act.problem:
        return act.problem
    if not status.folder_found:
        return FOLDER_MISSING
    if not act.running or act.last_sync is None:
        return "Sync starting"
    if act.sending:
        return f"Sending {changes(act.sending)}"
    at = act.at if act.at is not None else act.last_sync
    return f"Synced {ago(at - act.last_sync)}"


def waiting_acks(name: str, act: SyncActivity) -> str:
    """What a device has not acknowledged yet: "1 forget to acknowledge" or ""."""
    n = sum(1 for f in act.forgets if name in f.waiting)
    return "" if n == 0 else f"{n} {'forget' if n == 1 else 'forgets'} to acknowledge"


def activity_lines(act: SyncActivity) -> list[str]:
    """``kept sync status``'s lines about the owner's sync job."""
    if not act.running:
        return ["Not syncing now: changes move while Kept (the window) or `kept serve` runs "
                "on this device."]
    at = act.at if act.at is not None else 0.0
    out = [("Last synced " + ago(at - act.last_sync)) if act.last_sync is not None
           else "Not synced yet since Kept started"]
    if act.problem:
        out.append(f"Problem: {act.problem}")
    out.append(f"Waiting to send: {changes(act.sending)}")
    out += [f"Noticed in the folder: {f}" for f in act.findings]
    out += [f.words for f in act.forgets]
    return out
