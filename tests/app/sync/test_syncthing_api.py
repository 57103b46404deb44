"""``app/sync/syncthing.py`` without a Syncthing (fast; against real instances:
tests/sync_loopback/test_syncthing_setup.py): which addresses it accepts, and the one error
for each bad input, said before any connection."""

from __future__ import annotations

import socket

import pytest

from app.sync.syncthing import SyncthingApi, SyncthingError


@pytest.mark.parametrize(("address", "base"), [
    ("127.0.0.1:8384", "http://127.0.0.1:8384"),
    ("http://localhost:8384/", "http://localhost:8384"),
    ("https://127.0.0.1:8384", "https://127.0.0.1:8384"),
    ("[::1]:8384", "http://[::1]:8384"),
    ("", "http://127.0.0.1:8384"),            # Syncthing's default
])
def test_loopback_addresses_are_taken(address: str, base: str) -> None:
    assert SyncthingApi(address, "key").base == base


@pytest.mark.parametrize(("address", "said"), [
    ("192.168.1.20:8384", "not this computer"),
    ("nas.local:8384", "not this computer"),
    ("http://0.0.0.0:8384", "not this computer"),
    ("ftp://127.0.0.1:8384", "not an address"),
    ("127.0.0.1:99999", "no valid port"),
])
def test_other_addresses_are_refused_before_any_connection(address: str, said: str) -> None:
    with pytest.raises(SyncthingError, match=said):
        SyncthingApi(address, "key")


def test_no_key_and_nothing_listening_are_one_clear_error_each() -> None:
    with pytest.raises(SyncthingError, match="No API key"):
        SyncthingApi("127.0.0.1:8384", "  ")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(SyncthingError, match="not answering at 127.0.0.1") as err:
        SyncthingApi(f"127.0.0.1:{port}", "secret-key-123").my_id()
    assert "secret-key-123" not in err.value.user_message
