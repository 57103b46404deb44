"""What extraction produces (rules or an LLM) before consolidation stores it. Layer: app."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

# Predicates that hold one value at a time for a subject: a different object disagrees.
SINGLE_VALUED = frozenset({
    "name", "age", "lives_in", "works_at", "job", "relationship_status", "birthday",
    "from", "partner", "favorite", "deadline", "date_of", "pet_name", "school", "car",
    "count", "time_of",
})
# Predicates that hold several values at once (a person likes many things, has been to many
# places). Any other slot, in open vocabulary ("milk in coffee", "vet", "gym", "team offsite
# date": what assistants and LLMs name), holds one value at a time (issue 23 item 2).
MULTI_VALUED = frozenset({
    "likes", "dislikes", "prefers", "habit", "visited", "allergic_to", "condition", "relation",
    "reading", "watching", "trait", "lives_with", "possession", "has", "owns", "speaks",
    "plays", "hobby", "friend", "friends", "interest", "interests", "skill", "skills",
    "goal", "goals", "corrects",
})


@dataclass(frozen=True, slots=True)
class FactCandidate:
    subject: str                 # a person's name ("Sam"), or an entity
    predicate: str               # snake_case, e.g. lives_in, likes, sister
    object: str
    statement: str               # the fact as a sentence, e.g. "Sam lives in Porto"
    category: str = "general"    # identity, relationship, work, place, preference, date, ...
    confidence: float = 0.6      # the extractor's own reliability for this pattern
    change: bool = False         # stated as a change ("moved to", "now works at"): an update
    negated: bool = False        # "I no longer live in Lisbon"
    valid_from: float | None = None
    store: Literal["semantic", "procedural"] = "semantic"
    qualifier: str | None = None  # e.g. the kind of "favorite" (favorite book, colour)
    source_ids: tuple[int, ...] = field(default=())

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.subject.casefold(), self.predicate, self.qualifier)

    @property
    def single_valued(self) -> bool:
        return self.predicate not in MULTI_VALUED


@dataclass(frozen=True, slots=True)
class DeleteRequest:
    """An extractor (an LLM) says a memory is no longer true. Never deletes: it becomes a
    supersession or goes to the person's inbox."""

    memory_id: int | None
    statement: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class EpisodeView:
    """What an extractor sees of one episode (plain data; can cross to an LLM after redaction)."""

    id: int
    text: str
    speaker: str | None
    occurred_at: float
