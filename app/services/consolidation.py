"""Background consolidation (DESIGN 7): episodes become facts with provenance, duplicates
merge, contradictions are resolved or sent to the inbox, habits become procedures, implicit
statistics are recomputed, memories decay, are promoted and archived (never deleted), entity
summaries are written. Layer: app. Runs on: a scheduler worker or a CLI/UI worker thread.

Every change is logged in ``run_change`` (ids and numbers only, never text, so forgetting
leaves no copy there) and ``undo(run_id)`` reverts a run. Work is done in batches; a failing
batch is skipped, retried by the next run, and recorded in the run's report as its step and
error class (never the message, which may quote memory text), so the CLI, the window and the
scheduler's outcome can say so; a cancel token is checked between batches.

Scope (DESIGN 4): each memory has an agent and a context. Everything derived here (facts,
habits, statistics, entities and their summaries, promotions) keeps the scope of its sources,
and comparisons, merges, SIMILAR_TO links and summaries stay inside one scope.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from app import policy
from app.domain.fact import EpisodeView, FactCandidate
from app.domain.memory import Draft, LinkKind, MemoryId, Store
from app.errors import AppError, NotFound, ValidationError
from app.services import scoring
from app.services.contradiction import FactView, classify, resolve
from app.services.extract import extract, mentions, object_of
from storage import inbox, lifecycle, repo

log = logging.getLogger(__name__)

BATCH = 400
ENTITY_MIN_MENTIONS = 3          # 000: an entity once mentioned in >= 3 memories
PATTERN_MIN = 3                  # a habit: the same action at least 3 times
HABIT_RELIABILITY = 0.6          # a habit is inferred from reports, never stated: below a
                                 # hedged rule match (.6-.65) of an explicit one (.8-.9)
SIMILAR_COSINE = 0.93            # near-duplicate facts get a SIMILAR_TO link
WATERMARK = "consolidation.extracted_upto"
RETRY = "consolidation.retry_ids"
# A memory's scope (DESIGN 4): its agent ("global" is shared) and its context ("hat", or
# None). What consolidation derives keeps the scope of its sources, and nothing is compared,
# merged or summarised across two scopes.
Scope = tuple[str, str | None]
Extractor = Callable[[list[EpisodeView], Scope], list[FactCandidate]]
STEPS = ("extract", "entities", "similar", "procedures", "statistics", "decay", "synthesis")


class CancelToken:
    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


class Cancelled(AppError):
    user_message = "Consolidation was cancelled; what was finished is kept."


@dataclass(frozen=True, slots=True)
class BatchFailure:
    """One batch (or a whole step, ``items`` 0) that failed and will be retried. Only the
    exception's class is kept: its message may quote what the memories say."""
    step: str
    error: str
    items: int = 0


@dataclass(slots=True)
class RunLog:
    run_id: int
    seq: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    ids: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    failures: list[BatchFailure] = field(default_factory=list)
    # LLM extraction batches that fell back to the rules, by the error's class.
    llm_fallbacks: Counter[str] = field(default_factory=Counter)

    def failed(self, step: str, exc: BaseException, items: int = 0) -> None:
        log.error("consolidation %s: a batch of %d failed: %s", step, items,
                  type(exc).__name__)
        self.failures.append(BatchFailure(step, type(exc).__name__, items))

    def change(self, conn: Any, kind: str, memory_id: int | None, /, **payload: Any) -> None:
        self.seq += 1
        conn.execute("INSERT INTO run_change (run_id, seq, kind, memory_id, payload) VALUES "
                     "(?,?,?,?,?)", (self.run_id, self.seq, kind, memory_id,
                                     json.dumps(payload) if payload else None))


@dataclass(frozen=True, slots=True)
class RunReport:
    run_id: int
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


@dataclass(frozen=True, slots=True)
class ContradictionItem:
    id: int
    a: dict[str, Any]
    b: dict[str, Any]
    reason: str
    status: str
    resolution: str | None
    created_at: float
    run_id: int | None
    # "review": an LLM asked to forget memory ``a`` (then ``b`` is the same memory): a
    # one-sided card, answered with still true, edit or forget, never with keep a/b/both.
    kind: str = "contradiction"


@dataclass(frozen=True, slots=True)
class InboxPage:
    """One page of one inbox list (``status``): ``total`` items in the list, ``reviews`` of
    them review requests; ``page`` is clamped to the last page when the list shrank."""
    status: str
    page: int
    size: int
    total: int
    reviews: int
    items: tuple[ContradictionItem, ...]

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.size))


RESOLVE_CHOICES = ("a", "b", "both", "edit", "still_true")


FACT_COLS = ("m.id, f.subject, f.predicate, f.object, f.category, m.occurred_at, m.confidence, "
             "m.user_validated, m.status, m.text")


class ConsolidationService:
    def __init__(self, vault: Any) -> None:
        self.vault = vault
        self.db = vault.db

    # --- the run ---------------------------------------------------------------------
    def run(self, *, now: float | None = None, cancel: CancelToken | None = None,
            kind: str = "consolidation", steps: tuple[str, ...] = STEPS,
            progress: Callable[[int, int], None] | None = None) -> RunReport:
        # An explicit table, checked before anything runs: a misspelt step is an error, not
        # a silently skipped batch.
        table: dict[str, Callable[[RunLog, float, CancelToken], object]] = {
            "extract": self._step_extract, "entities": self._step_entities,
            "similar": self._step_similar, "procedures": self._step_procedures,
            "statistics": self._step_statistics, "decay": self._step_decay,
            "synthesis": self._step_synthesis}
        unknown = [s for s in steps if s not in table]
        if unknown:
            raise ValidationError(f"Unknown consolidation step {unknown[0]!r}; the steps are "
                                  f"{', '.join(STEPS)}.")
        now = self.vault.clock.now() if now is None else now
        cancel = cancel or CancelToken()
        started = time.perf_counter()
        run_id = self.db.write_sync(lambda c: int(c.execute(
            "INSERT INTO run (kind, started_at) VALUES (?, ?)", (kind, now)).lastrowid))
        rl = RunLog(run_id)
        cancelled = False
        try:
            for n, step in enumerate(steps):
                if cancel.cancelled:
                    cancelled = True
                    break
                try:
                    table[step](rl, now, cancel)
                except Cancelled:
                    cancelled = True
                    break
                except Exception as exc:  # a failed step is logged and skipped, never fatal
                    rl.failed(step, exc)
                if progress is not None:
                    progress(n + 1, len(steps))
        finally:
            seconds = time.perf_counter() - started
            report = RunReport(run_id, kind, now, round(seconds, 3), dict(rl.counts),
                               {k: v for k, v in rl.ids.items()}, len(rl.failures), cancelled,
                               tuple(rl.failures), dict(rl.llm_fallbacks))
            status = "cancelled" if cancelled else ("partial" if rl.failures else "done")
            self.db.write_sync(lambda c: c.execute(
                "UPDATE run SET finished_at = ?, status = ?, report = ? WHERE id = ?",
                (now, status, json.dumps({
                    "counts": report.counts, "ids": report.ids,
                    "failed_batches": report.failed_batches,
                    "failures": [asdict(f) for f in report.failures],
                    "llm_fallbacks": report.llm_fallbacks, "seconds": report.seconds}),
                 run_id)))
        log.info("run %d: %s in %.2f s, %d failed batches", run_id, dict(rl.counts), seconds,
                 report.failed_batches)
        return report

    # --- step 1: extraction ----------------------------------------------------------
    def _episodes_todo(self) -> list[tuple[EpisodeView, Scope]]:
        cols = "id, text, speaker, occurred_at, agent, context"

        def read(conn: Any) -> list[tuple[EpisodeView, Scope]]:
            upto = repo.get_setting(conn, WATERMARK) or 0
            retry = repo.get_setting(conn, RETRY) or []
            rows = conn.execute(
                f"SELECT {cols} FROM memory WHERE store = 'episodic' "
                "AND status = 'active' AND id > ? ORDER BY id", (upto,)).fetchall()
            if retry:
                marks = ",".join("?" * len(retry))
                rows = conn.execute(
                    f"SELECT {cols} FROM memory WHERE id IN ({marks})", retry).fetchall() + rows
            return [(EpisodeView(r[0], r[1], r[2], r[3]), (r[4], r[5])) for r in rows]
        return self.db.read(read)  # type: ignore[no-any-return]

    def _step_extract(self, rl: RunLog, now: float, cancel: CancelToken,
                      extractor: Extractor | None = None) -> None:
        episodes = self._episodes_todo()
        extractor = extractor or self._extractor(rl)

        def mark(conn: Any) -> None:  # undo rewinds to here, so the episodes are read again
            rl.change(conn, "watermark", None, old=repo.get_setting(conn, WATERMARK) or 0,
                      retry=repo.get_setting(conn, RETRY) or [])
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
                try:
                    facts = extractor(batch, scope)
                    self._store_facts(rl, facts, now, scope)
                except Cancelled:
                    raise
                except Exception as exc:  # log, skip the batch, retry it next run
                    rl.failed("extract", exc, len(batch))
                    retry += [e.id for e in batch]
            high = max(e.id for e, _scope in window)
            self.db.write_sync(lambda c, high=high: repo.put_setting(
                c, WATERMARK, max(high, repo.get_setting(c, WATERMARK) or 0)))
        self.db.write_sync(lambda c: repo.put_setting(c, RETRY, retry))

    def _extractor(self, rl: RunLog) -> Extractor:
        provider = self.db.read(lambda c: repo.get_setting(c, "extraction.provider")) or "rules"
        if provider == "llm":
            return self._llm_extractor(rl)
        return lambda eps, _scope: [f for e in eps for f in extract(e)]

    def _llm_extractor(self, rl: RunLog) -> Extractor:
        """The optional LLM extractor. When it cannot help (no consent for a cloud endpoint,
        the endpoint is down, a reply stays malformed after one retry: its raw text is kept
        encrypted in llm_reply), the batch falls back to the rules, so consolidation always
        progresses; the run report lists those batches by the error's class
        (``llm_fallbacks``), so a broken endpoint shows in the window and the CLI."""
        from app.services.llm import LlmConfig, LlmExtractor

        def setting(key: str) -> Any:
            return self.db.read(lambda c: repo.get_setting(c, key))
        cfg = LlmConfig(base_url=setting("extraction.llm_base_url") or "",
                        model=setting("extraction.llm_model") or "",
                        consent=setting("extraction.cloud_consent") or "",
                        redact=bool(setting("extraction.redact")))
        llm = LlmExtractor(cfg)
        names_of: dict[Scope, list[str]] = {}

        def run(eps: list[EpisodeView], scope: Scope) -> list[FactCandidate]:
            if scope not in names_of:  # people this scope may know: never another agent's
                names_of[scope] = self.db.read(lambda c: _known_people(c, scope))
            names = names_of[scope]
            def save_raw(raw: str, error: str) -> None:
                def w(conn: Any) -> None:
                    rid = conn.execute("INSERT INTO llm_reply (at, raw, error) VALUES (?,?,?)",
                                       (time.time(), raw, error)).lastrowid
                    conn.executemany("INSERT OR IGNORE INTO llm_reply_source VALUES (?, ?)",
                                     [(rid, e.id) for e in eps])
                self.db.write_sync(w)
            try:
                facts, deletes = llm.extract(eps, names, save_raw)
            except AppError as exc:
                log.warning("LLM extraction unavailable (%s); rules used for this batch",
                            type(exc).__name__)
                rl.llm_fallbacks[type(exc).__name__] += 1
                return [f for e in eps for f in extract(e)]
            for d in deletes:
                # An LLM DELETE never deletes: the memory it means goes to the person's inbox.
                target = d.memory_id if d.memory_id is not None else self._match_fact(
                    d.statement, scope)
                if target is not None and self._in_scope(target, scope):
                    self._review_request(target, d.reason or "the assistant thinks this is no "
                                         "longer true")
            return facts
        return run

    def _in_scope(self, mid: int, scope: Scope) -> bool:
        row = self.db.read(lambda c: c.execute("SELECT agent, context FROM memory WHERE id = ?",
                                               (mid,)).fetchone())
        return row is not None and (row[0], row[1]) == scope

    def _match_fact(self, statement: str, scope: Scope) -> int | None:
        """The active fact of ``scope`` a free-text statement most likely means, if one
        clearly matches."""
        from rapidfuzz import fuzz

        from app.services.recall import query_tokens
        match = repo.fts_query(query_tokens(statement))
        if not match:
            return None

        def read(conn: Any) -> int | None:
            for mid, _score in repo.fts_search(conn, match, 5):
                row = conn.execute("SELECT text FROM memory WHERE id = ? AND status = 'active' "
                                   "AND store IN ('semantic','procedural') AND agent = ? AND "
                                   "context IS ?", (mid, *scope)).fetchone()
                if row and fuzz.token_set_ratio(row[0], statement) >= 80:
                    return int(mid)
            return None
        return self.db.read(read)  # type: ignore[no-any-return]

    def _review_request(self, mid: int, reason: str) -> None:
        """A review request of one memory (kind 'review'; ``b`` repeats ``a`` because the
        column is NOT NULL). Never a contradiction of the memory with itself: answering that
        with "keep A" superseded the memory by itself (issue 12)."""
        def w(conn: Any) -> None:
            if conn.execute("SELECT 1 FROM memory WHERE id = ? AND status != 'superseded'",
                            (mid,)).fetchone():
                conn.execute("INSERT OR IGNORE INTO contradiction (a, b, reason, created_at, "
                             "kind) VALUES (?, ?, ?, ?, 'review')",
                             (mid, mid, reason[:200], time.time()))
        self.db.write_sync(w)

    def _fact_views(self, conn: Any, subject: str, scope: Scope) -> list[tuple[FactView, str]]:
        """The active facts about ``subject`` in ``scope`` (never another scope's)."""
        rows = conn.execute(
            f"SELECT {FACT_COLS}, p.kind FROM memory m JOIN fact f ON f.memory_id = m.id "
            "LEFT JOIN procedure p ON p.memory_id = m.id "
            "WHERE m.status = 'active' AND lower(f.subject) = lower(?) AND m.agent = ? AND "
            "m.context IS ?", (subject, *scope)).fetchall()
        out = []
        for r in rows:
            qualifier, negated = _decode_category(r[4])
            obj = r[3]
            if obj is None and r[1] and r[2]:
                # A fact the person corrected keeps its subject and predicate but not the old
                # object; read the new one back from the corrected sentence (issue 12: a
                # missing object broke every later run).
                obj = object_of(r[1], r[2], qualifier, negated, r[9])
            out.append((FactView(r[0], r[1] or "", r[2] or "", obj, qualifier, r[5], r[6],
                                 bool(r[7]), negated), r[9]))
        return out

    def _store_facts(self, rl: RunLog, facts: list[FactCandidate], now: float,
                     scope: Scope = ("global", None)) -> None:
        if not facts:
            return
        # Embed new statements outside the write transaction.
        texts = list(dict.fromkeys(f.statement for f in facts))
        vecs = self.vault._embed(texts)
        vec_of = {t: vecs[i] for i, t in enumerate(texts)} if vecs is not None else {}
        created: list[tuple[int, Any]] = []

        def write(conn: Any) -> None:
            for f in facts:
                views = self._fact_views(conn, f.subject, scope)
                occurred = _occurred(conn, f)
                new_view = FactView(-1, f.subject, f.predicate, f.object, f.qualifier,
                                    occurred, _confidence(f.confidence, len(f.source_ids),
                                                          occurred, now),
                                    False, f.negated, f.change)
                dup = next((v for v, _ in views if classify(v, new_view) == "duplicate"), None)
                if dup is not None:
                    self._corroborate(conn, rl, dup, f, now)
                    continue
                mid = self._insert_fact(conn, rl, f, now, scope, new_view.confidence)
                if f.statement in vec_of:
                    created.append((mid, vec_of[f.statement]))
                new_view = replace(new_view, id=mid)
                for v, _text in views:
                    verdict = classify(v, new_view)
                    if verdict in ("update", "contradiction"):
                        self._conflict(conn, rl, v, new_view, verdict, now)
        self.db.write_sync(write)
        if created and self.vault.embedder is not None:
            import numpy as np
            ids = [m for m, _ in created]
            mat = np.stack([v for _, v in created])
            self.db.write_sync(lambda c: repo.put_vectors(
                c, ids, mat, self.vault.embedder.model_name))
            self.vault.index.add(ids, mat)

    def _insert_fact(self, conn: Any, rl: RunLog, f: FactCandidate, now: float,
                     scope: Scope, confidence: float) -> int:
        store = Store.PROCEDURAL if f.store == "procedural" else Store.SEMANTIC
        occurred = _occurred(conn, f)
        extra: dict[str, object] = {"subject": f.subject, "predicate": f.predicate,
                                    "object": f.object,
                                    "category": _encode_category(f.category, f.qualifier,
                                                                 f.negated)}
        d = Draft(text=f.statement, store=store, occurred_at=occurred, speaker=f.subject,
                  agent=scope[0], context=scope[1], confidence=confidence,
                  valid_from=f.valid_from,
                  importance=policy.DEFAULT_IMPORTANCE[store.value],
                  derived_from=tuple(MemoryId(i) for i in f.source_ids), extra={} if store is Store.PROCEDURAL
                  else extra)
        scores, decay_class, _conf = self.vault._scores(d, now)
        mid = repo.insert_memory(conn, d, now=now, decay_class=decay_class, scores=scores,
                                 confidence=confidence, fts_keys=self.vault.fts_keys(d))
        if store is Store.PROCEDURAL:
            conn.execute("UPDATE procedure SET kind = 'preference', trigger = ?, actions = ? "
                         "WHERE memory_id = ?", (f.predicate, json.dumps([f.object]), mid))
            # Procedures keep subject/predicate too, for contradiction checks.
            conn.execute("INSERT INTO fact (memory_id, subject, predicate, object, category) "
                         "VALUES (?,?,?,?,?)", (mid, f.subject, f.predicate, f.object,
                                                _encode_category(f.category, f.qualifier,
                                                                 f.negated)))
        rl.change(conn, "created", mid)
        rl.counts["procedures_created" if store is Store.PROCEDURAL else "facts_created"] += 1
        rl.ids["created"].append(mid)
        return mid

    def _corroborate(self, conn: Any, rl: RunLog, dup: FactView, f: FactCandidate,
                     now: float) -> None:
        added = 0
        for src in f.source_ids:
            cur = conn.execute("INSERT OR IGNORE INTO link (src, dst, kind, weight, created_at) "
                               "VALUES (?, ?, 'DERIVED_FROM', 1.0, ?)", (dup.id, src, now))
            if cur.rowcount:
                rl.change(conn, "link", dup.id, src=dup.id, dst=src, kind="DERIVED_FROM")
                added += 1
        if added:
            # 003 confidence with one more source; corroboration never lowers it.
            sources = int(conn.execute("SELECT count(*) FROM link WHERE src = ? AND kind = "
                                       "'DERIVED_FROM'", (dup.id,)).fetchone()[0])
            newest = max(dup.occurred_at, _occurred(conn, f))
            new_conf = max(dup.confidence, _confidence(f.confidence, sources, newest, now))
            if new_conf != dup.confidence and not dup.user_validated:
                conn.execute("UPDATE memory SET confidence = ? WHERE id = ?", (new_conf, dup.id))
                rl.change(conn, "confidence", dup.id, old=dup.confidence)
            rl.counts["facts_corroborated"] += 1

    def _conflict(self, conn: Any, rl: RunLog, old: FactView, new: FactView, verdict: str,
                  now: float) -> None:
        a, b = (old, new) if old.occurred_at <= new.occurred_at else (new, old)
        reason = "update over time" if verdict == "update" else "facts disagree"
        cur = conn.execute("INSERT OR IGNORE INTO contradiction (a, b, reason, status, run_id, "
                           "created_at) VALUES (?,?,?,?,?,?)",
                           (a.id, b.id, reason, "open", rl.run_id, now))
        if not cur.rowcount:
            return
        cid = int(cur.lastrowid)
        rl.change(conn, "contradiction", None, id=cid)
        conn.execute("INSERT OR IGNORE INTO link (src, dst, kind, weight, created_at) VALUES "
                     "(?, ?, 'CONTRADICTS', 1.0, ?)", (b.id, a.id, now))
        rl.change(conn, "link", b.id, src=b.id, dst=a.id, kind="CONTRADICTS")
        rl.counts["contradictions_found"] += 1
        winner: int | None
        loser: int | None
        if verdict == "update" and not a.user_validated:
            winner, loser, rule = b.id, a.id, "the newer statement is a stated change"
        else:
            d = resolve(a, b)
            winner, loser, rule = d.winner, d.loser, d.rule
        if winner is None or loser is None:
            rl.counts["sent_to_inbox"] += 1
            rl.ids["inbox"].append(cid)
            return
        prior = _statuses(conn, (a.id, b.id))
        if verdict == "update":
            # Both were true, at different times: the older one's validity ends.
            conn.execute("UPDATE memory SET valid_until = ? WHERE id = ?",
                         (_occurred_id(conn, winner), loser))
        _supersede(conn, rl, loser, winner, now)
        conn.execute("UPDATE contradiction SET status = 'auto', resolution = ?, resolved_at = ? "
                     "WHERE id = ?", (json.dumps({"kept": winner, "rule": rule,
                                                  "prior": prior}), now, cid))
        rl.counts["auto_resolved"] += 1
        rl.ids["auto_resolved"].append(cid)

    # --- step 2: people and projects -------------------------------------------------
    def _step_entities(self, rl: RunLog, now: float, cancel: CancelToken) -> None:
        """An entity per scope: mentions in one agent's memories never make, or count
        towards, an entity another scope sees."""
        def write(conn: Any) -> None:
            Key = tuple[Scope, str, str]  # noqa: N806 (a local type alias)
            counts: Counter[Key] = Counter()
            members: dict[Key, set[int]] = defaultdict(set)
            stated: set[Key] = set()
            for mid, text, speaker, agent, context in conn.execute(
                    "SELECT id, text, speaker, agent, context FROM memory WHERE store IN "
                    "('episodic','semantic','procedural') AND status = 'active'"):
                found = mentions(text)
                if speaker and speaker.lower() not in ("assistant", "system", "user"):
                    found.setdefault(speaker, "person")
                for name, kind in found.items():
                    counts[((agent, context), name, kind)] += 1
                    members[((agent, context), name, kind)].add(mid)
            for subject, obj, agent, context in conn.execute(
                    "SELECT f.subject, f.object, m.agent, m.context FROM fact f JOIN memory m "
                    "ON m.id = f.memory_id WHERE f.predicate = 'relation'"):
                for name in (obj, subject):
                    if name:
                        stated.add(((agent, context), name, "person"))
            existing = {((r[3], r[4]), r[1], r[2]): r[0] for r in conn.execute(
                "SELECT id, name_key, kind, agent, context FROM entity")}
            for (scope, name, kind), n in counts.items():
                eid = existing.get((scope, name.casefold(), kind))
                if eid is None and (n >= ENTITY_MIN_MENTIONS or (scope, name, kind) in stated):
                    eid = int(conn.execute(
                        "INSERT INTO entity (kind, name, name_key, agent, context, created_at, "
                        "updated_at) VALUES (?,?,?,?,?,?,?)",
                        (kind, name, name.casefold(), *scope, now, now)).lastrowid)
                    existing[(scope, name.casefold(), kind)] = eid
                    rl.change(conn, "entity", None, id=eid)
                    rl.counts["entities_created"] += 1
                if eid is None:
                    continue
                for mid in members[(scope, name, kind)]:
                    cur = conn.execute("INSERT OR IGNORE INTO entity_mention VALUES (?, ?)",
                                       (eid, mid))
                    if cur.rowcount:
                        rl.change(conn, "mention", mid, entity=eid)
        self.db.write_sync(write)

    # --- step 3: near duplicates -----------------------------------------------------
    def _step_similar(self, rl: RunLog, now: float, cancel: CancelToken) -> None:
        """SIMILAR_TO between facts of one scope whose vectors nearly coincide (exact
        duplicates were already merged at extraction)."""
        if self.vault.embedder is None:
            return
        created = rl.ids.get("created", [])
        pairs = []
        for mid in created:
            vec = self.vault.index.vector(mid)
            if vec is None:
                continue
            for other, sim in self.vault.index.search_exact(vec, 5):
                if other != mid and sim >= SIMILAR_COSINE:
                    pairs.append((mid, other, sim))
        if not pairs:
            return
        ids = sorted({i for a, b, _ in pairs for i in (a, b)})
        scopes = self.db.read(lambda c: _scopes(c, ids))
        pairs = [p for p in pairs if p[0] in scopes and scopes[p[0]] == scopes.get(p[1])]

        def write(conn: Any) -> None:
            for a, b, sim in pairs:
                cur = conn.execute("INSERT OR IGNORE INTO link (src, dst, kind, weight, "
                                   "created_at) VALUES (?, ?, 'SIMILAR_TO', ?, ?)",
                                   (a, b, round(sim, 4), now))
                if cur.rowcount:
                    rl.change(conn, "link", a, src=a, dst=b, kind="SIMILAR_TO")
                    rl.counts["similar_links"] += 1
        if pairs:
            self.db.write_sync(write)

    # --- step 4: habits become procedures --------------------------------------------
    def _step_procedures(self, rl: RunLog, now: float, cancel: CancelToken) -> None:
        """Habits per scope: three reports in one agent's memories make a habit of that
        scope; reports from two scopes never add up."""
        from app.services.habits import detect_patterns

        def read(conn: Any) -> tuple[dict[Scope, list[tuple[int, str, str, float, str]]],
                                     set[tuple[str, Scope]]]:
            rows: dict[Scope, list[tuple[int, str, str, float, str]]] = defaultdict(list)
            for r in conn.execute(
                    "SELECT id, text, coalesce(speaker, ''), occurred_at, coalesce(session, ''), "
                    "agent, context FROM memory WHERE store = 'episodic' AND status = 'active' "
                    "ORDER BY occurred_at, id"):
                rows[(r[5], r[6])].append((r[0], r[1], r[2], r[3], r[4]))
            have = {(r[0], (r[1], r[2])) for r in conn.execute(
                "SELECT p.trigger, m.agent, m.context FROM procedure p JOIN memory m ON "
                "m.id = p.memory_id WHERE p.kind = 'procedure' AND p.trigger IS NOT NULL")}
            return rows, have
        rows, have = self.db.read(read)
        patterns = [(scope, p) for scope, scoped in rows.items()
                    for p in detect_patterns(scoped, PATTERN_MIN) if (p.key, scope) not in have]
        if not patterns:
            return

        def write(conn: Any) -> None:
            for scope, p in patterns:
                d = Draft(text=p.statement, store=Store.PROCEDURAL, occurred_at=p.last_at,
                          speaker=p.who or None, agent=scope[0], context=scope[1],
                          derived_from=tuple(MemoryId(i) for i in p.sources),
                          importance=0.6)
                scores, dc, _c = self.vault._scores(d, now)
                newest = max([p.last_at] + [_occurred_id(conn, i) for i in p.sources[-1:]])
                mid = repo.insert_memory(conn, d, now=now, decay_class=dc, scores=scores,
                                         confidence=_confidence(HABIT_RELIABILITY,
                                                                len(p.sources), newest, now),
                                         fts_keys=self.vault.fts_keys(d))
                conn.execute("UPDATE procedure SET kind = 'procedure', trigger = ?, actions = ?,"
                             " success_count = ? WHERE memory_id = ?",
                             (p.key, json.dumps(p.actions), len(p.sources), mid))
                rl.change(conn, "created", mid)
                rl.ids["created"].append(mid)
                rl.counts["procedures_created"] += 1
        self.db.write_sync(write)

    # --- step 5: implicit statistics -------------------------------------------------
    def _step_statistics(self, rl: RunLog, now: float, cancel: CancelToken) -> None:
        recompute_statistics(self.vault, now, rl)

    # --- step 6: decay, reinforcement, promotion, archival ---------------------------
    def _step_decay(self, rl: RunLog, now: float, cancel: CancelToken) -> int:
        def write(conn: Any) -> None:
            rows = conn.execute(
                "SELECT id, store, occurred_at, last_accessed_at, access_count, importance, "
                "emotional, social, decay_class, user_validated, created_at FROM memory "
                "WHERE status = 'active'").fetchall()
            updates = []
            for (mid, store, occurred, last, count, imp, emo, soc, dc, validated,
                 created) in rows:
                reference = max(x for x in (occurred, last) if x is not None)
                idle_h = max(0.0, (now - reference) / policy.HOUR)
                rec = scoring.recency(dc, idle_h)
                freq = scoring.frequency(count, (now - last) / policy.HOUR if last else None)
                comp = scoring.composite(imp, rec, freq, emo, soc)
                updates.append((rec, freq, comp, mid))
                retention_d = policy.DECAY[dc].max_retention_d
                # Retention starts no earlier than when Kept learned the memory (issue 12).
                idle_d = scoring.retention_idle_days(occurred, last, created, now)
                too_old = idle_d > retention_d and not validated
                faded = comp < policy.ARCHIVE_MIN_COMPOSITE and idle_d >= policy.ARCHIVE_IDLE_D
                if too_old or faded:
                    conn.execute("UPDATE memory SET status = 'archived' WHERE id = ?", (mid,))
                    rl.change(conn, "status", mid, status="active", superseded_by=None,
                              valid_until=None)
                    rl.counts["archived"] += 1
                    continue
                p = policy.PROMOTE_EPISODIC
                age_d = (now - created) / policy.DAY
                if (store == "episodic" and imp > p["importance"] and emo < p["emotional_below"]
                        and count > p["accesses"] and age_d > p["age_d"]
                        and not conn.execute("SELECT 1 FROM link WHERE dst = ? AND kind = "
                                             "'PROMOTED_FROM'", (mid,)).fetchone()):
                    self._promote(conn, rl, mid, now)
            conn.executemany("UPDATE memory SET recency = ?, frequency = ?, composite = ? "
                             "WHERE id = ?", updates)
            rl.counts["rescored"] += len(updates)
        self.db.write_sync(write)
        return 0

    def _promote(self, conn: Any, rl: RunLog, mid: int, now: float) -> None:
        src = repo.get_memory(conn, mid)
        assert src is not None
        d = Draft(text=src.text, store=Store.SEMANTIC, occurred_at=src.occurred_at,
                  speaker=src.speaker, agent=src.agent, context=src.context,
                  importance=src.scores.importance)
        scores, dc, _c = self.vault._scores(d, now)
        new = repo.insert_memory(conn, d, now=now, decay_class=dc, scores=scores,
                                 confidence=src.confidence, fts_keys=self.vault.fts_keys(d))
        repo.add_link(conn, new, mid, LinkKind.PROMOTED_FROM, now)
        rl.change(conn, "created", new)
        rl.ids["created"].append(new)
        rl.counts["promoted"] += 1

    # --- step 7: weekly synthesis ----------------------------------------------------
    def _step_synthesis(self, rl: RunLog, now: float, cancel: CancelToken) -> None:
        n = synthesise_summaries(self.db, now)
        rl.counts["summaries_written"] += n

    # --- the inbox ---------------------------------------------------------------------
    def contradictions(self, *, status: str | None = "open") -> list[ContradictionItem]:
        """Every item of a list (``None``: all of them), in the inbox's order. For the CLI and
        small lists; the window pages with :meth:`inbox_page`."""
        def read(conn: Any) -> list[ContradictionItem]:
            return _items(conn, inbox.ids(conn, status))
        return self.db.read(read)  # type: ignore[no-any-return]

    def inbox_page(self, status: str, page: int = 0, size: int = 25) -> InboxPage:
        """Ids first, then only the page's rows, in batched queries (storage/inbox.py)."""
        if status not in inbox.STATUSES or size < 1:
            raise ValidationError("Choose open, auto or resolved, and a page size of 1 or more.")

        def read(conn: Any) -> InboxPage:
            ids = inbox.ids(conn, status)
            last = max(0, (len(ids) - 1) // size)
            p = min(max(0, page), last)
            reviews = int(conn.execute(
                "SELECT count(*) FROM contradiction WHERE status = ? AND kind = 'review'",
                (status,)).fetchone()[0])
            return InboxPage(status, p, size, len(ids), reviews,
                             tuple(_items(conn, ids[p * size:(p + 1) * size])))
        return self.db.read(read)  # type: ignore[no-any-return]

    def inbox_items(self, ids: list[int] | tuple[int, ...]) -> list[ContradictionItem]:
        return self.db.read(lambda c: _items(c, list(ids)))  # type: ignore[no-any-return]

    def inbox_count(self) -> int:
        """Open items (contradictions and review requests): the navigation's count."""
        return self.db.read(lambda c: inbox.count(c, "open"))  # type: ignore[no-any-return]

    def resolve(self, cid: int, keep: str, text: str | None = None) -> int | None:
        """A contradiction: keep a | b | both (true at different times) | edit (with ``text``).
        A review request: still_true | edit (forgetting goes through the forget plan)."""
        if keep not in RESOLVE_CHOICES:
            raise ValidationError("Choose a, b, both, edit or still true.")
        row = self.db.read(lambda c: inbox.get(c, cid))
        if row is None:
            raise NotFound("No contradiction or review request with that id.")
        a, b, status, kind, _res = row
        if status != "open":
            raise ValidationError("That item is already resolved; undo it first.")
        if (kind == "review" or a == b) and keep in ("a", "b", "both"):
            # One memory on both sides: "keep A" would supersede it by itself (issue 12).
            raise ValidationError(
                f"#{cid} is a review request about one memory ({a}), not two that disagree: "
                "answer it with still true or edit, or forget the memory.")
        if kind != "review" and keep == "still_true":
            raise ValidationError(f"#{cid} is a contradiction: choose a, b, both or edit.")
        now = self.vault.clock.now()
        new_id: int | None = None
        if keep == "still_true" and self.vault.get(a).status.value == "superseded":
            raise ValidationError(f"Memory {a} was already replaced by a newer version.")
        if keep == "edit":
            if not text:
                raise ValidationError("Give the corrected text.")
            new_id = int(self.vault.correct(b, text).value)

        def write(conn: Any) -> None:
            prior = _statuses(conn, (a, b) if a != b else (a,))
            if keep in ("a", "b"):
                winner, loser = (a, b) if keep == "a" else (b, a)
                _supersede(conn, None, loser, winner, now)
                conn.execute("UPDATE memory SET user_validated = 1, confidence = 1.0 WHERE id = ?",
                             (winner,))
            elif keep == "both":
                first, second = sorted((a, b), key=lambda i: _occurred_id(conn, i))
                conn.execute("UPDATE memory SET valid_until = ? WHERE id = ?",
                             (_occurred_id(conn, second), first))
            elif keep == "still_true":
                conn.execute("UPDATE memory SET user_validated = 1, confidence = 1.0 WHERE id = ?",
                             (a,))
                repo.add_history(conn, a, now, "confirmed", None, f"still true (review #{cid})")
            elif new_id is not None and a != b:
                _supersede(conn, None, a, new_id, now)
            conn.execute("UPDATE contradiction SET status = 'resolved', resolution = ?, "
                         "resolved_at = ? WHERE id = ?",
                         (json.dumps({"keep": keep, "new": new_id, "prior": prior}), now, cid))
        self.db.write_sync(write)
        return new_id

    def reopen(self, cid: int) -> None:
        """Undo one resolution (automatic or the person's): statuses as they were, open."""
        def write(conn: Any) -> None:
            row = conn.execute("SELECT status, resolution FROM contradiction WHERE id = ?",
                               (cid,)).fetchone()
            if row is None:
                raise NotFound("No contradiction with that id.")
            if row[0] == "open":
                return
            prior = json.loads(row[1] or "{}").get("prior", {})
            for mid, st in prior.items():
                conn.execute("UPDATE memory SET status = ?, superseded_by = ?, valid_until = ?, "
                             "user_validated = ?, confidence = ? WHERE id = ?",
                             (st["status"], st["superseded_by"], st["valid_until"],
                              st["user_validated"], st["confidence"], int(mid)))
            conn.execute("UPDATE contradiction SET status = 'open', resolution = NULL, "
                         "resolved_at = NULL WHERE id = ?", (cid,))
        self.db.write_sync(write)

    # --- undo a run --------------------------------------------------------------------
    def undo(self, run_id: int) -> dict[str, int]:
        def write(conn: Any) -> tuple[dict[str, int], set[int]]:
            row = conn.execute("SELECT undone_at FROM run WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise NotFound("No consolidation run with that id.")
            if row[0] is not None:
                raise ValidationError(f"Run {run_id} was already undone.")
            later = conn.execute("SELECT id FROM run WHERE id > ? AND undone_at IS NULL AND "
                                 "EXISTS (SELECT 1 FROM run_change WHERE run_id = run.id)",
                                 (run_id,)).fetchall()
            if later:
                raise ValidationError(
                    f"Undo the later runs first ({', '.join(str(r[0]) for r in later)}).")
            changes = conn.execute("SELECT kind, memory_id, payload FROM run_change WHERE "
                                   "run_id = ? ORDER BY seq DESC", (run_id,)).fetchall()
            counts: Counter[str] = Counter()
            created: set[int] = set()
            for kind, mid, payload in changes:
                p = json.loads(payload) if payload else {}
                if kind == "created" and mid is not None:
                    created.add(mid)
                elif kind == "status" and mid is not None:
                    conn.execute("UPDATE memory SET status = ?, superseded_by = ?, "
                                 "valid_until = ? WHERE id = ?",
                                 (p["status"], p["superseded_by"], p["valid_until"], mid))
                elif kind == "link":
                    conn.execute("DELETE FROM link WHERE src = ? AND dst = ? AND kind = ?",
                                 (p["src"], p["dst"], p["kind"]))
                elif kind == "confidence" and mid is not None:
                    conn.execute("UPDATE memory SET confidence = ? WHERE id = ?", (p["old"], mid))
                elif kind == "contradiction":
                    conn.execute("DELETE FROM contradiction WHERE id = ?", (p["id"],))
                elif kind == "entity":
                    conn.execute("DELETE FROM entity WHERE id = ?", (p["id"],))
                elif kind == "mention" and mid is not None:
                    conn.execute("DELETE FROM entity_mention WHERE entity_id = ? AND "
                                 "memory_id = ?", (p["entity"], mid))
                elif kind == "watermark":
                    repo.put_setting(conn, WATERMARK, p["old"])
                    repo.put_setting(conn, RETRY, p["retry"])
                elif kind == "statistic" and mid is not None:
                    conn.execute("UPDATE statistic SET value = ?, sample_size = ? WHERE "
                                 "memory_id = ?", (p["value"], p["sample_size"], mid))
                counts[kind] += 1
            if created:
                # What this run made goes entirely (it only ever described other memories).
                lifecycle.execute_forget(conn, created, set())
            conn.execute("UPDATE run SET undone_at = ?, status = 'undone' WHERE id = ?",
                         (time.time(), run_id))
            # The run stays listed (undone, with its counts); its change log has been applied.
            conn.execute("DELETE FROM run_change WHERE run_id = ?", (run_id,))
            return dict(counts), created
        counts, created = self.db.write_sync(write)
        self.vault.index.remove(sorted(created))
        synthesise_summaries(self.db, self.vault.clock.now())
        return counts

    def runs(self, limit: int = 20) -> list[dict[str, Any]]:
        rows = self.db.read(lambda c: c.execute(
            "SELECT id, kind, started_at, finished_at, status, report, undone_at FROM run "
            "ORDER BY id DESC LIMIT ?", (limit,)).fetchall())
        return [{"id": r[0], "kind": r[1], "started_at": r[2], "finished_at": r[3],
                 "status": r[4], "report": json.loads(r[5]) if r[5] else None,
                 "undone_at": r[6]} for r in rows]


# --- helpers ---------------------------------------------------------------------------------

def _items(conn: Any, ids: list[int]) -> list[ContradictionItem]:
    """The items of ``ids`` (in that order) with both sides, in batched queries."""
    rows = inbox.rows(conn, ids)
    sides = inbox.sides(conn, [m for r in rows for m in (r[1], r[2])])
    return [ContradictionItem(r[0], sides[r[1]], sides[r[2]], r[3], r[4], r[5], r[6], r[7],
                              r[8]) for r in rows]


def _known_people(conn: Any, scope: Scope) -> list[str]:
    """Speakers and person entities of ``scope`` and of the shared global scope."""
    agents = ("global", scope[0])
    rows = conn.execute("SELECT DISTINCT speaker FROM memory WHERE agent IN (?, ?) AND "
                        "speaker IS NOT NULL LIMIT 500", agents).fetchall()
    rows += conn.execute("SELECT name FROM entity WHERE kind = 'person' AND agent IN (?, ?) "
                         "LIMIT 2000", agents).fetchall()
    return list(dict.fromkeys(r[0] for r in rows if r[0]))


def _scopes(conn: Any, ids: list[int]) -> dict[int, Scope]:
    out: dict[int, Scope] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        out.update({r[0]: (r[1], r[2]) for r in conn.execute(
            f"SELECT id, agent, context FROM memory WHERE id IN ({','.join('?' * len(chunk))})",
            chunk)})
    return out


def _encode_category(category: str, qualifier: str | None, negated: bool) -> str:
    out = category
    if qualifier:
        out += f"|q={qualifier}"
    if negated:
        out += "|neg"
    return out


def _decode_category(text: str | None) -> tuple[str | None, bool]:
    qualifier = None
    negated = False
    for part in (text or "").split("|")[1:]:
        if part.startswith("q="):
            qualifier = part[2:]
        elif part == "neg":
            negated = True
    return qualifier, negated


def _occurred(conn: Any, f: FactCandidate) -> float:
    if f.source_ids:
        row = conn.execute(f"SELECT max(occurred_at) FROM memory WHERE id IN "
                           f"({','.join('?' * len(f.source_ids))})", f.source_ids).fetchone()
        if row and row[0] is not None:
            return float(row[0])
    return f.valid_from or time.time()


def _confidence(reliability: float, sources: int, occurred: float, now: float) -> float:
    """003 confidence of a derived fact or habit (scoring.derived_confidence); recency on the
    semantic class, the one facts and procedures decay by."""
    return scoring.derived_confidence(reliability, max(1, sources), policy.STORE_DECAY["semantic"],
                                      max(0.0, now - occurred) / policy.HOUR)


def _occurred_id(conn: Any, mid: int) -> float:
    return float(conn.execute("SELECT occurred_at FROM memory WHERE id = ?", (mid,)).fetchone()[0])


def _statuses(conn: Any, ids: tuple[int, ...]) -> dict[str, dict[str, Any]]:
    out = {}
    for mid in ids:
        r = conn.execute("SELECT status, superseded_by, valid_until, user_validated, confidence "
                         "FROM memory WHERE id = ?", (mid,)).fetchone()
        if r:
            out[str(mid)] = {"status": r[0], "superseded_by": r[1], "valid_until": r[2],
                             "user_validated": r[3], "confidence": r[4]}
    return out


def _supersede(conn: Any, rl: RunLog | None, loser: int, winner: int, now: float) -> None:
    prior = conn.execute("SELECT status, superseded_by, valid_until FROM memory WHERE id = ?",
                         (loser,)).fetchone()
    lifecycle.supersede(conn, loser, winner, now)
    repo.add_history(conn, loser, now, "superseded", None, f"superseded by {winner}")
    if rl is not None:
        rl.change(conn, "status", loser, status=prior[0], superseded_by=prior[1],
                  valid_until=prior[2])
        rl.change(conn, "link", winner, src=winner, dst=loser, kind="SUPERSEDES")


def recompute_statistics(vault: Any, now: float, rl: RunLog | None = None, *,
                         create: bool = True) -> int:
    """Implicit store: aggregate behaviour statistics, recomputed (also after a forget, then
    with ``create=False``: existing ones are updated or removed, none are added)."""
    from app.services.habits import statistics

    def write(conn: Any) -> int:
        # Every episode the person has not forgotten: archived ones too (decay puts them
        # aside; counting only active ones emptied the store after one forget, issue 12).
        # One set of statistics per scope, each from that scope's episodes only (DESIGN 4).
        by_scope: dict[Scope, list[tuple[float, float, str | None]]] = defaultdict(list)
        for at, emotional, speaker, agent, context in conn.execute(
                "SELECT occurred_at, emotional, speaker, agent, context FROM memory WHERE "
                "store = 'episodic' AND status IN ('active', 'archived')"):
            by_scope[(agent, context)].append((at, emotional, speaker))
        stats: dict[tuple[str, Scope], tuple[float, int, str]] = {}
        for scope, rows in by_scope.items():
            people = conn.execute(
                "SELECT e.name, count(*) FROM entity e JOIN entity_mention em ON "
                "em.entity_id = e.id WHERE e.kind = 'person' AND e.agent = ? AND "
                "e.context IS ? GROUP BY e.id ORDER BY count(*) DESC LIMIT 1", scope).fetchone()
            stats.update({(metric, scope): v for metric, v in statistics(rows, people).items()})
        existing = {(r[0], (r[4], r[5])): (r[1], r[2], r[3]) for r in conn.execute(
            "SELECT s.metric, s.memory_id, s.value, s.sample_size, m.agent, m.context FROM "
            "statistic s JOIN memory m ON m.id = s.memory_id")}
        n = 0
        for (metric, scope), (value, sample, text) in stats.items():
            if (metric, scope) in existing:
                mid, old_value, old_sample = existing[(metric, scope)]
                if (old_value, old_sample) != (value, sample):
                    conn.execute("UPDATE statistic SET value = ?, sample_size = ?, computed_at = ?"
                                 " WHERE memory_id = ?", (value, sample, now, mid))
                    conn.execute("UPDATE memory SET text = ? WHERE id = ?", (text, mid))
                    repo.replace_fts_row(conn, mid, text)
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
            mid = repo.insert_memory(conn, d, now=now, decay_class="semantic",
                                     scores=scoring_defaults(), confidence=0.9)
            if rl is not None:
                rl.change(conn, "created", mid)
            n += 1
        for key, (mid, _v, _s) in existing.items():
            if key not in stats:  # nothing left to compute it from
                lifecycle.execute_forget(conn, {mid}, set())
        if rl is not None:
            rl.counts["statistics_updated"] += n
        return n
    return int(vault.db.write_sync(write))


def scoring_defaults() -> Any:
    from app.domain.memory import Scores
    return Scores(importance=0.4, recency=1.0, frequency=0.0, emotional=0.0, social=0.0,
                  composite=scoring.composite(0.4, 1.0, 0.0, 0.0, 0.0))


def synthesise_summaries(db: Any, now: float) -> int:
    """Entity summaries from their hot and warm facts (cold ones are searchable, never
    summarised, per 000), of the entity's own scope only."""
    def write(conn: Any) -> int:
        n = 0
        for eid, agent, context in conn.execute(
                "SELECT id, agent, context FROM entity").fetchall():
            rows = conn.execute(
                "SELECT m.text, m.occurred_at, m.last_accessed_at, m.access_count FROM memory m "
                "JOIN entity_mention em ON em.memory_id = m.id WHERE em.entity_id = ? AND "
                "m.status = 'active' AND m.store IN ('semantic','procedural') AND m.agent = ? "
                "AND m.context IS ? ORDER BY m.confidence DESC, m.id DESC LIMIT 40",
                (eid, agent, context)).fetchall()
            lines = []
            for text, occurred, last, count in rows:
                days = (now - max(x for x in (occurred, last) if x is not None)) / policy.DAY
                if scoring.tier(days, count).value != "cold":
                    lines.append(text)
            summary = "; ".join(dict.fromkeys(lines[:8])) or None
            conn.execute("UPDATE entity SET summary = ?, updated_at = ? WHERE id = ?",
                         (summary, now, eid))
            n += summary is not None
        return n
    return int(db.write_sync(write))


__all__ = ["BatchFailure", "CancelToken", "ConsolidationService", "ContradictionItem", "RunReport",
           "recompute_statistics", "synthesise_summaries"]
