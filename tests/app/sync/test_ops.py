"""The sync op schema (issue 29 item 2): strict per kind, JSON round trip, a forget that cannot
carry content."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from app.sync.hlc import HybridClock
from app.sync.ops import (
    BODIES,
    Forget,
    Op,
    OpInvalid,
    OpWriter,
    body_from_mapping,
    canonical,
    derived_gid,
    new_gid,
    parse_ops,
)
from tests.app.sync.op_samples import AT, memory, one_of_each

T0 = 1_764_151_200_000


def _wire(ops: list[Op]) -> list[dict[str, Any]]:
    """What part E's segment carries: JSON in, JSON out."""
    return json.loads(canonical([o.to_dict() for o in ops]))  # type: ignore[no-any-return]


def _ops() -> list[Op]:
    return OpWriter(HybridClock("laptop", lambda: T0)).batch(one_of_each())


def test_every_kind_round_trips_through_json() -> None:
    ops = _ops()
    assert {o.kind for o in ops} == set(BODIES)
    back = parse_ops(_wire(ops))
    assert [canonical(o.to_dict()) for o in back] == [canonical(o.to_dict()) for o in ops]
    assert [(o.id, o.hlc, o.device) for o in back] == [(o.id, o.hlc, o.device) for o in ops]


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_a_missing_or_unknown_field_is_an_error_naming_it(kind: str) -> None:
    op = next(o for o in _ops() if o.kind == kind)
    good = op.to_dict()["body"]
    for name in good:
        partial = {k: v for k, v in good.items() if k != name}
        with pytest.raises(OpInvalid, match=name):
            BODIES[kind].from_dict(partial)
    with pytest.raises(OpInvalid, match="note"):
        BODIES[kind].from_dict({**good, "note": "x"})
    assert canonical(BODIES[kind].from_dict(good).to_dict()) == canonical(good)


def test_every_schema_lists_exactly_the_fields_of_its_body() -> None:
    for kind, body in BODIES.items():
        assert set(body.SCHEMA) == {f.name for f in dataclasses.fields(body)}, kind  # type: ignore[arg-type]


def test_a_forget_carries_global_ids_and_nothing_else() -> None:
    g = new_gid()
    assert set(Forget.SCHEMA) == {"gids"}
    ok = Forget.from_dict({"gids": [g]})
    assert ok.gids == (g,)
    for smuggled in ({"gids": [g], "text": "Sam moved to Lisbon"},
                     {"gids": [g], "statement": "x"}, {"gids": [g], "at": AT}):
        with pytest.raises(OpInvalid):
            Forget.from_dict(smuggled)
    # Text cannot ride inside the ids either: a gid is 32 lowercase hex digits.
    for bad in (["Sam moved to Lisbon"], [g.upper()], [g + "00"], [], [g, g], "x", [1]):
        with pytest.raises(OpInvalid, match="gids"):
            Forget.from_dict({"gids": bad})


@pytest.mark.parametrize(("name", "value"), [
    ("text", ""), ("text", "   "), ("text", 5), ("occurred_at", float("nan")),
    ("occurred_at", 1e15), ("occurred_at", True), ("confidence", 1.5), ("confidence", "high"),
    ("user_validated", 1), ("turn", -1), ("turn", 1.5), ("store", "implicit"),
    ("store", "working"), ("sources", ["not-a-gid"]), ("side", []), ("speaker", "\ud800"),
])
def test_a_bad_value_is_refused_with_the_field_named(name: str, value: object) -> None:
    good = memory(new_gid()).to_dict()
    with pytest.raises(OpInvalid, match=name):
        BODIES["memory.create"].from_dict({**good, name: value})


def test_side_columns_are_checked_against_the_store() -> None:
    g = new_gid()
    episode = memory(g, side={"event_type": "trip", "actors": ["Sam", "Ana"], "outcome": None})
    assert episode.side["actors"] == ["Sam", "Ana"]
    with pytest.raises(OpInvalid, match="trigger"):
        memory(g, side={"trigger": "monday"})  # a procedure's column on an episode
    with pytest.raises(OpInvalid, match="kind"):
        memory(g, store="procedural", side={"kind": "habit"})
    assert memory(g, store="procedural", side={"kind": "preference", "actions": ["tea"]})


def test_decisions_are_consistent() -> None:
    item = new_gid()
    decide = BODIES["inbox.decide"]
    assert decide.from_dict({"item": item, "verdict": "reject", "choice": None, "text": None})
    for bad in ({"verdict": "reject", "choice": "a", "text": None},
                {"verdict": "accept", "choice": None, "text": None},
                {"verdict": "accept", "choice": "edit", "text": None},
                {"verdict": "accept", "choice": "a", "text": "Sam lives in Porto"},
                {"verdict": "maybe", "choice": "a", "text": None}):
        with pytest.raises(OpInvalid):
            decide.from_dict({"item": item, **bad})


def test_the_envelope_is_strict_and_bound_to_its_device() -> None:
    good = _ops()[0].to_dict()
    assert Op.from_dict(good).device == "laptop"
    bad_envelopes: list[object] = [
        {**good, "extra": 1}, {k: v for k, v in good.items() if k != "hlc"},
        {**good, "device": "desktop"},                          # stamp of another device
        {**good, "id": "desktop" + good["id"][6:]},             # id of another device
        {**good, "id": "laptop-1-0"}, {**good, "kind": "memory.delete"},
        {**good, "hlc": "yesterday"}, [good],
    ]
    for bad in bad_envelopes:
        with pytest.raises(OpInvalid):
            Op.from_dict(bad)


def test_a_bad_op_in_a_batch_is_named_by_its_place_and_nothing_is_returned() -> None:
    wire = _wire(_ops())
    wire[3]["body"]["statement"] = ""
    with pytest.raises(OpInvalid, match="Operation 4 of the batch"):
        parse_ops(wire)


def test_the_writer_numbers_ops_uniquely_and_stamps_them_in_order() -> None:
    writer = OpWriter(HybridClock("laptop", lambda: T0), next_seq=7)
    first = writer.batch([memory(new_gid()), memory(new_gid())])
    second = writer.batch([memory(new_gid())])
    ids = [o.id for o in first + second]
    assert ids == ["laptop:7:0", "laptop:7:1", "laptop:8:0"]
    assert [o.seq for o in first + second] == [7, 7, 8] and writer.next_seq == 9
    stamps = [o.hlc for o in first + second]
    assert stamps == sorted(stamps) and len(set(stamps)) == 3


def test_derived_ids_agree_across_devices_and_differ_by_key() -> None:
    a, b = new_gid(), new_gid()
    assert derived_gid([a, b], "sam|lives_in|lisbon") == derived_gid([b, a, a],
                                                                       "sam|lives_in|lisbon")
    assert derived_gid([a, b], "sam|lives_in|lisbon") != derived_gid([a, b], "sam|lives_in|porto")
    assert derived_gid([a], "k") != derived_gid([b], "k")
    assert len({new_gid() for _ in range(100)}) == 100


def test_a_body_from_python_values_is_checked_like_json() -> None:
    g = new_gid()
    body = body_from_mapping("forget", {"gids": (g,)})
    assert body.to_dict() == {"gids": [g]}
    with pytest.raises(OpInvalid, match="kind"):
        body_from_mapping("memory.delete", {})


def test_a_small_memory_op_is_small_on_the_wire() -> None:
    op = OpWriter(HybridClock("a" * 32, lambda: T0)).batch([memory(new_gid())])[0]
    size = len(canonical(op.to_dict()).encode("utf-8"))
    # Every field is written (nulls included), still far below part E's 1 KiB bucket.
    assert size < 800, size
