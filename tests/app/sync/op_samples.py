"""Builders of sync op bodies for the tests: every field given, as a writer must."""

from __future__ import annotations

from typing import Any

from app.sync.hlc import HybridClock
from app.sync.ops import (
    Body,
    FactAssert,
    FactRetract,
    FactSupersede,
    Forget,
    Gid,
    InboxDecide,
    InboxPropose,
    MemoryCreate,
    MemoryEdit,
    Op,
    OpWriter,
    new_gid,
)

AT = 1_764_151_200.0  # 2025-11-26 10:00 UTC


def memory(gid: Gid, text: str = "Sam moved to Lisbon", **over: Any) -> MemoryCreate:
    fields: dict[str, Any] = dict(
        gid=gid, store="episodic", text=text, occurred_at=AT, learned_at=AT, agent="global",
        context=None, written_by="person", confidence=None, user_validated=False,
        valid_from=None, valid_to=None, sources=(), session=None, speaker=None, turn=None,
        ref=None, importance=None, emotional=None, social=None, side={})
    fields.update(over)
    return MemoryCreate(**fields)


def _fact_fields(gid: Gid, obj: str, **over: Any) -> dict[str, Any]:
    fields: dict[str, Any] = dict(
        gid=gid, subject="Sam", predicate="lives_in", object=obj,
        statement=f"Sam lives in {obj}", category="place", occurred_at=AT, learned_at=AT,
        agent="global", context=None, written_by="person", confidence=0.8,
        user_validated=False, valid_from=None, valid_to=None, sources=())
    fields.update(over)
    return fields


def fact(gid: Gid, obj: str = "Lisbon", **over: Any) -> FactAssert:
    return FactAssert(**_fact_fields(gid, obj, **over))


def successor(gid: Gid, replaces: Gid, obj: str, **over: Any) -> FactSupersede:
    return FactSupersede(**_fact_fields(gid, obj, **over), replaces=replaces)


def edit(gid: Gid, bases: tuple[str, ...], text: str) -> MemoryEdit:
    return MemoryEdit(gid=gid, bases=tuple(sorted(bases)), text=text, confidence=None,
                      user_validated=False)


def retract(gid: Gid) -> FactRetract:
    return FactRetract(gid=gid, valid_to=AT + 60)


def propose(item: Gid, a: Gid, b: Gid) -> InboxPropose:
    return InboxPropose(item=item, kind="contradiction", a=a, b=b, reason="same slot")


def decide(item: Gid, choice: str | None, text: str | None = None) -> InboxDecide:
    verdict = "reject" if choice is None else "accept"
    return InboxDecide(item=item, verdict=verdict, choice=choice, text=text)


def forget(*gids: Gid) -> Forget:
    return Forget(gids=tuple(sorted(gids)))


def one_of_each() -> list[Body]:
    g, h = new_gid(), new_gid()
    return [memory(g, side={"event_type": "move", "actors": ["Sam"]}), edit(g, (g,), "Sam moved"),
            fact(h), successor(new_gid(), h, "Porto"), retract(h), propose(new_gid(), g, h),
            decide(new_gid(), "edit", "Sam lives in Porto"), forget(g, h)]


class Device:
    """A device writing ops: its own clock (on a shared wall) and sequence numbers."""

    def __init__(self, name: str, wall: Any) -> None:
        self.clock = HybridClock(name, wall)
        self.writer = OpWriter(self.clock)

    def write(self, *bodies: Body) -> list[Op]:
        return self.writer.batch(list(bodies))

    def one(self, body: Body) -> Op:
        return self.write(body)[0]

    def hears(self, ops: list[Op]) -> None:
        for o in ops:
            self.clock.observe(o.hlc)
