"""Issue 11 item 11: the recovery code opens the vault (SECURITY.md "Recovery": it wraps the
same DEK a second time, ``wrap_recovery``).

The whole loop on real vault files: a code added to an existing vault, replaced, refused when
wrong or malformed (every file unchanged), used to set a new password when the old one is
forgotten (the code keeps working), renewed by ``rotate-key`` (the old code opens nothing
after a rotation, so a new one is issued and returned for the caller to show), and kept
usable through a rotation cut short by a crash.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from app.errors import ValidationError, WrongKey
from storage import crypto
from storage.db import Database
from storage.unlock import OpenVault, check_recovery_code
from tests.storage.conftest import Template
from tests.storage.helpers import sha_tree

NEW = "a brand new password"


def count(v: OpenVault) -> int:
    return int(v.db.read(lambda c: c.execute("SELECT count(*) FROM memory").fetchone()[0]))


def with_code(folder: Path, pw: str) -> str:
    v, _ = OpenVault.unlock(folder, pw)
    try:
        return v.add_recovery_code()
    finally:
        v.lock()


def test_recovery_code_sets_a_new_password(clone_vault: Callable[..., Path],
                                           template_vault: Template) -> None:
    folder = clone_vault()
    pw = template_vault.password
    before = sha_tree(folder)
    with pytest.raises(WrongKey, match="no recovery code"):
        OpenVault.recover(folder, crypto.new_recovery_code(), NEW)
    assert sha_tree(folder) == before

    first = with_code(folder, pw)  # added to an existing vault
    code = with_code(folder, pw)   # replaced: the first one stops working
    before = sha_tree(folder)
    for bad, error in ((first, WrongKey), (crypto.new_recovery_code(), WrongKey),
                       ("not a code", ValidationError), (code[:-1], ValidationError)):
        with pytest.raises(error):
            check_recovery_code(folder, bad)
        with pytest.raises(error):
            OpenVault.recover(folder, bad, NEW)
        assert sha_tree(folder) == before, bad
    with pytest.raises(WrongKey):
        OpenVault.recover(folder, code, "")  # an empty new password
    assert sha_tree(folder) == before

    # Typed loosely: lower case, spaces for dashes, a zero for an O.
    typed = code.lower().replace("-", " ").replace("o", "0")
    check_recovery_code(folder, typed)
    v, _ = OpenVault.recover(folder, typed, NEW)
    try:
        assert count(v) == 303
    finally:
        v.lock()
    with pytest.raises(WrongKey):
        OpenVault.unlock(folder, pw)
    v, _ = OpenVault.unlock(folder, NEW)
    v.lock()
    v, _ = OpenVault.unlock(folder, None, recovery_code=code)  # the code still works
    v.lock()


def test_rotation_issues_a_new_recovery_code(clone_vault: Callable[..., Path],
                                             template_vault: Template) -> None:
    folder = clone_vault()
    pw = template_vault.password
    v, _ = OpenVault.unlock(folder, pw)
    try:
        kf, none = v.rotate_data_key(pw)
        assert none is None and kf.wrap_recovery is None  # none before, none made
        old = v.add_recovery_code()
        kf, new = v.rotate_data_key(pw)
        assert new is not None and new != old and kf.wrap_recovery is not None
    finally:
        v.lock()
    with pytest.raises(WrongKey):
        OpenVault.unlock(folder, None, recovery_code=old)
    v, _ = OpenVault.recover(folder, new, NEW)
    try:
        assert count(v) == 303
    finally:
        v.lock()


def _crash_mid_rotation(folder: Path, pw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The database rekeyed, the new wraps never written (a power cut in between)."""
    v, _ = OpenVault.unlock(folder, pw)

    def crash(*a: object, **k: object) -> None:
        raise OSError(5, "simulated crash after rekey")
    monkeypatch.setattr(crypto, "rewrap", crash)
    try:
        with pytest.raises(OSError):
            v.rotate_data_key(pw)
    finally:
        monkeypatch.undo()
        v.lock()
    assert crypto.read_key_file(folder).wrap_pending is not None


def test_interrupted_rotation_keeps_the_recovery_path(clone_vault: Callable[..., Path],
                                                      template_vault: Template,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    folder = clone_vault()
    pw = template_vault.password
    code = with_code(folder, pw)
    _crash_mid_rotation(folder, pw, monkeypatch)
    twin = folder.with_name(folder.name + "-twin")
    shutil.copytree(folder, twin)

    # The code on paper wraps the old DEK; through the pending wrap it still opens, and the
    # reset seals it around the new DEK, so it keeps working once the rotation is finished.
    v, _ = OpenVault.recover(folder, code, NEW)
    try:
        assert count(v) == 303 and v.key_file.wrap_pending is None
    finally:
        v.lock()
    v, _ = OpenVault.recover(folder, code, "yet another password")
    v.lock()

    # Finished with the password instead: the stale wrap would open nothing (and would look
    # like damage), so it goes, and the vault says it has no code rather than "corrupt".
    v, _ = OpenVault.unlock(twin, pw)
    try:
        assert count(v) == 303 and v.key_file.wrap_recovery is None
    finally:
        v.lock()
    with pytest.raises(WrongKey, match="no recovery code"):
        OpenVault.recover(twin, code, NEW)


def test_rotation_abandoned_before_rekey_keeps_the_code(clone_vault: Callable[..., Path],
                                                        template_vault: Template,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """A crash before any page was rekeyed: the old DEK still opens the database, the
    rotation is abandoned at the next unlock and the recovery code still opens the vault."""
    folder = clone_vault()
    pw = template_vault.password
    code = with_code(folder, pw)
    v, _ = OpenVault.unlock(folder, pw)

    def crash(self: Database, key: object) -> None:
        raise OSError(5, "simulated crash before rekey")
    monkeypatch.setattr(Database, "rekey", crash)
    try:
        with pytest.raises(OSError):
            v.rotate_data_key(pw)
    finally:
        monkeypatch.undo()
        v.lock()
    v, _ = OpenVault.unlock(folder, pw)
    assert v.key_file.wrap_pending is None and v.key_file.wrap_recovery is not None
    v.lock()
    v, _ = OpenVault.recover(folder, code, NEW)
    v.lock()


def test_facade_add_recovery_code_checks_the_password(clone_vault: Callable[..., Path],
                                                      template_vault: Template) -> None:
    """The window asks for the password before making a code: an unlocked window left alone
    must not hand out a lasting way in."""
    from app.facade import Vault
    folder = clone_vault()
    vault = Vault.open(folder, template_vault.password, load_model=False, threaded=False,
                       use_chroma=False)
    try:
        key_file = (folder / crypto.KEY_FILE).read_bytes()
        with pytest.raises(WrongKey):
            vault.add_recovery_code("not the password")
        assert (folder / crypto.KEY_FILE).read_bytes() == key_file
        code = vault.add_recovery_code(template_vault.password)
        assert vault.status().recovery_code
    finally:
        vault.lock()
    again = Vault.open(folder, recovery_code=code, new_password=NEW, load_model=False,
                       threaded=False, use_chroma=False)
    again.lock()
