"""Issue 11, items 11 and 12, through the real ``kept`` command (subprocesses, real vaults).

Item 12: ``kept init`` in a folder holding other files refuses with one line, exit 2, and
changes nothing (modes included), before asking for any password.
Item 11: the recovery code opens the vault: ``kept passwd --recovery-code`` sets a new
password with it; ``kept recovery-code`` adds or replaces one; ``kept rotate-key`` issues a
new one when the vault had one (the old one opens nothing after a rotation).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from app.errors import WrongKey
from tests.app.cli.test_cli import PW, hashes, kept
from tests.storage.test_create_folder import snapshot, someones_folder

CODE = re.compile(r"^\s+([A-Z2-7]{4}(?:-[A-Z2-7]{4}){7})$", re.MULTILINE)


def code_in(out: str) -> str:
    found = CODE.findall(out)
    assert len(found) == 1, out
    return str(found[0])


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_init_refuses_folder_with_other_files(tmp_path: Path) -> None:
    folder = someones_folder(tmp_path)
    before = snapshot(folder)
    r = kept(folder, "init", "--kdf-memory-mib", "64")
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"kept: {folder} already holds other files; Kept makes a vault only in a new or "
        "empty folder. Nothing was changed."]
    assert snapshot(folder) == before
    # Said before any password is asked for (no password source at all here).
    r = kept(folder, "init", password=None, input="")
    assert r.returncode == 2 and "already holds other files" in r.stderr
    assert snapshot(folder) == before


def test_forgotten_password_reset_with_recovery_code(tmp_path: Path) -> None:
    """The short loop (the whole one is the slow test below): a code made at init sets a
    new password; the old one stops working; the code still opens the vault."""
    folder = tmp_path / "vault"
    r = kept(folder, "init", "--recovery-code", "--kdf-memory-mib", "64")
    assert r.returncode == 0, r.stderr
    code = code_in(r.stdout)
    code_file = tmp_path / "code.txt"
    code_file.write_text(code.lower().replace("-", " ") + "\n")  # typed loosely
    r = kept(folder, "passwd", "--recovery-code-file", str(code_file), password=None,
             env={"KEPT_NEW_PASSWORD": "a brand new password"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("New password set with the recovery code")
    from storage import crypto
    kf = crypto.read_key_file(folder)
    with pytest.raises(WrongKey):
        crypto.unwrap(kf, PW)
    assert bytes(crypto.unwrap(kf, "a brand new password")) == \
        bytes(crypto.unwrap_recovery(kf, code))


@pytest.mark.slow
def test_recovery_code_loop(tmp_path: Path) -> None:
    folder = tmp_path / "vault"
    r = kept(folder, "init", "--kdf-memory-mib", "64")  # no recovery code at first
    assert r.returncode == 0, r.stderr
    assert "kept recovery-code" in r.stdout
    r = kept(folder, "remember", "The spare key is under the blue pot.", "--store", "semantic")
    assert r.returncode == 0, r.stderr

    # No code yet: the recovery path says so and changes nothing.
    before = hashes(folder)
    r = kept(folder, "passwd", "--recovery-code", password=None,
             env={"KEPT_RECOVERY_CODE": "AAAA-BBBB-CCCC-DDDD-EEEE-FFFF-GGGG-HHHH",
                  "KEPT_NEW_PASSWORD": "a brand new password"})
    assert r.returncode == 2 and r.stderr.splitlines() == [
        "kept: This vault has no recovery code. Nothing was changed."], r.stderr
    assert hashes(folder) == before

    # Add one to the existing vault (needs the password).
    r = kept(folder, "recovery-code", password="not the password")
    assert r.returncode == 2 and hashes(folder) == before
    r = kept(folder, "recovery-code")
    assert r.returncode == 0, r.stderr
    first = code_in(r.stdout)

    # Replace it: the first one stops working.
    r = kept(folder, "recovery-code")
    assert r.returncode == 0, r.stderr
    assert "previous recovery code no longer opens" in r.stdout
    code = code_in(r.stdout)
    assert code != first
    before = hashes(folder)
    r = kept(folder, "passwd", "--recovery-code", password=None,
             env={"KEPT_RECOVERY_CODE": first, "KEPT_NEW_PASSWORD": "a brand new password"})
    assert r.returncode == 2 and "recovery code" in r.stderr.lower(), r.stderr
    assert hashes(folder) == before

    # Malformed code: one line, nothing changed.
    r = kept(folder, "passwd", "--recovery-code", password=None,
             env={"KEPT_RECOVERY_CODE": "hello", "KEPT_NEW_PASSWORD": "a brand new password"})
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert hashes(folder) == before

    # Forgot the password: the code (typed loosely: lower case, spaces) sets a new one,
    # read from a file as scripts do.
    code_file = tmp_path / "code.txt"
    code_file.write_text(code.lower().replace("-", " ") + "\n")
    r = kept(folder, "passwd", "--recovery-code-file", str(code_file), password=None,
             env={"KEPT_NEW_PASSWORD": "a brand new password"})
    assert r.returncode == 0, r.stderr
    assert "new password" in r.stdout.lower()
    assert kept(folder, "status").returncode == 2  # the old password is gone
    r = kept(folder, "recall", "spare key", "--json", password="a brand new password")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["hits"][0]["text"] == "The spare key is under the blue pot."

    # The code still works after it was used (it is on paper; replace it if it was seen).
    r = kept(folder, "passwd", "--recovery-code", password=None,
             env={"KEPT_RECOVERY_CODE": code, "KEPT_NEW_PASSWORD": PW})
    assert r.returncode == 0, r.stderr

    # rotate-key: the old code opens nothing any more, so a new one is issued and shown.
    r = kept(folder, "rotate-key")
    assert r.returncode == 0, r.stderr
    rotated = code_in(r.stdout)
    assert rotated != code
    r = kept(folder, "passwd", "--recovery-code", password=None,
             env={"KEPT_RECOVERY_CODE": code, "KEPT_NEW_PASSWORD": "x" * 12})
    assert r.returncode == 2
    r = kept(folder, "passwd", "--recovery-code", password=None,
             env={"KEPT_RECOVERY_CODE": rotated, "KEPT_NEW_PASSWORD": "after rotation!"})
    assert r.returncode == 0, r.stderr
    r = kept(folder, "status", "--json", password="after rotation!")
    assert r.returncode == 0 and json.loads(r.stdout)["recovery_code"] is True
