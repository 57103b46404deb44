"""SECURITY.md requirement 10: keyring fail-safe for "remember on this device".

No backend -> not available, nothing stored, password still works. Only allowlisted OS
keychains are accepted (never keyrings.alt plaintext files, never the conftest's in-memory
backend). "Forget this device" deletes the keychain item and ``wrap_device``. A changed,
missing or unreadable keychain item falls back to the password with no data loss.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import keyring
import keyring.backends.fail
import pytest
from keyring.backend import KeyringBackend
from keyring.errors import KeyringLocked, PasswordDeleteError

from app.errors import KeyUnavailable, WrongKey
from storage import crypto
from storage.unlock import OpenVault
from tests.storage.conftest import Template

ROOT = Path(__file__).resolve().parents[2]


class _MemoryBackend(KeyringBackend):
    priority = 5  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}
        self.locked = False

    def get_password(self, service: str, username: str) -> str | None:
        if self.locked:
            raise KeyringLocked("collection locked")
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        if self.locked:
            raise KeyringLocked("collection locked")
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if (service, username) not in self.items:
            raise PasswordDeleteError("not found")
        del self.items[(service, username)]


class FakeSecretService(_MemoryBackend):
    """Looks like keyring.backends.SecretService.Keyring to the allowlist."""


FakeSecretService.__module__ = "keyring.backends.SecretService"
FakeSecretService.__qualname__ = "Keyring"
FakeSecretService.__name__ = "Keyring"


class PlaintextKeyring(_MemoryBackend):
    """Looks like keyrings.alt's plaintext file backend, with a positive priority."""
    priority = 1  # type: ignore[assignment]


PlaintextKeyring.__module__ = "keyrings.alt.file"
PlaintextKeyring.__qualname__ = "PlaintextKeyring"


class FakeChainer(KeyringBackend):
    priority = 10  # type: ignore[assignment]

    def __init__(self, backends: list[KeyringBackend]) -> None:
        super().__init__()
        self.backends = backends

    def get_password(self, service: str, username: str) -> str | None:
        return self.backends[0].get_password(service, username)

    def set_password(self, service: str, username: str, password: str) -> None:
        self.backends[0].set_password(service, username, password)

    def delete_password(self, service: str, username: str) -> None:
        self.backends[0].delete_password(service, username)


FakeChainer.__module__ = "keyring.backends.chainer"
FakeChainer.__qualname__ = "ChainerBackend"


def _key_json(folder: Path) -> dict:
    return json.loads((folder / "vault.key.json").read_text())


def _canaries_intact(v: OpenVault, template: Template) -> None:
    texts = v.db.read(lambda c: [r[0] for r in c.execute(
        f"SELECT text FROM memory WHERE id IN ({','.join('?' * len(template.ids))}) ORDER BY id",
        template.ids)])
    assert [any(c.text in t for t in texts) for c in template.canaries] == [True] * len(texts)
    assert v.db.read(lambda c: c.execute("SELECT count(*) FROM memory").fetchone()[0]) == 303


@pytest.fixture
def allowlisted() -> FakeSecretService:
    kr = FakeSecretService()
    keyring.set_keyring(kr)
    return kr


def test_allowlist_decisions() -> None:
    keyring.set_keyring(keyring.backends.fail.Keyring())
    assert not crypto.keyring_available()
    keyring.set_keyring(PlaintextKeyring())
    assert not crypto.keyring_available()
    keyring.set_keyring(_MemoryBackend())  # unknown module, positive priority
    assert not crypto.keyring_available()
    keyring.set_keyring(FakeSecretService())
    assert crypto.keyring_available()
    zero = FakeSecretService()
    zero.priority = 0  # type: ignore[misc]
    keyring.set_keyring(zero)
    assert not crypto.keyring_available()
    keyring.set_keyring(FakeChainer([FakeSecretService()]))
    assert crypto.keyring_available()
    keyring.set_keyring(FakeChainer([FakeSecretService(), PlaintextKeyring()]))
    assert not crypto.keyring_available()
    keyring.set_keyring(FakeChainer([]))
    assert not crypto.keyring_available()


def test_conftest_memory_keyring_is_not_allowlisted() -> None:
    """The suite's autouse in-memory keyring must never count as a real OS keychain."""
    assert not crypto.keyring_available()


def test_env_fail_backend_in_fresh_process() -> None:
    """The requirement's exact setup: PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring."""
    env = {**os.environ, "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
           "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    code = ("import keyring; from storage import crypto; "
            "print(type(keyring.get_keyring()).__module__, crypto.keyring_available())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    assert out == ["keyring.backends.fail", "False"]


@pytest.mark.parametrize("backend", ["fail", "plaintext"])
def test_unavailable_backend_stores_nothing_and_password_works(
        clone_vault: Callable[..., Path], template_vault: Template, backend: str) -> None:
    kr: KeyringBackend = (keyring.backends.fail.Keyring() if backend == "fail"
                          else PlaintextKeyring())
    keyring.set_keyring(kr)
    folder = clone_vault()
    names_before = sorted(p.name for p in folder.iterdir())
    v, _ = OpenVault.unlock(folder, template_vault.password)
    key_before = (folder / "vault.key.json").read_bytes()
    try:
        with pytest.raises(KeyUnavailable) as info:
            v.remember_device()
        assert "not available" in info.value.user_message
        assert v.key_file.wrap_device is None
    finally:
        v.lock()
    assert (folder / "vault.key.json").read_bytes() == key_before
    assert "wrap_device" not in _key_json(folder)
    assert sorted(p.name for p in folder.iterdir()) == names_before
    if isinstance(kr, PlaintextKeyring):
        assert kr.items == {}
    # Asking for the device path falls back to the password; without one it is refused.
    v, _ = OpenVault.unlock(folder, template_vault.password, use_device=True)
    _canaries_intact(v, template_vault)
    v.lock()
    with pytest.raises(WrongKey):
        OpenVault.unlock(folder, None, use_device=True)


def test_set_password_failure_stores_nothing(clone_vault: Callable[..., Path],
                                             template_vault: Template,
                                             allowlisted: FakeSecretService) -> None:
    allowlisted.locked = True
    folder = clone_vault()
    v, _ = OpenVault.unlock(folder, template_vault.password)
    before = (folder / "vault.key.json").read_bytes()
    try:
        with pytest.raises(KeyUnavailable):
            v.remember_device()
    finally:
        v.lock()
    assert (folder / "vault.key.json").read_bytes() == before
    assert allowlisted.items == {}


def test_remember_unlock_without_password_then_forget(clone_vault: Callable[..., Path],
                                                      template_vault: Template,
                                                      allowlisted: FakeSecretService) -> None:
    folder = clone_vault()
    v, _ = OpenVault.unlock(folder, template_vault.password)
    try:
        v.remember_device()
        vault_id = v.key_file.vault_id
    finally:
        v.lock()
    user = f"device-key-v1:{vault_id}"
    secret = keyring.get_password(crypto.KEYRING_SERVICE, user)
    assert secret and len(base64.b64decode(secret)) == 32
    assert list(allowlisted.items) == [(crypto.KEYRING_SERVICE, user)]
    obj = _key_json(folder)
    assert obj["wrap_device"]["alg"] == "A256GCM"
    assert secret not in (folder / "vault.key.json").read_text()
    # The password wrap is untouched by remembering.
    assert "wrap" in obj and crypto.KeyFile.from_json(obj).wrap["ct"]

    v, _ = OpenVault.unlock(folder, None, use_device=True)
    try:
        _canaries_intact(v, template_vault)
        v.forget_device()
    finally:
        v.lock()
    assert keyring.get_password(crypto.KEYRING_SERVICE, user) is None
    assert allowlisted.items == {}
    assert "wrap_device" not in _key_json(folder)
    with pytest.raises(WrongKey):
        OpenVault.unlock(folder, None, use_device=True)
    v, _ = OpenVault.unlock(folder, template_vault.password, use_device=True)
    _canaries_intact(v, template_vault)
    v.lock()


def _remembered(folder: Path, template: Template) -> str:
    v, _ = OpenVault.unlock(folder, template.password)
    try:
        v.remember_device()
        return f"device-key-v1:{v.key_file.vault_id}"
    finally:
        v.lock()


@pytest.mark.parametrize("change", ["changed", "missing", "garbage", "locked",
                                    "backend_gone", "backend_swapped", "wrap_damaged"])
def test_broken_device_key_falls_back_to_password(clone_vault: Callable[..., Path],
                                                  template_vault: Template,
                                                  allowlisted: FakeSecretService,
                                                  change: str) -> None:
    folder = clone_vault()
    user = _remembered(folder, template_vault)
    key = (crypto.KEYRING_SERVICE, user)
    if change == "changed":
        allowlisted.items[key] = base64.b64encode(os.urandom(32)).decode()
    elif change == "missing":
        del allowlisted.items[key]
    elif change == "garbage":
        allowlisted.items[key] = "not base64 at all!"
    elif change == "locked":
        allowlisted.locked = True
    elif change == "backend_gone":
        keyring.set_keyring(keyring.backends.fail.Keyring())
    elif change == "backend_swapped":  # Signal's KDE <-> GNOME problem: another, empty store
        keyring.set_keyring(FakeSecretService())
    elif change == "wrap_damaged":
        obj = _key_json(folder)
        obj["wrap_device"]["ct"] = obj["wrap"]["ct"]
        (folder / "vault.key.json").write_text(json.dumps(obj))
    with pytest.raises(WrongKey):  # no password given: refused, not a crash
        OpenVault.unlock(folder, None, use_device=True)
    v, _ = OpenVault.unlock(folder, template_vault.password, use_device=True)
    try:
        _canaries_intact(v, template_vault)
        assert v.key_file.wrap == crypto.read_key_file(folder).wrap
    finally:
        v.lock()
