"""SECURITY.md requirement 22: the vault folder is 0700 and its files 0600; Kept refuses to
start otherwise. Creation must not depend on the process umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.errors import InsecurePermissions
from storage.crypto import KdfParams
from storage.paths import check_permissions
from storage.unlock import OpenVault
from tests.storage.conftest import Template
from tests.storage.helpers import seed_filler, sha_tree

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX modes")


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    """A typical desktop umask (022) for the duration of the test."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_created_vault_is_private_even_with_umask_022(vault_dir: Path, fast_kdf: KdfParams,
                                                      permissive_umask: None) -> None:
    v = OpenVault.create(vault_dir, "pw", kdf=fast_kdf)
    try:
        seed_filler(v.db, 50)
        v.db.read(lambda c: c.execute("SELECT count(*) FROM memory").fetchone())
        names = {p.name for p in vault_dir.iterdir()}
        assert {"vault.db", "vault.db-wal", "vault.db-shm", "vault.key.json",
                "vault.lock"} <= names
        assert _mode(vault_dir) == 0o700
        for p in vault_dir.iterdir():
            assert _mode(p) == 0o600, f"{p.name} is {oct(_mode(p))}"
    finally:
        v.lock()
    for p in vault_dir.iterdir():
        assert _mode(p) == 0o600, f"{p.name} is {oct(_mode(p))}"
    # The vault it made opens (refusing our own files would lock the person out).
    v, _ = OpenVault.unlock(vault_dir, "pw")
    v.lock()


def test_make_private_dir_tightens_existing_folder(tmp_path: Path) -> None:
    from storage.paths import make_private_dir
    d = tmp_path / "existing"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    make_private_dir(d)
    assert _mode(d) == 0o700


@pytest.mark.parametrize("target,mode", [
    (".", 0o755), (".", 0o750), (".", 0o701), (".", 0o707),
    ("vault.db", 0o644), ("vault.db", 0o640), ("vault.db", 0o604),
    ("vault.key.json", 0o644), ("vault.lock", 0o666),
    ("vault.db-wal", 0o644),  # a WAL left by a crash, made by a tool with a loose umask
])
def test_loose_permissions_refuse_unlock(clone_vault: Callable[..., Path],
                                         template_vault: Template, target: str,
                                         mode: int) -> None:
    folder = clone_vault()
    path = folder / target
    if not path.exists():
        path.write_bytes(b"")
    os.chmod(path, mode)
    before = sha_tree(folder)
    with pytest.raises(InsecurePermissions) as info:
        OpenVault.unlock(folder, template_vault.password)
    assert "chmod" in (info.value.hint or "")
    assert sha_tree(folder) == before
    os.chmod(path, 0o700 if target == "." else 0o600)
    check_permissions(folder)  # the mode was the only reason


def test_create_refuses_into_loose_existing_parent_permissions(tmp_path: Path,
                                                              fast_kdf: KdfParams) -> None:
    """An existing, world-readable vault folder is tightened to 0700 before anything is
    written into it."""
    folder = tmp_path / "loose"
    folder.mkdir()
    os.chmod(folder, 0o777)
    v = OpenVault.create(folder, "pw", kdf=fast_kdf)
    try:
        assert _mode(folder) == 0o700
    finally:
        v.lock()
