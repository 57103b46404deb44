"""SECURITY.md requirement 7 (key-file durability under kill -9) and the key file's backup.

The kill loop: a child changes the password again and again (``pw-0`` -> ``pw-1`` -> ...,
printing ``A <n>`` after each change returns); the parent SIGKILLs it at a random moment.
After every kill the key file must be valid JSON and exactly the acknowledged password or the
one in flight must unlock. 5 iterations by default, 200 under ``-m slow``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.errors import StorageFull, VaultCorrupt, WrongKey
from storage import crypto
from storage.crypto import KdfParams
from storage.unlock import OpenVault
from tests.storage.conftest import Template
from tests.storage.helpers import sha_tree

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("pwchange_child.py")


def _pw(gen: int) -> str:
    return f"pw-{gen}"


def _which_unlocks(folder: Path, candidates: list[int]) -> int | None:
    for gen in candidates:
        try:
            v, _ = OpenVault.unlock(folder, _pw(gen), threaded=False)
        except WrongKey:
            continue
        v.lock()
        return gen
    return None


def _kill_loop(folder: Path, iterations: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    gen = 0
    stats = {"kills": 0, "acked_changes": 0, "in_flight_applied": 0, "stray_tmp": 0}
    for i in range(iterations):
        proc = subprocess.Popen([sys.executable, str(CHILD), str(folder), str(gen)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            if first.strip() != "READY":
                proc.kill()
                raise AssertionError(f"child failed to start: {first!r} {proc.stderr.read()}")
            early = ""
            if i == 0:
                # However slow the machine, at least one change completes before a kill, so
                # the test is never vacuous.
                while not early.startswith("A "):
                    line = proc.stdout.readline()
                    if not line:
                        break
                    early = line
            # The kill moment is the randomised variable under test, not a synchronisation.
            time.sleep(rng.uniform(0.0, 1.2))
            os.kill(proc.pid, signal.SIGKILL)
            out, err = proc.communicate(timeout=30)
            out = early + out
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == -signal.SIGKILL, err
        stats["kills"] += 1
        acks = [int(line.split()[1]) for line in out.splitlines() if line.startswith("A ")]
        assert acks == list(range(gen + 1, gen + 1 + len(acks)))
        acked = acks[-1] if acks else gen
        stats["acked_changes"] += len(acks)

        # The key file is always whole, valid JSON with every field.
        raw = (folder / "vault.key.json").read_text("utf-8")
        crypto.KeyFile.from_json(json.loads(raw))
        bak = folder / "vault.key.json.bak"
        if bak.exists():
            crypto.KeyFile.from_json(json.loads(bak.read_text("utf-8")))
        stats["stray_tmp"] += len(list(folder.glob(".vault.key.json*.tmp")))
        # Exactly the acknowledged password, or the one being set at the kill, unlocks.
        works = _which_unlocks(folder, [acked, acked + 1])
        assert works is not None, f"iteration {i}: neither pw-{acked} nor pw-{acked + 1} unlocks"
        if works == acked + 1:
            stats["in_flight_applied"] += 1
        # That unlock retired the .bak and any temp file a kill left behind (one may hold
        # the old password's wrap).
        assert not (folder / "vault.key.json.bak").exists()
        assert list(folder.glob(".vault.key.json*.tmp")) == []
        if i % 5 == 4 and works > 0:  # (costs a derive, so not every time)
            assert _which_unlocks(folder, [works - 1]) is None, "an older password unlocks"
        gen = works
    return stats


def _run(tmp_path: Path, iterations: int) -> None:
    folder = tmp_path / "vault"
    v = OpenVault.create(folder, _pw(0), kdf=KdfParams(m=65_536, t=3, p=4), threaded=False)
    v.lock()
    stats = _kill_loop(folder, iterations, seed=iterations * 7919 + os.getpid())
    print(f"kill -9 during password change: {stats}")
    assert stats["kills"] == iterations
    assert stats["acked_changes"] > 0, "the child never completed a change: test is vacuous"


@pytest.mark.slow  # long: runs in the slow group (CI runs it)
def test_password_change_survives_kill9(tmp_path: Path) -> None:
    _run(tmp_path, 5)  # iteration 4 also checks that the older password no longer unlocks


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_password_change_survives_kill9_200(tmp_path: Path) -> None:
    _run(tmp_path, 200)


# --- deterministic crash points --------------------------------------------------------------

@pytest.mark.parametrize("fail_at", ["bak_replace", "main_fsync", "main_replace",
                                     "dir_fsync"])
def test_crash_inside_write_key_file(clone_vault: Callable[..., Path], template_vault: Template,
                                     monkeypatch: pytest.MonkeyPatch, fail_at: str) -> None:
    """A failure at each step of the atomic write leaves a key file that opens with the old
    password (or, after the main replace, the new one) and never a torn one."""
    folder = clone_vault()
    v, _ = OpenVault.unlock(folder, template_vault.password, threaded=False)
    calls = {"replace": 0, "fsync": 0}
    real_replace, real_fsync = os.replace, os.fsync

    def replace(src: object, dst: object) -> None:
        calls["replace"] += 1
        if (fail_at, calls["replace"]) in {("bak_replace", 1), ("main_replace", 2)}:
            raise OSError(5, "Input/output error")
        real_replace(src, dst)  # type: ignore[arg-type]

    def fsync(fd: int) -> None:
        calls["fsync"] += 1
        if fail_at == "main_fsync" and calls["fsync"] == 2:
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    def fsync_dir(path: Path) -> None:  # not counted as a file fsync
        if fail_at == "dir_fsync" and calls["replace"] == 2:
            raise OSError(5, "Input/output error")
        fd = os.open(path, os.O_RDONLY)
        try:
            real_fsync(fd)
        finally:
            os.close(fd)
    monkeypatch.setattr(crypto.os, "replace", replace)
    monkeypatch.setattr(crypto.os, "fsync", fsync)
    monkeypatch.setattr(crypto, "fsync_dir", fsync_dir)
    try:
        if fail_at == "dir_fsync":
            # The new key file is already in place: the change stands (a warning is logged),
            # rather than an error claiming nothing changed (tests/storage/test_disk_full.py).
            v.change_password(template_vault.password, "brand new")
        else:
            with pytest.raises(StorageFull):
                v.change_password(template_vault.password, "brand new")
    finally:
        monkeypatch.undo()
        v.lock()
    assert list(folder.glob(".vault.key.json.*.tmp")) == []
    crypto.KeyFile.from_json(json.loads((folder / "vault.key.json").read_text()))
    expected_new = fail_at == "dir_fsync"  # the rename happened; only its fsync failed
    good, bad = (("brand new", template_vault.password) if expected_new
                 else (template_vault.password, "brand new"))
    with pytest.raises(WrongKey):
        OpenVault.unlock(folder, bad)
    v, _ = OpenVault.unlock(folder, good)
    v.lock()


# --- the .bak copy -------------------------------------------------------------------------

def test_bak_made_on_change_and_dropped_on_next_unlock(clone_vault: Callable[..., Path],
                                                       template_vault: Template) -> None:
    folder = clone_vault()
    original = (folder / "vault.key.json").read_bytes()
    bak = folder / "vault.key.json.bak"
    v, _ = OpenVault.unlock(folder, template_vault.password)
    try:
        assert not bak.exists()
        v.change_password(template_vault.password, "second")
        assert bak.read_bytes() == original
        assert bak.stat().st_mode & 0o777 == 0o600
    finally:
        v.lock()
    assert bak.exists()  # kept across lock until a successful unlock
    with pytest.raises(WrongKey):
        OpenVault.unlock(folder, "not it")
    assert bak.exists()  # a failed unlock does not retire it
    v, _ = OpenVault.unlock(folder, "second")
    v.lock()
    assert not bak.exists()


def test_unreadable_main_key_file_falls_back_to_bak(clone_vault: Callable[..., Path],
                                                    template_vault: Template) -> None:
    """A torn main key file (e.g. a disk error) falls back to the .bak copy, which opens with
    the password it was made with; the repaired key file survives the next unlock."""
    folder = clone_vault()
    v, _ = OpenVault.unlock(folder, template_vault.password)
    try:
        v.change_password(template_vault.password, "second")
    finally:
        v.lock()
    main = folder / "vault.key.json"
    main.write_bytes(main.read_bytes()[:100])
    v, info = OpenVault.unlock(folder, template_vault.password)  # the .bak's password
    v.lock()
    print(f"unlock via .bak: recovered_from_backup={info.recovered_from_backup}")
    assert info.recovered_from_backup
    # The working key file is in place again: unlocking twice more still works.
    crypto.KeyFile.from_json(json.loads(main.read_text()))
    for _ in range(2):
        v, info = OpenVault.unlock(folder, template_vault.password)
        v.lock()
        assert not info.recovered_from_backup


def test_unreadable_main_and_bak_refuses(clone_vault: Callable[..., Path],
                                        template_vault: Template) -> None:
    folder = clone_vault()
    (folder / "vault.key.json").write_bytes(b'{"format": 1, "vau')
    bak = folder / "vault.key.json.bak"
    bak.write_bytes(b"\x00" * 64)
    os.chmod(bak, 0o600)
    before = sha_tree(folder)
    with pytest.raises(VaultCorrupt):
        OpenVault.unlock(folder, template_vault.password)
    assert sha_tree(folder) == before
