"""Fuzz a live owner (issue 14, tests 4): random frames on a raw socket to a real
``OwnerServer`` on a real vault (random bytes, oversized and lying headers, truncated bodies,
bad JSON, wrong types, deep nesting, several frames in one stream). After each, the owner
still answers a ping on a new connection and the vault is unchanged (memory count, newest
id, every file's bytes). tests/app/ipc/test_protocol.py fuzzes the decoder alone."""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from app.facade import Vault
from app.ipc import protocol as p
from tests.app.cli.conftest import PW, hashes, make_vault

# Requests that cannot change the vault even when they decode.
HARMLESS = {p.PING, p.SESSION, p.HELLO, p.ELEVATE}


@pytest.fixture(scope="module")
def owner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from app.ipc.server import OwnerServer
    folder = make_vault(tmp_path_factory.mktemp("fuzz") / "v",
                        ("Ana moved to Lisbon in May", "Bruno likes green tea"))
    vault = Vault.open(folder, PW, load_model=False, use_chroma=False,
                                 verify="sync")
    vault.pair_agent("a")  # so hello has something to refuse against
    server = OwnerServer(vault)
    server.start()
    try:
        yield server
    finally:
        server.lock_vault()


def _state(server: Any) -> tuple[int, int, dict[str, str]]:
    from app.api import MemoryQuery
    vault = server.vault
    newest = vault.page_memories(MemoryQuery(), limit=1).rows
    return (vault.count_memories(MemoryQuery()), max((m.id for m in newest), default=0),
            hashes(vault.folder))


def _header(n: int) -> bytes:
    return struct.pack(">I", n)


_json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64) | st.floats(allow_nan=False)
    | st.text(max_size=12),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
    max_leaves=15)

_args = st.dictionaries(
    st.sampled_from(["query", "k", "draft", "filters", "mid", "ids", "turns", "plan", "pid",
                     "fact", "agent", "key", "password", "cid", "keep", "text", "status",
                     "evil"]),
    _json_value, max_size=4)

_request = st.fixed_dictionaries(
    {"v": st.sampled_from([1, 1, 1, 2, "1", True, None]),
     "id": st.one_of(st.integers(-1, 10), st.just(2**60), st.text(max_size=3)),
     "method": st.sampled_from(sorted(p.METHODS) + sorted(p.REFUSED) + ["__init__", "lock",
                                                                         "db", ""]),
     "args": st.one_of(_args, _json_value)},
    optional={"extra": _json_value})


def _valid_payload(obj: object) -> bytes:
    return json.dumps(obj).encode()


def _deep(depth: int, inner: str) -> bytes:
    return ('{"v":1,"id":1,"method":"recall","args":{"query":"a","filters":'
            + "[" * depth + inner + "]" * depth + "}}").encode()


_payload = st.one_of(
    st.binary(max_size=300),
    _json_value.map(_valid_payload),
    _request.map(_valid_payload),
    st.builds(_deep, st.integers(1, 50_000), st.sampled_from(["", "1", '"x"', "{}"])),
    st.just(b'{"v":1,"id":1,"method":"recall","args":{"query":"a","now":NaN}}'),
    st.just(b'{"v":1,"id":1,"method":"recall","args":{"query":"\\ud800"}}'),
)

# One frame: honest header, a lying one (longer than the body: truncated), or oversized.
_frame = st.one_of(
    _payload.map(lambda b: _header(len(b)) + b),
    st.tuples(_payload, st.integers(1, 1000)).map(lambda t: _header(len(t[0]) + t[1]) + t[0]),
    st.tuples(st.integers(p.MAX_FRAME + 1, 2**32 - 1), st.binary(max_size=64))
    .map(lambda t: _header(t[0]) + t[1]),
    st.binary(min_size=1, max_size=3),  # a header cut short
)

_stream = st.lists(_frame, min_size=1, max_size=4).map(b"".join)


def _harmless(data: bytes) -> bool:
    """False when ``data`` holds a request that decodes and could change the vault (the
    fuzz is about bad input; good input changes the vault on purpose)."""
    rest = data
    while len(rest) >= 4:
        (n,) = struct.unpack(">I", rest[:4])
        if n > p.MAX_FRAME or len(rest) < 4 + n:
            return True  # the stream ends here for the owner
        try:
            req = p.decode_request(rest[4:4 + n])
        except p.ProtocolError:
            pass
        else:
            if req.method not in HARMLESS:
                return False
        rest = rest[4 + n:]
    return True


def _send(server: Any, data: bytes) -> list[p.Reply]:
    replies = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)  # an owner that hangs fails here
        s.connect(str(server.path))
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the owner closed first (oversized header): allowed
        while True:
            try:
                payload = p.read_frame(s.recv)
            except ConnectionResetError:
                break
            if payload is None:
                break
            replies.append(p.decode_reply(payload))  # every reply is well-formed
    return replies


def _one(server: Any, data: bytes) -> None:
    from app.ipc.client import RemoteVault
    assume(_harmless(data))
    before = _state(server)
    for reply in _send(server, data):
        assert reply.ok or reply.kind in ("ProtocolError", "AgentNotPaired", "WrongKey",
                                          "ValidationError", "RateLimited",
                                          "PasswordNeeded"), reply
        assert reply.kind != "InternalError", reply
    with RemoteVault.at(server.vault.folder, timeout=10) as remote:
        assert remote.ping() == p.VERSION
    assert _state(server) == before


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=_stream)
def test_fuzz_live_owner(owner: Any, data: bytes) -> None:
    _one(owner, data)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=_stream)
def test_fuzz_live_owner_long(owner: Any, data: bytes) -> None:
    _one(owner, data)


def test_known_bad_frames_on_one_connection(owner: Any) -> None:
    """The cases named in the issue, in one stream: each answered, the stream goes on until
    the oversized header, which closes it."""
    frames = [_valid_payload({"v": 1, "id": 1, "method": "remember",
                              "args": {"draft": {"text": 5}}}),
              b"{not json",
              _deep(10_000, ""),
              _valid_payload({"v": 1, "id": 4, "method": "pair_agent", "args": {"name": "x"}}),
              _valid_payload({"v": 1, "id": 5, "method": "ping", "args": {}})]
    data = b"".join(_header(len(f)) + f for f in frames) + _header(p.MAX_FRAME + 1) + b"x"
    before = _state(owner)
    replies = _send(owner, data)
    assert [r.kind for r in replies] == ["ProtocolError", "ProtocolError", "ProtocolError",
                                         "PasswordNeeded", "", "ProtocolError"]
    assert replies[4].ok and "too large" in replies[5].message
    assert _state(owner) == before
