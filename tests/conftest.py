"""Shared fixtures. Everything here is real (SQLCipher files, the ONNX model, Chroma in RAM),
except the OS keychain, which is an in-memory keyring backend.

SECURITY.md requirement 18: for the whole session, a connection to anything but loopback
raises, so any test that would phone home fails loudly.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

# Vaults made by the tests use the 64 MiB floor (fast_kdf); without this, every unlock by
# password would upgrade them to the 256 MiB default (storage/crypto.py MEMORY_ENV). Set in
# os.environ so CLI children inherit it; tests of the upgrade itself delete it.
os.environ.setdefault("KEPT_KDF_MEMORY_KIB", "65536")


class NetworkRefused(OSError):
    pass


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _is_loopback(address: object) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    if isinstance(address, tuple) and address:
        host = address[0]
        if host in ("localhost", ""):
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False
    return False


def _guarded_connect(self: socket.socket, address: object) -> None:
    if not _is_loopback(address):
        raise NetworkRefused(f"test suite refuses non-loopback connection to {address!r}")
    return _real_connect(self, address)  # type: ignore[arg-type]


def _guarded_connect_ex(self: socket.socket, address: object) -> int:
    if not _is_loopback(address):
        raise NetworkRefused(f"test suite refuses non-loopback connection to {address!r}")
    return _real_connect_ex(self, address)  # type: ignore[arg-type]


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("QT_SCALE_FACTOR", "1")
    os.environ["ANONYMIZED_TELEMETRY"] = "False"
    # Requirement 18 for every child process a test starts, whatever it imports first
    # (storage/__init__.py sets it for Kept's own processes; test_network_native checks that).
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
    model = SHARED / "models" / "all-MiniLM-L6-v2" / "onnx"
    if "KEPT_MODEL_DIR" not in os.environ and model.is_dir():
        os.environ["KEPT_MODEL_DIR"] = str(model)
    elif os.environ.get("KEPT_MODEL_DIR"):
        # README's command gives it relative to the project folder; tests start children in
        # other folders, which must find the same model.
        os.environ["KEPT_MODEL_DIR"] = str(Path(os.environ["KEPT_MODEL_DIR"]).expanduser()
                                           .absolute())
    os.umask(0o077)
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]


@contextlib.contextmanager
def time_zone(name: str) -> Iterator[None]:
    """The process's local time zone is ``name`` (``TZ``) inside the block, as before after."""
    import time
    before = os.environ.get("TZ")
    os.environ["TZ"] = name
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.fixture
def tokyo_time() -> Iterator[None]:
    """The process's local time zone is Asia/Tokyo (UTC+9, no summer time) for one test."""
    with time_zone("Asia/Tokyo"):
        yield


@pytest.fixture(autouse=True)
def _own_config_folder(tmp_path_factory: pytest.TempPathFactory,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The window's preferences (recent vaults, theme: ``app.prefs``) go to a folder of the
    test's own, never the user's."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


@pytest.fixture(autouse=True)
def _memory_keyring() -> Iterator[object]:
    """Tests never touch a real keychain: an in-memory backend, reset per test."""
    import keyring
    from keyring.backend import KeyringBackend

    class MemoryKeyring(KeyringBackend):
        priority = 1  # type: ignore[assignment]

        def __init__(self) -> None:
            super().__init__()
            self.items: dict[tuple[str, str], str] = {}

        def get_password(self, service: str, username: str) -> str | None:
            return self.items.get((service, username))

        def set_password(self, service: str, username: str, password: str) -> None:
            self.items[(service, username)] = password

        def delete_password(self, service: str, username: str) -> None:
            from keyring.errors import PasswordDeleteError
            if (service, username) not in self.items:
                raise PasswordDeleteError("not found")
            del self.items[(service, username)]

    previous = keyring.get_keyring()
    kr = MemoryKeyring()
    keyring.set_keyring(kr)
    yield kr
    keyring.set_keyring(previous)


@pytest.fixture
def fast_kdf() -> object:
    """The floor parameters (64 MiB, t=3, p=4): still real Argon2id, 4x faster than default."""
    from storage.crypto import KdfParams
    return KdfParams(m=65_536, t=3, p=4)


@pytest.fixture
def model_dir() -> Path:
    path = Path(os.environ.get("KEPT_MODEL_DIR", ""))
    if not (path / "model.onnx").is_file():
        pytest.fail("the embedding model is required: set KEPT_MODEL_DIR (see README)")
    return path


@pytest.fixture
def vault_dir(tmp_path: Path) -> Path:
    return tmp_path / "vault"


@pytest.fixture
def python() -> str:
    return sys.executable


@pytest.fixture(scope="session")
def session_embedder() -> Any:
    """The real ONNX model, loaded once per session (the UI and in-process CLI tests)."""
    from app import bootstrap
    embedder, _ = bootstrap.load_embedder(True)
    if embedder is None:
        pytest.fail("the embedding model is required: set KEPT_MODEL_DIR (see README)")
    return embedder


@pytest.fixture
def shared_model(session_embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process ``kept`` commands use the session's model instead of loading it per command,
    unless a test points KEPT_MODEL_DIR elsewhere (then loading goes as usual)."""
    from app import bootstrap
    real = bootstrap.load_embedder
    model_dir = session_embedder.model_dir

    def load(load_model: bool) -> tuple[Any, Any]:
        from storage.embedder import find_model_dir
        found = find_model_dir() if load_model else None
        if found is not None and found.resolve() == Path(model_dir).resolve():
            return session_embedder, model_dir
        return real(load_model)
    monkeypatch.setattr(bootstrap, "load_embedder", load)


def turns_vault(folder: Path, kdf: Any, password: str,
                turns: Sequence[tuple[str, str, str, str]], *, load_model: bool = True,
                clock: Any = None) -> Any:
    """A vault (no Chroma, not threaded) holding ``turns``, each (session, ISO time, speaker,
    text), imported as ``kept import`` would, with refs ``session-n``; ``clock``: the
    vault's (the real one by default)."""
    from app.api import Turn
    from app.clock import parse_iso
    from app.facade import Vault
    if (kdf.m, kdf.t, kdf.p) == (65_536, 3, 4):  # fast_kdf's: a copy of an empty vault serves
        v = new_vault(folder, password, threaded=False, use_chroma=False, load_model=load_model,
                      clock=clock)
    else:
        v = Vault.create(folder, password, kdf=kdf, threaded=False, use_chroma=False,
                         load_model=load_model, clock=clock).vault
    v.import_turns([Turn(s, who, text, parse_iso(at), f"{s}-{n}")
                    for n, (s, at, who, text) in enumerate(turns)])
    return v



_BLANK: dict[str, Path] = {}  # password -> an empty vault made this session
_BLANK_ROOT: list[Path] = []


@pytest.fixture(scope="session", autouse=True)
def _blank_vault_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Where :func:`new_vault` keeps its templates: a folder of this session's own."""
    _BLANK_ROOT.append(tmp_path_factory.mktemp("blank"))
    yield
    _BLANK.clear()
    _BLANK_ROOT.clear()


def new_vault(folder: Path, password: str, *, clock: Any = None, load_model: bool = True,
              threaded: bool = True, use_chroma: bool = True) -> Any:
    """An empty vault at ``folder``: what ``Vault.create(folder, password, kdf=fast_kdf,
    ...).vault`` gives, for tests that need a new vault but are not about creating one.
    Creating costs a derive and every migration (~0.7 s idle, twice that under load), so an
    empty vault is created once per session per password (floor Argon2id parameters, as
    ``fast_kdf``) and each call opens a copy of it (mode bits kept; one derive, ~0.2 s). The
    copy is verified before this returns, so no background work is left over that a created
    vault would not have had. The defaults are ``Vault.create``'s."""
    import shutil

    from app.facade import Vault
    from storage import migrations
    if migrations.migration_names.__module__ != migrations.__name__:
        raise AssertionError("new_vault copies a vault with every migration; a test that "
                             "patches migration_names creates its own with Vault.create")
    if password not in _BLANK:
        from storage.crypto import KdfParams
        template = _BLANK_ROOT[-1] / f"vault{len(_BLANK)}"
        Vault.create(template, password, kdf=KdfParams(m=65_536, t=3, p=4), threaded=False,
                     use_chroma=False, load_model=False).vault.lock()
        _BLANK[password] = template
    shutil.copytree(_BLANK[password], folder)
    return Vault.open(folder, password, clock=clock, load_model=load_model, threaded=threaded,
                      use_chroma=use_chroma, verify="sync")
