"""The contract of the facade: every type that goes in or out of ``app.facade.Vault``, and
``VaultAPI``, the Protocol that the in-process ``Vault`` implements (and that an IPC client
will implement too). Layer: app. Imports nothing but ``app.domain``, ``app.changes`` and the
standard library, so any front end, service or storage module can import it.

Plain data only: frozen dataclasses of str, int, float, bool, None, tuples, typed maps of
names to numbers, ``Literal``s and the ids of ``app.domain`` (``MemoryId``, ``EntityId``,
``RunId``). No ``Any``, and no ``dict`` in a signature of ``VaultAPI``
(tests/guards/test_contract.py). ``dataclasses.asdict`` of a value is its JSON form (the CLI's
``--json`` output).

Where to add something: a new result or argument type goes here, next to its neighbours; the
service that builds it imports it from here (the old import paths, e.g.
``app.services.forget.ForgetPlan``, re-export these names).

One memory, four shapes, each for a reason (issue 24): ``app.domain.memory.Memory`` is the
record, every column (``get``, the export's ``MemoryRecord``); ``Hit`` is a recall result and
``MemoryRow`` a list row: projections that carry what their screen needs and what the
record does not have (a score and its parts, refs, a currency mark; a tier), so a page of 200
rows or a recall of 50 crosses the socket without 200 whole records; ``app.ports.BrowseRow``
is the storage row behind ``MemoryRow``, the columns as SQLite holds them, from which the app
computes the tier (a policy storage does not know). Their ``store``, ``status``, ``tier`` and
link ``kind`` are the enums of ``app.domain.memory`` wherever they leave storage.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal, NamedTuple, Protocol

from app.changes import Changes, Result
from app.domain.memory import (
    Draft,
    EntityId,
    LinkKind,
    Memory,
    MemoryId,
    RunId,
    Scores,
    Status,
    Store,
    Tier,
)
from app.eta import Estimate
from app.operations import Access, op

__all__ = [
    "DEFAULT_ENTITY_KINDS", "KIND_LABELS", "AgentRead", "AgentRow", "AssistantFact", "FactOutcome", "FactStatus", "PendingChange",
    "MemoryRead", "PendingForget", "PendingStatus", "LIVE", "SECTIONS", "BatchFailure", "CancelToken",
    "Changes", "Context", "ContextItem", "ContextSection", "ContradictionItem", "CreateResult",
    "Draft", "EntityCard", "EntityId", "EntityRow", "EntityMergeRow", "Explanation", "Filters", "ForgetPlan", "ForgetReport",
    "History", "HistoryEntry", "Hit", "ImportReport", "InboxPage", "InboxStatus", "IndexMode",
    "LinkRecord", "MemoryRecord", "BackupCheck", "BackupRecord", "BackupRemade",
    "InsightMetric", "Insights", "ItemKind", "KdfInfo", "LinkView", "Listener", "Memory", "MemoryId", "MemoryQuery",
    "MemoryRow", "MemoryView", "Page", "PlanItem", "PlanRole", "Progress", "ResolveChoice",
    "Result", "RunId", "RunOutcome", "RunReport", "RunStatus", "RunSummary", "Scores",
    "SettingValue", "SourceView", "StatisticRow", "Status", "Store", "Turn", "UndoReport",
    "VaultAPI", "VaultStatus", "Version",
]

# --- small shared types -----------------------------------------------------------------

Listener = Callable[[Changes], None]
Progress = Callable[[int, int], None]  # (done, total)
SettingValue = bool | int | float | str  # what app/settings.py declares

InboxStatus = Literal["open", "auto", "resolved"]
# "change": an assistant says a person's fact changed (``remember_fact`` with ``replaces`` or
# ``change``); stored as a contradiction whose reason is "<assistant> says this changed"
# (``app.services.assistant_change.is_change_reason``), accepted with keep "b".
ItemKind = Literal["contradiction", "review", "change"]
ResolveChoice = Literal["a", "b", "both", "edit", "still_true"]
RunStatus = Literal["running", "done", "partial", "cancelled", "undone"]
IndexMode = Literal["chroma", "exact", "off"]
PlanRole = Literal["matched", "version", "derived", "source", "staying"]
ContextSection = Literal["procedures", "people", "facts", "timeline", "recent"]
EntityKind = Literal["person", "pet", "place", "company", "project", "area", "resource", "work",
                     "archive"]  # storage/migrations/0019_entity_kinds.sql allows these

SECTIONS: tuple[ContextSection, ...] = ("procedures", "people", "facts", "timeline", "recent")
# MemoryQuery.status: active or archived (what the person has not forgotten)
LIVE: Literal["live"] = "live"
ListOrder = Literal["newest", "oldest", "strongest", "weakest"]


class CancelToken:
    """Set from any thread; long work checks it between batches."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


# --- status and keys ---------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class KdfInfo:
    """The password KDF of the key file (no salt, nothing secret)."""
    alg: str
    version: int
    m_kib: int
    t: int
    p: int


@dataclass(frozen=True, slots=True)
class VaultStatus:
    vault_id: str
    path: str
    kdf: KdfInfo
    counts: dict[str, dict[str, int]]  # store -> status -> memories
    totals: dict[str, int]             # store -> memories
    schema_version: str
    model_found: bool
    model_dir: str | None
    semantic_search: bool
    vectors: int
    index: IndexMode
    recovery_code: bool
    remember_device: bool
    open_contradictions: int = 0    # open Inbox contradictions (an assistant's: both sides seen)
    agent: str | None = None        # counted as this assistant sees the vault; None: all
    model: str | None = None        # the model id in use (its vectors carry it); None: off
    model_source: str | None = None  # "installed with Kept", "from KEPT_MODEL_DIR", ...
    model_problem: str | None = None  # why semantic search is off though a model was found
    model_compute: str | None = None  # "int8" or "float32": what its weight products run in
    vector_models: dict[str, int] = field(default_factory=dict)  # model id -> vectors it made
    # Memories whose vector is still to be made (a file import's follow it, issue 28), and the
    # rate this session's follower measured making them (None: none made yet, or not here).
    vectors_pending: int = 0
    vectors_per_s: float | None = None


@dataclass(frozen=True, slots=True)
class CreateResult:
    vault: VaultAPI
    recovery_code: str | None
    kdf_seconds: float
    kdf_warning: str | None = None


# --- ingestion -----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Turn:
    """One validated conversation turn of ``kept import``."""

    session: str
    speaker: str
    text: str
    at: float
    ref: str
    store: Store = Store.EPISODIC  # where the memory derived from the turn goes
    line: int = 0
    extra: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Skipped:
    """Input an import read and left out on purpose, said in the report: what it was (plural
    words, "messages with images only"), how many, and the first few names (a note's path,
    never content)."""
    what: str
    count: int
    names: tuple[str, ...] = ()

    def __str__(self) -> str:
        shown = f": {', '.join(self.names)}" if self.names else ""
        more = ", ..." if self.names and self.count > len(self.names) else ""
        return f"{self.count:,} {self.what} skipped{shown}{more}"


def merge_skipped(*groups: tuple[Skipped, ...]) -> tuple[Skipped, ...]:
    """Skips of the same kind added up (first names kept), in the order first seen."""
    out: dict[str, Skipped] = {}
    for group in groups:
        for s in group:
            was = out.get(s.what)
            out[s.what] = s if was is None else Skipped(
                s.what, was.count + s.count, (was.names + s.names)[:5])
    return tuple(out.values())


@dataclass(frozen=True, slots=True)
class ImportReport:
    turns: int
    added: int
    skipped_duplicates: int
    sessions: int
    ids: tuple[MemoryId, ...] = ()
    skipped: tuple[Skipped, ...] = ()  # left out on purpose (images only, system messages...)


# --- recall, context, explain -------------------------------------------------------------

CurrencyState = Literal["current", "earlier", "superseded", "pending"]
WrittenBy = str  # "person", "kept" (what consolidation derived) or an assistant's name


@dataclass(frozen=True, slots=True)
class PendingChange:
    """A change an assistant proposed to a person's fact, waiting in the Inbox (issue 26): the
    item, the new value, from when, and which assistant says so."""
    inbox_id: int
    memory_id: MemoryId     # the proposed fact (in the assistant's scope)
    value: str
    valid_from: float | None
    by: str


@dataclass(frozen=True, slots=True)
class Currency:
    """Whether what a memory says is the latest word on its subject (issue 23): ``current``;
    ``earlier`` when the same holder said something later about the same thing (``later_id``,
    ``later_at``); ``superseded`` when a fact stopped holding (``ended_at``, and what replaced
    it in ``later_id``); ``pending`` when an assistant's change to it waits in the Inbox
    (``pending``, issue 26)."""
    state: CurrencyState
    later_id: MemoryId | None = None
    later_at: float | None = None
    ended_at: float | None = None
    pending: PendingChange | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    id: MemoryId
    store: Store
    text: str
    score: float
    refs: tuple[str, ...]
    occurred_at: float
    speaker: str | None
    breakdown: dict[str, float]  # the parts of the score, by name (explain shows them)
    status: Status = Status.ACTIVE
    agent: str = "global"  # or the assistant that wrote it (the window marks "from NAME")
    currency: Currency | None = None  # current, or earlier / superseded and by what
    confirmed_by_person: bool = False  # user-validated (the person confirmed or wrote it)
    written_by: WrittenBy = "person"   # "person", "kept" (derived) or the assistant's name


@dataclass(frozen=True, slots=True)
class Filters:
    """Which memories a recall may return. Time travel has two axes
    (docs/memory-model.md#time-travel): ``as_of`` is what was said and true at D (happened by D;
    valid at D by its validity window; a state that later changed counts, a statement corrected or
    refuted does not): the axis a person means, and the only one that works on imported history.
    ``known_at`` is what Kept had learned by D (and not yet replaced). ``happened_by``: nothing that
    happened after it (the facade sets it to an explicit ``now``; the clock's own now filters
    nothing, so a memory dated a little ahead of this machine's clock is not lost)."""

    stores: tuple[str, ...] | None = None
    agent: str | None = None            # None: every agent; else global + this agent
    context: str | None = None
    since: float | None = None
    until: float | None = None
    as_of: float | None = None          # said and true at D (occurred by D, valid at D)
    known_at: float | None = None       # what Kept had learned by D
    happened_by: float | None = None    # occurred at or before this
    # What decay archived is always searched, ranked lower; what the person archived only
    # with ``include_archived``. ``only_archived``: the Archive (both kinds, nothing else).
    include_archived: bool = False
    only_archived: bool = False
    include_superseded: bool = False
    # Only memories that mention this person or project (PARA entity id).
    entity_id: int | None = None
    # A relevance cut-off: drop hits scoring below this share of the best one (the window's
    # search: what is far below the best match is noise to a person, not an answer).
    min_share: float | None = None


@dataclass(frozen=True, slots=True)
class ContextItem:
    id: int | None  # a memory's id; None for an entity summary (section "people": ``entity``)
    section: ContextSection
    text: str
    tokens: int
    currency: Currency | None = None  # earlier / superseded: the text says so too
    entity: str | None = None         # an entity summary: the entity's name ...
    entity_kind: str | None = None    # ... and kind (person, project, ...)
    confirmed_by_person: bool = False
    written_by: WrittenBy = "person"


@dataclass(frozen=True, slots=True)
class Context:
    query: str
    budget: int
    used: int
    items: tuple[ContextItem, ...]

    def render(self) -> str:
        titles = {"procedures": "How the person works", "people": "People and projects",
                  "facts": "Facts", "timeline": "Timeline", "recent": "Recent conversation"}
        out = []
        for section in SECTIONS:
            items = [i for i in self.items if i.section == section]
            if items:
                out.append(f"## {titles[section]}")
                out += [f"- [{i.id}] {i.text}" if i.id is not None else f"- {i.text}"
                        for i in items]
        return "\n".join(out)


@dataclass(frozen=True, slots=True)
class SourceView:
    """One memory of a provenance chain, as explain shows it."""
    id: MemoryId
    store: Store
    text: str
    ref: str | None
    speaker: str | None
    occurred_at: str | None  # ISO 8601


@dataclass(frozen=True, slots=True)
class LinkView:
    src: MemoryId
    dst: MemoryId
    kind: LinkKind
    weight: float


@dataclass(frozen=True, slots=True)
class RoutingView:
    """Where an incoming turn went and why (issue 27 item 1, reference 004's salience): its
    salience in [0, 1], the stores it went to, the reason in plain words, and who decided
    ("rules" or "llm")."""
    salience: float
    stores: tuple[Store, ...]
    reason: str
    by: str = "rules"


@dataclass(frozen=True, slots=True)
class Explanation:
    id: MemoryId
    store: Store
    text: str
    status: Status
    tier: Tier
    scores: dict[str, float]            # importance, recency, ..., confidence, access_count
    breakdown: dict[str, float] | None  # the parts of the score for the query, if one was given
    sources: tuple[SourceView, ...]
    links: tuple[LinkView, ...]
    currency: Currency | None = None  # for the query given: current, earlier, superseded
    confirmed_by_person: bool = False
    written_by: WrittenBy = "person"
    routing: RoutingView | None = None  # an incoming turn (or its episode): salience routing


# --- forget and history (docs/memory-model.md#forgetting) -----------------------------------------

KIND_LABELS = {
    "memory": "memories", "memory_fts": "full-text rows", "vector": "vectors",
    "link": "links", "history": "history entries", "entity": "people and projects",
    "entity_mention": "entity mentions", "contradiction": "contradictions",
    "llm_reply": "stored LLM replies", "llm_reply_source": "LLM reply sources",
    "run_change": "consolidation log entries", "episode": "episode details",
    "fact": "fact details", "procedure": "procedure details", "statistic": "statistics",
    "routing": "routing decisions",
}


@dataclass(frozen=True, slots=True)
class PlanItem:
    id: MemoryId
    store: Store
    status: Status
    text: str
    role: PlanRole
    # For a matched memory: how it was matched, "id", "entity" or the field the query was
    # found in ("text", "speaker", "session name", "ref", "agent", ...); for one that stays:
    # the reason it stays.
    reason: str = ""

    @property
    def why(self) -> str:
        """What the plan shows next to the item ("" when it goes without saying)."""
        if self.role == "staying":
            return self.reason
        if self.role == "matched" and self.reason not in ("", "id", "entity", "text"):
            return f"found in its {self.reason}"
        return ""


@dataclass(frozen=True, slots=True)
class BackupRecord:
    """A backup file the vault made (``kept backup create``): where, when, and what it held,
    in counts. ``exists``: the file is still there and still that backup."""
    id: int
    path: str
    created_at: float
    bytes: int
    memories: int
    links: int
    history: int
    vectors: int
    max_memory_id: int   # memory ids are never reused: it holds memory m iff m.id <= this
    own_password: bool   # a password of its own (else the vault's when it was made)
    exists: bool = True


@dataclass(frozen=True, slots=True)
class BackupCheck:
    """What ``kept backup verify`` / ``restore`` found in a backup file (counts only)."""
    path: str
    vault_id: str
    created_at: float
    schema_version: str
    bytes: int
    memories: int
    links: int
    history: int
    vectors: int
    settings: int


@dataclass(frozen=True, slots=True)
class BackupRemade:
    """One recorded backup after ``remake_backups``: made again without what was forgotten
    (``ok``), or why not; ``vault_password``: it opens with the vault's password now (its own
    password wrapped a data key that was rotated since)."""
    path: str
    ok: bool
    message: str
    record: BackupRecord | None = None
    vault_password: bool = False


PairState = Literal["waiting", "joined", "refused", "closed"]


@dataclass(frozen=True, slots=True)
class SyncDeviceRow:
    """One device of the synced vault (issue 29, Settings > Devices, ``kept sync status``).
    ``last_seen``: when the newest file it wrote in the sync folder was written (None: none
    yet); ``waiting``: its changes in the folder not applied here yet (for this device: its
    own changes not written to the folder yet)."""
    device_id: str
    name: str
    this_device: bool
    founder: bool
    revoked: bool
    last_seen: float | None
    waiting: int
    successor: bool = False    # the founder named it to take over if the founder is lost


@dataclass(frozen=True, slots=True)
class SyncStatus:
    """Sync on this device. ``set_up`` False: this device does not sync (every other field is
    empty). ``folder_found``: the folder is there and holds this vault's root file."""
    set_up: bool
    folder: str = ""
    folder_found: bool = False
    vault_id: str = ""
    device_id: str = ""
    founder: bool = False
    devices: tuple[SyncDeviceRow, ...] = ()
    pairing: str = ""          # an open pairing, in words ("" when none)
    successor: bool = False    # this device is the named successor (it may take over)


@dataclass(frozen=True, slots=True)
class ForgetLine:
    """How far one recent forget has gone on the vault's devices (issue 29 item 4): ``words``
    as the window says it ("Forgotten on 2 of 3 devices; waiting for phone."); ``waiting``:
    the names of the devices that have not acknowledged it yet; ``closed``: old copies in the
    sync folder can no longer be read."""
    words: str
    done: int
    total: int
    waiting: tuple[str, ...] = ()
    closed: bool = False


@dataclass(frozen=True, slots=True)
class SyncActivity:
    """What the owner's sync job did (issue 29 items 1 and 6; ``app/sync/runner.py``).
    ``running``: the process that owns this vault ticks its sync engine (False when this
    device does not sync, or for a vault a command opened itself). Times are epoch seconds;
    ``problem`` is the last tick's trouble in words ("" after a good tick); ``sending``: this
    device's changes not yet written to the folder; ``findings``: what the last tick noticed in
    the folder (a gap, an unreadable file), by device id and sequence, never content."""
    running: bool = False
    last_sync: float | None = None
    last_try: float | None = None
    problem: str = ""
    sending: int = 0
    received: int = 0               # other devices' changes the last good tick brought
    findings: tuple[str, ...] = ()
    forgets: tuple[ForgetLine, ...] = ()
    at: float | None = None         # the owner's clock when this was read ("12 s ago" from it)


@dataclass(frozen=True, slots=True)
class PairInvite:
    """A pairing opened on the device that set up sync: the code to type on the new device
    (also as the QR code's text), until ``expires_at``, ``tries`` attempts."""
    code: str
    qr_text: str
    expires_at: float
    tries: int


@dataclass(frozen=True, slots=True)
class PairStep:
    """Where an open pairing stands, on either device; ``message`` says it in words."""
    state: PairState
    message: str
    device_name: str = ""
    tries_left: int = 0


@dataclass(frozen=True, slots=True)
class ForgetPlan:
    items: tuple[PlanItem, ...]
    entity_ids: tuple[EntityId, ...]
    include_sources: bool
    rows: dict[str, int]            # rows that will be deleted, per table
    index_entries: int              # ids in the in-RAM vector index
    entity_summaries: int           # summaries cleared and regenerated
    statistics_to_recompute: int
    fingerprint: str
    staying: tuple[PlanItem, ...] = ()  # linked to what goes but not going, with reasons
    # Backups this vault made, still on disk, that hold some of what goes (made before it).
    backups: tuple[BackupRecord, ...] = ()

    @property
    def memory_ids(self) -> tuple[MemoryId, ...]:
        return tuple(i.id for i in self.items)

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())

    def groups(self) -> dict[str, int]:
        """Counts by kind, as shown to the person."""
        out: dict[str, int] = {}
        for role in ("matched", "version", "derived", "source"):
            n = sum(1 for i in self.items if i.role == role)
            if n:
                out[{"matched": "matched memories", "version": "earlier versions",
                     "derived": "derived facts and procedures",
                     "source": "source turns and episodes"}[role]] = n
        for table, n in self.rows.items():
            if n and table != "memory":
                out[KIND_LABELS.get(table, table)] = n
        if self.index_entries:
            out["search index entries"] = self.index_entries
        if self.entity_summaries:
            out["entity summaries to rewrite"] = self.entity_summaries
        if self.statistics_to_recompute:
            out["statistics to recompute"] = self.statistics_to_recompute
        return out


@dataclass(frozen=True, slots=True)
class ForgetReport:
    deleted: dict[str, int]  # rows deleted, per table
    memories: int
    total_rows: int
    checkpoint_busy: int
    index_removed: int
    note: str = "Forgotten for good: this cannot be undone."


@dataclass(frozen=True, slots=True)
class Version:
    id: MemoryId
    text: str
    status: Status
    created_at: float
    user_validated: bool
    confidence: float


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    memory_id: MemoryId
    at: float
    action: str
    text: str | None
    detail: str | None


@dataclass(frozen=True, slots=True)
class History:
    id: MemoryId
    versions: tuple[Version, ...]
    entries: tuple[HistoryEntry, ...]


# --- consolidation: runs, the inbox (docs/memory-model.md#consolidation) --------------------------

@dataclass(frozen=True, slots=True)
class BatchFailure:
    """One batch (or a whole step, ``items`` 0) that failed and will be retried. Only the
    exception's class is kept: its message may quote what the memories say."""
    step: str
    error: str
    items: int = 0


@dataclass(frozen=True, slots=True)
class RunReport:
    run_id: RunId
    kind: str
    started_at: float
    seconds: float
    counts: dict[str, int]
    ids: dict[str, list[int]]
    failed_batches: int
    cancelled: bool = False
    failures: tuple[BatchFailure, ...] = ()
    llm_fallbacks: dict[str, int] = field(default_factory=dict)

    @property
    def failure_text(self) -> str:
        """'2 failed batches (extract: TypeError; similar: RuntimeError)', or ''."""
        if not self.failed_batches:
            return ""
        kinds = "; ".join(dict.fromkeys(f"{f.step}: {f.error}" for f in self.failures))
        n = self.failed_batches
        return f"{n} failed batch{'es' if n != 1 else ''}" + (f" ({kinds})" if kinds else "")


def _ints(obj: object) -> dict[str, int]:
    return ({str(k): int(v) for k, v in obj.items() if isinstance(v, int | float)}
            if isinstance(obj, dict) else {})


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """What a finished run stored about itself (the ``run.report`` column)."""
    counts: dict[str, int]
    ids: dict[str, list[int]]
    failed_batches: int
    failures: tuple[BatchFailure, ...] = ()
    llm_fallbacks: dict[str, int] = field(default_factory=dict)
    seconds: float | None = None

    @classmethod
    def from_json(cls, text: str) -> RunOutcome:
        """Tolerant: reports written by older versions lack the later keys."""
        return cls.from_obj(json.loads(text))

    @classmethod
    def from_obj(cls, obj: object) -> RunOutcome:
        if not isinstance(obj, dict):
            obj = {}
        ids = obj.get("ids")
        failures = obj.get("failures")
        seconds = obj.get("seconds")
        return cls(
            counts=_ints(obj.get("counts")),
            ids=({str(k): [int(i) for i in v] for k, v in ids.items() if isinstance(v, list)}
                 if isinstance(ids, dict) else {}),
            failed_batches=int(obj.get("failed_batches") or 0),
            failures=tuple(BatchFailure(str(f.get("step")), str(f.get("error")),
                                        int(f.get("items") or 0))
                           for f in (failures if isinstance(failures, list) else ())
                           if isinstance(f, dict)),
            llm_fallbacks=_ints(obj.get("llm_fallbacks")),
            seconds=float(seconds) if isinstance(seconds, int | float) else None)


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One row of the run log, newest first in ``Vault.runs``."""
    id: RunId
    kind: str
    started_at: float
    finished_at: float | None
    status: RunStatus
    report: RunOutcome | None  # None while the run is going (or if it died before the end)
    undone_at: float | None


@dataclass(frozen=True, slots=True)
class UndoReport:
    run_id: RunId
    counts: dict[str, int]  # change-log entries reverted, by kind ("status", "link", ...)


@dataclass(frozen=True, slots=True)
class MemoryView:
    """One side of an inbox card: the memory, its conversation refs (its own and its
    sources') and the memories it was learned from."""
    id: MemoryId
    text: str
    status: Status
    occurred_at: float | None
    confidence: float | None
    refs: tuple[str, ...]
    sources: tuple[MemoryId, ...]


@dataclass(frozen=True, slots=True)
class ContradictionItem:
    id: int
    a: MemoryView
    b: MemoryView
    reason: str
    status: InboxStatus
    resolution: str | None  # JSON: what was kept and the statuses before, for reopen
    created_at: float
    run_id: RunId | None
    # "review": an LLM asked to forget memory ``a`` (then ``b`` is the same memory): a
    # one-sided card, answered with still true, edit or forget, never with keep a/b/both.
    kind: ItemKind = "contradiction"


@dataclass(frozen=True, slots=True)
class InboxPage:
    """One page of one inbox list (``status``): ``total`` items in the list, ``reviews`` of
    them review requests; ``page`` is clamped to the last page when the list shrank."""
    status: InboxStatus
    page: int
    size: int
    total: int
    reviews: int
    items: tuple[ContradictionItem, ...]

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.size))


# --- browsing (the window's lists) ---------------------------------------------------------

@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """What a list shows: a store, a status (active / archived / ``LIVE`` = active or archived,
    what the person has not forgotten or replaced / None = all), an entity, a day.

    ``fold``: one row per thing said (issue 25): a conversation turn kept as an event is listed
    once, as the event, and behaviour statistics (Insights, their own store) are left out; the
    count folds the same way. ``ids``: only those memories. ``session_of``: the conversation the memory of that id was said
    in (its session's turns and events). ``order``: newest / oldest first (when it happened),
    strongest / weakest first; a page's cursor is its last row's (sort key, id)."""

    store: Store | None = None
    status: Status | Literal["live"] | None = Status.ACTIVE
    entity_id: int | None = None
    day: str | None = None  # YYYY-MM-DD
    fold: bool = False
    session_of: int | None = None
    order: ListOrder = "newest"
    ids: tuple[int, ...] | None = None  # only these (a search's hits, as list rows)

    def day_range(self) -> tuple[float, float] | None:
        if not self.day:
            return None
        # The day on the person's clock (this computer's zone), as the Timeline groups them.
        start = datetime.fromisoformat(self.day)
        return start.timestamp(), (start + timedelta(days=1)).timestamp()


# "All memories": one row per thing said (the window's list and its status bar count it).
ALL_MEMORIES = MemoryQuery(fold=True)


@dataclass(frozen=True, slots=True)
class MemoryRow:
    id: MemoryId
    store: Store
    text: str
    occurred_at: float
    speaker: str | None
    status: Status
    composite: float
    confidence: float
    user_validated: bool
    tier: Tier | None  # None for a search result (a hit has a score, not a tier)
    agent: str = "global"  # or the assistant that wrote it (shown as "from NAME")
    currency: Currency | None = None  # a search result's mark (earlier, superseded)
    relevance: float | None = None  # a search result's score for the query (None in a list)
    written_by: str = ""  # "person", "kept" or an assistant's name (filled for assistants)


@dataclass(frozen=True, slots=True)
class Page:
    rows: tuple[MemoryRow, ...]
    next: tuple[float, int] | None  # cursor for the next page, None when exhausted


@dataclass(frozen=True, slots=True)
class EntityRow:
    id: EntityId
    kind: EntityKind
    name: str
    summary: str | None
    mentions: int
    # issue 27 item 3: an archive's kind before it ended, when and how ('finished', 'idle')
    was_kind: str | None = None
    ended_at: float | None = None
    ended_how: str | None = None


@dataclass(frozen=True, slots=True)
class EntityMergeRow:
    """One merge of two entities (``VaultAPI.entity_merges``): ``merged`` joined ``kept``
    with its mentions; ``reason`` is 'kind' (one name under two kinds), 'name' (a variant:
    a title, a family word) or 'embedding' (a longer name, close in meaning)."""
    id: int
    kept: EntityId
    kept_name: str
    merged: EntityId
    merged_name: str
    reason: str
    merged_at: float


@dataclass(frozen=True, slots=True)
class EntityCard:
    """Everything Kept holds about one name (``VaultAPI.entity``, issue 26): the entities so
    named (every kind), a summary, the facts that hold now and the earlier ones (replaced or
    ended; each with its currency mark). Facts are those that mention it or have it as their
    subject, newest first."""
    name: str
    kind: EntityKind | None           # the first entity's kind; None: only facts name it
    summary: str | None
    entity_ids: tuple[EntityId, ...]
    current: tuple[MemoryRow, ...]
    earlier: tuple[MemoryRow, ...]


class StatisticRow(NamedTuple):
    metric: str
    value: float
    sample_size: int
    text: str


@dataclass(frozen=True, slots=True)
class InsightMetric:
    """One number of 002's monitoring (issue 27 item 9), with its words: ``value`` None when
    there is nothing to measure yet; ``text`` the value said; ``tip`` what it means."""
    key: str
    label: str
    value: float | None
    text: str
    tip: str


@dataclass(frozen=True, slots=True)
class Insights:
    by_store: dict[str, int]
    by_tier: dict[str, int]
    health: dict[str, float]
    statistics: tuple[StatisticRow, ...]
    # Issue 27 item 9 (002's monitoring): retrieval efficiency, layer utilisation, promotion
    # and archive rates, quality ratio; assistants' reads by store, over ``period_days``.
    metrics: tuple[InsightMetric, ...] = ()
    reads_by_store: dict[str, int] = field(default_factory=dict)
    period_days: int = 0



# --- assistants (issue 14: `kept mcp`) -------------------------------------------------------

PendingStatus = Literal["pending", "done", "declined", "expired"]


@dataclass(frozen=True, slots=True)
class AgentRow:
    """A paired assistant (``kept agents pair NAME``); the key itself is never stored."""
    name: str
    created_at: float
    revoked_at: float | None
    last_seen_at: float | None


@dataclass(frozen=True, slots=True)
class AssistantFact:
    """A structured fact an assistant's LLM extracted (``remember_fact``). It goes through
    consolidation's fact policy: duplicates corroborate, conflicts reach the Inbox."""
    subject: str
    attribute: str                    # snake_case predicate, e.g. lives_in
    value: str
    statement: str = ""               # the fact as a sentence; built from the parts if empty
    valid_from: float | None = None
    confidence: float = 0.6
    source_ids: tuple[MemoryId, ...] = ()  # the turn(s) it came from (ids from remember)
    # Issue 26: the assistant says the value changed. ``replaces``: the memory it replaces
    # (an id it saw); ``change``: whatever the slot (subject + attribute) held before. In the
    # assistant's own scope the earlier value ends at ``valid_from`` and is superseded; a
    # person's (global) fact is never replaced: the change waits in the Inbox.
    replaces: MemoryId | None = None
    change: bool = False


FactStatus = Literal["saved", "already_known", "changed", "sent_to_inbox"]


@dataclass(frozen=True, slots=True)
class FactOutcome:
    id: MemoryId | None               # the new fact, or None when it was already known
    status: FactStatus
    contradictions: int               # conflicts with known facts found (each in the Inbox)
    sent_to_inbox: tuple[int, ...]    # inbox items left for the person to settle
    run_id: RunId
    replaced_id: MemoryId | None = None  # "changed": the earlier value it superseded
    inbox_id: int | None = None          # "sent_to_inbox": the change waiting for the person


@dataclass(frozen=True, slots=True)
class PendingForget:
    """An assistant's request to forget: nothing goes until the person confirms."""
    id: int
    agent: str
    memory_ids: tuple[MemoryId, ...]
    query: str | None
    reason: str
    created_at: float
    status: PendingStatus
    decided_at: float | None
    expires_at: float | None = None   # a pending request's end (forget.request_days)


@dataclass(frozen=True, slots=True)
class MemoryRead:
    """An assistant read a memory (ids and times only; it goes with the memory)."""
    agent: str
    via: Literal["recall", "context", "explain"]
    at: float


@dataclass(frozen=True, slots=True)
class AgentRead:
    """A memory one assistant read (``VaultAPI.agent_reads``): when, how, and the memory."""
    memory_id: MemoryId
    store: Store
    text: str  # cut to 300 characters
    via: Literal["recall", "context", "explain"]
    at: float


# --- export (issue 16: `kept export`) --------------------------------------------------------

EXPORT_PAGE_JSON = 400_000  # characters of JSON text (memories' and history's) per export page


@dataclass(frozen=True, slots=True)
class LinkRecord:
    """A link from a memory, with the store and time of the memory it points to (an export
    links a fact to the day file of its source without another read)."""
    src: MemoryId
    dst: MemoryId
    kind: LinkKind
    weight: float
    created_at: float
    dst_store: Store
    dst_occurred_at: float


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One memory with everything that hangs on it (``VaultAPI.export_memories``): every
    field and store-specific column, its conversation refs (its own and its sources'), the
    links from it (each link appears once, at its source), its history, the entities it
    mentions and the assistants' reads of it."""
    memory: Memory
    refs: tuple[str, ...]
    links: tuple[LinkRecord, ...]
    history: tuple[HistoryEntry, ...]
    entities: tuple[EntityId, ...]
    reads: tuple[MemoryRead, ...]


# --- the facade ------------------------------------------------------------------------------

DEFAULT_ENTITY_KINDS: tuple[EntityKind, ...] = (
    "person", "pet", "place", "company", "project", "area", "resource", "work", "archive")


class VaultAPI(Protocol):
    """What a front end may call; each member's ``@op`` mark says who may call it and how it
    travels (``app/operations.py``). Methods block (crypto, disk, embeddings): call them off the
    GUI thread (``ui/tasks.py``). Mutations return ``Result`` with the ``Changes`` they made;
    failures raise an ``AppError`` with a ``user_message``."""

    # --- session -------------------------------------------------------------------------
    @property
    @op(Access.SESSION, agent=True)
    def folder(self) -> Path: ...
    @property
    @op(Access.SESSION, agent=True)
    def locked(self) -> bool: ...
    @property
    @op(Access.SESSION, agent=True)
    def semantic_search(self) -> bool: ...
    @op(Access.LOCAL, why="callbacks do not cross processes")
    def subscribe(self, listener: Listener) -> None: ...
    @op(Access.LOCAL, why="callbacks do not cross processes")
    def watch_integrity(self, on_corrupt: Callable[[], None]) -> None: ...
    @op(Access.LOCAL, why="the owner's own jobs; a client has none")
    def background_work(self) -> list[str]: ...
    @op(Access.LOCAL, why="the owner locks (auto-lock, the window); a client only closes its connection")
    def lock(self) -> Result[None]: ...

    # --- keys --------------------------------------------------------------------------
    @op(Access.LOCAL, why="needs the password; only the owner's person types it")
    def change_password(self, old: str, new: str) -> Result[None]: ...
    @op(Access.LOCAL, why="needs the password; rewrites every page")
    def rotate_data_key(self, password: str) -> Result[str | None]: ...
    @op(Access.LOCAL, why="shows a secret")
    def add_recovery_code(self, password: str | None = None) -> str: ...
    @op(Access.LOCAL, why="keychain of the owner's session")
    def remember_device(self) -> Result[None]: ...
    @op(Access.LOCAL, why="keychain of the owner's session")
    def forget_device(self) -> Result[None]: ...
    @op(Access.LOCAL, why="keychain of the owner's session")
    def set_assistant_unlock(self, on: bool) -> Result[None]: ...
    @op(Access.LOCAL, why="keychain of the owner's session")
    def assistant_unlock(self) -> bool: ...
    @op(Access.READ, agent=True, tool="status")
    def status(self, *, agent: str | None = None) -> VaultStatus: ...

    # --- ingestion and reading ---------------------------------------------------------
    @op(Access.HELPER)
    def validate_draft(self, d: Draft) -> Draft: ...
    @op(Access.HELPER)
    def read_import(self, path: Path) -> list[Turn]: ...
    @op(Access.HELPER)
    def check_endpoint(self, url: str) -> str: ...
    @op(Access.HELPER)
    def consent_text(self, url: str) -> str | None: ...
    @op(Access.WRITE, agent=True, tool="remember")
    def remember(self, draft: Draft) -> Result[MemoryId]: ...
    @op(Access.WRITE)
    def import_turns(self, turns: Sequence[Turn], *, progress: Progress | None = None,
                     batch: int = 256, follow: bool = False) -> Result[ImportReport]: ...
    @op(Access.LOCAL, why="the owner makes them on its own thread; `kept status` says how far")
    def make_vectors(self, *, progress: Callable[[Estimate], None] | None = None) -> int: ...
    @op(Access.READ)
    def get(self, mid: int) -> Memory: ...
    @op(Access.READ)
    def refs(self, ids: Iterable[int]) -> Mapping[MemoryId, list[str]]: ...

    # --- recall ------------------------------------------------------------------------
    @op(Access.READ, agent=True, tool="recall")
    def recall(self, query: str, *, k: int = 10, now: float | None = None,
               filters: Filters | None = None, touch: bool = True) -> list[Hit]: ...
    @op(Access.READ)
    def recall_batch(self, queries: Sequence[tuple[str, str, float | None]], *, k: int = 10,
                     filters: Filters | None = None, progress: Progress | None = None
                     ) -> list[tuple[str, list[Hit]]]: ...
    @op(Access.READ, agent=True, tool="context")
    def context(self, query: str, *, budget: int | None = None, now: float | None = None,
                filters: Filters | None = None) -> Context: ...
    @op(Access.READ, agent=True, tool="explain")
    def explain(self, mid: int, query: str | None = None, now: float | None = None
                ) -> Explanation: ...

    # --- forget, correct, history, archive ------------------------------------------------
    @op(Access.READ)
    def forget_plan(self, *, ids: Sequence[int] = (), query: str | None = None,
                    entity: str | None = None, include_sources: bool = True) -> ForgetPlan: ...
    @op(Access.PERSON)
    def forget(self, plan: ForgetPlan) -> Result[ForgetReport]: ...
    @op(Access.PERSON)
    def correct(self, mid: int, text: str) -> Result[MemoryId]: ...
    @op(Access.PERSON)
    def confirm(self, mid: int) -> Result[None]: ...
    @op(Access.READ)
    def history(self, mid: int) -> History: ...
    @op(Access.PERSON)
    def archive(self, mid: int) -> Result[None]: ...
    @op(Access.PERSON)
    def restore(self, mid: int) -> Result[None]: ...
    # Issue 27 item 8: the person's word on how an episode went (no MCP tool: an assistant
    # relays what the person says with ``remember``, and consolidation infers the outcome).
    @op(Access.PERSON)
    def rate_episode(self, mid: int, rating: int | None, outcome: str | None = None
                     ) -> Result[None]: ...

    # --- consolidation and the inbox ---------------------------------------------------
    @op(Access.LOCAL, why="long background work: the owner's scheduler runs it")
    def consolidate(self, *, now: float | None = None, cancel: CancelToken | None = None,
                    progress: Progress | None = None, kind: str = "consolidation",
                    steps: tuple[str, ...] | None = None) -> Result[RunReport]: ...
    @op(Access.READ, agent=True, tool="list_contradictions")
    def contradictions(self, status: InboxStatus | None = "open"
                       ) -> list[ContradictionItem]: ...
    @op(Access.READ)
    def inbox_page(self, status: InboxStatus, page: int = 0, size: int = 25) -> InboxPage: ...
    @op(Access.READ)
    def inbox_items(self, ids: Sequence[int]) -> list[ContradictionItem]: ...
    @op(Access.READ)
    def inbox_count(self) -> int: ...
    @op(Access.PERSON)
    def resolve(self, cid: int, keep: ResolveChoice, text: str | None = None
                ) -> Result[MemoryId | None]: ...
    @op(Access.PERSON)
    def reopen(self, cid: int) -> Result[None]: ...
    @op(Access.PERSON)
    def undo_run(self, run_id: int) -> Result[UndoReport]: ...
    @op(Access.READ)
    def undo_plan(self, run_id: int) -> UndoReport: ...
    @op(Access.READ)
    def runs(self, limit: int = 20) -> list[RunSummary]: ...

    # --- settings ------------------------------------------------------------------------
    @op(Access.READ)
    def setting(self, key: str) -> SettingValue | None: ...
    @op(Access.PERSON)
    def set_setting(self, key: str, value: SettingValue) -> Result[None]: ...

    # --- browsing ------------------------------------------------------------------------
    @op(Access.READ)
    def page_memories(self, query: MemoryQuery, after: tuple[float, int] | None = None,
                      limit: int = 200) -> Page: ...
    @op(Access.READ)
    def count_memories(self, query: MemoryQuery) -> int: ...
    @op(Access.READ)
    def entities(self, kinds: tuple[EntityKind, ...] = DEFAULT_ENTITY_KINDS
                 ) -> list[EntityRow]: ...
    @op(Access.READ)
    def entity_merges(self, entity_id: int) -> list[EntityMergeRow]: ...
    @op(Access.PERSON)
    def undo_entity_merge(self, merge_id: int, *, different: bool = True) -> Result[None]: ...
    @op(Access.READ)
    def timeline_days(self, limit: int = 400) -> list[tuple[str, int]]: ...
    @op(Access.READ)
    def insights(self) -> Insights: ...
    # --- browsing for assistants too (issue 26): one memory, the newest, a name, the Inbox --
    @op(Access.READ, agent=True, tool="get_memory")
    def get_memory(self, mid: int, *, agent: str | None = None) -> MemoryRow: ...
    @op(Access.READ, agent=True, tool="recent_memories")
    def recent_memories(self, limit: int = 10, store: Store | None = None, *,
                        agent: str | None = None) -> list[MemoryRow]: ...
    @op(Access.READ, agent=True, tool="entity")
    def entity(self, name: str, *, agent: str | None = None) -> EntityCard: ...
    @op(Access.READ, agent=True, tool="inbox")
    def inbox(self, limit: int = 5) -> list[ContradictionItem]: ...
    @op(Access.PERSON_READ)
    def export_memories(self, query: MemoryQuery, after: int = 0, limit: int = 200
                        ) -> list[MemoryRecord]: ...

    # --- assistants (issue 14) ------------------------------------------------------------
    @op(Access.PERSON)
    def pair_agent(self, name: str) -> Result[str]: ...
    @op(Access.PERSON)
    def revoke_agent(self, name: str) -> Result[None]: ...
    @op(Access.READ)
    def agents(self) -> list[AgentRow]: ...
    @op(Access.LOCAL, why="the owner checks an assistant's key at hello")
    def verify_agent(self, name: str, key: str) -> AgentRow: ...
    @op(Access.WRITE, agent=True, tool="remember_fact")
    def remember_fact(self, fact: AssistantFact, *, agent: str = "global"
                      ) -> Result[FactOutcome]: ...
    @op(Access.WRITE, agent=True, tool="request_forget")
    def request_forget(self, *, agent: str, ids: Sequence[int] = (), query: str | None = None,
                       reason: str = "") -> Result[PendingForget]: ...
    @op(Access.WRITE, agent=True, tool="correct")
    def correct_own(self, mid: int, text: str, *, agent: str) -> Result[MemoryId]: ...
    @op(Access.READ, agent=True)
    def pending_forgets(self, status: PendingStatus | None = "pending",
                        agent: str | None = None, limit: int = 50) -> list[PendingForget]: ...
    @op(Access.READ, agent=True, tool="forget_status")
    def forget_status(self, request_id: int | None = None, *, agent: str | None = None,
                      limit: int = 20) -> list[PendingForget]: ...
    @op(Access.READ)
    def pending_forget_plan(self, pid: int) -> ForgetPlan: ...
    @op(Access.PERSON)
    def close_pending_forget(self, pid: int, plan: ForgetPlan | None
                             ) -> Result[ForgetReport | None]: ...
    @op(Access.PERSON)
    def share(self, mid: int) -> Result[str]: ...
    @op(Access.PERSON)
    def unshare(self, mid: int) -> Result[str]: ...
    @op(Access.READ)
    def memory_reads(self, mid: int) -> list[MemoryRead]: ...
    @op(Access.READ)
    def agent_reads(self, name: str, limit: int = 50) -> list[AgentRead]: ...
    # Issue 27 item 10: an assistant's workspace, what it holds in its own scope (its facts,
    # its events, its habits), whole, newest first; the page's cursor is its last row's.
    @op(Access.READ)
    def agent_memories(self, name: str, after: tuple[float, int] | None = None,
                       limit: int = 200) -> Page: ...
    @op(Access.LOCAL, why="the owner records its assistants' reads itself")
    def note_reads(self, agent: str, ids: Sequence[int], via: str) -> None: ...
    @op(Access.LOCAL, why="sent as the protocol's elevate")
    def verify_password(self, password: str) -> None: ...

    # --- backups (issue 16) ----------------------------------------------------------------
    @op(Access.PERSON, slow=True)
    def backup(self, path: Path, password: str | None = None, *,
               progress: Progress | None = None) -> Result[BackupRecord]: ...
    @op(Access.PERSON_READ)
    def backups(self) -> list[BackupRecord]: ...
    @op(Access.PERSON, slow=True)
    def remake_backups(self, ids: Sequence[int], *, progress: Progress | None = None
                       ) -> Result[tuple[BackupRemade, ...]]: ...

    # --- devices (issue 29, items 5-6: app/sync/devices.py, app/sync/pairing.py) ---------------
    @op(Access.READ)
    def sync_status(self) -> SyncStatus: ...
    @op(Access.PERSON)
    def sync_set_up(self, folder: Path, name: str = "") -> Result[SyncStatus]: ...
    @op(Access.PERSON)
    def sync_invite(self) -> Result[PairInvite]: ...
    @op(Access.PERSON)
    def sync_join(self, folder: Path, code: str, name: str = "") -> Result[PairStep]: ...
    @op(Access.PERSON)
    def sync_pair_step(self) -> Result[PairStep]: ...
    @op(Access.PERSON)
    def sync_pair_cancel(self) -> Result[None]: ...
    @op(Access.PERSON)
    def sync_revoke(self, device_id: str) -> Result[SyncStatus]: ...
    @op(Access.PERSON)
    def sync_name_successor(self, device_id: str) -> Result[SyncStatus]: ...
    @op(Access.PERSON)
    def sync_take_over(self) -> Result[SyncStatus]: ...
    @op(Access.READ)
    def sync_activity(self) -> SyncActivity: ...
    @op(Access.LOCAL, why="the owner's own sync job; a client has none")
    def sync_tick(self) -> SyncActivity: ...
    @op(Access.LOCAL, why="callbacks do not cross processes")
    def watch_sync(self, on_recorded: Callable[[], None],
                   on_landed: Callable[[], None] | None = None) -> None: ...
