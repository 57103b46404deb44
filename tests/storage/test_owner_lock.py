"""One owner per vault (storage.paths.OwnerLock): a second unlock of an open vault raises
VaultBusy, from another process or this one, changes nothing, and the lock goes away with its
owner (lock(), or the owner process dying)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from app.errors import VaultBusy, VaultExists
from storage.paths import OwnerLock
from storage.unlock import OpenVault
from tests.storage.conftest import Template
from tests.storage.helpers import sha_tree

ROOT = Path(__file__).resolve().parents[2]

HOLDER = """
import sys
from pathlib import Path
from storage.unlock import OpenVault
v, _ = OpenVault.unlock(Path(sys.argv[1]), sys.stdin.readline().rstrip("\\n"))
print("OPEN", flush=True)
sys.stdin.readline()  # hold the vault until told (or killed)
v.lock()
print("CLOSED", flush=True)
"""


def test_second_unlock_in_process_is_busy(clone_vault: Callable[..., Path],
                                          template_vault: Template) -> None:
    folder = clone_vault()
    v, _ = OpenVault.unlock(folder, template_vault.password)
    try:
        before = sha_tree(folder)
        with pytest.raises(VaultBusy):
            OpenVault.unlock(folder, template_vault.password)
        with pytest.raises(VaultBusy):
            OpenVault.unlock(folder, "wrong password too")  # refused before any derive
        assert sha_tree(folder) == before
        assert v.db.read(lambda c: c.execute("SELECT count(*) FROM memory").fetchone()[0]) == 303
    finally:
        v.lock()
    v, _ = OpenVault.unlock(folder, template_vault.password)  # free again after lock()
    v.lock()


def test_second_unlock_from_other_process_is_busy(clone_vault: Callable[..., Path],
                                                  template_vault: Template) -> None:
    folder = clone_vault()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(template_vault.password + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        assert line.strip() == "OPEN", proc.stderr.read() if proc.stderr else ""
        with pytest.raises(VaultBusy):
            OpenVault.unlock(folder, template_vault.password)
        # The owner dies without unlocking anything: the OS drops its lock.
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    v, _ = OpenVault.unlock(folder, template_vault.password)
    try:
        assert v.db.read(lambda c: c.execute("SELECT count(*) FROM memory").fetchone()[0]) == 303
    finally:
        v.lock()


def test_owner_lock_unit(tmp_path: Path) -> None:
    a, b = OwnerLock(tmp_path), OwnerLock(tmp_path)
    a.acquire()
    assert a.held and not b.held
    with pytest.raises(VaultBusy):
        b.acquire()
    assert not b.held
    a.release()
    a.release()  # idempotent
    b.acquire()
    assert b.held
    b.release()
    assert (tmp_path / "vault.lock").stat().st_mode & 0o777 == 0o600


def test_create_over_existing_vault_is_refused(clone_vault: Callable[..., Path],
                                               template_vault: Template) -> None:
    folder = clone_vault()
    before = sha_tree(folder)
    with pytest.raises(VaultExists):
        OpenVault.create(folder, "another password")
    (folder / "vault.key.json").unlink()  # only the database left: still never overwritten
    before = sha_tree(folder)
    with pytest.raises(VaultExists):
        OpenVault.create(folder, "another password")
    assert sha_tree(folder) == before


def test_deleted_lock_file_does_not_let_a_second_owner_in(clone_vault: Callable[..., Path],
                                                           template_vault: Template) -> None:
    """Issue 11 item 9: the lock used to sit on ``vault.lock``'s inode only, so ``rm
    vault.lock`` let a second process create a fresh file, lock it and write under the
    window's feet. The owner also locks the folder itself, which cannot be swapped for
    another without moving the whole vault."""
    folder = clone_vault()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(template_vault.password + "\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "OPEN", proc.stderr.read() if proc.stderr else ""
        (folder / "vault.lock").unlink()
        before = sha_tree(folder)
        with pytest.raises(VaultBusy):
            OpenVault.unlock(folder, template_vault.password)
        assert sha_tree(folder) == before  # refused before anything was written
        # The unit too, in this process: a lock object whose file was deleted under it.
        a = OwnerLock(folder)
        with pytest.raises(VaultBusy):
            a.acquire()
        assert not a.held
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "CLOSED"
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    v, _ = OpenVault.unlock(folder, template_vault.password)  # free once the owner is gone
    try:
        assert (folder / "vault.lock").exists()
    finally:
        v.lock()
