"""Data in and out for front ends (issue 16): import a file of chats or notes, export, name a
backup. Layer: app. Runs on: a worker thread (blocks: disk). The window and ``kept import`` /
``kept export`` (``app/cli/transfer.py``) call these; neither imports ``app.services``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from app.api import CancelToken, ImportReport, Progress, Turn, VaultAPI

if TYPE_CHECKING:
    from app.services.import_formats import ImportPlan


# Turns a file import hands ``Vault.import_turns`` a call: memory stays one call's turns, a
# Cancel takes effect after the call under way (~3 s at ~350 turns/s now that the vectors
# follow), and each call's four 256-turn batches are pipelined (scoring beside writing).
IMPORT_CALL = 1024


@dataclass(frozen=True, slots=True)
class FileImport:
    report: ImportReport
    format_name: str  # as read: "a ChatGPT data export", ...
    total: int = 0  # the turns the file holds (``report.turns`` is fewer when cancelled)
    cancelled: bool = False  # stopped by the person: what was imported stays


@dataclass(frozen=True, slots=True)
class FileScan:
    """The first pass of an import: what the whole file holds, checked and counted."""
    format_name: str  # as read: "a ChatGPT data export", ...
    turns: int
    sessions: int
    plan: ImportPlan


def import_file(vault: VaultAPI, path: Path, *, progress: Progress | None = None,
                cancel: CancelToken | None = None, follow: bool = True) -> FileImport:
    """Any format ``kept import`` reads, detected by content. The whole file is checked first
    (a malformed one is refused with where it broke, nothing written), then it is imported
    1,024 turns a call, never held whole in RAM. ``cancel`` stops it after the call under
    way; every turn imported until then stays (whole batches), and importing the same file
    again adds only the turns still missing. ``follow`` (the default, what a person importing
    a file needs): the call returns once the turns are in and their vectors follow in the
    background (``Vault.import_turns``)."""
    scan = scan_file(path)
    report = import_scanned(vault, scan, progress=progress, cancel=cancel, follow=follow)
    return FileImport(report, scan.format_name, scan.turns,
                      cancel is not None and cancel.cancelled and report.turns < scan.turns)


def scan_file(path: Path) -> FileScan:
    """The first pass alone (no vault needed): every turn read and checked, streamed, nothing
    kept but counts. A malformed file raises ``ImportInvalid`` saying where it broke."""
    from app.services.import_formats import FORMAT_NAMES, scan
    plan = scan(Path(path))
    return FileScan(FORMAT_NAMES[plan.format], plan.turns, plan.sessions, plan)


def import_scanned(vault: VaultAPI, scan: FileScan, *, progress: Progress | None = None,
                   cancel: CancelToken | None = None, follow: bool = True) -> ImportReport:
    """The second pass: the turns :func:`scan_file` counted, 1,024 a call. ``progress``
    hears of every committed batch of a call (256 turns), not only of whole calls, so a
    time estimate follows the import closely (issue 28)."""
    from app.services.import_formats import import_batches
    written = [0]  # turns of the file handed to the vault by the calls before this one

    def write(turns: Sequence[Turn]) -> ImportReport:
        start = written[0]
        inner = None if progress is None else (
            lambda done, _of: progress(start + done, scan.turns))
        report = vault.import_turns(turns, progress=inner, follow=follow).value
        written[0] += len(turns)
        return report
    return import_batches(scan.plan, write, batch=IMPORT_CALL, progress=progress, cancel=cancel)


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
