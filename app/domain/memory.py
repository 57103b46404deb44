"""The memory model of docs/memory-model.md#the-record. Layer: app. Frozen dataclasses cross
threads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import NewType

MemoryId = NewType("MemoryId", int)
EntityId = NewType("EntityId", int)
RunId = NewType("RunId", int)


class Store(StrEnum):
    WORKING = "working"          # RAM only, one request
    SHORT_TERM = "short_term"    # conversation turns of a session
    EPISODIC = "episodic"        # events
    SEMANTIC = "semantic"        # facts
    PROCEDURAL = "procedural"    # procedures and tacit preferences
    IMPLICIT = "implicit"        # behaviour statistics

    @classmethod
    def parse(cls, text: str) -> Store:
        key = text.strip().lower().replace("-", "_")
        aliases = {"short": "short_term", "stm": "short_term", "episode": "episodic",
                   "fact": "semantic", "facts": "semantic", "procedure": "procedural",
                   "stat": "implicit", "stats": "implicit", "wm": "working"}
        return cls(aliases.get(key, key))


class Status(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"


class LinkKind(StrEnum):
    RELATES_TO = "RELATES_TO"
    PRECEDED_BY = "PRECEDED_BY"
    SIMILAR_TO = "SIMILAR_TO"
    MENTIONS = "MENTIONS"
    REINFORCES = "REINFORCES"
    PROMOTED_FROM = "PROMOTED_FROM"
    DERIVED_FROM = "DERIVED_FROM"
    SUPERSEDES = "SUPERSEDES"
    CONTRADICTS = "CONTRADICTS"


class Tier(StrEnum):
    HOT = "hot"
    WARM = "warm"
    COLD = "cold"


@dataclass(frozen=True, slots=True)
class Scores:
    importance: float = 0.5
    recency: float = 1.0
    frequency: float = 0.0
    emotional: float = 0.0
    social: float = 0.0
    composite: float = 0.0


@dataclass(frozen=True, slots=True)
class Memory:
    id: MemoryId
    store: Store
    text: str
    created_at: float
    occurred_at: float
    agent: str
    context: str | None
    scores: Scores
    confidence: float
    access_count: int
    last_accessed_at: float | None
    status: Status
    superseded_by: MemoryId | None
    decay_class: str
    valid_from: float | None
    valid_until: float | None
    user_validated: bool
    session: str | None
    speaker: str | None
    seq: int | None
    ref: str | None
    extra: dict[str, object] = field(default_factory=dict)  # store-specific columns


@dataclass(frozen=True, slots=True)
class Draft:
    """What a caller wants remembered; validated by ``Vault.validate_draft`` without I/O."""

    text: str
    store: Store = Store.EPISODIC
    occurred_at: float | None = None
    agent: str = "global"
    context: str | None = None
    ref: str | None = None
    session: str | None = None
    speaker: str | None = None
    seq: int | None = None
    importance: float | None = None
    emotional: float | None = None
    social: float | None = None
    confidence: float | None = None
    user_validated: bool = False
    valid_from: float | None = None
    valid_until: float | None = None
    extra: dict[str, object] = field(default_factory=dict)
    derived_from: tuple[MemoryId, ...] = ()


@dataclass(frozen=True, slots=True)
class Link:
    src: MemoryId
    dst: MemoryId
    kind: LinkKind
    weight: float = 1.0
