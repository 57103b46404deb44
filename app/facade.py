"""Vault: the one object the UI, the CLI and (later) IPC call. Layer: app.
Runs on: any worker thread, never the GUI thread (methods block: crypto, disk, embeddings).

Plain data in, plain data out (frozen dataclasses), so the facade can later be served over
local IPC. The storage objects and the services are built once per unlock by
``app/bootstrap.py`` (``Vault.create`` / ``Vault.open`` call it) and handed over as
:class:`Parts`; this module imports no storage module and only orchestrates.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from app import ports
from app.agent_scope import check_agent_name
from app.api import (
    DEFAULT_ENTITY_KINDS,
    AgentRead,
    AgentRow,
    AssistantFact,
    BackupRecord,
    BackupRemade,
    CancelToken,
    Context,
    ContradictionItem,
    CreateResult,
    EntityCard,
    EntityId,
    EntityMergeRow,
    EntityRow,
    Explanation,
    FactOutcome,
    FactStatus,
    Filters,
    ForgetPlan,
    ForgetReport,
    History,
    Hit,
    ImportReport,
    InboxPage,
    InboxStatus,
    Insights,
    KdfInfo,
    Listener,
    MemoryQuery,
    MemoryRead,
    MemoryRecord,
    MemoryRow,
    Page,
    PairInvite,
    PairStep,
    PendingForget,
    PendingStatus,
    Progress,
    ResolveChoice,
    RunId,
    RunReport,
    RunSummary,
    SettingValue,
    Skipped,
    SyncActivity,
    SyncStatus,
    Turn,
    UndoReport,
    VaultAPI,
    VaultStatus,
)
from app.changes import MEMORY_CHANGES, NO_CHANGES, Changes, Result
from app.clock import Clock, local_time
from app.domain.memory import Draft, Memory, MemoryId, Store
from app.errors import NotFound, StorageFull, ValidationError, VaultLocked
from app.parts import Parts
from app.services import ingest as ingestion
from app.validation import check_string, check_text, check_time, validate_turn

if TYPE_CHECKING:
    from app.domain.fact import FactCandidate
    from app.eta import Estimate
    from app.services.assistant_change import ChangeOutcome
    from app.services.backup import BackupService
    from app.services.consolidation import ConsolidationService
    from app.services.recall import RecallService
    from app.services.vector_follow import VectorFollower
    from app.sync.apply import VaultSide
    from app.sync.devices import SyncDevices
    from app.sync.journal import Journal
    from app.sync.ops import Gid
    from app.sync.runner import SyncRunner

log = logging.getLogger(__name__)

__all__ = ["Vault"]

# The window's status bar says "finding meaning" while at least this many vectors are due: a
# file import's thousands, not the few of a remember, made within a second.
FINDING_MEANING_MIN = 64

def _tell_all(watchers: Sequence[Callable[[], None]]) -> None:
    """Call each of ``watchers`` (a copy of the list: one may be added meanwhile); one that
    raises is logged and the others are still told."""
    for watcher in list(watchers):
        try:
            watcher()
        except Exception:
            log.exception("sync: a watcher failed")


def not_an_assistants(mid: int) -> str:
    return f"Memory {mid} is not one assistant's own: every assistant already sees it."


ENTITY_FACTS = 40  # facts on an entity card, current and earlier together, newest first
OUTCOME_MAX = 200  # characters of an episode's outcome in the person's words



class Vault:
    """Owner of one unlocked vault. Thread-safe: writes are serialised by the Database.
    Built by ``app/bootstrap.py`` (``Vault.create`` / ``Vault.open``)."""

    def __init__(self, parts: Parts) -> None:
        self._opened = parts.session
        # Not in the contract: tests and benchmarks reach these through ``internals``.
        self._clock: Clock = parts.clock
        self._embedder = parts.embedder
        self._model_dir = parts.model_dir
        self._index = parts.index
        self._lexicon = parts.lexicon
        self._drop_on_lock = parts.drop_on_lock
        self._rows = parts.rows
        self._lifecycle = parts.lifecycle
        self._schema_version = parts.schema_version
        self._ingest = parts.ingest
        self._recall = parts.recall
        self._context = parts.context
        self._forget = parts.forget
        self._browse = parts.browse
        self._consolidation = parts.consolidation
        self._agents = parts.agents
        self._listeners: list[Listener] = []
        self._agents.on_reads_written = lambda: self._emit(Changes(agents=True))
        self._agents.request_days = self._forget_request_days
        self._backups: BackupService | None = None  # built on first use (issue 16)
        self._sync: Journal | None = None  # built on first use while sync.journal is on
        self._devices: SyncDevices | None = None  # built on first use (issue 29, devices)
        self._sync_runner: SyncRunner | None = None  # the owner's first sync_tick builds it
        self._sync_watchers: list[Callable[[], None]] = []  # told when the journal queued ops
        self._sync_landers: list[Callable[[], None]] = []  # told when another device's file landed
        self._learn_owner()

    def _learn_owner(self) -> None:
        """Recall needs the person's name to know "Sam" and "user" are one holder."""
        if self._opened is not None and not self._opened.locked:
            name = self._db.read(lambda c: self._rows.get_setting(c, "owner.name"))
            self._recall.owner = str(name).strip() or None if name else None

    # --- construction (app/bootstrap.py) -------------------------------------------------
    @classmethod
    def create(cls, folder: Path, password: str, *, kdf: ports.KdfParams | None = None,
               recovery: bool = False, clock: Clock | None = None, load_model: bool = True,
               threaded: bool = True, use_chroma: bool = True) -> CreateResult:
        """A new vault in ``folder``, composed by ``bootstrap.create_parts``."""
        from app import bootstrap
        parts, code, seconds = bootstrap.create_parts(
            folder, password, kdf=kdf, recovery=recovery, clock=clock, load_model=load_model,
            threaded=threaded, use_chroma=use_chroma)
        return CreateResult(cls(parts), code, seconds)

    @classmethod
    def open(cls, folder: Path, password: str | None = None, *, recovery_code: str | None = None,
             use_device: bool = False, clock: Clock | None = None, load_model: bool = True,
             threaded: bool = True, use_chroma: bool = True, verify: str = "background",
             new_password: str | None = None) -> Vault:
        """Unlock the vault in ``folder``, composed by ``bootstrap.open_parts`` (which
        documents ``verify`` and the recovery-code path). The one way to open a vault."""
        from app import bootstrap
        return cls(bootstrap.open_parts(folder, password, recovery_code=recovery_code,
                                        use_device=use_device, clock=clock,
                                        load_model=load_model, threaded=threaded,
                                        use_chroma=use_chroma, verify=verify,
                                        new_password=new_password))

    def watch_integrity(self, on_corrupt: Callable[[], None]) -> None:
        """``on_corrupt()`` (from the check's thread) if the background self-test fails, at
        once if it already has."""
        db = self._db
        db.on_corrupt.append(on_corrupt)
        if db.integrity == "failed":  # failed before this call: the thread has called the others
            db.on_corrupt.remove(on_corrupt)
            on_corrupt()

    # --- plumbing ----------------------------------------------------------------------
    @property
    def _db(self) -> ports.Database:
        """The Database; ``VaultLocked`` once the vault is locked."""
        if self._opened is None or self._opened.locked:
            raise VaultLocked()
        return self._opened.db

    @property
    def folder(self) -> Path:
        return Path(self._opened.folder)

    @property
    def locked(self) -> bool:
        return self._opened is None or self._opened.locked

    def _check_unlocked(self) -> None:
        """Services hold the Database itself: ask here, before handing work to one."""
        if self.locked:
            raise VaultLocked()

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def _emit(self, changes: Changes) -> None:
        if changes.any:
            for listener in list(self._listeners):
                listener(changes)

    @property
    def semantic_search(self) -> bool:
        return self._embedder is not None

    def lock(self) -> Result[None]:
        """Close connections, drop the vector index and model, wipe keys."""
        if self._opened is not None and not self._opened.locked:
            runner = self._sync_runner
            if runner is not None:
                runner.close()  # no tick from now on; one under way gets a few seconds
            self._agents.flush_reads()  # what assistants read goes in before the keys go
            self._ingest.stop_follow()  # vectors not made yet stay pending (issue 28)
            self._save_lexicon()
            self._lexicon.clear()  # first: its thread may start the Chroma build when done
            self._index.close()
            for drop in self._drop_on_lock:
                drop()
            self._opened.lock()
        # The services were built once for this unlock: they let go of the model too.
        self._embedder = self._ingest.embedder = self._recall.embedder = None
        changes = Changes(lock=True)
        self._emit(changes)
        return Result(None, changes)

    def _save_lexicon(self) -> None:
        """The RAM lexicon into the vault, so the next unlock loads it instead of building it
        for seconds while recall waits on FTS5 (issue 28; storage/lexicon.py, migration 0032).
        Only when it is built and changed since last saved; a failure costs only that."""
        if not self._lexicon.ready:
            return
        try:
            self._opened.db.write_sync(self._lexicon.save_snapshot)
        except Exception:
            log.warning("the full-text mirror was not saved; the next unlock builds it again")

    # --- keys --------------------------------------------------------------------------
    def change_password(self, old: str, new: str) -> Result[None]:
        self._opened.change_password(old, new)
        return Result(None, Changes(settings=True))

    def rotate_data_key(self, password: str) -> Result[str | None]:
        """The value is the new recovery code when the vault had one (the old one opens
        nothing after a rotation): show it once."""
        _kf, code = self._opened.rotate_data_key(password)
        return Result(code, Changes(settings=True))

    def add_recovery_code(self, password: str | None = None) -> str:
        """Make a recovery code, replacing any previous one. With ``password``, it is checked
        first: an unlocked window left alone must not hand out a lasting way in."""
        if password is not None:
            self._opened.verify_password(password)
        return str(self._opened.add_recovery_code())

    def remember_device(self) -> Result[None]:
        self._opened.remember_device()
        return Result(None, Changes(settings=True))

    def forget_device(self) -> Result[None]:
        self._opened.forget_device()
        return Result(None, Changes(settings=True))

    def set_assistant_unlock(self, on: bool) -> Result[None]:
        """Let an assistant's call unlock ``kept serve`` after its idle lock with this
        device's keychain, or stop it. Both halves (storage/device_unlock.py): the vault's
        setting and this device's keychain mark; on needs "Remember on this device"
        (``KeyUnavailable``), off removes both."""
        if on:
            self._opened.allow_assistant_unlock(True)
            self.set_setting("owner.assistant_unlock", True)
        else:
            self.set_setting("owner.assistant_unlock", False)
            self._opened.allow_assistant_unlock(False)
        return Result(None, Changes(settings=True))

    def assistant_unlock(self) -> bool:
        """Whether an assistant's call may unlock from this device's keychain: the setting
        and this device's mark, both."""
        return (bool(self.setting("owner.assistant_unlock"))
                and self._opened.assistant_unlock_allowed())

    # --- status ------------------------------------------------------------------------
    def status(self, *, agent: str | None = None) -> VaultStatus:
        """The vault's state; counts of everything, or of what ``agent`` sees (global and
        its own memories, contradictions whose both sides it sees)."""
        kf = self._opened.key_file
        follower = self._ingest.follower

        def run(conn: ports.Connection
                ) -> tuple[dict[str, dict[str, int]], str, int, dict[str, int], int]:
            return (self._rows.counts(conn, agent), self._schema_version(conn),
                    self._rows.open_contradictions(conn, agent),
                    self._rows.vector_models(conn) if agent is None else {},
                    follower.rows.count(conn) if follower is not None and agent is None else 0)
        counts, version, open_items, by_model, waiting = self._db.read(run)
        totals = {store: sum(v.values()) for store, v in counts.items()}
        kdf = KdfInfo(alg=kf.kdf.alg, version=kf.kdf.v, m_kib=kf.kdf.m, t=kf.kdf.t,
                      p=kf.kdf.p)
        return VaultStatus(
            vault_id=kf.vault_id, path=str(self.folder), kdf=kdf, counts=counts, totals=totals,
            schema_version=version, model_found=self._model_dir is not None,
            model_dir=str(self._model_dir) if self._model_dir else None,
            semantic_search=self.semantic_search, vectors=len(self._index),
            index=("chroma" if self._index.chroma_ready else "exact") if self._embedder else "off",
            recovery_code=kf.wrap_recovery is not None,
            remember_device=kf.wrap_device is not None, open_contradictions=open_items,
            agent=agent, **self._model_status(), vector_models=by_model,
            vectors_pending=waiting,
            vectors_per_s=follower.progress().per_s if follower is not None else None)

    def _model_status(self) -> dict[str, str | None]:
        """Which model is in use and where from, or why none is (issue 28)."""
        from app import bootstrap
        if self._embedder is not None:
            return {"model": self._embedder.model_name,
                    "model_source": bootstrap.model_source(self._model_dir),
                    "model_compute": getattr(self._embedder, "compute", None)}
        return {"model_problem": bootstrap.model_problem()}

    def background_work(self) -> list[str]:
        """What is still being prepared after unlock, in words; empty when done. Reads
        in-memory flags only (cheap enough for a timer on the GUI thread)."""
        if self.locked:
            return []
        out = []
        if self._db.integrity == "pending":
            out.append("checking the vault")
        if self._lexicon.building:
            out.append("indexing text")
        if self._index.chroma_building:
            out.append("building the vector index")
        follower = self._ingest.follower
        left = follower.progress() if follower is not None else None
        if left is not None and left.total - left.done >= FINDING_MEANING_MIN:
            out.append(self._finding_meaning(left))
        return out

    @staticmethod
    def _finding_meaning(e: Estimate) -> str:
        """"finding meaning: 1,200 of 9,000, about 4 min left" (issue 28: a file import's
        vectors follow it; search finds those turns by their words meanwhile)."""
        from app.eta import duration_words
        text = f"finding meaning: {e.done:,} of {e.total:,}"
        return text + (f", {duration_words(e.left_s)} left" if e.left_s is not None else "")

    def make_vectors(self, *, progress: Callable[[Estimate], None] | None = None) -> int:
        """Make every vector still pending now, with ``progress`` (``kept import`` in its own
        process, after the turns are in); returns how many still wait (0 unless stopped).
        Ctrl-C (KeyboardInterrupt) stops it; the rest stays pending for the next unlock."""
        self._check_unlocked()
        if self._ingest.follower is not None:
            self._ingest.follower.catch_up(progress)
        return self._vectors_pending()

    def _vectors_pending(self) -> int:
        """Memories whose vector is still to be made (0 without a model: none are)."""
        if self._ingest.follower is None:
            return 0
        return int(self._db.read(self._ingest.follower.rows.count))

    # --- ingestion ---------------------------------------------------------------------
    @staticmethod
    def validate_draft(d: Draft) -> Draft:
        """Pure and cheap: no I/O (may run inline in a form). Every field, before any write:
        the same limits as an import (``app/services/ingest.py``)."""
        return ingestion.validate_draft(d)

    @staticmethod
    def read_import(path: Path) -> list[Turn]:
        """Pure, no vault access: a JSON Lines file of turns, every line checked before
        anything is written (``ImportInvalid`` names the bad lines; an unreadable file is a
        ``ValidationError``). Front ends call it off the GUI thread, then ``import_turns``."""
        from app.services.import_formats import read_import
        return read_import(path)

    @staticmethod
    def check_endpoint(url: str) -> str:
        """Pure: an LLM endpoint's base URL, normalised as consent records it;
        ``ValidationError`` unless it is an http(s) URL with a host and no user name."""
        from app.services.llm import normalise_base_url
        return normalise_base_url(url)

    @staticmethod
    def consent_text(url: str) -> str | None:
        """Pure: what the person agrees to before memory snippets go to this (normalised)
        endpoint; None for an endpoint on this computer (loopback needs no consent)."""
        from app.services.llm import consent_text, is_loopback
        return None if is_loopback(url) else consent_text(url)

    def _never_store(self) -> set[str]:
        from app.services import sensitive
        return sensitive.parse(self.setting("privacy.never_store"))

    def remember(self, draft: Draft) -> Result[MemoryId]:
        d = self.validate_draft(draft)
        self._check_unlocked()
        from app.services import sensitive
        category = sensitive.blocked(d.text, self._never_store())
        if category is not None:
            raise ValidationError(
                f"Not stored: it is about {category.replace('_', ' ')}, which you chose never "
                "to store (setting privacy.never_store).")
        mid, saved = self._ingest.remember_once(d, also=self._sync_remembered(d))
        if not saved:  # its (session, ref) was saved already: no change (issue 26)
            return Result(mid, Changes())
        self._emit(MEMORY_CHANGES)
        return Result(mid, MEMORY_CHANGES)

    def import_turns(self, turns: Sequence[Turn], *, progress: Progress | None = None,
                     batch: int = 256, follow: bool = False) -> Result[ImportReport]:
        """Turns go to short-term memory; each also becomes an episodic memory (speaker, time)
        derived from it. Re-importing a ``ref`` in the same session adds nothing.

        ``follow``: return once the turns are committed; their vectors are made after, in the
        background (``IngestService.import_turns``; a file import, ``app.transfer``, asks for
        it). False embeds them before each batch commits, as callers that recall or measure
        right after an import need.

        Policy: the caller validates every line first (``parse_import``); a malformed file
        imports nothing. Then each batch is one transaction, so a crash leaves whole turns
        only, and running the import again completes it without duplicates. Every turn is
        checked again here (``validate_turn``, cheap) so that no caller can have a bad turn
        fail in the tokenizer or SQLite after earlier batches were committed."""
        from app.services.importer import ImportInvalid, LineError
        errors = []
        for n, t in enumerate(turns, start=1):
            try:
                validate_turn(t)
            except ValidationError as exc:
                errors.append(LineError(t.line or n, exc.user_message))
        if errors:
            raise ImportInvalid(errors)
        now = self._clock.now()
        self._check_unlocked()
        from app.services import sensitive
        never = self._never_store()
        held_back: dict[str, int] = {}
        if never:
            kept = []
            for t in turns:
                category = sensitive.blocked(t.text, never)
                if category is None:
                    kept.append(t)
                else:
                    held_back[category] = held_back.get(category, 0) + 1
            turns = kept
        todo = self._ingest.new_turns(turns)
        tally = ingestion.ImportTally()
        try:
            self._ingest.import_turns(todo, now, tally, progress=progress, batch=batch,
                                      follow=follow)
        except StorageFull as exc:
            if tally.added:
                self._emit(MEMORY_CHANGES)  # the batches that did land
            raise StorageFull(
                f"The disk filled up during the import: {tally.done:,} of {len(todo):,} new "
                "turns were saved, whole; the rest were not.",
                hint="Free some space and run the same import again: it adds only the "
                     "turns still missing.") from exc
        # ``done`` counts turns written; ``added`` only the memories derived from them (a
        # ``short_term`` turn has none, and was reported as "Imported 0 turn(s)").
        report = ImportReport(turns=len(turns), added=tally.done,
                              skipped_duplicates=len(turns) - len(todo),
                              sessions=len({t.session for t in turns}), ids=tuple(tally.added),
                              skipped=tuple(Skipped(f"turns about {c.replace('_', ' ')} "
                                                    "(never stored, your setting)", n)
                                            for c, n in sorted(held_back.items())))
        self._sync_created(tally.added)
        changes = MEMORY_CHANGES if tally.done else NO_CHANGES
        self._emit(changes)
        return Result(report, changes)

    # --- reading -----------------------------------------------------------------------
    def get(self, mid: int) -> Memory:
        m: Memory | None = self._db.read(lambda c: self._rows.get_memory(c, mid))
        if m is None:
            raise NotFound()
        return m

    def refs(self, ids: Iterable[int]) -> Mapping[MemoryId, list[str]]:
        """Each memory's conversation refs (its own and its sources')."""
        ids = list(ids)
        refs = self._db.read(lambda c: self._rows.refs_of(c, ids))
        return {MemoryId(k): v for k, v in refs.items()}

    # --- recall ------------------------------------------------------------------------
    @property
    def _recall_service(self) -> RecallService:
        """The recall service; ``VaultLocked`` once the vault is locked."""
        self._check_unlocked()
        return self._recall

    def recall(self, query: str, *, k: int = 10, now: float | None = None,
               filters: Filters | None = None, touch: bool = True) -> list[Hit]:
        """Hybrid recall (docs/memory-model.md#recall). ``touch`` records the access and applies
        reinforcement. An explicit ``now`` never returns what happened after it."""
        if not query.strip():
            raise ValidationError("The query is empty.")
        filters = filters or Filters()
        if now is not None:
            filters = replace(filters, happened_by=now)
        now = self._clock.now() if now is None else now
        hits = self._recall_service.recall(query, k=k, now=now, filters=filters)
        if touch and hits:
            self._recall_service.touch([h.id for h in hits], now)
        return hits

    def recall_batch(self, queries: Sequence[tuple[str, str, float | None]], *, k: int = 10,
                     filters: Filters | None = None, progress: Progress | None = None
                     ) -> list[tuple[str, list[Hit]]]:
        """Many queries at once (one embedding batch); read-only, so evaluations do not
        reinforce what they read. Items: (qid, query, now)."""
        service = self._recall_service
        vecs = self._ingest.embed([q for _, q, _ in queries])
        out = []
        for n, (qid, query, now) in enumerate(queries):
            qvec = vecs[n] if vecs is not None else None
            when = self._clock.now() if now is None else now
            f = filters or Filters()
            if now is not None:  # an explicit now never returns what happened after it
                f = replace(f, happened_by=now)
            out.append((qid, service.recall(query, k=k, now=when, filters=f, qvec=qvec)))
            if progress is not None:
                progress(n + 1, len(queries))
        return out

    def context(self, query: str, *, budget: int | None = None,
                now: float | None = None, filters: Filters | None = None) -> Context:
        """``filters``: as for recall (time travel: ``as_of``, ``known_at``). ``budget``
        (tokens): the ``recall.context_budget`` setting unless given."""
        if budget is None:
            budget = int(self.setting("recall.context_budget") or 0)
        if budget < 0:
            raise ValidationError("The context budget cannot be negative.")
        if not query.strip():
            raise ValidationError("The query is empty.")
        filters = filters or Filters()
        if now is not None:
            filters = replace(filters, happened_by=now)
        now = self._clock.now() if now is None else now
        # A briefing puts what is current first by default (issue 23), whatever the query's
        # form, unless it asks about the past.
        hits = self._recall_service.recall(query, k=40, now=now, filters=filters, current=True)
        ctx = self._context.assemble(query, hits, budget=budget, now=now)
        # Only what made it into the context was "returned"
        # (docs/memory-model.md#touch-and-reinforcement).
        self._recall_service.touch([i.id for i in ctx.items if i.id is not None], now)
        return ctx

    def explain(self, mid: int, query: str | None = None, now: float | None = None
                ) -> Explanation:
        self._check_unlocked()
        return self._context.explain(mid, query, self._clock.now() if now is None else now)

    # --- forget, correct, history, archive (docs/memory-model.md#forgetting) ----------------------
    def forget_plan(self, *, ids: Sequence[int] = (), query: str | None = None,
                    entity: str | None = None, include_sources: bool = True) -> ForgetPlan:
        """Step 1: everything that would go, grouped by kind, and the recorded backups still
        on disk that hold some of it. Changes nothing."""
        self._check_unlocked()
        plan = self._forget.plan(ids=tuple(ids), query=query, entity=entity,
                                 include_sources=include_sources)
        held = self._backup_service().holding(plan)
        return replace(plan, backups=held) if held else plan

    def forget(self, plan: ForgetPlan) -> Result[ForgetReport]:
        """Step 2: delete exactly the plan, in one transaction. Cannot be undone."""
        self._check_unlocked()
        gids = self._sync_gids(plan.memory_ids)  # read first: the map rows go with the memories
        # The forget op is journaled before the memories go: a kill -9 in between leaves it
        # queued, and the next tick erases them here and everywhere. The other order let a
        # kill leave them forgotten here only, and brought them back from the merged state.
        self._sync_forgotten(gids)
        report = self._forget.forget(plan)
        if report.memories:
            # Implicit statistics are recomputed from what is left (their text may name
            # what was forgotten).
            self._consolidation_service.recompute_statistics(self._clock.now(), create=False)
            self._db.checkpoint()
        changes = Changes(memories=True, entities=True, contradictions=True, history=True,
                          index=True, runs=True)
        self._emit(changes)
        return Result(report, changes)

    def correct(self, mid: int, text: str) -> Result[MemoryId]:
        """A new version, user-validated with confidence 1.0, supersedes the old one; both
        stay in the history."""
        self._check_unlocked()
        new = self._ingest.correct(mid, text, also=self._sync_correcting(mid))
        self._emit(MEMORY_CHANGES)
        return Result(new, MEMORY_CHANGES)

    def confirm(self, mid: int) -> Result[None]:
        """The person says this memory is right: user-validated, confidence 1.0."""
        self.get(mid)
        now = self._clock.now()

        def run(conn: ports.Connection) -> None:
            self._lifecycle.confirm(conn, mid)
            self._rows.add_history(conn, mid, now, "confirmed", None, None)
        self._db.write_sync(run)
        self._emit(MEMORY_CHANGES)
        return Result(None, MEMORY_CHANGES)

    def history(self, mid: int) -> History:
        self._check_unlocked()
        return self._forget.history(mid)

    def _set_status(self, mid: int, status: str, action: str, allowed: tuple[str, ...]) -> None:
        m = self.get(mid)
        if m.status.value not in allowed:
            raise ValidationError(f"Memory {mid} is {m.status.value}; cannot {action} it.")
        now = self._clock.now()

        def run(conn: ports.Connection) -> None:
            self._lifecycle.set_status(conn, mid, status)
            self._rows.add_history(conn, mid, now, action, None, None)
        self._db.write_sync(run)
        self._emit(MEMORY_CHANGES)

    def archive(self, mid: int) -> Result[None]:
        """Out of default recall, visible and restorable in the Archive. Nothing is deleted."""
        self._set_status(mid, "archived", "archive", ("active",))
        return Result(None, MEMORY_CHANGES)

    def restore(self, mid: int) -> Result[None]:
        self._set_status(mid, "active", "restore", ("archived",))
        return Result(None, MEMORY_CHANGES)

    def rate_episode(self, mid: int, rating: int | None, outcome: str | None = None
                     ) -> Result[None]:
        """How an episode went, in the person's words (issue 27 item 8): ``rating`` -1 went
        badly, 0 mixed, +1 went well, None cleared; ``outcome`` their words (None: the
        rating's own words). It replaces an outcome consolidation inferred; habits count a
        badly rated report as a failure at the next run."""
        from app.services.outcomes import RATINGS
        if rating is not None and (isinstance(rating, bool) or rating not in RATINGS):
            raise ValidationError("A rating is -1 (went badly), 0 (mixed) or 1 (went well).")
        if outcome is not None and not isinstance(outcome, str):
            raise ValidationError("The outcome must be text.")
        words = None if outcome is None else check_string(outcome.strip(), "The outcome",
                                                           limit=OUTCOME_MAX) or None
        m = self.get(mid)
        if m.store is not Store.EPISODIC:
            raise ValidationError(f"Memory {mid} is not an episode; only episodes are rated.")
        now = self._clock.now()
        said = words or (None if rating is None else RATINGS[rating])
        by = None if said is None and rating is None else "person"

        def run(conn: ports.Connection) -> None:
            self._rows.set_episode_outcome(conn, mid, rating, said, by,
                                           None if by is None else now)
            self._rows.add_history(conn, mid, now, "rated", None,
                                   "cleared" if by is None else
                                   "outcome noted" if rating is None else RATINGS[rating])
        self._db.write_sync(run)
        self._emit(MEMORY_CHANGES)
        return Result(None, MEMORY_CHANGES)

    # --- consolidation (docs/memory-model.md#consolidation) ---------------------------------------
    @property
    def _consolidation_service(self) -> ConsolidationService:
        """The consolidation service; ``VaultLocked`` once the vault is locked."""
        self._check_unlocked()
        return self._consolidation

    def consolidate(self, *, now: float | None = None, cancel: CancelToken | None = None,
                    progress: Progress | None = None, kind: str = "consolidation",
                    steps: tuple[str, ...] | None = None) -> Result[RunReport]:
        """Run the pipeline once; returns the run report (ids and counts only)."""
        report = self._consolidation_service.run(now=now, cancel=cancel, progress=progress,
                                                 kind=kind, steps=steps)
        self._learn_owner()  # the run may have learned the person's name ("I'm Sam")
        self._sync_created(report.ids.get("created") or ())
        changes = Changes(memories=True, entities=True, contradictions=True, runs=True,
                          index=True, settings=bool(report.counts.get("owner_named")))
        self._emit(changes)
        return Result(report, changes)

    def contradictions(self, status: InboxStatus | None = "open"
                       ) -> list[ContradictionItem]:
        return list(self._consolidation_service.contradictions(status=status))

    def inbox_page(self, status: InboxStatus, page: int = 0, size: int = 25) -> InboxPage:
        """One page of an inbox list (open, auto or resolved): ids first, batched rows."""
        return self._consolidation_service.inbox_page(status, page, size)

    def inbox_items(self, ids: Sequence[int]) -> list[ContradictionItem]:
        """These inbox items (contradictions or review requests), with both sides."""
        return list(self._consolidation_service.inbox_items(tuple(ids)))

    def inbox_count(self) -> int:
        """Open contradictions and review requests."""
        return int(self._consolidation_service.inbox_count())

    def resolve(self, cid: int, keep: ResolveChoice, text: str | None = None
                ) -> Result[MemoryId | None]:
        new = self._consolidation_service.resolve(cid, keep, text,
                                                  also=self._sync_deciding(cid, keep, text))
        changes = Changes(memories=True, contradictions=True, history=True)
        self._emit(changes)
        return Result(None if new is None else MemoryId(new), changes)

    def reopen(self, cid: int) -> Result[None]:
        self._consolidation_service.reopen(cid)
        changes = Changes(memories=True, contradictions=True)
        self._emit(changes)
        return Result(None, changes)

    def undo_run(self, run_id: int) -> Result[UndoReport]:
        """Revert everything run ``run_id`` changed; the value counts what was reverted."""
        counts = UndoReport(RunId(run_id), dict(self._consolidation_service.undo(run_id)))
        changes = Changes(memories=True, entities=True, contradictions=True, runs=True,
                          index=True)
        self._emit(changes)
        return Result(counts, changes)

    def undo_plan(self, run_id: int) -> UndoReport:
        """What ``undo_run(run_id)`` would revert, counted the same way; changes nothing (and
        refuses what undo_run refuses)."""
        return UndoReport(RunId(run_id), self._consolidation_service.undo_plan(run_id))

    def runs(self, limit: int = 20) -> list[RunSummary]:
        """The newest runs first."""
        return self._consolidation_service.run_summaries(limit)

    def setting(self, key: str) -> SettingValue | None:
        from app.settings import BY_KEY
        value = self._db.read(lambda c: self._rows.get_setting(c, key))
        if not isinstance(value, bool | int | float | str):  # unset (or not a setting's kind)
            value = None
        if value is None and key in BY_KEY:
            default: SettingValue = BY_KEY[key].default
            return default
        return value

    def set_setting(self, key: str, value: SettingValue) -> Result[None]:
        from app.settings import BY_KEY
        if key not in BY_KEY:
            raise ValidationError(f"Unknown setting {key!r}.")
        spec = BY_KEY[key]
        try:
            value = spec.type(value) if not isinstance(value, spec.type) else value
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"{key} must be a {spec.type.__name__}.") from exc
        if key == "owner.name" and str(value).strip():
            self._consolidation_service.rename_owner(str(value).strip(), self._recall.owner)
        self._db.write_sync(lambda c: self._rows.put_setting(c, key, value))
        if key == "owner.name":
            self._learn_owner()
        changes = Changes(settings=True)
        self._emit(changes)
        return Result(None, changes)

    # --- browsing (the window's lists; keyset paging, never OFFSET) ------------------
    def page_memories(self, query: MemoryQuery, after: tuple[float, int] | None = None,
                      limit: int = 200) -> Page:
        self._check_unlocked()
        return self._browse.page(query, after, limit)

    def count_memories(self, query: MemoryQuery) -> int:
        self._check_unlocked()
        return self._browse.count(query)

    def entities(self, kinds: tuple[str, ...] = DEFAULT_ENTITY_KINDS) -> list[EntityRow]:
        self._check_unlocked()
        return self._browse.entities(kinds)

    def entity_merges(self, entity_id: int) -> list[EntityMergeRow]:
        """The merges entity ``entity_id`` took part in, newest first (issue 27 item 3)."""
        self._check_unlocked()
        merges = self._consolidation_service.entity_merges(entity_id)
        names = self._browse.entity_names([i for m in merges for i in (m.kept, m.merged)])
        return [EntityMergeRow(m.id, EntityId(m.kept), names.get(m.kept, ""),
                               EntityId(m.merged), names.get(m.merged, ""), m.reason,
                               m.merged_at) for m in merges]

    def undo_entity_merge(self, merge_id: int, *, different: bool = True) -> Result[None]:
        """The person undoes a merge: both entities as they were, each with its own mentions;
        ``different`` (they are different things): consolidation never merges them again."""
        self._check_unlocked()
        if not self._consolidation_service.undo_entity_merge(merge_id, different):
            raise NotFound("That merge is no longer there (undone already?).")
        changes = Changes(entities=True)
        self._emit(changes)
        return Result(None, changes)

    def timeline_days(self, limit: int = 400) -> list[tuple[str, int]]:
        self._check_unlocked()
        return self._browse.timeline_days(limit)

    def insights(self) -> Insights:
        self._check_unlocked()
        return self._browse.insights()

    # --- browsing for assistants too (issue 26) -----------------------------------------
    def get_memory(self, mid: int, *, agent: str | None = None) -> MemoryRow:
        """One memory whole (its full text), as a list row with its currency mark, who wrote
        it and a change waiting for it (as ``agent`` may see it). An assistant opening a
        memory uses it, as recall's hits are used: the access is recorded (reinforcement, and a
        short-term-only turn is promoted to an event at the next run's scores step); the
        person browsing in the window (no ``agent``) changes nothing."""
        out = self._described([self._browse.memory_row(self.get(mid))], agent)[0]
        if agent is not None:
            self._recall_service.touch([mid], self._clock.now())
        return out

    def _described(self, rows: list[MemoryRow], viewer: str | None) -> list[MemoryRow]:
        """``written_by`` and a pending change for browsing rows, as recall marks its hits
        (``assistant_change.describe``; ``viewer`` never sees another assistant's value)."""
        from app.services import assistant_change as ac
        d = ac.describe(self._db, self._recall.rows, [
            ac.Said(int(r.id), r.agent, str(r.store), bool(r.user_validated), r.currency)
            for r in rows], viewer)
        return [replace(r, currency=d[int(r.id)].currency, written_by=d[int(r.id)].written_by)
                for r in rows]

    def recent_memories(self, limit: int = 10, store: Store | None = None, *,
                        agent: str | None = None) -> list[MemoryRow]:
        """The newest active memories, by when they happened; ``agent``: only what that
        assistant sees (global and its own)."""
        if not 1 <= limit <= 200:
            raise ValidationError("'limit' must be between 1 and 200.")
        self._check_unlocked()
        return self._described(self._browse.recent(
            agent, None if store is None else Store(store).value, limit), agent)

    def entity(self, name: str, *, agent: str | None = None) -> EntityCard:
        """The card of a person, pet, place, project... by name (any case): its summary, the
        facts that hold now and the earlier ones. ``NotFound`` when Kept knows nothing so
        named (in ``agent``'s sight)."""
        check_string(name, "The name", limit=200)
        if not name.strip():
            raise ValidationError("The name is empty.")
        self._check_unlocked()
        card = self._browse.entity_card(name, agent, ENTITY_FACTS)
        return replace(card, current=tuple(self._described(list(card.current), agent)),
                       earlier=tuple(self._described(list(card.earlier), agent)))

    def inbox(self, limit: int = 5) -> list[ContradictionItem]:
        """The first ``limit`` open Inbox items (disagreements and review requests)."""
        if not 1 <= limit <= 200:
            raise ValidationError("'limit' must be between 1 and 200.")
        return self.contradictions("open")[:limit]

    def export_memories(self, query: MemoryQuery, after: int = 0, limit: int = 200
                        ) -> list[MemoryRecord]:
        """Read-only, for ``kept export``: up to ``limit`` whole memories matching ``query``
        (``status=None``: every status) with an id above ``after``, oldest id first, each
        with its refs, links, history, entity mentions and reads. Fewer when their texts are
        long (one page fits in one socket message); an empty list at the end."""
        self._check_unlocked()
        return self._browse.export_page(query, after, limit)

    # --- assistants (issue 14): pairing, their facts, their forget requests -------------
    def pair_agent(self, name: str) -> Result[str]:
        """Pair (or re-pair) an assistant; the value is its new key, shown once. Only a
        hash is kept. Re-pairing replaces the old key."""
        check_agent_name(name)
        self._check_unlocked()
        key = self._agents.pair(name)
        changes = Changes(agents=True)
        self._emit(changes)
        return Result(key, changes)

    def revoke_agent(self, name: str) -> Result[None]:
        self._check_unlocked()
        self._agents.revoke(name)
        changes = Changes(agents=True)
        self._emit(changes)
        return Result(None, changes)

    def agents(self) -> list[AgentRow]:
        self._check_unlocked()
        return self._agents.paired()

    def verify_agent(self, name: str, key: str) -> AgentRow:
        """The paired assistant ``name`` if ``key`` is its current key; ``AgentNotPaired``
        otherwise. The owner checks on every call of a connected assistant (a revoked key
        stops at its next call)."""
        check_agent_name(name)
        self._check_unlocked()
        return self._agents.verify(name, key)

    def remember_fact(self, fact: AssistantFact, *, agent: str = "global"
                      ) -> Result[FactOutcome]:
        """A fact from an assistant, in ``agent``'s scope, through consolidation's policy."""
        from app.domain.fact import FactCandidate
        for value, what in ((fact.subject, "'subject'"), (fact.attribute, "'attribute'"),
                            (fact.value, "'value'")):
            check_string(value, what)
            if not value.strip():
                raise ValidationError(f"{what} is empty.")
        statement = fact.statement.strip() or (
            f"{fact.subject} {fact.attribute.replace('_', ' ')} {fact.value}")
        check_text(statement, "'statement'")
        if fact.valid_from is not None:
            check_time(fact.valid_from, "'valid_from'")
        if not 0.0 <= fact.confidence <= 1.0:
            raise ValidationError("'confidence' must be between 0 and 1.")
        self._check_unlocked()
        self._agents.check_visible(fact.source_ids, agent)
        from app.services.slots import canonical_predicate
        predicate = canonical_predicate(fact.attribute)
        candidate = FactCandidate(
            subject=fact.subject.strip(), predicate=predicate, object=fact.value.strip(),
            statement=statement, confidence=fact.confidence, valid_from=fact.valid_from,
            source_ids=tuple(int(i) for i in fact.source_ids))
        from app.services.fact_check import problem
        why = problem(candidate)
        if why is not None:
            raise ValidationError(f"Not saved: {why} (a fact needs a named holder and a "
                                  "whole value, such as subject 'Ana', value 'Lisbon').")
        if fact.change or fact.replaces is not None:
            return self._remember_change(candidate, agent, fact.replaces)
        report = self._consolidation_service.store_assistant_fact(candidate, (agent, None),
                                                                  self._clock.now())
        created = report.ids.get("created") or []
        self._sync_created(created)
        outcome = FactOutcome(
            id=MemoryId(created[0]) if created else None,
            status="saved" if created else "already_known",
            contradictions=report.counts.get("contradictions_found", 0),
            sent_to_inbox=tuple(report.ids.get("inbox") or ()), run_id=report.run_id)
        changes = Changes(memories=True, contradictions=True, runs=True, index=True, agents=True)
        self._emit(changes)
        return Result(outcome, changes)

    def _remember_change(self, candidate: FactCandidate, agent: str, replaces: int | None
                         ) -> Result[FactOutcome]:
        """``remember_fact`` with ``change`` or ``replaces`` (issue 26): settled in ``agent``'s
        own scope, sent to the Inbox against the person's facts."""
        if replaces is not None:
            self._agents.check_visible((replaces,), agent)
        report, out = self._consolidation_service.store_assistant_change(
            candidate, (agent, None), self._clock.now(), replaces, also=self._sync_changing())
        status: FactStatus = ("already_known" if out.known else
                              "sent_to_inbox" if out.inbox is not None else
                              "changed" if out.replaced is not None else "saved")
        outcome = FactOutcome(
            id=None if out.created is None else MemoryId(out.created), status=status,
            contradictions=report.counts.get("contradictions_found", 0),
            sent_to_inbox=tuple(report.ids.get("inbox") or ()), run_id=report.run_id,
            replaced_id=None if out.replaced is None else MemoryId(out.replaced),
            inbox_id=out.inbox)
        changes = Changes(memories=True, contradictions=True, runs=True, index=True, agents=True)
        self._emit(changes)
        return Result(outcome, changes)

    def correct_own(self, mid: int, text: str, *, agent: str) -> Result[MemoryId]:
        """An assistant corrects one of its own memories (issue 26): a new version in its
        scope, not the person's confirmation; the old one is superseded and stays in the
        history. A person's memory is refused with what to do instead."""
        check_text(text, "'text'")
        if not text.strip():
            raise ValidationError("'text' is empty.")
        self._check_unlocked()
        try:
            m = self.get(mid)
        except NotFound:
            raise NotFound(f"No memory {mid} that you can see.") from None
        if m.agent == "global" and agent != "global":
            raise ValidationError(
                f"Memory {mid} is the person's, not yours: you cannot correct it. Use "
                f"remember_fact with replaces={mid} (and valid_from): the change goes to the "
                "person's Inbox in Kept, and recall shows it pending until they accept it.")
        if m.agent != agent:
            raise NotFound(f"No memory {mid} that you can see.")
        new = self._ingest.correct(mid, text, by=agent, also=self._sync_correcting(mid))
        self._emit(MEMORY_CHANGES)
        return Result(new, MEMORY_CHANGES)

    def request_forget(self, *, agent: str, ids: Sequence[int] = (), query: str | None = None,
                       reason: str = "") -> Result[PendingForget]:
        """Record an assistant's wish to forget: nothing is forgotten here. Ids must be
        memories ``agent`` can see; a query is matched as ``kept forget`` matches it, keeping
        only what ``agent`` can see. The person confirms or declines later."""
        check_string(reason, "'reason'")
        if query is not None:
            check_string(query, "'query'")
        if not ids and not (query and query.strip()):
            raise ValidationError("Give memory ids or a query.")
        self._check_unlocked()
        self._agents.check_visible(ids, agent)
        chosen = [int(mid) for mid in ids]
        if query and query.strip():
            plan = self.forget_plan(query=query, include_sources=False)
            matched = [i.id for i in plan.items if i.role == "matched"]
            visible = self._agents.scopes_of(matched)
            chosen += [int(m) for m in matched if visible.get(m) in ("global", agent)]
        chosen = list(dict.fromkeys(chosen))
        if not chosen:
            raise ValidationError("Nothing this assistant can see matches; nothing was asked.")
        self._refuse_declined(chosen)
        row = self._agents.add_request(agent, chosen, query, reason)
        changes = Changes(agents=True)
        self._emit(changes)
        return Result(row, changes)

    def pending_forgets(self, status: PendingStatus | None = "pending",
                        agent: str | None = None, limit: int = 50) -> list[PendingForget]:
        self._check_unlocked()
        return self._agents.requests(status, agent, limit)

    def forget_status(self, request_id: int | None = None, *, agent: str | None = None,
                      limit: int = 20) -> list[PendingForget]:
        """Forget requests and what became of them (pending, done, declined, expired), newest
        first: request ``request_id`` alone (``NotFound`` if it is not ``agent``'s), or the
        newest ``limit`` of ``agent``'s (everyone's when None)."""
        self._check_unlocked()
        if request_id is None:
            return self._agents.requests(None, agent, max(1, min(limit, 500)))
        req = self._agents.request(int(request_id))
        if req is None or (agent is not None and req.agent != agent):
            raise NotFound(f"No forget request {request_id}.")
        return [req]

    def _forget_request_days(self) -> float:
        value = self.setting("forget.request_days")
        return float(value) if isinstance(value, int | float) and value > 0 else 30.0

    def _refuse_declined(self, ids: Sequence[int]) -> None:
        """The person said no to forgetting some of ``ids``: asking again is refused with the
        date, until they change their mind in Kept (issue 26)."""
        found = self._agents.declined(ids)
        if found is None:
            return
        which, at = found
        day = local_time(at).date().isoformat()
        these = "these" if len(which) == len(ids) else \
            "memor" + ("y " if len(which) == 1 else "ies ") + ", ".join(map(str, which))
        raise ValidationError(f"The person declined forgetting {these} on {day}; ask them in "
                              "Kept if they changed their mind. Nothing was asked.")

    def pending_forget_plan(self, pid: int) -> ForgetPlan:
        """What confirming request ``pid`` would forget (the memories still there)."""
        self._check_unlocked()
        req = self._agents.request(pid)
        if req is not None and req.status == "expired":
            raise ValidationError(f"Forget request {pid} expired unanswered "
                                  f"(forget.request_days); nothing was forgotten.")
        if req is None or req.status != "pending":
            raise ValidationError(f"No pending forget request {pid}.")
        ids = list(req.memory_ids)
        left = self._agents.scopes_of(ids)
        if not left:  # forgotten some other way meanwhile: nothing is left to ask about
            self._agents.decide(pid, "done")
            self._emit(Changes(agents=True))
            raise ValidationError(f"The memories of request {pid} are already forgotten; "
                                  "the request is closed.")
        return self.forget_plan(ids=[i for i in ids if i in left], include_sources=False)

    def close_pending_forget(self, pid: int, plan: ForgetPlan | None
                             ) -> Result[ForgetReport | None]:
        """The person's answer: with the plan they saw, forget it (``forget``) and mark the
        request done; with None, decline it. Either way the request is closed."""
        report: ForgetReport | None = None
        changes = Changes(agents=True)
        if plan is not None:
            self.pending_forget_plan(pid)  # still pending
            result = self.forget(plan)
            report, changes = result.value, result.changes.merge(Changes(agents=True))
        if not self._agents.decide(pid, "done" if plan is not None else "declined"):
            raise ValidationError(f"No pending forget request {pid}.")
        self._emit(changes)
        return Result(report, changes)

    def share(self, mid: int) -> Result[str]:
        """The person shares an assistant's memory with every assistant: it becomes global
        (its history says "shared" and from whom, so ``unshare`` can undo it). The value is
        the assistant that wrote it."""
        m = self.get(mid)
        if m.agent == "global":
            raise ValidationError(not_an_assistants(mid))
        if m.status == "superseded":
            raise ValidationError(f"Memory {mid} was replaced by a newer version"
                                  + (f" ({m.superseded_by})" if m.superseded_by else "")
                                  + ": share that one.")
        self._set_agent(mid, "global", "shared", m.agent)
        return Result(m.agent, MEMORY_CHANGES)

    def unshare(self, mid: int) -> Result[str]:
        """Undo ``share``: the memory goes back to the assistant that wrote it (the value)."""
        m = self.get(mid)
        last = next((e for e in reversed(self.history(mid).entries)
                     if e.memory_id == mid and e.action in ("shared", "unshared")), None)
        if m.agent != "global" or last is None or last.action != "shared" or not last.detail:
            raise ValidationError(f"Memory {mid} was not shared from an assistant; there is "
                                  "no sharing to undo.")
        self._set_agent(mid, last.detail, "unshared", last.detail)
        return Result(last.detail, MEMORY_CHANGES)

    def _set_agent(self, mid: int, agent: str, action: str, detail: str) -> None:
        now = self._clock.now()

        def run(conn: ports.Connection) -> None:
            self._lifecycle.set_agent(conn, mid, agent)
            self._rows.add_history(conn, mid, now, action, None, detail)
        self._db.write_sync(run)
        self._emit(MEMORY_CHANGES)

    def note_reads(self, agent: str, ids: Sequence[int], via: str) -> None:
        """Record that assistant ``agent`` read ``ids`` (the owner does, for its agents'
        recall, context and explain), in one batch a moment later (``AgentService``)."""
        self._agents.note_reads(agent, ids, via)

    def memory_reads(self, mid: int) -> list[MemoryRead]:
        """When and by which assistant ``mid`` was read, newest first."""
        self._check_unlocked()
        return self._agents.reads_of(mid)

    def agent_memories(self, name: str, after: tuple[float, int] | None = None,
                       limit: int = 200) -> Page:
        """What assistant ``name`` holds in its own scope (not the person's memories it also
        sees), not forgotten or replaced, one row per thing said, newest first, whole texts:
        its workspace in the window and the export (issue 27 item 10)."""
        check_agent_name(name)
        self._check_unlocked()
        return self._browse.agent_page(name, after, max(1, min(int(limit), 1000)))

    def agent_reads(self, name: str, limit: int = 50) -> list[AgentRead]:
        """The memories assistant ``name`` read (recall, context, explain), newest first: what
        it was told, for the person to see (``kept agents reads NAME``)."""
        check_agent_name(name)
        self._check_unlocked()
        return self._agents.reads_by(name, limit)

    def verify_password(self, password: str) -> None:
        """``WrongPassword`` unless ``password`` opens this vault (one KDF derive)."""
        self._check_unlocked()
        self._opened.verify_password(password)

    # --- sync journal (issue 29; docs/sync_ops.md): nothing at all while sync.journal is off --
    def _sync_journal(self) -> Journal | None:
        if not self.setting("sync.journal"):
            return None
        if self._sync is None:
            from app import bootstrap
            from app.sync.journal import Journal
            clock = self._clock
            self._sync = Journal(self._db, bootstrap.sync_journal_rows(),
                                 lambda: int(clock.now() * 1000), bootstrap.sync_apply_rows())
            self._sync.recorded = self._sync_recorded
        return self._sync

    def _sync_recorded(self) -> None:
        """The journal queued ops (on the writer thread): the owner's sync job ticks soon.
        A watcher must never fail the write it hears about."""
        _tell_all(self._sync_watchers)

    def _sync_with_new(self, write: Callable[[Journal, ports.Connection, Memory], object]
                       ) -> Callable[[ports.Connection, MemoryId], None] | None:
        """What an act runs in the transaction that inserts a memory: ``write`` its op with
        the memory as inserted (one commit: a kill -9 cannot keep the act here only)."""
        journal = self._sync_journal()
        if journal is None:
            return None
        rows = self._rows

        def also(conn: ports.Connection, mid: MemoryId) -> None:
            memory = rows.get_memory(conn, mid)
            assert memory is not None  # inserted in this very transaction
            write(journal, conn, memory)
        return also

    def _sync_remembered(self, d: Draft) -> Callable[[ports.Connection, MemoryId], None] | None:
        """What ``remember`` runs in the transaction that saves the memory: its create op."""
        return self._sync_with_new(
            lambda journal, conn, memory: journal.create_in(conn, memory, d.derived_from))

    def _sync_gids(self, ids: Sequence[int]) -> list[Gid]:
        journal = self._sync_journal()
        return [] if journal is None else list(journal.gids_of(ids).values())

    def _sync_forgotten(self, gids: Sequence[Gid]) -> None:
        journal = self._sync_journal()
        if journal is not None and gids:
            journal.record_forget(gids)

    # --- devices (issue 29, items 5-6; app/sync/devices.py): set up, pair, status, revoke --
    def _sync_devices(self) -> SyncDevices:
        self._check_unlocked()
        if self._devices is None:
            from app import bootstrap
            from app.sync.devices import SyncDevices
            journal = bootstrap.sync_journal_rows()
            self._devices = SyncDevices(
                self._db, bootstrap.sync_key_rows(),
                folder=lambda: str(self.setting("sync.folder") or ""),
                save_folder=lambda c, f: self._rows.put_setting(c, "sync.folder", f),
                unsent=lambda: len(self._db.read(lambda c: journal.unsent(c, 10_000))),
                now=self._clock.now)
        return self._devices

    def sync_status(self) -> SyncStatus:
        return self._sync_devices().status()

    def sync_set_up(self, folder: Path, name: str = "") -> Result[SyncStatus]:
        return Result(self._sync_devices().set_up(Path(folder), name), Changes(settings=True))

    def sync_invite(self) -> Result[PairInvite]:
        return Result(self._sync_devices().invite())

    def sync_join(self, folder: Path, code: str, name: str = "") -> Result[PairStep]:
        step = self._sync_devices().join(Path(folder), code, name)
        return Result(step, Changes(settings=step.state == "joined"))

    def sync_pair_step(self) -> Result[PairStep]:
        step = self._sync_devices().step()
        return Result(step, Changes(settings=step.state == "joined"))

    def sync_pair_cancel(self) -> Result[None]:
        self._sync_devices().cancel()
        return Result(None)

    def sync_revoke(self, device_id: str) -> Result[SyncStatus]:
        return Result(self._sync_devices().revoke(device_id), Changes(settings=True))

    def sync_name_successor(self, device_id: str) -> Result[SyncStatus]:
        return Result(self._sync_devices().name_successor(device_id), Changes(settings=True))

    def sync_take_over(self) -> Result[SyncStatus]:
        return Result(self._sync_devices().take_over(), Changes(settings=True))

    # --- the owner's sync job (issue 29 items 1 and 6; app/sync/runner.py) ------------------
    def _runner(self) -> SyncRunner:
        self._check_unlocked()
        if self._sync_runner is None:
            from app import bootstrap
            from app.sync.engine import SyncEngine
            from app.sync.runner import SyncRunner
            keys, journal = bootstrap.sync_key_rows(), bootstrap.sync_journal_rows()
            self._sync_runner = SyncRunner(
                folder=lambda: str(self.setting("sync.folder") or ""),
                set_up=lambda: self._db.read(keys.get_self) is not None,
                make_engine=lambda folder: SyncEngine(self, folder),
                sending=lambda: self._db.read(journal.count_unsent),
                now=self._clock.now, landed=self._sync_landed)
        return self._sync_runner

    def sync_activity(self) -> SyncActivity:
        self._check_unlocked()
        runner = self._sync_runner
        return SyncActivity() if runner is None else runner.activity()

    def sync_tick(self) -> SyncActivity:
        """One round of this vault's sync engine (the owner's job calls it; a no-op while this
        device does not sync, while another tick runs, or once locking began)."""
        runner = self._runner()
        runner.tick()
        return runner.activity()

    def watch_sync(self, on_recorded: Callable[[], None],
                   on_landed: Callable[[], None] | None = None) -> None:
        """``on_recorded``: the journal queued ops for a local act (on the writer thread).
        ``on_landed``: another device's file landed in the sync folder (on the runner's watch
        thread, ``app/sync/watch.py``). Both must return at once and never raise."""
        self._sync_watchers.append(on_recorded)
        if on_landed is not None:
            self._sync_landers.append(on_landed)

    def _sync_landed(self) -> None:
        """Another device's file landed; a watcher must never stop the watch."""
        _tell_all(self._sync_landers)

    def _sync_correcting(self, old: int) -> Callable[[ports.Connection, MemoryId], None] | None:
        """What ``correct`` runs in the transaction that writes the new version: its
        ``memory.edit`` op."""
        return self._sync_with_new(
            lambda journal, conn, memory: journal.edit_in(conn, old, memory))

    def _sync_changing(self) -> Callable[[ports.Connection, ChangeOutcome], None] | None:
        """What an assistant's change runs in the transaction that stores it: the new fact's
        ``fact.assert``, or ``fact.supersede`` of the fact it replaced."""
        journal = self._sync_journal()
        if journal is None:
            return None
        rows = self._rows

        def also(conn: ports.Connection, out: ChangeOutcome) -> None:
            if out.created is None:
                return
            memory = rows.get_memory(conn, out.created)
            if memory is not None:
                journal.creates_in(conn, [memory], out.replaced)
        return also

    def _sync_created(self, ids: Iterable[int], replaces: int | None = None) -> None:
        journal = self._sync_journal()
        todo = list(ids)
        if journal is not None and todo:
            found = self._db.read(lambda c: [self._rows.get_memory(c, i) for i in todo])
            journal.record_creates([m for m in found if m is not None], replaces)

    def _sync_deciding(self, cid: int, keep: str, text: str | None
                       ) -> Callable[[ports.Connection], None] | None:
        """What ``resolve`` runs in the transaction that settles the Inbox item: its
        ``inbox.decide`` (and ``inbox.propose`` the first time)."""
        journal = self._sync_journal()
        if journal is None:
            return None
        inbox = self._consolidation.inbox.inbox

        def also(conn: ports.Connection) -> None:
            entry = inbox.get(conn, cid)
            rows = inbox.rows(conn, [cid])
            if entry is not None:
                journal.decide_in(conn, cid, entry[0], entry[1], entry[3],
                                  rows[0].reason if rows else "", keep, text)
        return also

    def _sync_side(self) -> VaultSide:
        """What ``app/sync/apply.py`` needs to apply other devices' ops to this vault: the
        same services the person's acts use (issue 29)."""
        from app.sync.apply import VaultSide
        journal = self._sync_journal()
        assert journal is not None, "sync.journal is on while a vault syncs"
        from app import bootstrap
        inbox = self._consolidation.inbox
        return VaultSide(
            db=self._db, ingest=self._ingest, rows=self._rows, lifecycle=self._lifecycle,
            inbox=inbox.inbox, journal=journal, journal_rows=bootstrap.sync_journal_rows(),
            clock=self._clock,
            forget_ids=lambda ids: self._forget_quietly(ids),
            resolve=lambda cid, keep, text: inbox.resolve(cid, keep, text),
            validate=self.validate_draft, changed=lambda: self._emit(MEMORY_CHANGES))

    def _forget_quietly(self, ids: Sequence[int]) -> None:
        """Another device's forget, applied here through the person's forget path."""
        self.forget(self.forget_plan(ids=ids, include_sources=False))

    # --- backups (issue 16) ----------------------------------------------------------------
    def _backup_service(self) -> BackupService:
        if self._backups is None:
            from app import bootstrap
            from app.services.backup import BackupService
            self._backups = BackupService(bootstrap.backup_store(self._opened))
        return self._backups

    def backup(self, path: Path, password: str | None = None, *,
               progress: Progress | None = None) -> Result[BackupRecord]:
        """One encrypted file at ``path`` (new; never overwritten), verified after writing,
        recorded in the vault. It opens with the vault's password (as it is now), or with
        ``password`` when one is given."""
        self._check_unlocked()
        rec = self._backup_service().store.create(Path(path), password=password,
                                                  progress=progress, now=self._clock.now())
        changes = Changes(settings=True)
        self._emit(changes)
        return Result(rec, changes)

    def backups(self) -> list[BackupRecord]:
        """The backups this vault made, newest first (``exists``: still on disk)."""
        self._check_unlocked()
        return self._backup_service().store.records()

    def remake_backups(self, ids: Sequence[int], *, progress: Progress | None = None
                       ) -> Result[tuple[BackupRemade, ...]]:
        """Make these recorded backups again from the vault as it is now (after a forget:
        without what was forgotten), each replacing its old file atomically."""
        self._check_unlocked()
        done = self._backup_service().remake(ids, progress=progress, now=self._clock.now())
        changes = Changes(settings=True)
        self._emit(changes)
        return Result(done, changes)


# mypy checks here that the in-process Vault is a VaultAPI (tests/guards/test_contract.py checks
# that no signature of either holds Any or a dict).
_CONTRACT: type[VaultAPI] = Vault


# --- the one way in for tests and benchmarks ------------------------------------------------
@dataclass(frozen=True)
class Internals:
    """What one unlocked ``Vault`` was composed of, beyond the contract. Built by
    :func:`internals`, for tests and benchmarks only.

    The parts fixed for an unlock (clock, model folder, vector index, lexicon) are fields. The
    rest read the vault at the time of use, as the vault itself does: ``db``, ``recall`` and
    ``consolidation`` raise ``VaultLocked`` once it is locked, and ``embedder`` is None after
    the lock let go of the model."""
    clock: Clock
    model_dir: Path | None
    index: ports.VectorIndex
    lexicon: ports.Lexicon
    _vault: Vault = field(repr=False, compare=False)

    @property
    def db(self) -> ports.Database:
        return self._vault._db

    @property
    def embedder(self) -> ports.Embedder | None:
        return self._vault._embedder

    @property
    def recall(self) -> RecallService:
        return self._vault._recall_service

    @property
    def consolidation(self) -> ConsolidationService:
        return self._vault._consolidation_service

    @property
    def follower(self) -> VectorFollower | None:
        """Makes remember's vectors after the acknowledgement (issue 28); None without a
        model."""
        return self._vault._ingest.follower

    @property
    def sync_runner(self) -> SyncRunner:
        """The owner's sync job's runner (issue 29; built on first use)."""
        return self._vault._runner()


def internals(vault: Vault) -> Internals:
    """The parts behind ``vault`` (its database, clock, embedder, model folder, vector index,
    lexicon, recall and consolidation services), for tests and benchmarks only. Not part of
    ``VaultAPI``: front ends and services never reach past the contract, and a guard
    (``tests/guards/test_facade_fence.py``) checks that nothing in ``app/`` or ``ui/`` calls
    this."""
    return Internals(clock=vault._clock, model_dir=vault._model_dir, index=vault._index,
                     lexicon=vault._lexicon, _vault=vault)

