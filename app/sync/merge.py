"""The deterministic merge of sync operations (issue 29 item 3). Layer: app. Runs on: any thread
(pure); a ``Replica`` belongs to one thread, the one that applies ops.

The state is a function of the *set* of ops: ``fold(ops)`` gives the same ``State`` (and
``state_hash``) for any order and any duplication, and ``Replica.apply`` reaches it one batch
at a time. The rules, in the order they act:

1. **Forget is sticky.** The gids of every ``forget`` are gone for good: any op about one of
   them (its memory, its sources, the fact it replaces, a question about it, the decision on
   such a question) is dropped whatever its clock, and ``should_write`` tells a writer never
   to write one. A forget always wins, because it does not compete on time.
2. **Versions, not last-writer-wins.** A memory's create is version ``gid``; each edit is a
   version named by its op id, made from the version(s) it names in ``bases``. Two edits are
   *concurrent* when neither is among the other's bases, directly or through other edits: the
   HLC only picks which one shows (the latest stamp; ties on the op id), and the other stays in
   the history. While a memory has more than one unedited version (leaf), the Inbox holds an
   ``edit_conflict`` question; an edit whose bases are all the leaves closes it. An edit whose
   base has not arrived yet still counts as a leaf: the state depends only on what is there.
3. **Facts are superseded, never overwritten.** ``fact.supersede`` creates the new fact and
   marks the old one superseded. Two successors of one fact that are both still current
   (neither retracted) are both current facts, and the Inbox asks which holds
   (``successor_conflict``); retracting one of them closes the question.
4. **A reject beats an accept.** Decisions on one question from several devices: any reject
   makes the verdict reject; otherwise the latest accept gives the choice.

Ops that wait for something (an edit of a memory whose create has not arrived, a decision on a
question not asked yet) are listed by id in ``State.waiting``: no content, and they take effect
as soon as what they wait for arrives.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

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
    OpId,
    canonical,
)

Create = MemoryCreate | FactAssert | FactSupersede


@dataclass(frozen=True, slots=True)
class Version:
    """One version of a memory's text: ``id`` is the gid for the create, else the edit's op."""

    id: str
    op: OpId
    hlc: str
    bases: tuple[str, ...]
    text: str
    confidence: float | None
    user_validated: bool

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "op": self.op, "hlc": self.hlc, "bases": list(self.bases),
                "text": self.text, "confidence": self.confidence,
                "user_validated": self.user_validated}


@dataclass(frozen=True, slots=True)
class Item:
    """A memory or fact as the merge sees it. ``head`` is the version shown; ``history`` every
    other version (losers of a conflict included), oldest first."""

    gid: Gid
    created: Create
    head: Version
    history: tuple[Version, ...]
    leaves: tuple[str, ...]          # unedited versions; more than one is a conflict
    successors: tuple[Gid, ...]      # facts that supersede this one
    retracted: bool
    valid_to: float | None

    @property
    def kind(self) -> str:
        return "memory" if isinstance(self.created, MemoryCreate) else "fact"

    @property
    def replaces(self) -> Gid | None:
        return self.created.replaces if isinstance(self.created, FactSupersede) else None

    @property
    def status(self) -> str:
        if self.retracted:
            return "retracted"
        return "superseded" if self.successors else "active"

    def to_dict(self) -> dict[str, Any]:
        return {"gid": self.gid, "kind": self.created.KIND, "created": self.created.to_dict(),
                "head": self.head.to_dict(), "history": [v.to_dict() for v in self.history],
                "leaves": list(self.leaves), "successors": list(self.successors),
                "retracted": self.retracted, "valid_to": self.valid_to}


@dataclass(frozen=True, slots=True)
class Question:
    """An Inbox item: asked by a device (``contradiction``, ``review``) or raised by the merge
    itself (``edit_conflict``, ``successor_conflict``; their key is a hash of what conflicts,
    the same on every device). ``verdict`` None means still open."""

    item: Gid
    kind: str
    about: tuple[Gid, ...]
    versions: tuple[str, ...]
    reason: str
    verdict: str | None = None
    choice: str | None = None
    text: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"item": self.item, "kind": self.kind, "about": list(self.about),
                "versions": list(self.versions), "reason": self.reason,
                "verdict": self.verdict, "choice": self.choice, "text": self.text}


@dataclass(frozen=True, slots=True)
class State:
    items: Mapping[Gid, Item]
    inbox: Mapping[Gid, Question]
    forgotten: frozenset[Gid]
    waiting: frozenset[OpId] = field(default_factory=frozenset)

    def current(self) -> list[Item]:
        """Items shown as current: not superseded, not retracted."""
        return [i for _g, i in sorted(self.items.items()) if i.status == "active"]

    def open_questions(self) -> list[Question]:
        return [q for _k, q in sorted(self.inbox.items()) if q.verdict is None]

    def to_dict(self) -> dict[str, Any]:
        return {"items": {g: i.to_dict() for g, i in self.items.items()},
                "inbox": {k: q.to_dict() for k, q in self.inbox.items()},
                "forgotten": sorted(self.forgotten), "waiting": sorted(self.waiting)}


def state_hash(state: State) -> str:
    """SHA-256 of the state's canonical JSON: equal on two devices iff their states are."""
    return hashlib.sha256(canonical(state.to_dict()).encode("utf-8")).hexdigest()


def _key(kind: str, *parts: Iterable[str]) -> Gid:
    material = "kept-question-v1|" + kind + "|" + "|".join(",".join(p) for p in parts)
    return Gid(hashlib.sha256(material.encode("utf-8")).hexdigest()[:32])


def _prefer(a: Op, b: Op) -> Op:
    """Two ops with one id (a replay is identical; anything else is a device that lied, which
    part E reports): keep the same one on every device."""
    return a if canonical(a.to_dict()) <= canonical(b.to_dict()) else b


def _home(body: Body) -> Gid | None:
    """The memory whose item an op builds (None for forget and the Inbox)."""
    if isinstance(body, (MemoryCreate, FactAssert, FactSupersede, MemoryEdit, FactRetract)):
        return body.gid
    return None


# --- one item from its ops: the reducer both fold and Replica use ------------------------------

def _version_of(op: Op) -> Version:
    b = op.body
    if isinstance(b, MemoryEdit):
        return Version(op.id, op.id, str(op.hlc), b.bases, b.text, b.confidence,
                       b.user_validated)
    assert isinstance(b, (MemoryCreate, FactAssert, FactSupersede))
    text = b.text if isinstance(b, MemoryCreate) else b.statement
    return Version(b.gid, op.id, str(op.hlc), (), text, b.confidence, b.user_validated)


def build_item(gid: Gid, home_ops: Iterable[Op], successor_ops: Iterable[Op]) -> Item | None:
    """The item ``gid`` from the ops about it (creates, edits, retracts) and the supersedes
    that replace it; None while it has no create."""
    ops = sorted(home_ops, key=lambda o: o.order)
    creates = [o for o in ops if isinstance(o.body, (MemoryCreate, FactAssert, FactSupersede))]
    if not creates:
        return None
    root = creates[0]
    root_body = root.body
    assert isinstance(root_body, (MemoryCreate, FactAssert, FactSupersede))
    versions: list[Version] = [_version_of(root)]
    for o in creates[1:]:
        if canonical(o.body.to_dict()) != canonical(root_body.to_dict()):
            # Another device created this gid with other content (a derived id whose inputs
            # differed): kept as a concurrent version of the first, so the person chooses.
            v = _version_of(o)
            versions.append(Version(o.id, o.id, v.hlc, (gid,), v.text, v.confidence,
                                    v.user_validated))
    versions += [_version_of(o) for o in ops if isinstance(o.body, MemoryEdit)]
    based = {b for v in versions for b in v.bases if b != v.id}
    order = {v.id: (v.hlc, v.op) for v in versions}
    # A cycle of bases (only a device that lies can write one: a base names an op it saw)
    # leaves no unedited version: then every version counts as one, and the person chooses.
    leaves = sorted((v for v in versions if v.id not in based), key=lambda v: order[v.id]) \
        or sorted(versions, key=lambda v: order[v.id])
    head = leaves[-1]
    history = tuple(sorted((v for v in versions if v is not head), key=lambda v: order[v.id]))
    retracts = [o.body for o in ops if isinstance(o.body, FactRetract)]
    ends = [r.valid_to for r in retracts if r.valid_to is not None]
    successors = sorted({o.body.gid for o in successor_ops if isinstance(o.body, FactSupersede)})
    return Item(gid, root_body, head, history, tuple(sorted(v.id for v in leaves)),
                tuple(successors), bool(retracts), max(ends) if ends else None)


def _auto_questions(item: Item, items: Mapping[Gid, Item]) -> list[Question]:
    out: list[Question] = []
    if len(item.leaves) > 1:
        out.append(Question(_key("edit", [item.gid], item.leaves), "edit_conflict",
                            (item.gid,), item.leaves, "edited on two devices at once"))
    live = tuple(s for s in item.successors if s in items and not items[s].retracted)
    if len(live) > 1:
        out.append(Question(_key("successors", [item.gid], live), "successor_conflict",
                            (item.gid, *live), (), "two newer versions of one fact"))
    return out


def _decided(q: Question, decisions: Iterable[Op]) -> Question:
    ds = sorted(decisions, key=lambda o: o.order)
    if not ds:
        return q
    rejects = [o for o in ds if isinstance(o.body, InboxDecide) and o.body.verdict == "reject"]
    if rejects:
        return Question(q.item, q.kind, q.about, q.versions, q.reason, "reject")
    last = ds[-1].body
    assert isinstance(last, InboxDecide)
    return Question(q.item, q.kind, q.about, q.versions, q.reason, "accept", last.choice,
                    last.text)


def _proposed(ops: Iterable[Op]) -> Question:
    first = min(ops, key=lambda o: o.order).body
    assert isinstance(first, InboxPropose)
    about = (first.a,) if first.a == first.b else (first.a, first.b)
    return Question(first.item, first.kind, about, (), first.reason)


# --- fold: the whole op set at once --------------------------------------------------------------

def dedupe(ops: Iterable[Op]) -> dict[OpId, Op]:
    seen: dict[OpId, Op] = {}
    for o in ops:
        seen[o.id] = _prefer(seen[o.id], o) if o.id in seen else o
    return seen


def fold(ops: Iterable[Op]) -> State:
    """The state of an op set: any order, any duplication, the same result."""
    unique = dedupe(ops)
    forgotten = frozenset(g for o in unique.values() if isinstance(o.body, Forget)
                          for g in o.body.gids)
    dead = {o.body.item for o in unique.values()
            if isinstance(o.body, InboxPropose) and o.body.targets() & forgotten}
    live = [o for o in unique.values() if not isinstance(o.body, Forget)
            and not o.body.targets() & forgotten
            and not (isinstance(o.body, InboxDecide) and o.body.item in dead)]
    home: dict[Gid, list[Op]] = defaultdict(list)
    replacing: dict[Gid, list[Op]] = defaultdict(list)
    proposals: dict[Gid, list[Op]] = defaultdict(list)
    decisions: dict[Gid, list[Op]] = defaultdict(list)
    for o in live:
        b = o.body
        g = _home(b)
        if g is not None:
            home[g].append(o)
        if isinstance(b, FactSupersede):
            replacing[b.replaces].append(o)
        elif isinstance(b, InboxPropose):
            proposals[b.item].append(o)
        elif isinstance(b, InboxDecide):
            decisions[b.item].append(o)
    items: dict[Gid, Item] = {}
    waiting: set[OpId] = set()
    for g, hops in home.items():
        item = build_item(g, hops, replacing.get(g, ()))
        if item is None:
            waiting.update(o.id for o in hops)
        else:
            items[g] = item
    return _assemble(items, proposals, decisions, forgotten, waiting)


def _assemble(items: Mapping[Gid, Item], proposals: Mapping[Gid, list[Op]],
              decisions: Mapping[Gid, list[Op]], forgotten: frozenset[Gid],
              waiting: set[OpId]) -> State:
    questions: dict[Gid, Question] = {k: _proposed(ps) for k, ps in proposals.items() if ps}
    for item in items.values():
        for q in _auto_questions(item, items):
            questions[q.item] = q
    inbox = {k: _decided(q, decisions.get(k, ())) for k, q in sorted(questions.items())}
    waiting |= {o.id for k, ds in decisions.items() if k not in inbox for o in ds}
    return State(dict(sorted(items.items())), inbox, forgotten, frozenset(waiting))


# --- Replica: the same state, one batch at a time ------------------------------------------------

@dataclass(frozen=True, slots=True)
class Delta:
    """What one ``apply`` changed: items to (re)write, items to erase, ops dropped by a
    forget (never to be written), ops new to this replica."""

    changed: frozenset[Gid]
    erased: frozenset[Gid]
    dropped: int
    added: int


class Replica:
    """Holds an op set and its state, applying batches as they arrive; ``state()`` equals
    ``fold`` of every op applied so far. Only the items a batch touches are rebuilt."""

    def __init__(self) -> None:
        self._ops: dict[OpId, Op] = {}
        self._dropped: set[OpId] = set()
        self.forgotten: set[Gid] = set()
        self._dead: set[Gid] = set()  # questions about a forgotten memory
        self._home: dict[Gid, set[OpId]] = defaultdict(set)
        self._replacing: dict[Gid, set[OpId]] = defaultdict(set)
        self._proposals: dict[Gid, set[OpId]] = defaultdict(set)
        self._decisions: dict[Gid, set[OpId]] = defaultdict(set)
        self._touching: dict[Gid, set[OpId]] = defaultdict(set)
        self._items: dict[Gid, Item] = {}

    def ops(self) -> list[Op]:
        """Every op this replica holds (the forgets, and every op no forget dropped), in the
        merge's order: what a snapshot compacts (``epochs.compact``); ``fold`` of it is
        ``state()``."""
        return sorted(self._ops.values(), key=lambda o: o.order)

    def should_write(self, op: Op) -> bool:
        """False for an op about a forgotten memory: the writer must drop it, not send it."""
        b = op.body
        if isinstance(b, Forget):
            return True
        if b.targets() & self.forgotten:
            return False
        return not (isinstance(b, InboxDecide) and b.item in self._dead)

    def apply(self, ops: Iterable[Op]) -> Delta:
        batch = list(ops)
        dirty: set[Gid] = set()
        erased: set[Gid] = set()
        dropped = added = 0
        # Forgets first: a later op of this very batch about a forgotten gid is dropped too.
        for o in sorted(batch, key=lambda o: not isinstance(o.body, Forget)):
            if o.id in self._dropped:
                continue
            old = self._ops.get(o.id)
            if old is not None:
                kept = _prefer(old, o)
                if kept is old:
                    continue
                self._remove(old.id, dirty)  # same id, other content: keep fold's choice
            else:
                added += 1
            if isinstance(o.body, Forget):
                self._ops[o.id] = o
                new = set(o.body.gids) - self.forgotten
                self.forgotten |= new
                for g in new:
                    if g in self._items or g in self._home:
                        erased.add(g)
                    for oid in list(self._touching.pop(g, ())):
                        dropped += self._remove(oid, dirty)
                        self._ops.pop(oid, None)
                        self._dropped.add(oid)
                continue
            if not self.should_write(o):
                self._dropped.add(o.id)  # only the id: a replay is recognised, no content kept
                dropped += 1
                if isinstance(o.body, InboxPropose):
                    self._kill_question(o.body.item)
                continue
            self._add(o, dirty)
        for g in dirty - self.forgotten:
            item = build_item(g, self._ops_of(self._home.get(g, ())),
                              self._ops_of(self._replacing.get(g, ())))
            if item is None:
                self._items.pop(g, None)
            else:
                self._items[g] = item
        for g in self.forgotten & dirty:
            self._items.pop(g, None)
        return Delta(frozenset(dirty - self.forgotten), frozenset(erased), dropped, added)

    def _ops_of(self, ids: Iterable[OpId]) -> list[Op]:
        return [self._ops[i] for i in ids]

    def _add(self, o: Op, dirty: set[Gid]) -> None:
        self._ops[o.id] = o
        b = o.body
        for t in b.targets():
            self._touching[t].add(o.id)
        home = _home(b)
        if home is not None:
            self._home[home].add(o.id)
            dirty.add(home)
        if isinstance(b, FactSupersede):
            self._replacing[b.replaces].add(o.id)
            dirty.add(b.replaces)
        elif isinstance(b, InboxPropose):
            self._proposals[b.item].add(o.id)
        elif isinstance(b, InboxDecide):
            self._decisions[b.item].add(o.id)

    def _remove(self, oid: OpId, dirty: set[Gid]) -> int:
        """Take an op out of every index; 1 if it was live in the state."""
        o = self._ops.get(oid)
        if o is None:
            return 0
        b = o.body
        entries: list[tuple[dict[Gid, set[OpId]], Gid, bool]] = []
        g = _home(b)
        if g is not None:
            entries.append((self._home, g, True))
        if isinstance(b, FactSupersede):
            entries.append((self._replacing, b.replaces, True))
        elif isinstance(b, InboxPropose):
            entries.append((self._proposals, b.item, False))
        elif isinstance(b, InboxDecide):
            entries.append((self._decisions, b.item, False))
        live = False
        for idx, key, is_item in entries:
            ids = idx.get(key)
            if ids is not None and oid in ids:
                live = True
                ids.discard(oid)
                if not ids:
                    del idx[key]
                if is_item:
                    dirty.add(key)
        for t in b.targets():
            self._touching[t].discard(oid)
        if isinstance(b, InboxPropose) and b.targets() & self.forgotten:
            self._kill_question(b.item)
        return int(live)

    def _kill_question(self, item: Gid) -> None:
        """A question about a forgotten memory: it and every decision on it go for good."""
        self._dead.add(item)
        for oid in self._decisions.pop(item, ()):
            self._ops.pop(oid, None)  # a decision's text may quote what went
            self._dropped.add(oid)

    def state(self) -> State:
        home_waiting = {i for g, ids in self._home.items() if g not in self._items for i in ids}
        proposals = {k: self._ops_of(v) for k, v in self._proposals.items()}
        decisions = {k: self._ops_of(v) for k, v in self._decisions.items()}
        return _assemble(self._items, proposals, decisions, frozenset(self.forgotten),
                         home_waiting)
