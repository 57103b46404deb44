"""Data in and out for front ends (issue 16): import a file of chats or notes, export, name a
backup. Layer: app. Runs on: a worker thread (blocks: disk). The window and ``kept import`` /
``kept export`` (``app/cli/transfer.py``) call these; neither imports ``app.services``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from app.api import ImportReport, Progress, VaultAPI

if TYPE_CHECKING:
    from app.services.import_formats import ImportPlan


@dataclass(frozen=True, slots=True)
class FileImport:
    report: ImportReport
    format_name: str  # as read: "a ChatGPT data export", ...


@dataclass(frozen=True, slots=True)
class FileScan:
    """The first pass of an import: what the whole file holds, checked and counted."""
    format_name: str  # as read: "a ChatGPT data export", ...
    turns: int
    sessions: int
    plan: ImportPlan


def import_file(vault: VaultAPI, path: Path, *, progress: Progress | None = None) -> FileImport:
    """Any format ``kept import`` reads, detected by content. The whole file is checked first
    (a malformed one is refused with where it broke, nothing written), then it is imported
    1,024 turns a call, never held whole in RAM."""
    scan = scan_file(path)
    return FileImport(import_scanned(vault, scan, progress=progress), scan.format_name)


def scan_file(path: Path) -> FileScan:
    """The first pass alone (no vault needed): every turn read and checked, streamed, nothing
    kept but counts. A malformed file raises ``ImportInvalid`` saying where it broke."""
    from app.services.import_formats import FORMAT_NAMES, scan
    plan = scan(Path(path))
    return FileScan(FORMAT_NAMES[plan.format], plan.turns, plan.sessions, plan)


def import_scanned(vault: VaultAPI, scan: FileScan, *,
                   progress: Progress | None = None) -> ImportReport:
    """The second pass: the turns :func:`scan_file` counted, 1,024 a call."""
    from app.services.import_formats import import_batches
    return import_batches(scan.plan, lambda turns: vault.import_turns(turns).value,
                          batch=1024, progress=progress)


def export_target(target: Path, fmt: str, vault_folder: Path | None) -> Path:
    """The absolute target, or ``ValidationError`` (the checks of ``kept export``)."""
    from app.services.export import check_target
    if fmt not in ("markdown", "json"):
        from app.errors import ValidationError
        raise ValidationError(f"Unknown export format {fmt!r}: markdown or json.")
    return check_target(target, fmt, vault_folder)  # type: ignore[arg-type]


def cloud_service(path: Path) -> str | None:
    """The sync service whose folder holds ``path``, else None."""
    from app.services.export import cloud_service as service
    return service(path)


def export(vault: VaultAPI, fmt: str, target: Path, *, now: float,
           progress: Progress | None = None) -> tuple[int, int, str]:
    """(memories, files, path) written, plaintext, to a checked target."""
    from app.services import export as ex
    write = ex.write_markdown if fmt == "markdown" else ex.write_json
    r = write(vault, target, now=now, progress=progress)
    return r.memories, r.files, str(r.path)


def backup_name(now: float) -> str:
    """The file name a scheduled backup made at ``now`` gets."""
    from app.services.backup import scheduled_name
    return scheduled_name(now)
