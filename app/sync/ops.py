"""Semantic sync operations and their strict schema (issue 29 item 2). Layer: app. Runs on: any
thread (pure data).

A device does not ship rows: local row ids differ per device, and a row diff of a forget would
carry the forgotten row. It ships what the person or an assistant did, one op per act:

========================  =======================================================================
kind                      body
========================  =======================================================================
``memory.create``         a new memory: its global id and everything the vault keeps of it
``memory.edit``           a new version of a memory's text; ``bases`` names the version(s) edited
``fact.assert``           a new fact (subject, predicate, object, statement, validity...)
``fact.supersede``        a new fact that ``replaces`` an older one (the older stays, superseded)
``fact.retract``          a fact no longer holds (``valid_to``); no text
``inbox.propose``         a question for the person about memories ``a`` and ``b``
``inbox.decide``          the person's answer: ``accept`` with a choice, or ``reject``
``forget``                ``gids`` only: nothing else is allowed, so a forget never carries text
========================  =======================================================================

Every op is ``{"id", "device", "hlc", "kind", "body"}``; the id is ``<device>:<seq>:<index>``
(the device's batch sequence and the op's place in it), unique because a device never reuses a
sequence. Memories are named across devices by a ``gid``: 128 random bits in hex
(``new_gid``), or for something derived from other memories, a hash of its sources and its
key (``derived_gid``), so two devices that derive the same fact name it alike.

The schema is strict: an unknown or missing field, a wrong type, a time outside the years
1-9999 or a number that is not finite is ``OpInvalid`` naming the field; nothing is guessed.
Times are epoch seconds (as in the vault), scores in [0, 1].
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, NewType, TypeAlias

from app.errors import ValidationError
from app.sync.canonical import canonical_text
from app.sync.hlc import HybridClock, Stamp, StampError, check_device
from app.validation import MAX_LABEL, MAX_TEXT, check_string, check_time

canonical = canonical_text  # the name the sync modules use (one definition: app/sync/canonical.py)

Gid = NewType("Gid", str)
OpId = NewType("OpId", str)

GID_RE = re.compile(r"[0-9a-f]{32}")
OP_ID_RE = re.compile(r"([A-Za-z0-9_-]{1,64}):(\d{1,18}):(\d{1,9})")
# One forget may name many memories (a whole entity with its sources); past this the writer
# splits it into several ops, which merge the same.
MAX_FORGET_GIDS = 10_000
MAX_SOURCES = 1_000
MAX_LIST = 100  # actors, actions


class OpInvalid(ValidationError):
    user_message = "A sync operation is not well formed; it was not applied."


def new_gid() -> Gid:
    """A fresh global id: 128 random bits as 32 lowercase hex digits."""
    return Gid(secrets.token_hex(16))


def derived_gid(sources: Iterable[Gid], key: str) -> Gid:
    """The id of something derived from ``sources`` (a fact extracted from two episodes):
    the same on every device that derives it, so their creates fold into one memory. The
    sources' random ids make it unguessable from ``key`` alone."""
    material = "kept-derived-v1|" + ",".join(sorted(set(sources))) + "|" + key
    return Gid(hashlib.sha256(material.encode("utf-8")).hexdigest()[:32])


def op_id(device: str, seq: int, index: int) -> OpId:
    return OpId(f"{device}:{seq}:{index}")


# --- field checks: each takes (value, field name) and returns the checked value ---------------

Check: TypeAlias = Callable[[object, str], Any]


def _fail(name: str, what: str) -> OpInvalid:
    return OpInvalid(f"Sync operation field {name!r}: {what}.")


def _gid(value: object, name: str) -> Gid:
    if not isinstance(value, str) or not GID_RE.fullmatch(value):
        raise _fail(name, "must be a global id (32 lowercase hex digits)")
    return Gid(value)


def _gids(limit: int, *, nonempty: bool) -> Check:
    def check(value: object, name: str) -> tuple[Gid, ...]:
        if not isinstance(value, list):
            raise _fail(name, "must be a list of global ids")
        if nonempty and not value:
            raise _fail(name, "must name at least one memory")
        if len(value) > limit:
            raise _fail(name, f"names more than {limit:,} memories")
        out = tuple(_gid(v, name) for v in value)
        if len(set(out)) != len(out):
            raise _fail(name, "names a memory twice")
        return tuple(sorted(out))
    return check


def _version(value: object, name: str) -> str:
    """A version of a memory: its create (the gid) or an edit (that edit's op id)."""
    if isinstance(value, str) and (GID_RE.fullmatch(value) or OP_ID_RE.fullmatch(value)):
        return value
    raise _fail(name, "must name a version (a global id or an op id)")


def _versions(value: object, name: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or len(value) > MAX_LIST:
        raise _fail(name, f"must be a list of 1 to {MAX_LIST} versions")
    out = tuple(sorted({_version(v, name) for v in value}))
    if len(out) != len(value):
        raise _fail(name, "names a version twice")
    return out


def _text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(name, "must be text that is not empty")
    try:
        return check_string(value, name, limit=MAX_TEXT)
    except ValidationError as exc:
        raise _fail(name, exc.user_message) from exc


def _label(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise _fail(name, "must be text")
    try:
        return check_string(value, name, limit=MAX_LABEL)
    except ValidationError as exc:
        raise _fail(name, exc.user_message) from exc


def _time(value: object, name: str) -> float:
    try:
        return check_time(value, name)
    except ValidationError as exc:
        raise _fail(name, "must be a time in epoch seconds, years 1 to 9999") from exc


def _unit(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise _fail(name, "must be a number from 0 to 1")
    return float(value)


def _int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2 ** 63:
        raise _fail(name, "must be a whole number, 0 or more")
    return value


def _bool(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(name, "must be true or false")
    return value


def _labels(value: object, name: str) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > MAX_LIST:
        raise _fail(name, f"must be a list of at most {MAX_LIST} texts")
    return tuple(_label(v, name) for v in value)


def _one_of(*allowed: str) -> Check:
    def check(value: object, name: str) -> str:
        if value not in allowed:
            raise _fail(name, "must be one of " + ", ".join(allowed))
        return str(value)
    return check


def _optional(check: Check) -> Check:
    def optional(value: object, name: str) -> Any:
        return None if value is None else check(value, name)
    return optional


# Store-specific columns a memory may carry (storage/repo.SIDE_COLUMNS), by store. Facts carry
# theirs as fields of fact.assert; implicit statistics are recomputed on each device from what
# it holds, never synced.
SIDE: dict[str, dict[str, Check]] = {
    "episodic": {"event_type": _label, "actors": _labels, "outcome": _optional(_label),
                 "details": _optional(_text)},
    "procedural": {"kind": _one_of("procedure", "preference"), "trigger": _optional(_label),
                   "actions": _labels},
    "short_term": {},
    "semantic": {},
}


def _side(value: object, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(name, "must be an object")
    return dict(value)  # checked against the store in MemoryCreate.__post_init__


def _fields(body: Any, names: Iterable[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n in names:
        v = getattr(body, n)
        out[n] = list(v) if isinstance(v, tuple) else (dict(v) if isinstance(v, dict) else v)
    return out


class Body:
    """Base of the op bodies: ``SCHEMA`` lists every field, exactly, with its check."""

    KIND: ClassVar[str]
    SCHEMA: ClassVar[dict[str, Check]]

    def targets(self) -> frozenset[Gid]:
        """The memories this op is about: a forget of any of them drops the op."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        return _fields(self, self.SCHEMA)

    @classmethod
    def from_dict(cls, data: object) -> Body:
        if not isinstance(data, dict):
            raise OpInvalid(f"A {cls.KIND} body must be an object.")
        unknown = sorted(set(data) - set(cls.SCHEMA))
        missing = sorted(set(cls.SCHEMA) - set(data))
        if unknown or missing:
            raise OpInvalid(f"A {cls.KIND} body has unknown fields {unknown} or lacks {missing}.")
        return cls(**{k: check(data[k], k) for k, check in cls.SCHEMA.items()})


_CONTENT: dict[str, Check] = {
    "occurred_at": _time, "learned_at": _time, "agent": _label, "context": _optional(_label),
    "written_by": _label, "confidence": _optional(_unit), "user_validated": _bool,
    "valid_from": _optional(_time), "valid_to": _optional(_time),
    "sources": _gids(MAX_SOURCES, nonempty=False),
}


@dataclass(frozen=True, slots=True)
class _Content(Body):
    """What a memory create and a fact op both carry (``_CONTENT``, and the gid)."""
    gid: Gid
    occurred_at: float
    learned_at: float
    agent: str
    context: str | None
    written_by: str
    confidence: float | None
    user_validated: bool
    valid_from: float | None
    valid_to: float | None
    sources: tuple[Gid, ...]

    def targets(self) -> frozenset[Gid]:
        return frozenset((self.gid, *self.sources))


@dataclass(frozen=True, slots=True)
class MemoryCreate(_Content):
    KIND: ClassVar[str] = "memory.create"
    SCHEMA: ClassVar[dict[str, Check]] = {
        "gid": _gid, "store": _one_of(*SIDE), "text": _text, **_CONTENT,
        "session": _optional(_label), "speaker": _optional(_label), "turn": _optional(_int),
        "ref": _optional(_label), "importance": _optional(_unit), "emotional": _optional(_unit),
        "social": _optional(_unit), "side": _side,
    }
    store: str
    text: str
    session: str | None
    speaker: str | None
    turn: int | None
    ref: str | None
    importance: float | None
    emotional: float | None
    social: float | None
    side: dict[str, Any]

    def __post_init__(self) -> None:
        allowed = SIDE[self.store]
        unknown = sorted(set(self.side) - set(allowed))
        if unknown:
            raise _fail("side", f"has fields {unknown} that a {self.store} memory does not keep")
        for k, check in allowed.items():
            if k in self.side:
                v = check(self.side[k], f"side.{k}")
                self.side[k] = list(v) if isinstance(v, tuple) else v


@dataclass(frozen=True, slots=True)
class MemoryEdit(Body):
    KIND: ClassVar[str] = "memory.edit"
    SCHEMA: ClassVar[dict[str, Check]] = {
        "gid": _gid, "bases": _versions, "text": _text, "confidence": _optional(_unit),
        "user_validated": _bool,
    }
    gid: Gid
    bases: tuple[str, ...]  # the version(s) this edit replaces; two or more close a conflict
    text: str
    confidence: float | None
    user_validated: bool

    def targets(self) -> frozenset[Gid]:
        return frozenset((self.gid,))


_FACT: dict[str, Check] = {
    "gid": _gid, "subject": _label, "predicate": _label, "object": _label,
    "statement": _text, "category": _label, **_CONTENT,
}


@dataclass(frozen=True, slots=True)
class _Fact(_Content):
    """What a fact op carries (``_FACT``): the fields of an assert and a supersede."""
    subject: str
    predicate: str
    object: str
    statement: str
    category: str


@dataclass(frozen=True, slots=True)
class FactAssert(_Fact):
    KIND: ClassVar[str] = "fact.assert"
    SCHEMA: ClassVar[dict[str, Check]] = dict(_FACT)


@dataclass(frozen=True, slots=True)
class FactSupersede(_Fact):
    KIND: ClassVar[str] = "fact.supersede"
    SCHEMA: ClassVar[dict[str, Check]] = {**_FACT, "replaces": _gid}
    replaces: Gid

    def __post_init__(self) -> None:
        if self.replaces == self.gid:
            raise _fail("replaces", "cannot be the new fact itself")

    def targets(self) -> frozenset[Gid]:
        return frozenset((self.gid, self.replaces, *self.sources))


@dataclass(frozen=True, slots=True)
class FactRetract(Body):
    KIND: ClassVar[str] = "fact.retract"
    SCHEMA: ClassVar[dict[str, Check]] = {"gid": _gid, "valid_to": _optional(_time)}
    gid: Gid
    valid_to: float | None

    def targets(self) -> frozenset[Gid]:
        return frozenset((self.gid,))


@dataclass(frozen=True, slots=True)
class InboxPropose(Body):
    KIND: ClassVar[str] = "inbox.propose"
    SCHEMA: ClassVar[dict[str, Check]] = {
        "item": _gid, "kind": _one_of("contradiction", "review"), "a": _gid, "b": _gid,
        "reason": _label,
    }
    item: Gid  # the question's own global id
    kind: str
    a: Gid
    b: Gid     # a review asks about one memory: b repeats a, as the vault's inbox does
    reason: str

    def targets(self) -> frozenset[Gid]:
        return frozenset((self.a, self.b))


Verdict = Literal["accept", "reject"]
CHOICES = ("a", "b", "both", "edit", "still_true")


@dataclass(frozen=True, slots=True)
class InboxDecide(Body):
    KIND: ClassVar[str] = "inbox.decide"
    SCHEMA: ClassVar[dict[str, Check]] = {
        "item": _gid, "verdict": _one_of("accept", "reject"),
        "choice": _optional(_one_of(*CHOICES)), "text": _optional(_text),
    }
    item: Gid
    verdict: str
    choice: str | None
    text: str | None  # only with choice "edit": the person's wording

    def __post_init__(self) -> None:
        if self.verdict == "reject" and (self.choice is not None or self.text is not None):
            raise _fail("choice", "a reject carries no choice and no text")
        if self.verdict == "accept" and self.choice is None:
            raise _fail("choice", "an accept says which choice")
        if (self.text is not None) != (self.choice == "edit"):
            raise _fail("text", "comes with the choice 'edit', and only with it")

    def targets(self) -> frozenset[Gid]:
        return frozenset()  # the item's memories: the merge looks them up


@dataclass(frozen=True, slots=True)
class Forget(Body):
    """Only global ids. The schema has no other field, so a forget cannot carry the text,
    subject or time of what it forgets; the gids are random (or hashes keyed by random
    source ids), so they say nothing of the content either."""

    KIND: ClassVar[str] = "forget"
    SCHEMA: ClassVar[dict[str, Check]] = {"gids": _gids(MAX_FORGET_GIDS, nonempty=True)}
    gids: tuple[Gid, ...]

    def targets(self) -> frozenset[Gid]:
        return frozenset(self.gids)


BODIES: dict[str, type[Body]] = {b.KIND: b for b in (
    MemoryCreate, MemoryEdit, FactAssert, FactSupersede, FactRetract, InboxPropose, InboxDecide,
    Forget)}
OP_FIELDS = frozenset({"id", "device", "hlc", "kind", "body"})


@dataclass(frozen=True, slots=True)
class Op:
    """One operation: which device wrote it, when (``hlc``), and what (``body``)."""

    id: OpId
    hlc: Stamp
    body: Body

    def __post_init__(self) -> None:
        m = OP_ID_RE.fullmatch(self.id)
        if m is None:
            raise _fail("id", "must be '<device>:<sequence>:<index>'")
        if m.group(1) != self.hlc.device:
            raise _fail("hlc", "must be stamped by the device that wrote the op")

    @property
    def device(self) -> str:
        return self.hlc.device

    @property
    def seq(self) -> int:
        return int(self.id.split(":")[1])

    @property
    def index(self) -> int:
        return int(self.id.split(":")[2])

    @property
    def kind(self) -> str:
        return self.body.KIND

    @property
    def order(self) -> tuple[Stamp, str]:
        """The total order of the merge: the clock, then the op id (unique) to break ties."""
        return (self.hlc, self.id)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "device": self.device, "hlc": str(self.hlc), "kind": self.kind,
                "body": self.body.to_dict()}

    @classmethod
    def from_dict(cls, data: object) -> Op:
        if not isinstance(data, dict):
            raise OpInvalid("A sync operation must be an object.")
        if set(data) != OP_FIELDS:
            raise OpInvalid(f"A sync operation has exactly the fields {sorted(OP_FIELDS)}; "
                            f"this one has {sorted(data)}.")
        kind = data["kind"]
        body_type = BODIES.get(kind) if isinstance(kind, str) else None
        if body_type is None:
            raise _fail("kind", "is not a known operation")
        try:
            device = check_device(data["device"])
            hlc = Stamp.parse(data["hlc"])
        except StampError as exc:
            raise _fail("hlc", str(exc)) from exc
        if hlc.device != device:
            raise _fail("device", "differs from the device of the op's clock stamp")
        if not isinstance(data["id"], str):
            raise _fail("id", "must be '<device>:<sequence>:<index>'")
        return cls(OpId(data["id"]), hlc, body_type.from_dict(data["body"]))


def parse_ops(payload: Sequence[object]) -> list[Op]:
    """A segment's payload (part E's ``list[dict]``) as ops; ``OpInvalid`` names the first bad
    one by its place and applies none (a segment is taken whole or not at all)."""
    out: list[Op] = []
    for i, item in enumerate(payload):
        try:
            out.append(Op.from_dict(item))
        except OpInvalid as exc:
            raise OpInvalid(f"Operation {i + 1} of the batch: {exc.user_message}") from exc
    return out


class OpWriter:
    """Stamps this device's ops: one ``batch`` is one sequence number, its ops indexed from 0.
    The caller persists ``next_seq`` (the journal) so a sequence is never reused."""

    def __init__(self, clock: HybridClock, next_seq: int = 1) -> None:
        self.clock = clock
        self.next_seq = next_seq

    def batch(self, bodies: Sequence[Body]) -> list[Op]:
        seq = self.next_seq
        self.next_seq += 1
        device = self.clock.device
        return [Op(op_id(device, seq, i), self.clock.tick(), b) for i, b in enumerate(bodies)]


def body_from_mapping(kind: str, fields: Mapping[str, Any]) -> Body:
    """A body from Python values (tuples allowed for lists), checked as if read from JSON."""
    body_type = BODIES.get(kind)
    if body_type is None:
        raise _fail("kind", "is not a known operation")
    data = {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}
    return body_type.from_dict(json.loads(canonical(data)))
