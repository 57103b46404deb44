"""What a mutation changed, so views refresh without polling (Anki's OpChanges). Layer: app."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Generic, TypeVar

T = TypeVar("T", covariant=True)  # a Result[X] is a Result[X | None] (frozen: read only)


@dataclass(frozen=True, slots=True)
class Changes:
    memories: bool = False
    entities: bool = False
    contradictions: bool = False
    history: bool = False
    settings: bool = False
    runs: bool = False
    index: bool = False
    lock: bool = False
    agents: bool = False     # paired assistants, their forget requests and reads

    def merge(self, other: Changes) -> Changes:
        return replace(self, **{f.name: getattr(self, f.name) or getattr(other, f.name)
                                for f in fields(self)})

    @property
    def any(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


NO_CHANGES = Changes()
MEMORY_CHANGES = Changes(memories=True, history=True, index=True)


@dataclass(frozen=True, slots=True)
class Result(Generic[T]):
    value: T
    changes: Changes = NO_CHANGES
