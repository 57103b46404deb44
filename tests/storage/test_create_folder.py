"""Issue 11 item 12: a vault is created only in a new folder or an empty one. ``kept init``
in a folder holding other files used to set it to 0700 and then advise ``chmod 600`` on every
file there; now it refuses and leaves the folder exactly as it was (names, bytes, modes)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from app.errors import ValidationError
from storage.crypto import KdfParams
from storage.unlock import OpenVault

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX modes")


def snapshot(folder: Path) -> dict[str, tuple[int, str]]:
    """Every path under ``folder`` (itself included): its mode and, for files, its hash."""
    out = {".": (stat.S_IMODE(folder.stat().st_mode), "")}
    for p in sorted(folder.rglob("*")):
        digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        out[str(p.relative_to(folder))] = (stat.S_IMODE(p.stat().st_mode), digest)
    return out


def someones_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "Documents"
    folder.mkdir()
    (folder / "notes.txt").write_text("my notes\n")
    (folder / "photos").mkdir()
    (folder / "photos" / "a.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    os.chmod(folder / "notes.txt", 0o644)
    os.chmod(folder / "photos", 0o755)
    os.chmod(folder, 0o755)
    return folder


def test_create_refuses_a_folder_with_other_files(tmp_path: Path, fast_kdf: KdfParams) -> None:
    folder = someones_folder(tmp_path)
    before = snapshot(folder)
    with pytest.raises(ValidationError) as info:
        OpenVault.create(folder, "a good password", kdf=fast_kdf)
    assert str(folder) in info.value.user_message
    assert "nothing was changed" in info.value.user_message.lower()
    assert snapshot(folder) == before


def test_create_refuses_a_file_in_place_of_the_folder(tmp_path: Path,
                                                       fast_kdf: KdfParams) -> None:
    path = tmp_path / "vault"
    path.write_text("a file\n")
    with pytest.raises(ValidationError):
        OpenVault.create(path, "a good password", kdf=fast_kdf)
    assert path.read_text() == "a file\n"


def test_create_uses_an_existing_empty_folder(tmp_path: Path, fast_kdf: KdfParams) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    os.chmod(folder, 0o755)
    v = OpenVault.create(folder, "a good password", kdf=fast_kdf)
    v.lock()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    v, _ = OpenVault.unlock(folder, "a good password")
    v.lock()
