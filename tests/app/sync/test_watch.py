"""The sync folder by stat (app/sync/watch.py): listings kept while a directory is unchanged
and settled, and a watch that wakes on another device's file, not on this device's own. Real
directories and files, real threads, real vaults for the acknowledgements."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from app import policy
from app.sync import epochs
from app.sync.folder import FORMAT
from app.sync.watch import MAX_AGE_S, FolderWatch, Listings
from tests.app.conftest import remember
from tests.app.sync.fleet import Fleet


def _age(path: Path, seconds: float) -> None:
    """Set a directory's mtime ``seconds`` in the past (as a folder nobody wrote to since)."""
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_a_settled_directory_is_listed_once_and_again_when_a_name_lands(tmp_path: Path) -> None:
    d = tmp_path / "log"
    d.mkdir()
    (d / "000000000001").write_bytes(b"x")
    _age(d, 10)
    lst = Listings()
    assert lst.names(d) == ("000000000001",)
    token = lst.token(d)
    assert token is not None
    for _ in range(5):
        assert lst.names(d) == ("000000000001",)
    assert lst.listed == 1  # the stat proved it unchanged: no listdir
    assert lst.token(d) == token
    (d / "000000000002").write_bytes(b"y")  # sets the directory's mtime to now
    assert lst.names(d) == ("000000000001", "000000000002")
    assert lst.listed == 2
    assert lst.token(d) != token


def test_a_directory_written_just_now_is_listed_every_time(tmp_path: Path) -> None:
    """Not settled (a coarse clock could hide a second name landing in the same tick): no
    cache, no token."""
    d = tmp_path / "ack"
    d.mkdir()
    (d / "1").write_bytes(b"x")
    lst = Listings()
    lst.names(d)
    lst.names(d)
    assert lst.listed == 2
    assert lst.token(d) is None


def test_a_kept_listing_is_refreshed_after_its_maximum_age(tmp_path: Path) -> None:
    d = tmp_path / "snap"
    d.mkdir()
    _age(d, 10)
    now = [1000.0]
    lst = Listings(monotonic=lambda: now[0])
    lst.names(d)
    now[0] += MAX_AGE_S / 2
    lst.names(d)
    assert lst.listed == 1
    now[0] += MAX_AGE_S
    lst.names(d)
    assert lst.listed == 2


def test_a_missing_directory_has_no_names(tmp_path: Path) -> None:
    lst = Listings()
    assert lst.names(tmp_path / "nowhere") == ()
    assert lst.listed == 0


def _wait(cond: object, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if callable(cond) and cond():
            return True
        time.sleep(0.02)
    return False


def test_the_watch_wakes_on_another_devices_file_and_not_on_its_own(tmp_path: Path) -> None:
    me, other = "a" * 32, "b" * 32
    base = tmp_path / "v1"
    for d in (base / "log" / me, base / "log" / other):
        d.mkdir(parents=True)
    woke = threading.Event()
    watch = FolderWatch(base, me, woke.set, poll=0.02, quiet=0.02)
    watch.start()
    try:
        time.sleep(0.1)  # its first look
        (base / "log" / me / "000000000001").write_bytes(b"mine")
        time.sleep(0.3)
        assert watch.fired == 0 and not woke.is_set()  # its own writes wake nothing
        (base / "log" / other / "000000000001").write_bytes(b"theirs")
        assert woke.wait(10)
        assert watch.fired == 1
        # A device appearing for the first time (a new log directory) wakes it too.
        (base / "log" / ("c" * 32)).mkdir()
        assert _wait(lambda: watch.fired == 2)
        # So do the founder's new key and snapshot directories.
        (base / "snap" / other).mkdir(parents=True)
        assert _wait(lambda: watch.fired == 3)
    finally:
        watch.stop()
    assert not watch.running


def test_the_watch_survives_a_folder_that_goes_away(tmp_path: Path) -> None:
    base = tmp_path / "v1"
    (base / "log").mkdir(parents=True)
    calls: list[int] = []
    watch = FolderWatch(base, "a" * 32, lambda: calls.append(1), poll=0.02, quiet=0.02)
    watch.start()
    try:
        time.sleep(0.1)
        (base / "log").rmdir()
        assert _wait(lambda: bool(calls))  # the change is reported, the thread goes on
        (base / "log" / ("b" * 32)).mkdir(parents=True)
        assert _wait(lambda: len(calls) >= 2)
        assert watch.running
    finally:
        watch.stop()


def _age_tree(root: Path, seconds: float) -> None:
    for d in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        _age(d, seconds)


def test_acknowledgements_are_decrypted_again_only_when_one_lands(
        two: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """An idle tick asked ``acks`` (every device's latest acknowledgement, decrypted) once per
    recent forget and again to destroy keys: now read once while nothing under ``ack/``
    changed, and again as soon as an acknowledgement lands."""
    a, b = two.members
    remember(a.vault, "Sam likes green tea")
    for _ in range(2):
        a.tick()
        b.tick()
    calls: list[int] = []
    real = epochs.read_acks

    def counted(reader: Any) -> Any:
        calls.append(1)
        return real(reader)
    monkeypatch.setattr(epochs, "read_acks", counted)
    _age_tree(a.folder / FORMAT / "ack", 10)
    keeper = a.sync().keeper
    first = keeper.acks()
    assert set(first) == {a.secret.device_id, b.secret.device_id}
    for _ in range(4):
        assert keeper.acks() == first
    assert len(calls) == 1
    # B applies more and says so (a minute later): A reads the new acknowledgement at once.
    remember(a.vault, "The boiler was serviced in May")
    for m in (a, b):
        m.clock.advance(policy.SYNC_ACK_EVERY_S + 1)
    a.tick()
    b.tick()
    after = keeper.acks()
    assert after[b.secret.device_id].n > first[b.secret.device_id].n
    assert len(calls) == 2
