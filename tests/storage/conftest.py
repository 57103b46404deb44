"""Fixtures for the storage security tests.

``template_vault`` builds one real vault per session (floor Argon2id parameters, seeded
canaries, a few hundred filler memories with vectors) and ``clone_vault`` copies it, with its
permissions, into a test's own ``tmp_path``: each test gets an independent vault for the price
of a file copy instead of another Argon2id derive at creation.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from storage.crypto import KdfParams
from storage.unlock import OpenVault
from tests.storage.helpers import Canary, new_canary, seed_canaries, seed_filler

PASSWORD = "correct horse battery staple"


@dataclass(frozen=True)
class Template:
    folder: Path
    password: str
    canaries: list[Canary]
    ids: list[int]


@pytest.fixture(scope="session")
def template_vault(tmp_path_factory: pytest.TempPathFactory) -> Template:
    folder = tmp_path_factory.mktemp("template") / "vault"
    v = OpenVault.create(folder, PASSWORD, kdf=KdfParams(m=65_536, t=3, p=4), threaded=False)
    try:
        canaries = [new_canary("A"), new_canary("B"), new_canary("C")]
        ids = seed_canaries(v.db, canaries)
        seed_filler(v.db, 300, with_vectors=True)
    finally:
        v.lock()
    return Template(folder, PASSWORD, canaries, ids)


@pytest.fixture
def clone_vault(template_vault: Template, tmp_path: Path) -> Callable[..., Path]:
    """``clone_vault()`` -> a private copy of the template vault (mode bits preserved)."""
    counter = iter(range(1000))

    def clone(name: str | None = None) -> Path:
        dest = tmp_path / (name or f"vault{next(counter)}")
        shutil.copytree(template_vault.folder, dest)
        return dest
    return clone


@pytest.fixture
def private_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A per-test temp directory: TMPDIR, SQLITE_TMPDIR and ``tempfile.tempdir`` point at it."""
    path = tmp_path / "tmp"
    path.mkdir(mode=0o700)
    monkeypatch.setenv("TMPDIR", str(path))
    monkeypatch.setenv("SQLITE_TMPDIR", str(path))
    monkeypatch.setattr(tempfile, "tempdir", str(path))
    yield path
