"""Data in and out for front ends (issue 16): import a file of chats or notes, export, name a
backup. Layer: app. Runs on: a worker thread (blocks: disk). The window calls these (it never
imports ``app.services``); ``kept import`` / ``kept export`` call the same services.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.api import ImportReport, Progress, VaultAPI


@dataclass(frozen=True, slots=True)
class FileImport:
    report: ImportReport
    format_name: str  # as read: "a ChatGPT data export", ...


def import_file(vault: VaultAPI, path: Path, *, progress: Progress | None = None) -> FileImport:
    """Any format ``kept import`` reads, detected by content. The whole file is checked first
    (a malformed one is refused with where it broke, nothing written), then it is imported
    1,024 turns a call, never held whole in RAM."""
    from app.services.import_formats import FORMAT_NAMES, import_batches, scan
    plan = scan(Path(path))
    report = import_batches(plan, lambda turns: vault.import_turns(turns).value, batch=1024,
                            progress=progress)
    return FileImport(report, FORMAT_NAMES[plan.format])


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
