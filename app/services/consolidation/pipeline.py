"""The consolidation pipeline (docs/memory-model.md#consolidation): its steps, in order, from one
explicit table. Layer: app. Runs on: a scheduler worker or a CLI/UI worker thread.

1. extract: episodes become facts with provenance; duplicates corroborate, conflicts are
   resolved by rule or sent to the inbox;
2. entities: people, companies, projects, areas and resources mentioned often enough or
   stated (``para.py``);
3. similar: SIMILAR_TO between near-duplicate facts;
4. procedures: habits become procedures;
5. statistics: implicit statistics recomputed;
6. decay: rescoring, promotion and archival (never deletion);
   scores: 002's scheduled boosters, 003's confidence factors, working -> episodic promotion;
7. synthesis: entity summaries.

Work is done in batches; a failing batch is skipped, retried by the next run, and recorded in
the run's report as its step and error class (never the message, which may quote memory
text); a cancel token is checked between batches. Every change goes to the run log
(``runlog.py``) with its inverse, so a run can be undone.

Scope (docs/memory-model.md#scope): each memory has an agent and a context. Everything derived here
(facts, habits, statistics, entities and their summaries, promotions) keeps the scope of its
sources, and comparisons, merges, SIMILAR_TO links and summaries stay inside one scope.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from app import policy
from app.api import CancelToken, RunReport
from app.domain.fact import EpisodeView, FactCandidate
from app.domain.memory import Draft, LinkKind, MemoryId, RunId, Scores, Store
from app.errors import AppError, ValidationError
from app.ports import (
    Clock,
    ConsolidationRows,
    Database,
    InboxRows,
    Json,
    KnownHabit,
    RunLogRows,
    Scope,
    VectorIndex,
)
from app.services import fact_check, memory_words, owner, para, said_change, scoring, slots
from app.services.consolidation import extraction, scores_step
from app.services.consolidation.extraction import Extractor
from app.services.consolidation.inbox import prior_json
from app.services.consolidation.runlog import RETRY, WATERMARK, RunLog, report_json
from app.services.contradiction import FactView, classify, resolve
from app.services.extract import mentions, object_of
from app.services.ingest import IngestService, embed_text
from app.services.text import content_tokens

log = logging.getLogger(__name__)

BATCH = 400
ENTITY_MIN_MENTIONS = 3          # 000: an entity once mentioned in >= 3 memories
LINKS_SEEN = "consolidation.links_seen"  # what the links step last looked at
TOPIC_KINDS = ("project", "area", "resource", "company",
               "archive")  # what a conversation is about (a finished project still is)
RELATED_MAX = 3                  # RELATES_TO links from one new fact
PATTERN_MIN = 3                  # a habit: the same action at least 3 times
HABIT_RELIABILITY = 0.6          # a habit is inferred from reports, never stated: below a
                                 # hedged rule match (.6-.65) of an explicit one (.8-.9)
# A run waits this long for the vectors of remembers just made (the follower's queue in RAM,
# usually under a second) before it cuts its episodes at the first one still without a vector.
VECTORS_WAIT_S = 5.0
SIMILAR_COSINE = 0.93            # near-duplicate facts get a SIMILAR_TO link
# A memory's scope (docs/memory-model.md#scope): its agent ("global" is shared) and its context
# ("hat", or None). What consolidation derives keeps the scope of its sources, and nothing is
# compared, merged or summarised across two scopes.
StepFn = Callable[[RunLog, float, CancelToken], object]


# Who asks, for a forget request the person made in conversation (the Inbox says "you").
CHAT_ASKER = "you"
# Words of a "forget what I told you about ..." topic that name nothing by themselves.
_TOPIC_FILLER = frozenset({"bit", "bits", "part", "stuff", "thing", "things"})


class Cancelled(AppError):
    user_message = "Consolidation was cancelled; what was finished is kept."


def encode_category(category: str, qualifier: str | None, negated: bool) -> str:
    out = category
    if qualifier:
        out += f"|q={qualifier}"
    if negated:
        out += "|neg"
    return out


def decode_category(text: str | None) -> tuple[str | None, bool]:
    qualifier = None
    negated = False
    for part in (text or "").split("|")[1:]:
        if part.startswith("q="):
            qualifier = part[2:]
        elif part == "neg":
            negated = True
    return qualifier, negated


def derived_confidence(reliability: float, sources: int, occurred: float, now: float) -> float:
    """003 confidence of a derived fact or habit (scoring.derived_confidence); recency on the
    semantic class, the one facts and procedures decay by."""
    return scoring.derived_confidence(reliability, max(1, sources), policy.STORE_DECAY["semantic"],
                                      max(0.0, now - occurred) / policy.HOUR)


def scoring_defaults() -> Scores:
    """The scores of an implicit statistic (it is recomputed, never recalled for recency)."""
    return Scores(importance=0.4, recency=1.0, frequency=0.0, emotional=0.0, social=0.0,
                  composite=scoring.composite(0.4, 1.0, 0.0, 0.0, 0.0))


class Pipeline:
    """The steps of a run. Owner: ``ConsolidationService`` (one per unlocked vault); one run
    at a time per vault (the scheduler and the window serialise them)."""

    def __init__(self, db: Database, clock: Clock, index: VectorIndex, ingest: IngestService,
                 rows: ConsolidationRows, runlog: RunLogRows, inbox: InboxRows) -> None:
        self.db = db
        self.clock = clock
        self.index = index
        self.ingest = ingest
        self.rows = rows
        self.runlog = runlog
        self.inbox = inbox
        # An explicit table (``STEP_LIST``, below the class), checked before anything runs:
        # a misspelt step is an error, not a silently skipped batch.
        self.steps: Mapping[str, StepFn] = {s.name: partial(s.run, self) for s in STEP_LIST}
        self.owner_name: str | None = None  # setting owner.name, read at the start of a run

    def _read_owner(self) -> None:
        name = self.db.read(lambda c: self.rows.get_setting(c, "owner.name"))
        self.owner_name = str(name).strip() or None if name else None

    def rename_owner(self, new: str, previous: str | None = None) -> int:
        """What was stored about the person under another name ("User" before the name was
        known, "user", "human", a former name) is now about ``new``."""
        old = [*owner.ALIASES, owner.OWNER_FALLBACK, *([previous] if previous else [])]
        n = int(self.db.write_sync(lambda c: self.rows.rename_subject(c, old, new)))
        self.owner_name = new
        return n

    def _learn_owner_name(self, rl: RunLog, batch: list[EpisodeView]) -> None:
        """The person said their name ("I'm Priya by the way") and none is set: it is the
        owner's name from now on, and what was stored under "User" takes it."""
        if self.owner_name:
            return
        for e in batch:
            name = owner.name_said(e.text) if owner.is_owner(e.speaker, None) else None
            if name:
                self._set_owner_name(name)
                rl.counts["owner_named"] += 1
                return

    def _forget_requests(self, rl: RunLog, batch: list[EpisodeView], now: float,
                         scope: Scope) -> None:
        """"Please forget what I told you about X", said by the person: a forget request for
        the memories about X said before it, waiting for the person in the Inbox (never
        carried out here; the turn itself stays, and it is no source of facts)."""
        asks = [(e, topic) for e in batch
                if owner.is_owner(e.speaker, self.owner_name)
                and (topic := memory_words.forget_request(e.text))]
        if not asks:
            return
        from app.clock import to_iso

        def write(conn: Any) -> None:
            for e, topic in asks:
                tokens = [w for w in content_tokens(topic) if w not in _TOPIC_FILLER]
                ids = [i for i in self.rows.memories_about(conn, tokens, scope, e.occurred_at)
                       if i != e.id]
                if not ids:
                    continue
                day = (to_iso(e.occurred_at) or "")[:10]
                pid = self.rows.ask_forget(conn, CHAT_ASKER, ids, topic,
                                           f"you asked in a conversation on {day}: “{e.text}”",
                                           now)
                rl.counts["forget_asked"] += 1
                rl.ids["forget_requests"].append(pid)
        self.db.write_sync(write)

    def _set_owner_name(self, name: str) -> None:
        self.db.write_sync(lambda c: self.rows.put_setting(c, "owner.name", name))
        self.rename_owner(name)

    # --- the run ---------------------------------------------------------------------
    def run(self, *, now: float | None = None, cancel: CancelToken | None = None,
            kind: str = "consolidation", steps: tuple[str, ...] | None = None,
            progress: Callable[[int, int], None] | None = None) -> RunReport:
        steps = STEPS if steps is None else steps
        unknown = [s for s in steps if s not in self.steps]
        if unknown:
            raise ValidationError(f"Unknown consolidation step {unknown[0]!r}; the steps are "
                                  f"{', '.join(STEPS)}.")
        now = self.clock.now() if now is None else now
        cancel = cancel or CancelToken()
        self._read_owner()
        started = time.perf_counter()  # a duration, not a date: the clock is not asked
        run_id = self.db.write_sync(lambda c: self.runlog.start(c, kind, now))
        rl = RunLog(run_id, self.runlog)
        cancelled = False
        try:
            for n, step in enumerate(steps):
                if cancel.cancelled:
                    cancelled = True
                    break
                try:
                    self.steps[step](rl, now, cancel)
                except Cancelled:
                    cancelled = True
                    break
                except Exception as exc:  # a failed step is logged and skipped, never fatal
                    rl.failed(step, exc)
                if progress is not None:
                    progress(n + 1, len(steps))
            self.close_ended(rl, now)
        finally:
            seconds = time.perf_counter() - started
            report = RunReport(RunId(run_id), kind, now, round(seconds, 3), dict(rl.counts),
                               {k: v for k, v in rl.ids.items()}, len(rl.failures), cancelled,
                               tuple(rl.failures), dict(rl.llm_fallbacks))
            status = "cancelled" if cancelled else ("partial" if rl.failures else "done")
            self.db.write_sync(lambda c: self.runlog.finish(c, run_id, now, status,
                                                            report_json(report)))
        log.info("run %d: %s in %.2f s, %d failed batches", run_id, dict(rl.counts), seconds,
                 report.failed_batches)
        return report

    def store_assistant_fact(self, fact: FactCandidate, scope: Scope, now: float,
                             kind: str = "assistant_fact") -> RunReport:
        """One fact an assistant's LLM extracted (MCP ``remember_fact``), through the same
        policy as extraction's (duplicates corroborate, conflicts reach the Inbox), as a run of
        its own so the Inbox names it and Undo reverts it."""
        started = time.perf_counter()
        run_id = self.db.write_sync(lambda c: self.runlog.start(c, kind, now))
        rl = RunLog(run_id, self.runlog)
        try:
            self._store_facts(rl, [fact], now, scope, with_global=True)
            self.close_ended(rl, now)
        finally:
            report = RunReport(RunId(run_id), kind, now, round(time.perf_counter() - started, 3),
                               dict(rl.counts), {k: v for k, v in rl.ids.items()},
                               len(rl.failures), False, tuple(rl.failures),
                               dict(rl.llm_fallbacks))
            self.db.write_sync(lambda c: self.runlog.finish(c, run_id, now, "done",
                                                            report_json(report)))
        return report

    def store_assistant_change(self, fact: FactCandidate, scope: Scope, now: float,
                               replaces: int | None, *,
                               also: Callable[[Any, Any], None] | None = None
                               ) -> tuple[RunReport, Any]:
        """An assistant says a value changed (issue 26, ``app.services.assistant_change``):
        a run of its own, so the Inbox names it and Undo reverts it. Returns the report and
        the ``ChangeOutcome``. ``also(conn, outcome)`` runs in the transaction that stores
        it (sync journals the new fact and what it supersedes in the same commit)."""
        from app.services.assistant_change import store_change
        started = time.perf_counter()
        run_id = self.db.write_sync(lambda c: self.runlog.start(c, "assistant_fact", now))
        rl = RunLog(run_id, self.runlog)
        try:
            outcome = store_change(self, rl, fact, scope, now, replaces, also=also)
        finally:
            report = RunReport(RunId(run_id), "assistant_fact", now,
                               round(time.perf_counter() - started, 3), dict(rl.counts),
                               {k: v for k, v in rl.ids.items()}, len(rl.failures), False,
                               tuple(rl.failures), dict(rl.llm_fallbacks))
            self.db.write_sync(lambda c: self.runlog.finish(c, run_id, now, "done",
                                                            report_json(report)))
        return report, outcome

    # --- step 1: extraction ----------------------------------------------------------
    def _episodes_todo(self) -> list[tuple[EpisodeView, Scope]]:
        """The episodes past the watermark (and those to retry), but none from the first one
        whose vector is still to be made (issue 28): ``_said_changes`` pairs an episode by its
        vector and skips one without, and the watermark then passes it for good, so a file
        import's turns would never be paired, nor found as the earlier side. The follower makes
        vectors oldest id first, so the cut moves on as they land and the next run takes the
        rest. A remember's vector comes within about a second: that is waited for."""
        rows = self.rows
        follower = self.ingest.follower
        if follower is not None:
            follower.wait_idle(VECTORS_WAIT_S)

        def read(conn: Any) -> list[tuple[EpisodeView, Scope]]:
            upto = _watermark(rows, conn)
            retry = _retry_ids(rows, conn)
            found = rows.episodes_after(conn, upto)
            below = follower.rows.first(conn) if follower is not None else None
            if below is not None:
                found = [r for r in found if r.id < below]
            if retry:
                found = rows.episodes_by_id(conn, retry) + found
            name = self.owner_name
            # One owner, whatever the export called them ("user", "human", "me", the name).
            return [(EpisodeView(r.id, r.text, owner.speaker_for(r.speaker, name),
                                 r.occurred_at), (r.agent, r.context)) for r in found]
        return self.db.read(read)

    def _step_extract(self, rl: RunLog, now: float, cancel: CancelToken,
                      extractor: Extractor | None = None) -> None:
        episodes = self._episodes_todo()
        extractor = extractor or self._extractor(rl)
        rows = self.rows

        def mark(conn: Any) -> None:  # undo rewinds to here, so the episodes are read again
            rl.change(conn, "watermark", None, old=_watermark(rows, conn),
                      retry=_retry_ids(rows, conn))
        self.db.write_sync(mark)
        retry: list[int] = []
        for start in range(0, len(episodes), BATCH):
            if cancel.cancelled:
                raise Cancelled()
            window = episodes[start:start + BATCH]
            # One extractor call per scope (agent, context): an LLM never sees two agents'
            # memories in one prompt, and each fact is compared with its own scope only.
            by_scope: dict[Scope, list[EpisodeView]] = defaultdict(list)
            for e, scope in window:
                by_scope[scope].append(e)
            for scope, batch in by_scope.items():
                rl.corrections.update(
                    e.id for e in batch if owner.is_owner(e.speaker, self.owner_name)
                    and said_change.cue(e.text) == "contradiction")
                try:
                    facts = self._not_given(rl, extractor(batch, scope))
                    self._store_facts(rl, facts, now, scope)
                    self._said_changes(rl, batch, now, scope)
                    if scope == ("global", None):
                        self._learn_owner_name(rl, batch)
                    self._forget_requests(rl, batch, now, scope)
                except Cancelled:
                    raise
                except Exception as exc:  # log, skip the batch, retry it next run
                    rl.failed("extract", exc, len(batch))
                    retry += [e.id for e in batch]
            high = max(e.id for e, _scope in window)

            def advance(conn: Any, high: int = high) -> None:
                rows.put_setting(conn, WATERMARK, max(high, _watermark(rows, conn)))
            self.db.write_sync(advance)
        self.db.write_sync(lambda c: rows.put_setting(c, RETRY, list[Json](retry)))

    def _not_given(self, rl: RunLog, facts: list[FactCandidate]) -> list[FactCandidate]:
        """``facts`` without those an assistant already gave from the same turn
        (``remember_fact`` with that turn in ``source_ids``): the same slot (subject and
        predicate) or the same value about the same subject. The assistant read the turn
        whole; extracting it again only corroborated its own word or contradicted it."""
        sources = sorted({i for f in facts for i in f.source_ids})
        if not sources:
            return facts
        given = self.db.read(lambda c: self.rows.given_from(c, sources))
        if not given:
            return facts

        def known(f: FactCandidate) -> bool:
            subject = f.subject.casefold()
            pred = slots.canonical_predicate(f.predicate)
            obj = f.object.casefold()
            for i in f.source_ids:
                for s, p, o in given.get(i, ()):
                    if s.casefold() == subject and (
                            slots.canonical_predicate(p) == pred or (o or "").casefold() == obj):
                        return True
            return False
        kept = [f for f in facts if not known(f)]
        if len(kept) < len(facts):
            rl.counts["facts_already_given"] += len(facts) - len(kept)
        return kept

    def _extractor(self, rl: RunLog) -> Extractor:
        provider = self.db.read(
            lambda c: self.rows.get_setting(c, "extraction.provider")) or "rules"
        if provider == "llm":
            return extraction.llm_extractor(self.db, self.rows, self.inbox, self.clock, rl)
        return extraction.rules

    def _store_facts(self, rl: RunLog, facts: list[FactCandidate], now: float,
                     scope: Scope = ("global", None), with_global: bool = False) -> None:
        """Store new facts in ``scope``. ``with_global`` (an assistant's facts): they are also
        checked against the person's global facts, which they never replace: a repeat is
        already known, a disagreement always goes to the Inbox for the person."""
        if not facts:
            return
        # One name per slot, whoever named it ("employer" and "works at" meet).
        facts = [replace(f, predicate=slots.canonical_predicate(f.predicate)) for f in facts]
        # Embed new statements outside the write transaction.
        texts = list(dict.fromkeys(f.statement for f in facts))
        vecs = self.ingest.embed(texts)
        vec_of = {t: vecs[i] for i, t in enumerate(texts)} if vecs is not None else {}
        created: list[tuple[int, Any]] = []

        def write(conn: Any) -> None:
            for f in facts:
                reads_only = f.predicate == "corrects"
                if not reads_only and fact_check.problem(f) is not None:
                    rl.counts["facts_refused"] += 1  # malformed: never enters (issue 23)
                    continue
                views = self._fact_views(conn, f.subject, scope)
                shared = (self._fact_views(conn, f.subject, ("global", None))
                          if with_global and scope != ("global", None) else [])
                occurred = self._occurred(conn, f, now)
                new_view = FactView(-1, f.subject, f.predicate, f.object, f.qualifier,
                                    occurred, derived_confidence(f.confidence, len(f.source_ids),
                                                                 occurred, now),
                                    False, f.negated, f.change)
                if reads_only:
                    # "It's KPMG, not Deloitte": compared with the facts it corrects, never
                    # stored as a sentence of its own; what it corrects is settled against
                    # the turn that said it.
                    if f.source_ids:
                        said = replace(new_view, id=max(f.source_ids))
                        for v, _ in views:
                            if classify(v, new_view) == "contradiction":
                                self._conflict(conn, rl, v, said, "contradiction", now,
                                               corrected=bool(set(f.source_ids)
                                                              & rl.corrections))
                                rl.conflicted.update(f.source_ids)
                    continue
                dup = next((v for v, _ in views if classify(v, new_view) == "duplicate"), None)
                if dup is not None:
                    self._corroborate(conn, rl, dup, f, now)
                    continue
                if any(classify(v, new_view) == "duplicate" for v, _ in shared):
                    rl.counts["already_known"] += 1
                    continue
                mid = self._insert_fact(conn, rl, f, now, scope, new_view.confidence)
                if f.statement in vec_of:
                    created.append((mid, vec_of[f.statement]))
                new_view = replace(new_view, id=mid)
                corrected = bool(set(f.source_ids) & rl.corrections)
                for v, _text in views:
                    verdict = classify(v, new_view)
                    if verdict in ("update", "contradiction"):
                        self._conflict(conn, rl, v, new_view, verdict, now,
                                       corrected=corrected and verdict == "contradiction")
                        rl.conflicted.update(f.source_ids)
                for v, _text in shared:
                    verdict = classify(v, new_view)
                    if verdict in ("update", "contradiction"):
                        self._conflict(conn, rl, v, new_view, verdict, now, person=True)
                        rl.conflicted.update(f.source_ids)
        self.db.write_sync(write)
        if created:
            import numpy as np
            self.ingest.store_vectors([m for m, _ in created],
                                      np.stack([v for _, v in created]))

    def _said_changes(self, rl: RunLog, batch: list[EpisodeView], now: float,
                      scope: Scope) -> None:
        """Turns that say something changed or was wrong, with no fact that caught it, are
        paired with the closest earlier turn of the same speaker on the same topic
        (``said_change``); a pair goes to the Inbox, never settled here: the pairing knows
        the topic, not which value holds. Needs the embedding model."""
        if self.ingest.embedder is None:
            return
        cued = [e for e in batch if e.speaker and e.id not in rl.conflicted
                and said_change.cue(e.text)]
        if not cued:
            return
        # The earlier turns of these speakers, read once per run (a run reads every batch).
        known = rl.said_by.setdefault(scope, ({}, set()))
        said, read_for = known
        speakers = sorted({e.speaker for e in cued if e.speaker} - read_for)
        if speakers:
            said.update(self.db.read(lambda c: self.rows.speaker_episodes(c, speakers, scope)))
            read_for.update(speakers)
        found: list[tuple[int, int, str]] = []
        for e in cued:
            vec = self.index.vector(e.id)
            if vec is None:
                continue

            def earlier(i: int, e: EpisodeView = e) -> bool:
                m = said.get(i)
                return m is not None and m[0] == e.speaker and m[1] < e.occurred_at
            near = [(i, sim) for i, sim in self.index.search_exact(vec, 5, earlier)
                    if sim >= said_change.MIN_SIMILARITY]
            if not near:
                continue
            near_ids = [i for i, _ in near]

            def read(c: Any, near_ids: list[int] = near_ids) -> list[Any]:
                return self.rows.episodes_by_id(c, near_ids)
            texts = {r.id: r.text for r in self.db.read(read)}
            for i, sim in near:
                kind = said_change.verdict(texts.get(i, ""), e.text, sim)
                if kind is not None:
                    found.append((i, e.id, kind))
                    break
        if not found:
            return

        speaker_of = {e.id: e.speaker for e in batch}

        def write(conn: Any) -> None:
            for old, new, kind in found:
                reason = ("said to have changed" if kind == "update"
                          else "said to be wrong")
                cid = self.inbox.add_contradiction(conn, old, new, reason, rl.run_id, now)
                if cid is None:
                    continue
                rl.change(conn, "contradiction", None, id=cid)
                if self.rows.add_link(conn, new, old, LinkKind.CONTRADICTS, now):
                    rl.change(conn, "link", new, src=new, dst=old, kind="CONTRADICTS")
                rl.counts["contradictions_found"] += 1
                rl.counts["said_changes"] += 1
                if kind == "contradiction" and owner.is_owner(speaker_of.get(new),
                                                              self.owner_name):
                    # The person corrected themself ("sorry, I meant Thursday"): their own
                    # words settle it at once; the report lists it, and Undo restores it.
                    prior = self.rows.states(conn, (old, new))
                    self._supersede(conn, rl, old, new, now)
                    self.inbox.settle(conn, cid, "auto", json.dumps(
                        {"kept": new, "rule": "the person corrected it in their own words",
                         "prior": prior_json(prior)}), now)
                    rl.counts["auto_resolved"] += 1
                    rl.counts["corrected_by_person"] += 1
                    rl.ids["auto_resolved"].append(cid)
                    continue
                rl.counts["sent_to_inbox"] += 1
                rl.ids["inbox"].append(cid)
        self.db.write_sync(write)

    def _fact_views(self, conn: Any, subject: str, scope: Scope) -> list[tuple[FactView, str]]:
        """The active facts about ``subject`` in ``scope`` (never another scope's)."""
        out = []
        for r in self.rows.active_facts(conn, subject, scope):
            qualifier, negated = decode_category(r.category)
            obj = r.object
            if obj is None and r.subject and r.predicate:
                # A fact the person corrected keeps its subject and predicate but not the old
                # object; read the new one back from the corrected sentence (issue 12: a
                # missing object broke every later run).
                obj = object_of(r.subject, r.predicate, qualifier, negated, r.text)
            out.append((FactView(r.id, r.subject or "", r.predicate or "", obj, qualifier,
                                 r.occurred_at, r.confidence, bool(r.user_validated), negated),
                        r.text))
        return out

    def _occurred(self, conn: Any, f: FactCandidate, now: float) -> float:
        """When a fact happened: its latest source, else when it is valid from, else now."""
        latest = self.rows.latest_occurred(conn, f.source_ids)
        if latest is not None:
            return latest
        return f.valid_from or now

    def _insert_fact(self, conn: Any, rl: RunLog, f: FactCandidate, now: float,
                     scope: Scope, confidence: float) -> int:
        store = Store.PROCEDURAL if f.store == "procedural" else Store.SEMANTIC
        occurred = self._occurred(conn, f, now)
        category = encode_category(f.category, f.qualifier, f.negated)
        extra: dict[str, object] = {"subject": f.subject, "predicate": f.predicate,
                                    "object": f.object, "category": category}
        d = Draft(text=f.statement, store=store, occurred_at=occurred, speaker=f.subject,
                  agent=scope[0], context=scope[1], confidence=confidence,
                  valid_from=f.valid_from,
                  importance=policy.DEFAULT_IMPORTANCE[store.value],
                  derived_from=tuple(MemoryId(i) for i in f.source_ids),
                  extra={} if store is Store.PROCEDURAL else extra)
        mid = self.ingest.insert(conn, d, now, confidence=confidence)
        if store is Store.PROCEDURAL:
            # Procedures keep subject/predicate too, for contradiction checks.
            self.rows.mark_preference(conn, mid, f.subject, f.predicate, f.object, category)
        rl.change(conn, "created", mid)
        rl.counts["procedures_created" if store is Store.PROCEDURAL else "facts_created"] += 1
        rl.ids["created"].append(mid)
        return mid

    def _corroborate(self, conn: Any, rl: RunLog, dup: FactView, f: FactCandidate,
                     now: float) -> None:
        added = 0
        for src in f.source_ids:
            if self.rows.add_link(conn, dup.id, src, LinkKind.DERIVED_FROM, now):
                rl.change(conn, "link", dup.id, src=dup.id, dst=src, kind="DERIVED_FROM")
                added += 1
            if src != dup.id and self.rows.add_link(conn, src, dup.id, LinkKind.REINFORCES,
                                                    now):
                # The turn that said it again supports the fact (reference 002).
                rl.change(conn, "link", src, src=src, dst=dup.id, kind="REINFORCES")
        if added:
            # 003 confidence with one more source; corroboration never lowers it.
            sources = self.rows.source_count(conn, dup.id)
            newest = max(dup.occurred_at, self._occurred(conn, f, now))
            new_conf = max(dup.confidence, derived_confidence(f.confidence, sources, newest,
                                                              now))
            if new_conf != dup.confidence and not dup.user_validated:
                self.rows.set_confidence(conn, dup.id, new_conf)
                rl.change(conn, "confidence", dup.id, old=dup.confidence)
            rl.counts["facts_corroborated"] += 1

    def _conflict(self, conn: Any, rl: RunLog, old: FactView, new: FactView, verdict: str,
                  now: float, person: bool = False, corrected: bool = False) -> None:
        """Record a disagreement; settle it by policy, or (``person``, or when the policy
        cannot) leave it in the Inbox. ``corrected``: the newer fact is the person's own
        correction of the older, which settles it (unless they had confirmed the older)."""
        rows = self.rows
        a, b = (old, new) if old.occurred_at <= new.occurred_at else (new, old)
        reason = "update over time" if verdict == "update" else "facts disagree"
        cid = self.inbox.add_contradiction(conn, a.id, b.id, reason, rl.run_id, now)
        if cid is None:
            return
        rl.change(conn, "contradiction", None, id=cid)
        rows.add_link(conn, b.id, a.id, LinkKind.CONTRADICTS, now)
        rl.change(conn, "link", b.id, src=b.id, dst=a.id, kind="CONTRADICTS")
        rl.counts["contradictions_found"] += 1
        winner: int | None
        loser: int | None
        if person:
            winner, loser, rule = None, None, ""
        elif corrected and b is new and not a.user_validated:
            winner, loser, rule = b.id, a.id, "the person corrected it in their own words"
            rl.counts["corrected_by_person"] += 1
        elif verdict == "update" and not a.user_validated:
            winner, loser, rule = b.id, a.id, "the newer statement is a stated change"
        else:
            d = resolve(a, b)
            winner, loser, rule = d.winner, d.loser, d.rule
        if winner is None or loser is None:
            rl.counts["sent_to_inbox"] += 1
            rl.ids["inbox"].append(cid)
            return
        prior = rows.states(conn, (a.id, b.id))
        if verdict == "update":
            # Both were true, at different times: the older one's validity ends.
            rows.set_valid_until(conn, loser, rows.occurred_at(conn, winner))
        self._supersede(conn, rl, loser, winner, now)
        self.inbox.settle(conn, cid, "auto", json.dumps(
            {"kept": winner, "rule": rule, "prior": prior_json(prior)}), now)
        rl.counts["auto_resolved"] += 1
        rl.ids["auto_resolved"].append(cid)

    def close_ended(self, rl: RunLog, now: float) -> None:
        """Close the open Inbox items whose two sides were both superseded since (by the
        person's corrections, by this run, by an assistant's change): "auto", with the rule
        said; undoing the run opens them again (issue 26)."""
        def write(conn: Any) -> None:
            for cid in self.inbox.open_with_both_ended(conn):
                self.inbox.settle(conn, cid, "auto", json.dumps(
                    {"kept": None, "rule": "both sides were replaced since", "prior": {}}), now)
                rl.change(conn, "settled", None, id=cid)
                rl.counts["closed_both_replaced"] += 1
                rl.ids["auto_resolved"].append(cid)
        try:
            self.db.write_sync(write)
        except Exception as exc:  # never fails a run: the next one tries again
            rl.failed("close_ended", exc)

    def _supersede(self, conn: Any, rl: RunLog, loser: int, winner: int, now: float) -> None:
        prior = self.rows.supersede(conn, loser, winner, now)
        assert prior is not None
        rl.change(conn, "status", loser, status=prior.status, superseded_by=prior.superseded_by,
                  valid_until=prior.valid_until)
        rl.change(conn, "link", winner, src=winner, dst=loser, kind="SUPERSEDES")

    # --- step 2: people, companies, projects, areas, resources -----------------------
    def _step_entities(self, rl: RunLog, now: float, cancel: CancelToken) -> None:
        """An entity per scope: mentions in one agent's memories never make, or count
        towards, an entity another scope sees. People and companies by ``mentions``;
        projects, areas and resources by ``para`` (the one place that decides those)."""
        rows = self.rows

        def write(conn: Any) -> None:
            Key = tuple[Scope, str, str]  # noqa: N806 (a local type alias)
            counts: Counter[Key] = Counter()
            members: dict[Key, set[int]] = defaultdict(set)
            stated: set[Key] = set()
            sources = list(rows.mention_sources(conn))  # para reads them twice
            for m in sources:
                found = {n: k for n, k in mentions(m.text).items() if k != para.PROJECT}
                self._organisations(m, found, stated)
                if owner.is_owner(m.speaker, self.owner_name):
                    found.setdefault(owner.subject(self.owner_name), "person")
                elif m.speaker and m.speaker.lower() not in ("assistant", "system"):
                    found.setdefault(m.speaker, "person")
                for name, kind in found.items():
                    counts[((m.agent, m.context), name, kind)] += 1
                    members[((m.agent, m.context), name, kind)].add(m.id)
            things, said = para.scope_mentions(sources)
            for key, ids in things.items():
                counts[key] += len(ids)
                members[key] |= ids
            stated |= said
            for r in rows.relations(conn):
                for who in (r.object, r.subject):
                    if who:
                        stated.add(((r.agent, r.context), who, "person"))
            existing = {((e.agent, e.context), e.name_key, e.kind): e.id
                        for e in rows.entity_keys(conn)}
            existing.update(self._entity_aliases(conn))
            for (scope, name, kind), n in counts.items():
                eid = existing.get((scope, name.casefold(), kind))
                if eid is None and (n >= ENTITY_MIN_MENTIONS or (scope, name, kind) in stated):
                    eid = rows.add_entity(conn, kind, name, scope, now)
                    existing[(scope, name.casefold(), kind)] = eid
                    rl.change(conn, "entity", None, id=eid)
                    rl.counts["entities_created"] += 1
                if eid is None:
                    continue
                for mid in members[(scope, name, kind)]:
                    if rows.add_mention(conn, eid, mid):
                        rl.change(conn, "mention", mid, entity=eid)
            self._merge_entities(conn, rl, now)
            self._archive_projects(conn, rl, now)
        self.db.write_sync(write)

    # --- issue 27 item 3: one entity per thing; projects that end become archives --------
    @staticmethod
    def _organisations(m: Any, found: dict[str, str], stated: set[Any]) -> None:
        """Employers and schools (``organisations``) are companies; the person's own, said
        in the first person, are made at once."""
        from app.services.organisations import organisations
        by_person = not m.speaker or m.speaker.lower() not in ("assistant", "system")
        for name, mine in organisations(m.text).items():
            found[name] = "company"
            if mine and by_person:
                stated.add(((m.agent, m.context), name, "company"))

    def _entity_aliases(self, conn: Any) -> dict[tuple[Scope, str, str], int]:
        """Where a name's new mentions go when its entity was archived (the archive, under
        the kind it had) or merged (the entity it joined, followed to the end)."""
        states = self.rows.entity_states(conn)
        into = {e.id: e.merged_into for e in states if e.status == "merged" and e.merged_into}
        out: dict[tuple[Scope, str, str], int] = {}
        for e in states:
            if e.was_kind:
                out[((e.agent, e.context), e.name_key, e.was_kind)] = e.id
            if e.id in into:
                target, seen = into[e.id], {e.id}
                while target in into and target not in seen:
                    seen.add(target)
                    target = into[target]
                out[((e.agent, e.context), e.name_key, e.kind)] = target
        return out

    def _merge_entities(self, conn: Any, rl: RunLog, now: float) -> None:
        """Near-duplicate entities of one scope become one (``entity_merge.plan`` says
        which); the merge is recorded so undo, or the person, restores both exactly."""
        from app.policy import ENTITY_MERGE_COSINE
        from app.services import entity_merge
        rows = self.rows
        items = [entity_merge.EntityItem(e.id, (e.agent, e.context), e.name, e.kind,
                                         e.mentions)
                 for e in rows.entity_states(conn) if e.status == "active"
                 and e.kind != "archive"]
        embed = self.ingest.embed if self.ingest.embedder is not None else (lambda _: None)
        for kept, merged, reason in entity_merge.plan(items, embed, ENTITY_MERGE_COSINE,
                                                      rows.distinct_entities(conn)):
            merge_id = rows.merge_entity(conn, kept, merged, reason, now)
            rl.change(conn, "entity_merged", None, merge=merge_id)
            rl.counts["entities_merged"] += 1

    def _archive_projects(self, conn: Any, rl: RunLog, now: float) -> None:
        """A project a memory says is over ("the renovation is finished", "we gave up on
        the app") becomes an archive dated by that memory; one not mentioned for
        ``policy.PROJECT_IDLE_D`` days, dated by its last mention."""
        from app.policy import DAY, PROJECT_IDLE_D
        from app.services.project_end import ends
        rows = self.rows
        states = {e.id: e for e in rows.entity_states(conn)
                  if e.kind == "project" and e.status == "active"}
        if not states:
            return
        ended: dict[int, tuple[float, str]] = {}
        for eid, text in rows.project_mentions(conn):
            e = states.get(eid)
            if e is not None and eid not in ended and ends(text, e.name):
                ended[eid] = (e.last_mention or now, "finished")
        for e in states.values():
            if e.id not in ended and e.last_mention is not None \
                    and now - e.last_mention > PROJECT_IDLE_D * DAY:
                ended[e.id] = (e.last_mention, "idle")
        for eid, (at, how) in ended.items():
            rows.archive_entity(conn, eid, at, how)
            rl.change(conn, "entity_archived", None, id=eid)
            rl.counts["projects_archived"] += 1

    def entity_merges(self, eid: int) -> list[Any]:
        """The merges entity ``eid`` took part in, newest first."""
        return list(self.db.read(lambda c: self.rows.entity_merges(c, eid)))

    def undo_entity_merge(self, merge_id: int, different: bool) -> bool:
        """The person undoes merge ``merge_id`` (the window's entity card, the CLI);
        ``different``: they are different things, never merged again. False when the merge
        is no longer there."""
        def write(conn: Any) -> bool:
            m = self.rows.unmerge_entity(conn, merge_id)
            if m is None:
                return False
            if different:
                self.rows.keep_apart(conn, m.kept, m.merged)
            return True
        return bool(self.db.write_sync(write))

    # --- links: what came before, what relates, what supports ---------------------------
    def _step_links(self, rl: RunLog, now: float, cancel: CancelToken) -> None:
        """Reference 002's graph, from what Kept already knows (no model): PRECEDED_BY from
        each episode to the one before it in its conversation, and from the first mention
        of a topic (a project, area, resource or company) in a conversation to its last
        mention in the previous conversation about it; RELATES_TO from each fact made in
        this run to the newest facts (at most ``RELATED_MAX``) that mention a person or topic
        it mentions (not the owner, nor anyone who speaks in the conversations: every fact is
        about them). REINFORCES is written when a turn corroborates a fact
        (``_corroborate``) and PROMOTED_FROM on promotion (``_step_decay``)."""
        rows = self.rows
        skip = [self.owner_name.casefold()] if self.owner_name else []
        created = list(rl.ids.get("created", []))

        def read(conn: Any) -> list[tuple[int, int]] | None:
            # Read first (the scan of every conversation holds no write lock), and only when
            # memories or mentions came since the last look (a quiet heartbeat skips it).
            mark = rows.link_mark(conn)
            if rows.get_setting(conn, LINKS_SEEN) == mark and not created:
                return None
            pairs = rows.unlinked_successions(conn)
            last: dict[tuple[int, str, Scope], tuple[int, int]] = {}  # first and last
            by_topic: dict[int, list[tuple[str, Scope, int]]] = defaultdict(list)
            for t in rows.topic_mentions(conn, TOPIC_KINDS):
                key = (t.entity_id, t.session, (t.agent, t.context))
                first, _ = last.get(key, (t.memory_id, t.memory_id))
                if key not in last:
                    by_topic[t.entity_id].append((t.session, (t.agent, t.context),
                                                  t.memory_id))
                last[key] = (first, t.memory_id)
            for eid, sessions in by_topic.items():
                prev: dict[Scope, str] = {}
                for session, scope, _first in sessions:
                    if scope in prev:
                        pairs.append((last[(eid, session, scope)][0],
                                      last[(eid, prev[scope], scope)][1]))
                    prev[scope] = session
            return pairs
        found = self.db.read(read)
        if found is None:
            return
        pairs = found

        def write(conn: Any) -> None:
            rows.put_setting(conn, LINKS_SEEN, rows.link_mark(conn))
            for later, earlier in pairs:
                if later != earlier and rows.add_link(conn, later, earlier,
                                                      LinkKind.PRECEDED_BY, now):
                    rl.change(conn, "link", later, src=later, dst=earlier, kind="PRECEDED_BY")
                    rl.counts["sequence_links"] += 1
            for mid in created:
                for other in rows.facts_sharing_entities(conn, mid, skip, RELATED_MAX):
                    if rows.add_link(conn, mid, other, LinkKind.RELATES_TO, now):
                        rl.change(conn, "link", mid, src=mid, dst=other, kind="RELATES_TO")
                        rl.counts["related_links"] += 1
        self.db.write_sync(write)

    # --- step 3: near duplicates -----------------------------------------------------
    def _step_similar(self, rl: RunLog, now: float, cancel: CancelToken) -> None:
        """SIMILAR_TO between facts of one scope whose vectors nearly coincide (exact
        duplicates were already merged at extraction)."""
        if self.ingest.embedder is None:
            return
        created = rl.ids.get("created", [])
        pairs = []
        for mid in created:
            vec = self.index.vector(mid)
            if vec is None:
                continue
            for other, sim in self.index.search_exact(vec, 5):
                if other != mid and sim >= SIMILAR_COSINE:
                    pairs.append((mid, other, sim))
        if not pairs:
            return
        ids = sorted({i for a, b, _ in pairs for i in (a, b)})
        scopes = self.db.read(lambda c: self.rows.scopes(c, ids))
        pairs = [p for p in pairs if p[0] in scopes and scopes[p[0]] == scopes.get(p[1])]

        def write(conn: Any) -> None:
            for a, b, sim in pairs:
                if self.rows.add_link(conn, a, b, LinkKind.SIMILAR_TO, now, round(sim, 4)):
                    rl.change(conn, "link", a, src=a, dst=b, kind="SIMILAR_TO")
                    rl.counts["similar_links"] += 1
        if pairs:
            self.db.write_sync(write)

    # --- step 4: habits become procedures --------------------------------------------
    def _step_procedures(self, rl: RunLog, now: float, cancel: CancelToken) -> None:
        """Habits per scope: three reports in one agent's memories make a habit of that
        scope; reports from two scopes never add up."""
        from app.services.habits import detect_patterns, habit_counts
        rows = self.rows

        def read(conn: Any) -> tuple[dict[Scope, list[tuple[int, str, str, float, str]]],
                                     dict[tuple[str, Scope], KnownHabit], dict[int, int]]:
            episodes: dict[Scope, list[tuple[int, str, str, float, str]]] = defaultdict(list)
            for r in rows.habit_episodes(conn):
                episodes[(r.agent, r.context)].append(
                    (r.id, r.text, r.speaker, r.occurred_at, r.session))
            return episodes, rows.procedure_triggers(conn), _episode_sides(rows, conn)
        episodes, have, sides = self.db.read(read)
        found = [(scope, p) for scope, scoped in episodes.items()
                 for p in detect_patterns(scoped, PATTERN_MIN)]
        new = [(scope, p) for scope, p in found if (p.key, scope) not in have]
        recount = [(have[(p.key, scope)], p) for scope, p in found if (p.key, scope) in have
                   and (have[(p.key, scope)].success_count, have[(p.key, scope)].failure_count)
                   != habit_counts(p, sides)]
        if not new and not recount:
            return

        def write(conn: Any) -> None:
            made: dict[tuple[str, Scope], int] = {}
            for scope, p in new:
                d = Draft(text=p.statement, store=Store.PROCEDURAL, occurred_at=p.last_at,
                          speaker=p.who or None, agent=scope[0], context=scope[1],
                          derived_from=tuple(MemoryId(i) for i in p.sources),
                          importance=0.6)
                newest = max([p.last_at] + [rows.occurred_at(conn, i) for i in p.sources[-1:]])
                mid = self.ingest.insert(conn, d, now, confidence=derived_confidence(
                    HABIT_RELIABILITY, len(p.sources), newest, now))
                rows.mark_procedure(conn, mid, p.key, p.actions, *habit_counts(p, sides))
                made[(p.key, scope)] = mid
                rl.change(conn, "created", mid)
                rl.ids["created"].append(mid)
                rl.counts["procedures_created"] += 1
            for known, p in recount:
                rows.set_procedure_counts(conn, known.memory_id, *habit_counts(p, sides))
                rl.change(conn, "habit_counts", known.memory_id, success=known.success_count,
                          failure=known.failure_count)
                rl.counts["habits_recounted"] += 1
            # A habit that moved (Saturday runs, then Sunday runs): the earlier one ends.
            for scope, p in new:
                for scope2, q in found:
                    if scope2 != scope or q.activity != p.activity or q.key == p.key \
                            or q.last_at >= p.first_at:
                        continue
                    old = made.get((q.key, scope))
                    if old is None and (q.key, scope) in have:
                        known = have[(q.key, scope)]
                        old = known.memory_id if known.status == "active" else None
                    if old is not None:
                        rows.set_valid_until(conn, old, p.first_at)
                        self._supersede(conn, rl, old, made[(p.key, scope)], now)
                        rl.counts["habits_replaced"] += 1
        self.db.write_sync(write)

    # --- outcomes of episodes (issue 27 item 8) ------------------------------------------
    def _step_outcomes(self, rl: RunLog, now: float, cancel: CancelToken) -> None:
        """"It went really well", "that was a disaster": the outcome of what the person
        reported just before (``app.services.outcomes.infer``, conservative), written on
        episodes with no outcome yet; never over the person's own rating or words. Counted
        as ``outcomes_inferred``; undo clears them."""
        from app.services import outcomes
        from app.services.habits import reports_activity
        rows = self.rows

        def read(conn: Any) -> tuple[list[Any], dict[int, Any]]:
            return rows.outcome_turns(conn), rows.episode_outcomes(conn)
        turns, known = self.db.read(read)
        found = outcomes.infer([outcomes.Turn(t.id, t.text, t.speaker, t.session)
                                for t in turns], reports_activity)
        todo = {f.episode: f for f in found if f.episode not in known}
        if not todo:
            return

        def write(conn: Any) -> None:
            for mid, f in todo.items():
                old = rows.episode_outcome(conn, mid)
                if old.outcome_by is not None or old.rating is not None:
                    continue  # the person rated it meanwhile
                rows.set_episode_outcome(conn, mid, None, outcomes.RATINGS[f.side], "inferred",
                                         now)
                rl.change(conn, "episode_outcome", mid, rating=old.rating, outcome=old.outcome,
                          outcome_by=old.outcome_by, rated_at=old.rated_at)
                rl.counts["outcomes_inferred"] += 1
        self.db.write_sync(write)

    # --- merging what repeats -------------------------------------------------------------
    def _step_merge(self, rl: RunLog, now: float, cancel: CancelToken) -> None:
        """Near-duplicate facts and habits of one scope become one (``app.services.merge``
        says which): the duplicate is superseded by the one kept, which takes over its
        sources. Counted as ``facts_merged`` and ``habits_merged``."""
        from app.services import merge
        rows = self.rows
        facts, habits = self.db.read(rows.merge_candidates)
        pairs = [(d, k, "facts_merged") for d, k in merge.fact_merges(
            merge.FactItem(f.id, (f.agent, f.context), f.subject, f.predicate, f.object,
                           f.occurred_at, bool(f.user_validated)) for f in facts)]
        pairs += [(d, k, "habits_merged") for d, k in merge.habit_merges(
            [merge.HabitItem(h.id, (h.agent, h.context), h.holder, h.text, h.trigger,
                             h.occurred_at) for h in habits])]
        if not pairs:
            return

        def write(conn: Any) -> None:
            for dup, keep, counter in pairs:
                for src in rows.derived_sources(conn, dup):
                    if src != keep and rows.add_link(conn, keep, src, LinkKind.DERIVED_FROM,
                                                     now):
                        rl.change(conn, "link", keep, src=keep, dst=src, kind="DERIVED_FROM")
                self._supersede(conn, rl, dup, keep, now)
                rl.counts[counter] += 1
        self.db.write_sync(write)

    # --- short-term summaries (issue 27 item 2) --------------------------------------------
    def _step_summaries(self, rl: RunLog, now: float, cancel: CancelToken) -> None:
        """Each long conversation becomes one summary episode (``summarise.py``)."""
        from app.services.consolidation import summarise
        summarise.step(self, rl, now, cancel)

    # --- step 5: implicit statistics -------------------------------------------------
    def _step_statistics(self, rl: RunLog, now: float, cancel: CancelToken) -> None:
        self.recompute_statistics(now, rl)

    def recompute_statistics(self, now: float, rl: RunLog | None = None, *,
                             create: bool = True) -> int:
        """Implicit store: aggregate behaviour statistics, recomputed (also after a forget,
        then with ``create=False``: existing ones are updated or removed, none are added)."""
        from app.services.habits import statistics
        rows = self.rows

        def write(conn: Any) -> int:
            # Every episode the person has not forgotten: archived ones too (decay puts them
            # aside; counting only active ones emptied the store after one forget, issue 12).
            # One set of statistics per scope, each from that scope's episodes only
            # (docs/memory-model.md#scope).
            by_scope: dict[Scope, list[tuple[float, float, str | None]]] = defaultdict(list)
            for e in rows.episode_signals(conn):
                by_scope[(e.agent, e.context)].append((e.occurred_at, e.emotional, e.speaker))
            stats: dict[tuple[str, Scope], tuple[float, int, str]] = {}
            for scope, signals in by_scope.items():
                people = rows.top_person(conn, scope)
                stats.update({(metric, scope): v
                              for metric, v in statistics(signals, people).items()})
            existing = {(s.metric, (s.agent, s.context)): (s.memory_id, s.value, s.sample_size)
                        for s in rows.statistics(conn)}
            n = 0
            for (metric, scope), (value, sample, text) in stats.items():
                if (metric, scope) in existing:
                    mid, old_value, old_sample = existing[(metric, scope)]
                    if (old_value, old_sample) != (value, sample):
                        rows.update_statistic(conn, mid, value, sample, text, now)
                        if rl is not None:
                            rl.change(conn, "statistic", mid, value=old_value,
                                      sample_size=old_sample)
                        n += 1
                    continue
                if not create:
                    continue
                d = Draft(text=text, store=Store.IMPLICIT, occurred_at=now, importance=0.4,
                          agent=scope[0], context=scope[1],
                          extra={"metric": metric, "value": value, "sample_size": sample,
                                 "computed_at": now})
                mid = rows.insert_memory(conn, d, now=now, decay_class="semantic",
                                         scores=scoring_defaults(), confidence=0.9)
                if rl is not None:
                    rl.change(conn, "created", mid)
                n += 1
            for key, (mid, _v, _s) in existing.items():
                if key not in stats:  # nothing left to compute it from
                    rows.forget(conn, {mid})
            if rl is not None:
                rl.counts["statistics_updated"] += n
            return n
        return self.db.write_sync(write)

    # --- step 6: decay, reinforcement, promotion, archival ---------------------------
    def _step_decay(self, rl: RunLog, now: float, cancel: CancelToken) -> int:
        rows = self.rows
        promoted: list[tuple[MemoryId, Draft]] = []  # embedded after the transaction

        def write(conn: Any) -> None:
            updates = []
            for r in rows.decay_rows(conn):
                reference = max(x for x in (r.occurred_at, r.last_accessed_at) if x is not None)
                idle_h = max(0.0, (now - reference) / policy.HOUR)
                rec = scoring.recency(r.decay_class, idle_h)
                last = r.last_accessed_at
                freq = scoring.frequency(r.access_count,
                                         (now - last) / policy.HOUR if last else None)
                comp = scoring.composite(r.importance, rec, freq, r.emotional, r.social)
                updates.append((rec, freq, comp, r.id))
                retention_d = policy.DECAY[r.decay_class].max_retention_d
                # Retention starts no earlier than when Kept learned the memory (issue 12).
                idle_d = scoring.retention_idle_days(r.occurred_at, last, r.created_at, now)
                too_old = idle_d > retention_d and not r.user_validated
                faded = comp < policy.ARCHIVE_MIN_COMPOSITE and idle_d >= policy.ARCHIVE_IDLE_D
                if too_old or faded:
                    rows.archive(conn, r.id)
                    rl.change(conn, "status", r.id, status="active", superseded_by=None,
                              valid_until=None)
                    rl.counts["archived"] += 1
                    continue
                p = policy.PROMOTE_EPISODIC
                age_d = (now - r.created_at) / policy.DAY
                if (r.store == "episodic" and r.importance > p["importance"]
                        and r.emotional < p["emotional_below"] and r.access_count > p["accesses"]
                        and age_d > p["age_d"] and not rows.was_promoted(conn, r.id)):
                    promoted.append(self._promote(conn, rl, r.id, now))
            rows.set_scores(conn, updates)
            rl.counts["rescored"] += len(updates)
        self.db.write_sync(write)
        if promoted:  # a promoted fact is found by meaning too, not only by its words
            self.ingest.store_vectors([mid for mid, _d in promoted],
                                      self.ingest.embed([embed_text(d) for _m, d in promoted]))
        return 0

    def _promote(self, conn: Any, rl: RunLog, mid: int, now: float
                 ) -> tuple[MemoryId, Draft]:
        src = self.rows.get_memory(conn, mid)
        assert src is not None
        d = Draft(text=src.text, store=Store.SEMANTIC, occurred_at=src.occurred_at,
                  speaker=src.speaker, agent=src.agent, context=src.context,
                  importance=src.scores.importance)
        new = self.ingest.insert(conn, d, now, confidence=src.confidence)
        self.rows.add_link(conn, new, mid, LinkKind.PROMOTED_FROM, now)
        rl.change(conn, "created", new)
        rl.ids["created"].append(new)
        rl.counts["promoted"] += 1
        return new, d

    # --- step 6b: scores (issue 27 item 6; app/services/consolidation/scores_step.py) ------
    def _step_scores(self, rl: RunLog, now: float, cancel: CancelToken) -> int:
        """002 scheduled boosters, 003 confidence factors that move, working -> episodic
        promotion of what a request used (embedded after the transaction)."""
        rows, ingest = self.rows, self.ingest

        def write(conn: Any) -> list[tuple[MemoryId, Draft]]:
            scores_step.boost(conn, rows, rl, now)
            scores_step.refresh_confidence(conn, rows, None, rl)
            return scores_step.promote_used_turns(conn, rows, ingest, rl, now)
        promoted = self.db.write_sync(write)
        if promoted:
            ids = [mid for mid, _d in promoted]
            ingest.store_vectors(ids, ingest.embed([embed_text(d) for _m, d in promoted]))
        return len(promoted)

    # --- step 7: weekly synthesis ----------------------------------------------------
    def _step_synthesis(self, rl: RunLog, now: float, cancel: CancelToken) -> None:
        rl.counts["summaries_written"] += self.synthesise_summaries(now)

    def synthesise_summaries(self, now: float) -> int:
        """Entity summaries from their hot and warm facts (cold ones are searchable, never
        summarised, per 000), of the entity's own scope only. A fact's age counts from the
        latest of when it happened, when Kept learned it and when it was last read: a fact
        learned today from a conversation in May is hot today (as retention counts from the
        later of happened and learned, docs/memory-model.md#decay-and-archival), and cold once
        neither said, learned nor read for a month."""
        rows = self.rows

        def write(conn: Any) -> int:
            n = 0
            for entity in rows.entity_scopes(conn):
                lines = []
                for f in rows.summary_facts(conn, entity):
                    if scoring.tier_at(now, f.occurred_at, f.created_at, f.last_accessed_at,
                                       f.access_count).value != "cold":
                        lines.append(f.text)
                summary = "; ".join(dict.fromkeys(lines[:8])) or None
                rows.set_summary(conn, entity.id, summary, now)
                n += summary is not None
            return n
        return self.db.write_sync(write)



def _watermark(rows: ConsolidationRows, conn: Any) -> int:
    """The id of the last episode extraction read (0 before the first run)."""
    value = rows.get_setting(conn, WATERMARK)
    return int(value) if isinstance(value, int | float) else 0


def _retry_ids(rows: ConsolidationRows, conn: Any) -> list[int]:
    """The episodes of batches that failed, read again next run."""
    value = rows.get_setting(conn, RETRY)
    return [int(i) for i in value if isinstance(i, int)] if isinstance(value, list) else []

def _episode_sides(rows: Any, conn: Any) -> dict[int, int]:
    """Episode id -> +1 / -1: how it went, for habits' counts (the person's rating, else an
    inferred outcome; ``app.services.outcomes.side``)."""
    from app.services.outcomes import side
    out: dict[int, int] = {}
    for mid, o in rows.episode_outcomes(conn).items():
        s = side(o.rating, o.outcome_by, o.outcome)
        if s is not None:
            out[mid] = s
    return out


@dataclass(frozen=True, slots=True)
class Step:
    """One consolidation step: what it runs, and the scheduled jobs (``app/jobs.py``) that run
    it. A run of several steps runs them in the order of ``STEP_LIST``."""
    name: str
    run: Callable[[Pipeline, RunLog, float, CancelToken], object]
    jobs: tuple[str, ...]


# Every step, once, in run order, with its schedule.
STEP_LIST: tuple[Step, ...] = (
    Step("extract", Pipeline._step_extract, ("heartbeat", "consolidation")),
    Step("entities", Pipeline._step_entities, ("heartbeat", "consolidation")),
    Step("links", Pipeline._step_links, ("heartbeat", "consolidation")),
    Step("similar", Pipeline._step_similar, ("consolidation",)),
    Step("outcomes", Pipeline._step_outcomes, ("consolidation",)),
    Step("procedures", Pipeline._step_procedures, ("consolidation",)),
    Step("merge", Pipeline._step_merge, ("consolidation",)),
    Step("summaries", Pipeline._step_summaries, ("consolidation",)),
    Step("statistics", Pipeline._step_statistics, ("consolidation", "synthesis")),
    Step("decay", Pipeline._step_decay, ("decay",)),
    Step("scores", Pipeline._step_scores, ("decay",)),
    Step("synthesis", Pipeline._step_synthesis, ("synthesis",)),
)
STEPS = tuple(s.name for s in STEP_LIST)
JOBS = ("heartbeat", "consolidation", "decay", "synthesis")


def job_steps(job: str) -> tuple[str, ...]:
    """The steps scheduled job ``job`` runs, in run order."""
    if job not in JOBS:
        raise ValueError(f"unknown job {job!r}")
    return tuple(s.name for s in STEP_LIST if job in s.jobs)
