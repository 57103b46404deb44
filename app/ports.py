"""Ports: what the app layer needs from storage, as Protocols. Layer: app.

``storage/`` implements these and ``app/bootstrap.py`` (the one app module that imports
storage) hands the concrete objects to the facade and the services, so the services depend
on these shapes only. A storage module can stand for a Protocol as a module (mypy checks a
module against a Protocol): ``bootstrap`` passes ``storage.repo`` where a ``MemoryRows`` is
asked for; a test can pass anything with the same functions.

Connections never leave the storage call they are lent to: a service passes a function
``fn(conn)`` to ``Database.read``/``write`` and calls row functions with that ``conn``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from app.api import (
    AgentRead,
    AgentRow,
    BackupRecord,
    EntityRow,
    HistoryEntry,
    InboxStatus,
    ItemKind,
    LinkView,
    MemoryRead,
    MemoryRecord,
    MemoryView,
    PendingForget,
    StatisticRow,
    Version,
)
from app.clock import Clock
from app.domain.memory import Draft, LinkKind, Memory, MemoryId, Scores, Store

if TYPE_CHECKING:
    from sqlite3 import Connection  # what storage/sqlcipher.py types its connections as
else:
    Connection = Any

# A value as JSON holds it (the settings table: declared settings and the pipeline's own
# marks, such as its watermark and retry list).
Json = None | bool | int | float | str | list["Json"] | dict[str, "Json"]

__all__ = ["AgentRows", "Json", "Backups", "BrowseRows", "Clock", "Connection", "Database", "Embedder", "FloatArray",
           "InboxRows", "KdfParams", "KeyFileInfo", "KeySession", "Lexicon", "Lifecycle",
           "MemoryRows", "VectorIndex",
           # recall, context, forget, browse (D)
           "BrowseRow", "ContextRows", "EntitySummary", "ForgetRows", "MemoryBrief", "RecallMeta",
           "RecallRows", "Reinforcement", "TierInput"]

T = TypeVar("T")
FloatArray = npt.NDArray[np.float32]


# --- the database --------------------------------------------------------------------------

class Database(Protocol):
    """One writer, per-thread readers (storage/db.py). ``write_sync`` runs ``fn`` in one
    ``BEGIN IMMEDIATE`` transaction on the writer."""

    threaded: bool
    after_write: list[Callable[[Connection], None]]
    on_corrupt: list[Callable[[], None]]

    def read(self, fn: Callable[[Connection], T]) -> T: ...
    def write(self, fn: Callable[[Connection], T]) -> Future[T]: ...
    def write_sync(self, fn: Callable[[Connection], T]) -> T: ...
    def write_group(self, fn: Callable[[Connection], T]) -> Future[T]: ...
    def on_writer(self, fn: Callable[[Connection], T]) -> Future[T]: ...
    def checkpoint(self) -> tuple[int, int, int]: ...
    def start_verification(self, delay: float = 0.0) -> None: ...

    @property
    def integrity(self) -> str: ...


# --- keys (storage/unlock.py, storage/crypto.py) ----------------------------------------

class KdfParams(Protocol):
    @property
    def alg(self) -> str: ...
    @property
    def v(self) -> int: ...
    @property
    def m(self) -> int: ...
    @property
    def t(self) -> int: ...
    @property
    def p(self) -> int: ...


class KeyFileInfo(Protocol):
    @property
    def vault_id(self) -> str: ...
    @property
    def kdf(self) -> KdfParams: ...
    @property
    def wrap_recovery(self) -> dict[str, str] | None: ...
    @property
    def wrap_device(self) -> dict[str, str] | None: ...


class KeySession(Protocol):
    """An unlocked vault's keys, owner lock and Database (``storage.unlock.OpenVault``)."""

    folder: Path

    @property
    def db(self) -> Database: ...
    @property
    def key_file(self) -> KeyFileInfo: ...
    @property
    def locked(self) -> bool: ...

    def lock(self) -> None: ...
    def verify_password(self, password: str) -> None: ...
    def change_password(self, old: str, new: str) -> object: ...
    def rotate_data_key(self, password: str) -> tuple[object, str | None]: ...
    def add_recovery_code(self) -> str: ...
    def remember_device(self) -> None: ...
    def forget_device(self) -> None: ...
    def allow_assistant_unlock(self, on: bool) -> None: ...
    def assistant_unlock_allowed(self) -> bool: ...


class Backups(Protocol):
    """One unlocked vault's encrypted backups and its record of them (``storage.backup.
    VaultBackups``; issue 16). Methods block: disk, crypto."""

    def create(self, target: Path, *, password: str | None = None,
               progress: Callable[[int, int], None] | None = None,
               now: float | None = None) -> BackupRecord: ...
    def records(self) -> list[BackupRecord]: ...
    def remake(self, rec: BackupRecord, *, progress: Callable[[int, int], None] | None = None,
               now: float | None = None) -> tuple[BackupRecord, bool]: ...


# --- vectors, the embedder, the full-text mirror -----------------------------------------

class Embedder(Protocol):
    """Sentence embeddings, float32, L2-normalised, one row per text."""

    @property
    def model_name(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> FloatArray: ...
    def embed_one(self, text: str) -> FloatArray: ...


class VectorIndex(Protocol):
    """The vectors in RAM (storage/vector.py): exact search, Chroma once built."""

    def __len__(self) -> int: ...
    def __contains__(self, mid: int) -> bool: ...
    def load(self, ids: np.ndarray, mat: np.ndarray) -> None: ...
    def add(self, ids: np.ndarray | list[int], vecs: np.ndarray) -> None: ...
    def remove(self, ids: list[int]) -> None: ...
    def vector(self, mid: int) -> np.ndarray | None: ...
    def search(self, q: np.ndarray, k: int, keep: Callable[[int], bool] | None = None
               ) -> list[tuple[int, float]]: ...
    def search_exact(self, q: np.ndarray, k: int, keep: Callable[[int], bool] | None = None
                     ) -> list[tuple[int, float]]: ...
    def similarities(self, q: np.ndarray, ids: list[int]) -> dict[int, float]: ...
    def min_similarity(self, q: np.ndarray, sample: int = 8192) -> float: ...
    def search_with_floor(self, q: np.ndarray, k: int, *, exact: bool = False
                          ) -> tuple[list[tuple[int, float]], float]: ...
    def start_chroma_build(self, on_ready: Callable[[], None] | None = None) -> None: ...
    def close(self) -> None: ...

    @property
    def chroma_building(self) -> bool: ...
    @property
    def chroma_ready(self) -> bool: ...


class Lexicon(Protocol):
    """The full-text index mirrored in RAM for big vaults (storage/lexicon.py)."""

    def on_write(self, conn: Connection) -> None: ...
    def build(self, read: Callable[[Callable[[Connection], None]], None]) -> None: ...
    def build_in_background(self, read: Callable[[Callable[[Connection], None]], None],
                            then: Callable[[], None] | None = None, *,
                            delay: float = 0.0,
                            before_scan: Callable[[], None] | None = None) -> None: ...
    def search(self, tokens: Sequence[str], limit: int) -> list[tuple[int, float]] | None: ...
    def clear(self) -> None: ...
    def save_snapshot(self, conn: Connection) -> bool: ...

    @property
    def ready(self) -> bool: ...
    @property
    def building(self) -> bool: ...


# --- rows (storage modules passed as these Protocols) ---------------------------------------

class MemoryRows(Protocol):
    """Memories, their vectors, history and settings (``storage.repo``): what ingestion and
    the facade read and write through."""

    def insert_memory(self, conn: Connection, d: Draft, *, now: float, decay_class: str,
                      scores: Scores, confidence: float, fts_keys: str = "",
                      index_text: bool = True) -> MemoryId: ...
    def insert_memories(self, conn: Connection, new: Sequence[tuple[Draft, Scores, str, float]],
                        *, now: float) -> list[MemoryId]: ...
    def index_texts(self, conn: Connection,
                    rows: Sequence[tuple[int, str, str, str | None, str, int | None]]
                    ) -> None: ...
    def refresh_context(self, conn: Connection, session: str, store: str, seq: int) -> None: ...
    def put_vectors(self, conn: Connection, ids: Sequence[int], vecs: np.ndarray,
                    model: str) -> None: ...
    def add_history(self, conn: Connection, mid: int, now: float, action: str,
                    text: str | None, note: str | None) -> None: ...
    def find_ref(self, conn: Connection, session: str | None, ref: str,
                 store: Store) -> MemoryId | None: ...
    def find_own_ref(self, conn: Connection, session: str | None, ref: str, store: Store,
                     agent: str) -> MemoryId | None: ...
    def next_seq(self, conn: Connection, sessions: Iterable[str]) -> dict[str, int]: ...
    def get_memory(self, conn: Connection, mid: int) -> Memory | None: ...
    def get_memories(self, conn: Connection, ids: Iterable[int]) -> dict[MemoryId, Memory]: ...
    def refs_of(self, conn: Connection, ids: Sequence[int]) -> dict[int, list[str]]: ...
    def counts(self, conn: Connection, agent: str | None = None
               ) -> dict[str, dict[str, int]]: ...
    def open_contradictions(self, conn: Connection, agent: str | None = None) -> int: ...
    def vector_models(self, conn: Connection) -> dict[str, int]: ...
    def get_setting(self, conn: Connection, key: str) -> Json: ...
    def put_setting(self, conn: Connection, key: str, value: Json) -> None: ...
    def episode_outcome(self, conn: Connection, mid: int) -> EpisodeOutcome: ...
    def set_episode_outcome(self, conn: Connection, mid: int, rating: int | None,
                            outcome: str | None, outcome_by: str | None,
                            at: float | None) -> None: ...
    def put_routing(self, conn: Connection,
                    rows: Sequence[tuple[int, float, Sequence[str], str, str]]) -> None: ...


class Lifecycle(Protocol):
    """Status changes, supersession and forgetting (``storage.lifecycle``), the part the
    facade and ingestion use."""

    def copy_links(self, conn: Connection, old: int, new: int, now: float) -> None: ...
    def supersede(self, conn: Connection, old: int, new: int, now: float) -> None: ...
    def set_status(self, conn: Connection, mid: int, status: str) -> None: ...
    def confirm(self, conn: Connection, mid: int) -> None: ...
    def set_agent(self, conn: Connection, mid: int, agent: str) -> None: ...


class BrowseRows(Protocol):
    """The window's lists (``storage.browse``), the part the facade uses."""

    def timeline_days(self, conn: Connection, limit: int) -> list[tuple[str, int]]: ...
    def entity_names(self, conn: Connection, ids: Sequence[int]) -> dict[int, str]: ...
    # the rest for app/services/browse.py (D)
    def page(self, conn: Connection, *, store: str | None, status: str | None,
             entity_id: int | None, day: tuple[float, float] | None,
             after: tuple[float, int] | None, limit: int, fold: bool = ...,
             session_of: int | None = ..., order: str = ...,
             ids: tuple[int, ...] | None = ...) -> list[BrowseRow]: ...
    def count(self, conn: Connection, *, store: str | None, status: str | None,
              entity_id: int | None, day: tuple[float, float] | None, fold: bool = ...,
              session_of: int | None = ..., ids: tuple[int, ...] | None = ...) -> int: ...
    def entities(self, conn: Connection, kinds: tuple[str, ...]) -> list[EntityRow]: ...
    def tier_inputs(self, conn: Connection) -> list[TierInput]: ...
    def health(self, conn: Connection) -> dict[str, float]: ...
    def statistics(self, conn: Connection) -> list[StatisticRow]: ...
    def monitoring(self, conn: Connection, since: float, used_within: float,
                   quality: float) -> dict[str, Any]: ...
    def agent_page(self, conn: Connection, agent: str, after: tuple[float, int] | None,
                   limit: int) -> list[BrowseRow]: ...
    def export_page(self, conn: Connection, *, store: str | None, status: str | None,
                    entity_id: int | None, day: tuple[float, float] | None, after: int,
                    limit: int) -> list[MemoryRecord]: ...
    # assistants' browsing (issue 26): ``agent`` None is every scope, else global + it
    def recent(self, conn: Connection, *, agent: str | None, store: str | None,
               limit: int) -> list[ScopedRow]: ...
    def entities_named(self, conn: Connection, name_key: str,
                       agent: str | None) -> list[NamedEntity]: ...
    def entity_facts(self, conn: Connection, name_key: str, agent: str | None,
                     limit: int) -> list[ScopedRow]: ...


class InboxRows(Protocol):
    """Contradictions and review requests (``storage.inbox``)."""

    @property
    def STATUSES(self) -> tuple[str, ...]: ...  # noqa: N802 (a module constant)

    def ids(self, conn: Connection, status: str | None) -> list[int]: ...
    def count(self, conn: Connection, status: str) -> int: ...
    # the rest for app/services/consolidation (C)
    def count_reviews(self, conn: Connection, status: str) -> int: ...
    def get(self, conn: Connection, cid: int) -> InboxEntry | None: ...
    def rows(self, conn: Connection, cids: Sequence[int]) -> list[InboxRow]: ...
    def sides(self, conn: Connection, mids: Iterable[int]) -> dict[int, MemoryView]: ...
    def add_contradiction(self, conn: Connection, a: int, b: int, reason: str,
                          run_id: int | None, now: float) -> int | None: ...
    def add_review(self, conn: Connection, mid: int, reason: str, now: float) -> None: ...
    def settle(self, conn: Connection, cid: int, status: str, resolution: str,
               now: float) -> None: ...
    def reopen(self, conn: Connection, cid: int) -> None: ...
    def open_with_both_ended(self, conn: Connection) -> list[int]: ...


# --- recall, context, forget, browse (D) ----------------------------------------------------
# Named rows: the services read fields by name, never by position. NamedTuples: they cost a
# tuple's memory and build in C (recall reads a few hundred per query).

class RecallMeta(NamedTuple):
    """What recall filters and ranks a candidate by (``storage.repo.recall_meta``)."""

    store: str
    status: str
    occurred_at: float
    created_at: float
    composite: float
    importance: float
    emotional: float
    social: float
    access_count: int
    last_accessed_at: float | None
    decay_class: str
    agent: str
    context: str | None
    valid_from: float | None
    valid_until: float | None
    speaker: str | None
    session: str | None
    seq: int | None
    user_validated: int
    superseded_at: float | None  # when the version that replaced it was learned
    superseded_by: int | None = None  # the version that replaced it


class Reinforcement(NamedTuple):
    """A memory's access bookkeeping before a touch (``storage.repo.reinforcement_state``)."""

    importance: float
    emotional: float
    access_count: int
    last_accessed_at: float | None
    reinforced_at: float | None
    emotional_reinforced_at: float | None


class EntitySummary(NamedTuple):
    id: int
    name: str
    summary: str
    kind: str = "person"


class MemoryBrief(NamedTuple):
    """A memory as a forget plan lists it (``storage.lifecycle.describe``)."""

    id: int
    store: str
    status: str
    text: str


class BrowseRow(NamedTuple):
    """One row of a memory list (``storage.browse.page``); ``text`` is cut to 300 chars. The
    columns as SQLite holds them (``store``, ``status`` as text): ``app/services/browse.py``
    makes the typed ``app.api.MemoryRow`` of it, with the tier it computes (app/api.py says
    why each shape of a memory exists)."""

    id: int
    store: str
    text: str
    occurred_at: float
    speaker: str | None
    status: str
    composite: float
    confidence: float
    user_validated: int
    access_count: int
    last_accessed_at: float | None
    agent: str                    # "global", or the assistant that wrote it
    created_at: float             # when Kept learned it (its tier counts from it too)


class ScopedRow(NamedTuple):
    """A list row with what says whether it still holds (``storage.browse.recent`` and
    ``entity_facts``, issue 26): the end of its validity and what replaced it."""

    row: BrowseRow
    valid_until: float | None
    superseded_by: int | None


class NamedEntity(NamedTuple):
    """An entity of a given name in one scope (``storage.browse.entities_named``)."""

    id: int
    kind: str
    name: str
    summary: str | None
    agent: str


class TierInput(NamedTuple):
    store: str
    occurred_at: float
    last_accessed_at: float | None
    access_count: int
    created_at: float


class RecallRows(Protocol):
    """What recall reads and writes (``storage.repo``)."""

    def fts_query(self, tokens: Iterable[str]) -> str: ...
    def fts_search(self, conn: Connection, match: str, limit: int,
                   weights: tuple[float, float, float] = ...
                   ) -> Sequence[tuple[int, float]]: ...
    def recall_meta(self, conn: Connection, ids: Sequence[int]) -> dict[int, RecallMeta]: ...
    def archived_by_person(self, conn: Connection, ids: Sequence[int]) -> set[int]: ...
    def mentioning(self, conn: Connection, entity_id: int, ids: Sequence[int]) -> set[int]: ...
    def texts(self, conn: Connection, ids: Sequence[int]) -> dict[int, str]: ...
    def refs_of(self, conn: Connection, ids: Sequence[int]) -> dict[int, list[str]]: ...
    def ancestors(self, conn: Connection, ids: Sequence[int]) -> dict[int, list[int]]: ...
    def known_people(self, conn: Connection) -> list[str]: ...
    def fact_keys(self, conn: Connection, ids: Sequence[int]
                  ) -> dict[int, tuple[str, str, str | None]]: ...
    def reinforcement_state(self, conn: Connection, ids: Sequence[int]
                            ) -> dict[int, Reinforcement]: ...
    def touch(self, conn: Connection, updates: Sequence[tuple[float, float | None, float | None,
                                                              float, float, int]]) -> None: ...
    def derived_ids(self, conn: Connection, ids: Sequence[int]) -> set[int]: ...
    def open_changes(self, conn: Connection, ids: Sequence[int]
                     ) -> list[tuple[int, int, int, str, str, float | None, str, str | None]]: ...
    def factor_rows(self, conn: Connection, ids: Sequence[int] | None = None,
                    stores: Sequence[str] = ()) -> list[FactorRow]: ...
    def set_confidence_factors(self, conn: Connection, updates: Sequence[
            tuple[float, float | None, float | None, int]]) -> None: ...
    # Recall's second hop (``app.services.hops``; ``storage.hops``).
    def linked(self, conn: Connection, ids: Sequence[int], kinds: Sequence[str]
               ) -> dict[int, set[int]]: ...
    def sharing_entities(self, conn: Connection, ids: Sequence[int], *, broad: int,
                         skip: Sequence[str] = ...) -> dict[int, set[int]]: ...


class ContextRows(Protocol):
    """What context assembly and explain read (``storage.repo``)."""

    def get_memory(self, conn: Connection, mid: int) -> Memory | None: ...
    def get_memories(self, conn: Connection, ids: Iterable[int]) -> dict[MemoryId, Memory]: ...
    def provenance(self, conn: Connection, ids: Sequence[int]) -> dict[int, list[int]]: ...
    def routing_of(self, conn: Connection, mid: int
                   ) -> tuple[float, tuple[str, ...], str, str] | None: ...
    def entity_summaries(self, conn: Connection, ids: Sequence[int], limit: int
                         ) -> list[EntitySummary]: ...
    def links_of(self, conn: Connection, mid: int) -> list[LinkView]: ...
    def derived_ids(self, conn: Connection, ids: Sequence[int]) -> set[int]: ...
    def open_changes(self, conn: Connection, ids: Sequence[int]
                     ) -> list[tuple[int, int, int, str, str, float | None, str, str | None]]: ...
    def factor_rows(self, conn: Connection, ids: Sequence[int] | None = None,
                    stores: Sequence[str] = ()) -> list[FactorRow]: ...
    def set_confidence_factors(self, conn: Connection, updates: Sequence[
            tuple[float, float | None, float | None, int]]) -> None: ...


class ForgetRows(Protocol):
    """What forget plans, executes and shows as history (``storage.lifecycle``)."""

    def describe(self, conn: Connection, ids: Iterable[int]) -> list[MemoryBrief]: ...
    def table_counts(self, conn: Connection) -> dict[str, int]: ...
    def statistic_count(self, conn: Connection) -> int: ...
    def match_fields(self, conn: Connection, phrase: str) -> dict[int, str]: ...
    def entity_members(self, conn: Connection, name: str) -> tuple[set[int], set[int]]: ...
    def corrected_versions(self, conn: Connection, ids: Iterable[int]) -> set[int]: ...
    def ancestors(self, conn: Connection, ids: Iterable[int]) -> set[int]: ...
    def derived_only_from(self, conn: Connection, gone: set[int]) -> set[int]: ...
    def parents(self, conn: Connection, ids: Iterable[int]) -> set[int]: ...
    def typed_corrections(self, conn: Connection, ids: Iterable[int]) -> set[int]: ...
    def boundary_links(self, conn: Connection, gone: set[int]) -> list[tuple[int, int, str]]: ...
    def reinstated(self, conn: Connection, gone: set[int]
                   ) -> dict[int, tuple[str, int | None, float | None]]: ...
    def dependent_counts(self, conn: Connection, ids: set[int], entity_ids: set[int]
                         ) -> dict[str, int]: ...
    def orphaned_entities(self, conn: Connection, ids: set[int]) -> set[int]: ...
    def entities_to_resummarise(self, conn: Connection, ids: set[int],
                                gone_entities: set[int]) -> set[int]: ...
    def execute_forget(self, conn: Connection, ids: set[int], entity_ids: set[int]
                       ) -> dict[str, int]: ...
    def versions(self, conn: Connection, ids: Iterable[int]) -> set[int]: ...
    def version_rows(self, conn: Connection, ids: Iterable[int]) -> list[Version]: ...
    def history_rows(self, conn: Connection, ids: Iterable[int]) -> list[HistoryEntry]: ...


# --- consolidation (C) ---------------------------------------------------------------------
# The pipeline's, the inbox's and the run log's rows (storage/consolidation_rows.py,
# storage/inbox.py, storage/runlog.py), read by name.

Scope = tuple[str, str | None]  # (agent, context) of a memory (docs/memory-model.md#scope)


class EpisodeRow(NamedTuple):
    """An episode to extract facts from."""
    id: int
    text: str
    speaker: str | None
    occurred_at: float
    agent: str
    context: str | None


class FactRow(NamedTuple):
    """An active fact (or preference procedure) about one subject, with its stored category
    (``category|q=qualifier|neg``) and the kind of its procedure row, if any."""
    id: int
    subject: str | None
    predicate: str | None
    object: str | None
    category: str | None
    occurred_at: float
    confidence: float
    user_validated: int
    status: str
    text: str
    kind: str | None


class MemoryState(NamedTuple):
    """What a resolution or supersession changes on a memory, to put it back."""
    status: str
    superseded_by: int | None
    valid_until: float | None
    user_validated: int
    confidence: float


class MentionSource(NamedTuple):
    id: int
    text: str
    speaker: str | None
    agent: str
    context: str | None


class RelationRow(NamedTuple):
    subject: str | None
    object: str | None
    agent: str
    context: str | None


class EntityKey(NamedTuple):
    id: int
    name_key: str
    kind: str
    agent: str
    context: str | None


class EntityState(NamedTuple):
    """An entity as the lifecycle and merge steps see it (issue 27 item 3)."""
    id: int
    agent: str
    context: str | None
    name: str
    name_key: str
    kind: str
    status: str               # 'active' or 'merged'
    was_kind: str | None      # an archive's kind before it ended
    merged_into: int | None
    mentions: int
    last_mention: float | None  # when its newest mentioning memory happened


class EntityMerge(NamedTuple):
    """One merge of two entities (table ``entity_merge``): ``added`` are the mentions copied
    to the one kept, removed again when the merge is undone."""
    id: int
    kept: int
    merged: int
    added: list[int]
    reason: str
    merged_at: float


class TopicMention(NamedTuple):
    """An episode that mentions a project, area, resource or company."""
    entity_id: int
    memory_id: int
    session: str
    agent: str
    context: str | None
    occurred_at: float


class MergeFact(NamedTuple):
    id: int
    agent: str
    context: str | None
    subject: str
    predicate: str
    object: str
    occurred_at: float
    user_validated: int


class MergeHabit(NamedTuple):
    id: int
    agent: str
    context: str | None
    holder: str
    text: str
    trigger: str | None
    occurred_at: float


class KnownHabit(NamedTuple):
    """A habit consolidation made before: its memory, status and counts."""
    memory_id: int
    status: str
    success_count: int
    failure_count: int


class SessionTurn(NamedTuple):
    """A short-term turn no summary covers yet (``summary_turns``), with its salience."""
    id: int
    session: str
    agent: str
    context: str | None
    speaker: str | None
    text: str
    occurred_at: float
    salience: float | None


class HabitEpisode(NamedTuple):
    """An active episode as habit detection reads it (speaker and session never None)."""
    id: int
    text: str
    speaker: str
    occurred_at: float
    session: str
    agent: str
    context: str | None


class DecayRow(NamedTuple):
    id: int
    store: str
    occurred_at: float
    last_accessed_at: float | None
    access_count: int
    importance: float
    emotional: float
    social: float
    decay_class: str
    user_validated: int
    created_at: float


class EpisodeSignal(NamedTuple):
    """One episode's inputs to the implicit statistics."""
    occurred_at: float
    emotional: float
    speaker: str | None
    agent: str
    context: str | None


class ComputedStatistic(NamedTuple):
    """A stored implicit statistic with its memory's scope."""
    metric: str
    memory_id: int
    value: float
    sample_size: int
    agent: str
    context: str | None


class SummaryFact(NamedTuple):
    text: str
    occurred_at: float
    last_accessed_at: float | None
    access_count: int
    created_at: float  # when Kept learned it (a fact of an old conversation is new today)


class EntityScope(NamedTuple):
    id: int
    agent: str
    context: str | None


class InboxRow(NamedTuple):
    """One inbox item without its sides."""
    id: int
    a: int
    b: int
    reason: str
    status: InboxStatus
    resolution: str | None  # JSON: what was kept and the statuses before, for reopen
    created_at: float
    run_id: int | None
    kind: ItemKind


class InboxEntry(NamedTuple):
    """What answering or reopening an item needs to know of it."""
    a: int
    b: int
    status: str
    kind: str
    resolution: str | None


class RunRow(NamedTuple):
    id: int
    kind: str
    started_at: float
    finished_at: float | None
    status: str | None
    report: str | None  # JSON: what the run stored about itself when it finished
    undone_at: float | None

    def report_dict(self) -> dict[str, Any] | None:
        import json
        out: dict[str, Any] | None = json.loads(self.report) if self.report else None
        return out


class RunChange(NamedTuple):
    """One logged change: ``payload`` holds what undo needs to put it back."""
    kind: str
    memory_id: int | None
    payload: dict[str, Any]


class ConsolidationRows(Protocol):
    """The pipeline's queries (``storage.consolidation_rows``)."""

    def rename_subject(self, conn: Connection, old: Sequence[str], new: str) -> int: ...
    def memories_about(self, conn: Connection, tokens: Sequence[str], scope: tuple[str, str | None],
                       before: float, limit: int = 200) -> list[int]: ...
    def ask_forget(self, conn: Connection, who: str, ids: Sequence[int], query: str,
                   reason: str, now: float) -> int: ...

    def set_agent(self, conn: Connection, mid: int, agent: str) -> None: ...
    def agent_of(self, conn: Connection, mid: int) -> str | None: ...
    # outcomes of episodes (issue 27 item 8, ``storage.episodes``)
    def outcome_turns(self, conn: Connection) -> list[OutcomeTurn]: ...
    def episode_outcomes(self, conn: Connection) -> dict[int, EpisodeOutcome]: ...
    def episode_outcome(self, conn: Connection, mid: int) -> EpisodeOutcome: ...
    def set_episode_outcome(self, conn: Connection, mid: int, rating: int | None,
                            outcome: str | None, outcome_by: str | None,
                            at: float | None) -> None: ...
    def valid_from_of(self, conn: Connection, mid: int) -> float | None: ...
    def get_setting(self, conn: Connection, key: str) -> Json: ...
    def put_setting(self, conn: Connection, key: str, value: Json) -> None: ...
    def get_memory(self, conn: Connection, mid: int) -> Memory | None: ...
    def insert_memory(self, conn: Connection, d: Draft, *, now: float, decay_class: str,
                      scores: Scores, confidence: float, fts_keys: str = "") -> MemoryId: ...
    def add_history(self, conn: Connection, mid: int, now: float, action: str,
                    detail: str | None) -> None: ...
    def forget(self, conn: Connection, ids: set[int]) -> None: ...
    def episodes_after(self, conn: Connection, upto: int) -> list[EpisodeRow]: ...
    def episodes_by_id(self, conn: Connection, ids: Sequence[int]) -> list[EpisodeRow]: ...
    def speaker_episodes(self, conn: Connection, speakers: Sequence[str], scope: Scope
                         ) -> dict[int, tuple[str, float]]: ...
    def known_people(self, conn: Connection, agent: str) -> list[str]: ...
    def save_llm_reply(self, conn: Connection, at: float, raw: str, error: str,
                       source_ids: Iterable[int]) -> None: ...
    def scope_of(self, conn: Connection, mid: int) -> Scope | None: ...
    def scopes(self, conn: Connection, ids: Sequence[int]) -> dict[int, Scope]: ...
    def fact_texts_matching(self, conn: Connection, tokens: Iterable[str], scope: Scope,
                            limit: int) -> list[tuple[int, str]]: ...
    def given_from(self, conn: Connection, ids: Sequence[int]
                   ) -> dict[int, list[tuple[str, str, str | None]]]: ...
    def active_facts(self, conn: Connection, subject: str, scope: Scope) -> list[FactRow]: ...
    def latest_occurred(self, conn: Connection, ids: Sequence[int]) -> float | None: ...
    def occurred_at(self, conn: Connection, mid: int) -> float: ...
    def mark_preference(self, conn: Connection, mid: int, subject: str, predicate: str,
                        obj: str | None, category: str) -> None: ...
    def add_link(self, conn: Connection, src: int, dst: int, kind: LinkKind, now: float,
                 weight: float = 1.0) -> bool: ...
    def source_count(self, conn: Connection, mid: int) -> int: ...
    def set_confidence(self, conn: Connection, mid: int, confidence: float) -> None: ...
    def set_valid_until(self, conn: Connection, mid: int, until: float | None) -> None: ...
    def validate(self, conn: Connection, mid: int) -> None: ...
    def states(self, conn: Connection, ids: Sequence[int]) -> dict[int, MemoryState]: ...
    def restore_state(self, conn: Connection, mid: int, state: MemoryState) -> None: ...
    def supersede(self, conn: Connection, loser: int, winner: int, now: float
                  ) -> MemoryState | None: ...
    def mention_sources(self, conn: Connection) -> Iterator[MentionSource]: ...
    def relations(self, conn: Connection) -> list[RelationRow]: ...
    def link_mark(self, conn: Connection) -> Json: ...
    def merge_candidates(self, conn: Connection) -> tuple[list[MergeFact], list[MergeHabit]]: ...
    def derived_sources(self, conn: Connection, mid: int) -> list[int]: ...
    def unlinked_successions(self, conn: Connection) -> list[tuple[int, int]]: ...
    def topic_mentions(self, conn: Connection, kinds: Sequence[str]) -> list[TopicMention]: ...
    def facts_sharing_entities(self, conn: Connection, mid: int, skip: Sequence[str],
                               limit: int) -> list[int]: ...
    def entity_keys(self, conn: Connection) -> list[EntityKey]: ...
    def add_entity(self, conn: Connection, kind: str, name: str, scope: Scope,
                   now: float) -> int: ...
    def add_mention(self, conn: Connection, entity_id: int, mid: int) -> bool: ...
    def habit_episodes(self, conn: Connection) -> list[HabitEpisode]: ...
    def summary_turns(self, conn: Connection) -> list[SessionTurn]: ...
    def turn_event_vectors(self, conn: Connection, turns: Sequence[int], model: str
                           ) -> dict[int, bytes]: ...
    def route_by_llm(self, conn: Connection, episode: int, score: float, stores: Sequence[str],
                     reason: str) -> tuple[int, dict[str, Json]] | None: ...
    def procedure_triggers(self, conn: Connection) -> dict[tuple[str, Scope], KnownHabit]: ...
    def set_procedure_counts(self, conn: Connection, mid: int, success: int, failure: int
                             ) -> None: ...
    def mark_procedure(self, conn: Connection, mid: int, trigger: str, actions: Sequence[str],
                       success_count: int, failure_count: int = 0) -> None: ...
    def episode_signals(self, conn: Connection) -> Iterator[EpisodeSignal]: ...
    def top_person(self, conn: Connection, scope: Scope) -> tuple[str, int] | None: ...
    def statistics(self, conn: Connection) -> list[ComputedStatistic]: ...
    def update_statistic(self, conn: Connection, mid: int, value: float, sample_size: int,
                         text: str, now: float) -> None: ...
    def decay_rows(self, conn: Connection) -> list[DecayRow]: ...
    def archive(self, conn: Connection, mid: int) -> None: ...
    def was_promoted(self, conn: Connection, mid: int) -> bool: ...
    def set_scores(self, conn: Connection,
                   updates: Sequence[tuple[float, float, float, int]]) -> None: ...
    # issue 27 item 3: archives and one entity per thing
    def entity_states(self, conn: Connection) -> list[EntityState]: ...
    def project_mentions(self, conn: Connection) -> list[tuple[int, str]]: ...
    def archive_entity(self, conn: Connection, eid: int, ended_at: float, how: str
                       ) -> str: ...
    def unarchive_entity(self, conn: Connection, eid: int) -> None: ...
    def merge_entity(self, conn: Connection, kept: int, merged: int, reason: str,
                     now: float) -> int: ...
    def unmerge_entity(self, conn: Connection, merge_id: int) -> EntityMerge | None: ...
    def entity_merges(self, conn: Connection, eid: int) -> list[EntityMerge]: ...
    def distinct_entities(self, conn: Connection) -> list[tuple[int, int]]: ...
    def keep_apart(self, conn: Connection, a: int, b: int) -> None: ...
    def entity_scopes(self, conn: Connection) -> list[EntityScope]: ...
    def summary_facts(self, conn: Connection, entity: EntityScope,
                      limit: int = 40) -> list[SummaryFact]: ...
    def set_summary(self, conn: Connection, entity_id: int, summary: str | None,
                    now: float) -> None: ...
    # issue 27 item 6 (storage/scores.py): boosters, confidence factors, working promotion.
    def boost_rows(self, conn: Connection, stores: Sequence[str]) -> list[BoostRow]: ...
    def set_boosts(self, conn: Connection,
                   updates: Sequence[tuple[float, float | None, int]]) -> None: ...
    def factor_rows(self, conn: Connection, ids: Sequence[int] | None = None,
                    stores: Sequence[str] = ()) -> list[FactorRow]: ...
    def set_confidence_factors(self, conn: Connection, updates: Sequence[
            tuple[float, float | None, float | None, int]]) -> None: ...
    def used_turns_unpromoted(self, conn: Connection, min_accesses: int) -> list[int]: ...


class RunLogRows(Protocol):
    """The run log (``storage.runlog``)."""

    def start(self, conn: Connection, kind: str, started_at: float) -> int: ...
    def finish(self, conn: Connection, run_id: int, finished_at: float, status: str,
               report: Mapping[str, Any]) -> None: ...
    def add_change(self, conn: Connection, run_id: int, seq: int, kind: str,
                   memory_id: int | None, payload: Mapping[str, Any]) -> None: ...
    def get(self, conn: Connection, run_id: int) -> RunRow | None: ...
    def later_runs_with_changes(self, conn: Connection, run_id: int) -> list[int]: ...
    def changes(self, conn: Connection, run_id: int) -> list[RunChange]: ...
    def revert(self, conn: Connection, change: RunChange) -> None: ...
    def mark_undone(self, conn: Connection, run_id: int, at: float) -> None: ...
    def recent(self, conn: Connection, limit: int) -> list[RunRow]: ...


__all__ += ["ComputedStatistic", "ConsolidationRows", "DecayRow", "EntityKey", "EntityScope",
            "EpisodeRow", "EpisodeSignal", "FactRow", "HabitEpisode", "InboxEntry", "InboxRow",
            "MemoryState", "MentionSource", "RelationRow", "RunChange", "RunLogRows", "RunRow",
            "Scope", "SummaryFact"]


class AgentRows(Protocol):
    """Paired assistants and their pending forget requests (storage/agents.py, issue 14)."""
    def put_agent(self, conn: Connection, name: str, key_hash: str, now: float) -> None: ...
    def agent_key_hash(self, conn: Connection, name: str) -> str | None: ...
    def get_agent(self, conn: Connection, name: str) -> AgentRow | None: ...
    def list_agents(self, conn: Connection) -> list[AgentRow]: ...
    def revoke_agent(self, conn: Connection, name: str, now: float) -> bool: ...
    def touch_agent(self, conn: Connection, name: str, now: float) -> None: ...
    def add_pending_forget(self, conn: Connection, agent: str, ids: list[int],
                           query: str | None, reason: str, now: float) -> int: ...
    def get_pending_forget(self, conn: Connection, pid: int,
                           expired_before: float = ..., ttl: float = ...
                           ) -> PendingForget | None: ...
    def pending_forgets(self, conn: Connection, status: str | None, agent: str | None,
                        limit: int, expired_before: float = ..., ttl: float = ...
                        ) -> list[PendingForget]: ...
    def decide_pending_forget(self, conn: Connection, pid: int, status: str,
                              now: float) -> bool: ...
    def agents_of(self, conn: Connection, ids: Sequence[int]) -> dict[int, str]: ...
    def add_reads(self, conn: Connection, agent: str, ids: Sequence[int], via: str,
                  now: float) -> None: ...
    def memory_reads(self, conn: Connection, mid: int) -> list[MemoryRead]: ...
    def reads_by(self, conn: Connection, agent: str, limit: int) -> list[AgentRead]: ...


class BoostRow(NamedTuple):
    """What 002's scheduled booster reads of one memory (storage/scores.py)."""
    id: int
    composite: float
    importance: float
    boosted_at: float | None
    created_at: float


class FactorRow(NamedTuple):
    """What 003's moving confidence factors read of one memory (storage/scores.py):
    ``applied_user``/``applied_usage`` are the factors its stored confidence includes (None:
    unknown); ``corrected``: the person replaced it; ``contradicted``: a CONTRADICTS link."""
    id: int
    store: str
    confidence: float
    access_count: int
    user_validated: int
    applied_user: float | None
    applied_usage: float | None
    corrected: int
    contradicted: int


__all__ += ["BoostRow", "FactorRow"]
# --- episodes' outcomes (issue 27 item 8, ``storage.episodes``) ----------------------------

class EpisodeOutcome(NamedTuple):
    """What an episode says of how it went (all None: nothing said)."""
    rating: int | None        # -1, 0, +1: the person's
    outcome: str | None       # the words
    outcome_by: str | None    # 'person' or 'inferred'
    rated_at: float | None


class OutcomeTurn(NamedTuple):
    """An active episode as outcome inference reads it (in conversation order)."""
    id: int
    text: str
    speaker: str
    session: str
    occurred_at: float


# --- vectors made after the acknowledgement (issue 28, ``storage.vector_pending``) ----------

class VectorPendingRows(Protocol):
    def mark_pending(self, conn: Connection, mid: int) -> None: ...
    def pending(self, conn: Connection, limit: int | None = None
                ) -> list[tuple[int, Store, str, str | None, float | None]]: ...
    def settle_vectors(self, conn: Connection, ids: Sequence[int], vecs: np.ndarray,
                       model: str) -> list[int]: ...
    def existing(self, conn: Connection, ids: Sequence[int]) -> set[int]: ...
    def count(self, conn: Connection) -> int: ...
    def first(self, conn: Connection) -> int | None: ...
__all__ += ["VectorPendingRows"]
