"""Scheduled backups (issue 16): into the folder the person picked, the last N kept; only
files this vault recorded as its scheduled backups are ever deleted; a failure writes and
deletes nothing. Real SQLCipher vault, real backup files, the real job function."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.clock import FixedClock
from app.jobs import Jobs
from tests.conftest import new_vault


@pytest.fixture
def vault(tmp_path: Path, fast_kdf: Any) -> Iterator[Any]:
    from app.api import Turn
    v = new_vault(tmp_path / "vault", "pw-sched", threaded=False, use_chroma=False,
                  load_model=False)
    v.import_turns([Turn("s1", "Ana", f"Scheduled backup turn {i} about the garden",
                         at=1_780_000_000 + i, ref=f"r{i}") for i in range(20)])
    yield v
    v.lock()


def _count(v: Any) -> int:
    return sum(v.status().totals.values())


def test_keeps_the_last_n_and_leaves_other_files_alone(vault: Any, tmp_path: Path) -> None:
    from app import bootstrap
    folder = tmp_path / "backups"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    stranger = folder / "kept-backup-20200101-000000.keptbackup"  # not this vault's
    stranger.write_bytes(b"not a backup this vault made")
    vault.set_setting("backup.folder", str(folder))
    vault.set_setting("backup.schedule", "daily")
    vault.set_setting("backup.keep", 2)
    clock = FixedClock(1_790_000_000)
    seen: list[Any] = []
    jobs = Jobs(vault, clock, on_done=seen.append)
    for _ in range(3):
        out = jobs.backup()
        assert out.ok, out.error
        clock.advance(86_400)
    made = sorted(p.name for p in folder.glob("kept-backup-2026*.keptbackup"))
    assert len(made) == 2
    assert (folder / "notes.txt").read_text() == "mine" and stranger.exists()
    assert [o.job for o in seen] == ["backup"] * 3 and "1 older removed" in (seen[-1].detail or "")
    # The newest two are whole, verified backups that open with the vault's password.
    for name in made:
        chk = bootstrap.verify_backup(folder / name, "pw-sched")
        assert chk.memories == _count(vault)
    # The vault still records the deleted one, now gone (forget no longer counts it).
    recs = vault.backups()
    assert len(recs) == 3 and sum(r.exists for r in recs) == 2


def test_off_or_no_folder_does_nothing(vault: Any, tmp_path: Path) -> None:
    jobs = Jobs(vault, FixedClock(1_790_000_000))
    assert jobs.backup().ok and vault.backups() == []
    vault.set_setting("backup.schedule", "weekly")
    assert jobs.backup().ok and vault.backups() == []  # no folder yet


def test_a_failing_backup_changes_nothing_and_says_why(vault: Any, tmp_path: Path) -> None:
    before = _count(vault)
    vault.set_setting("backup.folder", str(tmp_path / "gone"))
    vault.set_setting("backup.schedule", "daily")
    out = Jobs(vault, FixedClock(1_790_000_000)).backup()
    assert not out.ok and "does not exist" in (out.error or "")
    # A name already taken in that folder (two backups in one second): refused, kept as is.
    folder = tmp_path / "taken"
    folder.mkdir()
    from app.services.backup import scheduled_name
    taken = folder / scheduled_name(1_790_000_100)
    taken.write_bytes(b"someone's file")
    vault.set_setting("backup.folder", str(folder))
    out = Jobs(vault, FixedClock(1_790_000_100)).backup()
    assert not out.ok and "already exists" in (out.error or "")
    assert taken.read_bytes() == b"someone's file"
    assert list(folder.iterdir()) == [taken] and _count(vault) == before
    assert vault.backups() == []


def test_the_scheduler_runs_the_backup_only_when_switched_on(vault: Any, tmp_path: Path) -> None:
    from app.jobs import build_scheduler, reschedule
    sched = build_scheduler(Jobs(vault, FixedClock(1_790_000_000)), vault.setting)
    sched.start(paused=True)
    try:
        assert sched.get_job("backup").next_run_time is None  # off: paused
        vault.set_setting("backup.folder", str(tmp_path))
        vault.set_setting("backup.schedule", "weekly")
        reschedule(sched, vault.setting)
        job = sched.get_job("backup")
        assert job.next_run_time is not None and job.trigger.interval.days == 7
        first = job.next_run_time
        reschedule(sched, vault.setting)  # saving again must not push it back
        assert sched.get_job("backup").next_run_time == first
        vault.set_setting("backup.schedule", "off")
        reschedule(sched, vault.setting)
        assert sched.get_job("backup").next_run_time is None
    finally:
        sched.shutdown(wait=False)
