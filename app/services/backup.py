"""Backups and forgetting (issue 16, docs/security.md#15-backups-honour-forget). Layer: app. Runs
on: any worker thread (blocks: disk, crypto).

The vault records every backup it makes (``storage/backup.py``, table ``backup``). A forget
plan lists the recorded backups that are still on disk and hold some of what goes: memory ids
are never reused, so a backup holds memory ``m`` exactly when ``m.id <= max_memory_id`` at the
time it was made. After the forget, ``remake`` makes each of them again from the vault as it
is now, at the same path, replacing the old file atomically.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from app.api import BackupRecord, BackupRemade, ForgetPlan, Progress, VaultAPI
from app.errors import AppError, ValidationError
from app.ports import Backups

log = logging.getLogger(__name__)


class BackupService:
    """Owner: the Vault facade (built on first use for one unlocked vault)."""

    def __init__(self, store: Backups) -> None:
        self.store = store

    def holding(self, plan: ForgetPlan) -> tuple[BackupRecord, ...]:
        """Recorded backups still on disk that hold some of what ``plan`` forgets."""
        if not plan.items:
            return ()
        first = min(int(i.id) for i in plan.items)
        return tuple(r for r in self.store.records()
                     if r.exists and r.max_memory_id >= first)

    def remake(self, ids: Iterable[int], *, progress: Progress | None = None,
               now: float | None = None) -> tuple[BackupRemade, ...]:
        """Make these recorded backups again, each at its own path; one failing does not stop
        the others (each outcome says what happened)."""
        by_id = {r.id: r for r in self.store.records()}
        out = []
        for rid in dict.fromkeys(int(i) for i in ids):
            rec = by_id.get(rid)
            if rec is None:
                out.append(BackupRemade(f"#{rid}", False, "no such recorded backup"))
                continue
            if not rec.exists:
                out.append(BackupRemade(rec.path, False,
                                        "the file is gone or was replaced; nothing done"))
                continue
            try:
                new, vault_pw = self.store.remake(rec, progress=progress, now=now)
            except AppError as exc:
                log.warning("re-making backup %d failed: %s", rid, type(exc).__name__)
                out.append(BackupRemade(rec.path, False, exc.user_message))
                continue
            except OSError as exc:
                log.warning("re-making backup %d failed: %s", rid, type(exc).__name__)
                out.append(BackupRemade(rec.path, False,
                                        f"{exc.strerror or type(exc).__name__}; the old file "
                                        "is unchanged"))
                continue
            note = "made again without what was forgotten; the old file is replaced"
            if vault_pw:
                note += (" (its own password wrapped a data key rotated since: it now opens "
                         "with the vault's password)")
            out.append(BackupRemade(rec.path, True, note, new, vault_pw))
        return tuple(out)


# --- scheduled backups (issue 16): a folder the person picks, the last N kept ---------------
SCHEDULED_PREFIX = "kept-backup-"
SCHEDULED_SUFFIX = ".keptbackup"
SCHEDULES = {"off": 0, "daily": 24, "weekly": 24 * 7}  # backup.schedule -> hours between


def scheduled_name(now: float) -> str:
    """``kept-backup-20261124-031500.keptbackup`` (UTC): sorts by time, never reused."""
    from datetime import UTC, datetime
    stamp = datetime.fromtimestamp(now, UTC).strftime("%Y%m%d-%H%M%S")
    return f"{SCHEDULED_PREFIX}{stamp}{SCHEDULED_SUFFIX}"


@dataclass(frozen=True, slots=True)
class ScheduledBackup:
    record: BackupRecord
    removed: tuple[str, ...]  # older scheduled backups deleted to keep the last N


def backup_to_folder(vault: VaultAPI, folder: Path, keep: int, *, now: float,
                     progress: Progress | None = None) -> ScheduledBackup:
    """A new, verified backup in ``folder`` (the vault's password), then the oldest of this
    vault's scheduled backups in that folder beyond the newest ``keep`` are deleted. Only
    files this vault recorded as its own scheduled backups, still there and unchanged
    (``BackupRecord.exists``), are ever deleted; anything else in the folder is left alone.
    A failed backup deletes nothing."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise ValidationError(f"The backup folder {folder} does not exist (Settings > "
                              "Backups).")
    if keep < 1:
        raise ValidationError("Keep at least one backup.")
    target = folder / scheduled_name(now)
    if target.exists():  # two in the same second: never overwrite
        raise ValidationError(f"{target.name} already exists; nothing was written.")
    rec = vault.backup(target, None, progress=progress).value
    mine = [r for r in vault.backups()
            if r.exists and Path(r.path).resolve().parent == folder.resolve()
            and Path(r.path).name.startswith(SCHEDULED_PREFIX)
            and Path(r.path).name.endswith(SCHEDULED_SUFFIX)]
    mine.sort(key=lambda r: (r.created_at, r.id), reverse=True)
    removed = []
    for old in mine[keep:]:
        try:
            os.unlink(old.path)
            removed.append(old.path)
        except OSError as exc:
            log.warning("could not delete an old scheduled backup (%s)", type(exc).__name__)
    return ScheduledBackup(rec, tuple(removed))
