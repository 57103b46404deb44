"""``kept sync status|pair|revoke`` (issue 29, item 6) on real vaults over one temp folder: the
founder in this process through the contract, the new device through the command."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.app.cli.conftest import PW, kept_in_process
from tests.conftest import new_vault


@pytest.fixture
def founder(tmp_path: Path) -> Iterator[tuple[Any, Path, Path]]:
    shared = tmp_path / "Sync"
    shared.mkdir()
    a = new_vault(tmp_path / "a", PW, load_model=False, use_chroma=False)
    a.sync_set_up(shared, "laptop")
    new_vault(tmp_path / "b", PW, load_model=False, threaded=False, use_chroma=False).lock()
    yield a, shared, tmp_path / "b"
    a.lock()


def _answer(vault: Any) -> threading.Thread:
    """The founder's window, in short: look at the folder until the pairing is decided."""
    def run() -> None:
        wait = threading.Event()
        while vault.sync_pair_step().value.state == "waiting":
            wait.wait(0.05)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _join_as_desktop(a: Any, shared: Path, b: Any) -> Any:
    """``b`` joins ``a``'s sync as "desktop" through the CLI, ``a`` answering; the result."""
    code = a.sync_invite().value.code
    t = _answer(a)
    r = kept_in_process(b, "sync", "pair", "--join", "--folder", str(shared), "--code", code,
                        "--name", "desktop")
    t.join(10)
    assert r.returncode == 0, r.stderr
    return r


def test_join_with_the_code_then_status_lists_both_devices(founder: Any) -> None:
    a, shared, b = founder
    r = _join_as_desktop(a, shared, b)
    assert "joined" in r.stdout
    r = kept_in_process(b, "sync", "status")
    lines = r.stdout.splitlines()
    assert lines[0] == f"Folder: {shared.resolve()}"
    # No owner runs this vault: the command opened it itself, and says changes do not move now.
    assert lines[1].startswith("Not syncing now: changes move while Kept")
    assert lines[2].startswith("  desktop (this device, successor):")  # named as it joined
    assert lines[3].startswith("  laptop (founder): last wrote ")  # its root, cert and key
    assert lines[4] == ("The founder is laptop (it pairs and removes devices); if it is lost, "
                        "desktop can take over.")


def test_the_successor_takes_over_from_a_lost_founder(founder: Any) -> None:
    a, shared, b = founder
    _join_as_desktop(a, shared, b)
    # The founder names another: only a certified device, by name.
    r = kept_in_process(b, "sync", "successor", "laptop")
    assert r.returncode == 2 and "Only the founder" in r.stderr
    # Not confirmed without a terminal: nothing changes.
    r = kept_in_process(b, "sync", "take-over")
    assert r.returncode == 3 and "nothing was changed" in r.stderr
    assert "Take over from laptop?" in r.stdout
    r = kept_in_process(b, "sync", "take-over", "--yes")
    assert r.returncode == 0, r.stderr
    assert "This device is the founder now. The founder is desktop" in r.stdout
    founders = shared / "v1" / "founders"
    assert [p.name for p in founders.rglob("*") if p.is_file()] == ["00000001"]
    r = kept_in_process(b, "sync", "status")
    assert "  laptop (removed):" in r.stdout and "desktop (this device, founder)" in r.stdout
    # A second take-over: one clear error, nothing written.
    r = kept_in_process(b, "sync", "take-over", "--yes")
    assert r.returncode == 2 and "founder already" in r.stderr
    assert [p.name for p in founders.rglob("*") if p.is_file()] == ["00000001"]


def test_status_asks_the_running_owner_what_its_sync_job_did(founder: Any) -> None:
    import json
    import time

    from app.owner import OwnerSession
    a, shared, _b = founder
    session = OwnerSession(a)
    session.start()
    try:
        assert session.server is not None, session.serve_error
        start = time.monotonic()
        while a.sync_activity().last_sync is None and time.monotonic() - start < 30:
            time.sleep(0.1)
        r = kept_in_process(Path(a.folder), "sync", "status")
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert lines[1].startswith("Last synced ") and lines[1].endswith(" ago")
        assert "Waiting to send: 0 changes" in lines
        data = json.loads(kept_in_process(Path(a.folder), "sync", "status", "--json").stdout)
        assert data["activity"]["running"] and data["activity"]["problem"] == ""
        # The folder goes away (the sync tool unmounted it): one problem, in words.
        shared.rename(shared.with_name("Sync-away"))
        while a.sync_activity().problem == "" and time.monotonic() - start < 60:
            time.sleep(0.1)
        r = kept_in_process(Path(a.folder), "sync", "status")
        assert "Problem: Sync folder missing" in r.stdout.splitlines()
    finally:
        session.lock()


def test_revoke_says_what_happens_and_asks_first(founder: Any, tmp_path: Path) -> None:
    a, shared, b_dir = founder
    b = new_vault(tmp_path / "c", PW, load_model=False, threaded=False, use_chroma=False)
    b.sync_join(shared, a.sync_invite().value.code, "desktop")
    a.sync_pair_step()
    assert b.sync_pair_step().value.state == "joined"
    b.lock()
    a_dir = Path(a.folder)
    a.lock()
    r = kept_in_process(a_dir, "sync", "revoke", "desktop")  # no terminal, no --yes
    assert r.returncode == 3 and "Remove desktop" in r.stdout and "nothing was changed" in r.stderr
    r = kept_in_process(a_dir, "sync", "revoke", "desktop", "--yes")
    assert r.returncode == 0 and "Removed desktop." in r.stdout
    assert "  desktop (removed): " in kept_in_process(a_dir, "sync", "status").stdout


def test_a_wrong_code_exits_2_and_the_device_does_not_sync(founder: Any) -> None:
    a, shared, b = founder
    code = a.sync_invite().value.code
    wrong = code[:5] + ("0000" if code[5:9] != "0000" else "1111") + code[9:]
    t = _answer(a)
    r = kept_in_process(b, "sync", "pair", "--join", "--folder", str(shared), "--code", wrong)
    t.join(10)
    assert r.returncode == 2 and "does not match" in r.stderr and "2 more tries" in r.stderr
    assert "does not sync" in kept_in_process(b, "sync", "status").stdout
    assert len(a.sync_status().devices) == 1


def test_bad_pair_arguments_are_refused_before_the_password(tmp_path: Path) -> None:
    nowhere = tmp_path / "none"
    for argv, said in ((("--join",), "--join needs --folder"),
                       (("--code", "123412341234"), "--code is for the new device"),
                       (("--join", "--folder", ".", "--code", "12"), "12 digits")):
        r = kept_in_process(nowhere, "sync", "pair", *argv, password=None)
        assert r.returncode == 2 and said in r.stderr
