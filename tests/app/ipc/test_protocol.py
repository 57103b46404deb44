"""The wire format alone (no socket): the codec round-trips the contract's types, the decoder
refuses anything malformed with one ProtocolError, and every VaultAPI member is either served
or refused on purpose."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.api import Filters, Hit, VaultAPI
from app.changes import MEMORY_CHANGES, Result
from app.domain.memory import Draft, MemoryId, Store
from app.ipc import protocol as p


def _payload(obj: object) -> bytes:
    return json.dumps(obj).encode()


def test_round_trip_of_contract_types() -> None:
    d = Draft(text="Ana moved to Lisbon", store=Store.SEMANTIC, occurred_at=1.5,
              extra={"a": [1, "b"]}, derived_from=(MemoryId(3),))
    req = p.decode_request(p.encode_request(7, "remember", {"draft": d})[4:])
    assert req.id == 7 and req.args["draft"] == d
    f = Filters(stores=("semantic",), as_of=2.0, include_archived=True)
    req = p.decode_request(p.encode_request(1, "recall", {"query": "x", "k": 3, "filters": f})[4:])
    assert req.args == {"query": "x", "k": 3, "filters": f}
    hits = [Hit(MemoryId(1), "episodic", "t", 0.5, ("r1",), 1.0, None, {"bm25": 0.2})]
    assert p.from_wire(list[Hit], p.to_wire(hits)) == hits
    res = Result(MemoryId(4), MEMORY_CHANGES)
    assert p.decode_result("remember", p.to_wire(res)) == res
    assert p.decode_result("refs", p.to_wire({MemoryId(2): ["a"]})) == {2: ["a"]}


@pytest.mark.parametrize("payload", [
    b"", b"[]", b"{", b"\xff\xfe", _payload({"v": 2, "id": 1, "method": "ping", "args": {}}),
    _payload({"v": 1, "id": True, "method": "ping"}),
    _payload({"v": 1, "id": 1, "method": "forget", "args": {}}),
    _payload({"v": 1, "id": 1, "method": "lock"}),
    _payload({"v": 1, "id": 1, "method": "__init__"}),
    _payload({"v": 1, "id": 1, "method": "recall", "args": {}}),
    _payload({"v": 1, "id": 1, "method": "recall", "args": {"query": 5}}),
    _payload({"v": 1, "id": 1, "method": "recall", "args": {"query": "a", "k": True}}),
    _payload({"v": 1, "id": 1, "method": "recall", "args": {"query": "a", "evil": 1}}),
    _payload({"v": 1, "id": 1, "method": "remember", "args": {"draft": {"text": "a",
                                                                        "store": "nope"}}}),
    _payload({"v": 1, "id": 1, "method": "remember", "args": {"draft": {"txt": "a"}}}),
    b'{"v":1,"id":1,"method":"recall","args":{"query":"a","now":NaN}}',
    b'{"v":1,"id":1,"method":"recall","args":{"query":"\\ud800"}}',
    ("[" * 100000).encode(),
])
def test_malformed_requests_raise_protocol_error(payload: bytes) -> None:
    with pytest.raises(p.ProtocolError):
        p.decode_request(payload)


def test_oversized_frame_refused_before_reading_body() -> None:
    header = struct.pack(">I", p.MAX_FRAME + 1)
    calls: list[int] = []

    def recv(n: int) -> bytes:
        calls.append(n)
        return header if len(calls) == 1 else b"x" * n
    with pytest.raises(p.Oversized):
        p.read_frame(recv)
    assert len(calls) == 1
    with pytest.raises(p.ProtocolError):
        p.encode_request(1, "recall", {"query": "x" * (p.MAX_FRAME + 1)})


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(
    st.binary(max_size=512),
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                 lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c,
                                                                     max_size=4),
                 max_leaves=20).map(lambda o: json.dumps(o).encode()),
    st.fixed_dictionaries({"v": st.just(1), "id": st.integers(0, 5),
                           "method": st.sampled_from(sorted(p.METHODS) + ["forget", "x"]),
                           "args": st.dictionaries(st.sampled_from(
                               ["query", "k", "draft", "filters", "mid", "ids", "turns", "x"]),
                               st.none() | st.integers() | st.text(max_size=5)
                               | st.lists(st.integers(), max_size=3)
                               | st.dictionaries(st.sampled_from(["text", "store", "agent"]),
                                                 st.text(max_size=5), max_size=3),
                               max_size=3)}).map(lambda o: json.dumps(o).encode()),
))
def test_fuzz_decoder_only_protocol_errors(payload: bytes) -> None:
    try:
        req = p.decode_request(payload)
    except p.ProtocolError:
        return
    assert req.method in p.METHODS


def test_every_vaultapi_member_is_served_or_refused() -> None:
    from app.ipc.client import RemoteVault
    members = {n for n in dir(VaultAPI) if not n.startswith("_")}
    undecided = members - set(p.METHODS) - set(p.REFUSED) - {"folder", "locked",
                                                           "semantic_search", "background_work"}
    missing_on_client = members - set(dir(RemoteVault))
    # Issue 14.3 (P2) adds agent methods to VaultAPI: they must be carried or refused here.
    assert not undecided - _P2_PENDING, sorted(undecided)
    assert not missing_on_client - _P2_PENDING, sorted(missing_on_client)
    assert not set(p.REFUSED) & set(p.METHODS)


_P2_PENDING = {"pair_agent", "revoke_agent", "agents", "verify_agent", "remember_fact",
               "request_forget", "pending_forgets", "pending_forget_plan",
               "close_pending_forget"}


def _nested(depth: int) -> bytes:
    """A request whose deepest value sits at ``depth`` (the envelope object is depth 0)."""
    inner = "1"
    for _ in range(depth - 2):  # args (1) holds the query list (2) ...
        inner = f"[{inner}]"
    return ('{"v":1,"id":1,"method":"recall","args":{"query":' + inner + "}}").encode()


def test_depth_limit_counts_the_scalars_too() -> None:
    """A scalar at MAX_DEPTH is read (and then refused as a wrong type); one level deeper is
    refused as too deep, before any argument is decoded."""
    with pytest.raises(p.ProtocolError, match="expected str"):
        p.decode_request(_nested(p.MAX_DEPTH))
    with pytest.raises(p.ProtocolError, match="nested too deeply"):
        p.decode_request(_nested(p.MAX_DEPTH + 1))
    with pytest.raises(p.ProtocolError, match="nested too deeply"):
        p.decode_request(_nested(p.MAX_DEPTH + 1).replace(b"1]", b"[]]", 1))


@pytest.mark.parametrize("payload", [
    b'{"v":1,"id":1,"method":"explain","args":{"memory_id":123456789012345678901234567890}}',
    b'{"v":1,"id":1,"method":"recall","args":{"query":"a","k":1e400}}',
    b'{"v":1,"id":1,"method":"recall","args":{"query":"a\\udc00b"}}',
    b'\xef\xbb\xbf{"v":1,"id":1,"method":"ping","args":{}}',
])
def test_numbers_and_strings_json_cannot_carry_back_are_refused(payload: bytes) -> None:
    with pytest.raises(p.ProtocolError):
        p.decode_request(payload)


def test_a_result_frame_reads_back_as_written() -> None:
    """The fast writer and the reader agree, and what orjson refuses to write falls back to
    ``frame`` and its errors."""
    from app.api import Currency, Hit
    from app.domain.memory import MemoryId
    hit = Hit(id=MemoryId(7), store="semantic", text="Ana moved to Lisbon — in May 😀",
              score=0.5, refs=("s1:2",), occurred_at=1.5e9, speaker=None, breakdown={},
              currency=Currency(state="earlier", later_id=MemoryId(9), later_at=1.6e9))
    data = p.encode_result(3, "recall", [hit])
    reply = p.decode_reply(data[4:])
    assert reply.id == 3 and p.decode_result("recall", reply.result) == [hit]
    with pytest.raises(UnicodeEncodeError):
        p.encode_result(4, "ping", {"a": "\ud800"})
    assert p.decode_reply(p.encode_result(5, "ping", {"n": 2 ** 70})[4:]).result == {"n": 2 ** 70}
