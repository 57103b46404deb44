"""The page self-test (requirements 2 and 24) in the background, as the window unlocks.

Reads may run while ``cipher_integrity_check`` runs on its own connection; no write happens
before it has passed. A damaged file is found, every write then fails with ``VaultCorrupt``,
``on_corrupt`` runs, and every file stays byte-identical."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from app.errors import AppError, VaultCorrupt
from storage.unlock import OpenVault
from tests.storage.conftest import Template
from tests.storage.helpers import flip_bytes, sha_tree


def _damage_middle(folder: Path) -> None:
    db = folder / "vault.db"
    flip_bytes(db, db.stat().st_size // 2 + 100, 16)


def test_healthy_vault_verifies_and_then_writes(clone_vault: Callable[..., Path],
                                                template_vault: Template) -> None:
    folder = clone_vault()
    v, _ = OpenVault.unlock(folder, template_vault.password, verify="background")
    try:
        assert v.db.integrity in ("pending", "passed")
        n = v.db.write_sync(lambda c: c.execute(
            "INSERT INTO settings (key, value) VALUES ('bg.test', '1')").rowcount)
        assert n == 1
        assert v.db.integrity == "passed" and v.db.wait_verified(0)
        assert v.db.read(lambda c: c.execute(
            "SELECT value FROM settings WHERE key = 'bg.test'").fetchone()[0]) == "1"
    finally:
        v.lock()


def test_sync_is_the_default(clone_vault: Callable[..., Path], template_vault: Template) -> None:
    folder = clone_vault()
    v, _ = OpenVault.unlock(folder, template_vault.password)
    try:
        assert v.db.integrity == "passed"
    finally:
        v.lock()


def test_damage_found_in_background_writes_nothing(clone_vault: Callable[..., Path],
                                                   template_vault: Template) -> None:
    folder = clone_vault()
    _damage_middle(folder)
    before = sha_tree(folder)
    try:
        v, _ = OpenVault.unlock(folder, template_vault.password, verify="background")
    except VaultCorrupt:  # a page read at open can find it first: fine as well
        assert sha_tree(folder) == before
        return
    called = threading.Event()
    try:
        v.db.on_corrupt.append(called.set)
        with pytest.raises(VaultCorrupt):
            v.db.wait_verified(60)
        assert v.db.integrity == "failed"
        # The callback ran, or the check had failed before it was registered.
        assert called.wait(5) or v.db.integrity == "failed"
        with pytest.raises(AppError) as info:
            v.db.write_sync(lambda c: c.execute(
                "INSERT INTO settings (key, value) VALUES ('x', 'y')"))
        assert isinstance(info.value, VaultCorrupt) and info.value.user_message
    finally:
        v.lock()
    assert sha_tree(folder) == before, "a file changed"


def test_facade_reports_damage_to_watchers(clone_vault: Callable[..., Path],
                                           template_vault: Template) -> None:
    from app.facade import Vault
    folder = clone_vault()
    _damage_middle(folder)
    before = sha_tree(folder)
    seen = threading.Event()
    try:
        vault = Vault.open(folder, template_vault.password, load_model=False)
    except VaultCorrupt:
        assert sha_tree(folder) == before
        return
    try:
        vault.watch_integrity(seen.set)
        assert seen.wait(60), "the failed self-test was not reported"
        with pytest.raises(VaultCorrupt):
            vault.set_setting("lock.idle_minutes", 7)
    finally:
        vault.lock()
    assert sha_tree(folder) == before, "a file changed"


def test_facade_grace_then_check_and_a_write_cuts_it_short(
        clone_vault: Callable[..., Path], template_vault: Template,
        caplog: pytest.LogCaptureFixture) -> None:
    from app.bootstrap import BACKGROUND_GRACE_S
    from app.facade import Vault
    from tests.inside import inside
    assert BACKGROUND_GRACE_S > 0
    folder = clone_vault()
    vault = Vault.open(folder, template_vault.password, load_model=False)
    try:
        assert inside(vault).db.integrity == "pending"  # still in the grace after unlock
        vault.set_setting("lock.idle_minutes", 7)  # a write: the check runs now, first
        assert inside(vault).db.integrity == "passed"
        assert vault.setting("lock.idle_minutes") == 7
    finally:
        vault.lock()
    # Locked inside the grace: the check never starts, nothing is logged as a problem.
    vault = Vault.open(clone_vault(), template_vault.password, load_model=False)
    db = inside(vault).db
    vault.lock()
    assert db.integrity == "aborted"
    assert not [r for r in caplog.records if "integrity" in r.getMessage()]
