"""Background consolidation (DESIGN 7): episodes become facts with provenance, duplicates
merge, contradictions are resolved or sent to the inbox, habits become procedures, implicit
statistics are recomputed, memories decay, are promoted and archived (never deleted), entity
summaries are written. Layer: app. Runs on: a scheduler worker or a CLI/UI worker thread.

Every change is logged in ``run_change`` (ids and numbers only, never text, so forgetting
leaves no copy there) and ``undo(run_id)`` reverts a run. Work is done in batches; a failing
batch is logged (error class only), skipped and retried by the next run; a cancel token is
checked between batches.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from app import policy
from app.domain.fact import EpisodeView, FactCandidate
from app.domain.memory import Draft, LinkKind, MemoryId, Store
from app.errors import AppError, NotFound, ValidationError
from app.services import scoring
from app.services.contradiction import FactView, classify, resolve
from app.services.extract import extract, mentions
from storage import lifecycle, repo

log = logging.getLogger(__name__)

BATCH = 400
ENTITY_MIN_MENTIONS = 3          # 000: an entity once mentioned in >= 3 memories
PATTERN_MIN = 3                  # a habit: the same action at least 3 times
SIMILAR_COSINE = 0.93            # near-duplicate facts get a SIMILAR_TO link
CORROBORATION_BONUS = 0.05       # each further source raises a fact's confidence
WATERMARK = "consolidation.extracted_upto"
RETRY = "consolidation.retry_ids"


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


@dataclass(slots=True)
class RunLog:
    run_id: int
    seq: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    ids: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))

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


FACT_COLS = ("m.id, f.subject, f.predicate, f.object, f.category, m.occurred_at, m.confidence, "
             "m.user_validated, m.status, m.text")


class ConsolidationService:
    def __init__(self, vault: Any) -> None:
        self.vault = vault
        self.db = vault.db

    # --- the run ---------------------------------------------------------------------
    def run(self, *, now: float | None = None, cancel: CancelToken | None = None,
            kind: str = "consolidation", steps: tuple[str, ...] = (
                "extract", "entities", "similar", "procedures", "statistics", "decay",
                "synthesis"),
            progress: Callable[[int, int], None] | None = None) -> RunReport:
        now = self.vault.clock.now() if now is None else now
        cancel = cancel or CancelToken()
        started = time.perf_counter()
        run_id = self.db.write_sync(lambda c: int(c.execute(
            "INSERT INTO run (kind, started_at) VALUES (?, ?)", (kind, now)).lastrowid))
        rl = RunLog(run_id)
        failed = 0
        cancelled = False
        try:
            for n, step in enumerate(steps):
                if cancel.cancelled:
                    cancelled = True
                    break
                try:
                    failed += getattr(self, f"_step_{step}")(rl, now, cancel)
                except Cancelled:
                    cancelled = True
                    break
                except Exception as exc:  # a failed step is logged and skipped, never fatal
                    log.error("consolidation step %s failed: %s", step, type(exc).__name__)
                    failed += 1
                if progress is not None:
                    progress(n + 1, len(steps))
        finally:
            seconds = time.perf_counter() - started
            report = RunReport(run_id, kind, now, round(seconds, 3), dict(rl.counts),
                               {k: v for k, v in rl.ids.items()}, failed, cancelled)
            status = "cancelled" if cancelled else ("partial" if failed else "done")
            self.db.write_sync(lambda c: c.execute(
                "UPDATE run SET finished_at = ?, status = ?, report = ? WHERE id = ?",
                (now, status, json.dumps({"counts": report.counts, "ids": report.ids,
                                          "failed_batches": failed, "seconds": report.seconds}),
                 run_id)))
        log.info("run %d: %s in %.2f s", run_id, dict(rl.counts), seconds)
        return report

    # --- step 1: extraction ----------------------------------------------------------
    def _episodes_todo(self) -> list[EpisodeView]:
        def read(conn: Any) -> list[EpisodeView]:
            upto = repo.get_setting(conn, WATERMARK) or 0
            retry = repo.get_setting(conn, RETRY) or []
            rows = conn.execute(
                "SELECT id, text, speaker, occurred_at FROM memory WHERE store = 'episodic' "
                "AND status = 'active' AND id > ? ORDER BY id", (upto,)).fetchall()
            if retry:
                marks = ",".join("?" * len(retry))
                rows = conn.execute(
                    "SELECT id, text, speaker, occurred_at FROM memory WHERE id IN "
                    f"({marks})", retry).fetchall() + rows
            return [EpisodeView(r[0], r[1], r[2], r[3]) for r in rows]
        return self.db.read(read)  # type: ignore[no-any-return]

    def _step_extract(self, rl: RunLog, now: float, cancel: CancelToken,
                      extractor: Callable[[list[EpisodeView]], list[FactCandidate]] | None = None
                      ) -> int:
        episodes = self._episodes_todo()
        extractor = extractor or self._extractor()

        def mark(conn: Any) -> None:  # undo rewinds to here, so the episodes are read again
            rl.change(conn, "watermark", None, old=repo.get_setting(conn, WATERMARK) or 0,
                      retry=repo.get_setting(conn, RETRY) or [])
        self.db.write_sync(mark)
        failed = 0
        retry: list[int] = []
        for start in range(0, len(episodes), BATCH):
            if cancel.cancelled:
                raise Cancelled()
            batch = episodes[start:start + BATCH]
            try:
                facts = extractor(batch)
                self._store_facts(rl, facts, now)
            except Cancelled:
                raise
            except Exception as exc:  # log, skip the batch, retry it next run
                log.error("extraction batch of %d failed: %s", len(batch), type(exc).__name__)
                retry += [e.id for e in batch]
                failed += 1
            high = max(e.id for e in batch)
            self.db.write_sync(lambda c, high=high: repo.put_setting(
                c, WATERMARK, max(high, repo.get_setting(c, WATERMARK) or 0)))
        self.db.write_sync(lambda c: repo.put_setting(c, RETRY, retry))
        return failed

    def _extractor(self) -> Callable[[list[EpisodeView]], list[FactCandidate]]:
        provider = self.db.read(lambda c: repo.get_setting(c, "extraction.provider")) or "rules"
        if provider == "llm":
            return self._llm_extractor()
        return lambda eps: [f for e in eps for f in extract(e)]

    def _llm_extractor(self) -> Callable[[list[EpisodeView]], list[FactCandidate]]:
        """The optional LLM extractor. When it cannot help (no consent for a cloud endpoint,
        the endpoint is down, a reply stays malformed after one retry: its raw text is kept
        encrypted in llm_reply), the batch falls back to the rules, so consolidation always
        progresses; the run report counts those batches."""
        from app.services.llm import LlmConfig, LlmExtractor

        def setting(key: str) -> Any:
            return self.db.read(lambda c: repo.get_setting(c, key))
        cfg = LlmConfig(base_url=setting("extraction.llm_base_url") or "",
                        model=setting("extraction.llm_model") or "",
                        consent=setting("extraction.cloud_consent") or "",
                        redact=bool(setting("extraction.redact")))
        llm = LlmExtractor(cfg)
        names = self.vault.recall_service.known_people()
        self.llm_fallbacks = 0

        def run(eps: list[EpisodeView]) -> list[FactCandidate]:
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
                self.llm_fallbacks += 1
                return [f for e in eps for f in extract(e)]
            for d in deletes:
                # An LLM DELETE never deletes: the memory it means goes to the person's inbox.
                target = d.memory_id if d.memory_id is not None else self._match_fact(
                    d.statement)
                if target is not None:
                    self._review_request(target, d.reason or "the assistant thinks this is no "
                                         "longer true")
            return facts
        return run

    def _match_fact(self, statement: str) -> int | None:
        """The active fact a free-text statement most likely means, if one clearly matches."""
        from rapidfuzz import fuzz

        from app.services.recall import query_tokens
        match = repo.fts_query(query_tokens(statement))
        if not match:
            return None

        def read(conn: Any) -> int | None:
            for mid, _score in repo.fts_search(conn, match, 5):
                row = conn.execute("SELECT text FROM memory WHERE id = ? AND status = 'active' "
                                   "AND store IN ('semantic','procedural')", (mid,)).fetchone()
                if row and fuzz.token_set_ratio(row[0], statement) >= 80:
                    return int(mid)
            return None
        return self.db.read(read)  # type: ignore[no-any-return]

    def _review_request(self, mid: int, reason: str) -> None:
        def w(conn: Any) -> None:
            if conn.execute("SELECT 1 FROM memory WHERE id = ?", (mid,)).fetchone():
                conn.execute("INSERT OR IGNORE INTO contradiction (a, b, reason, created_at) "
                             "VALUES (?, ?, ?, ?)", (mid, mid, "review: " + reason[:200],
                                                     time.time()))
        self.db.write_sync(w)

    def _fact_views(self, conn: Any, subject: str) -> list[tuple[FactView, str]]:
        rows = conn.execute(
            f"SELECT {FACT_COLS}, p.kind FROM memory m JOIN fact f ON f.memory_id = m.id "
            "LEFT JOIN procedure p ON p.memory_id = m.id "
            "WHERE m.status = 'active' AND lower(f.subject) = lower(?)", (subject,)).fetchall()
        out = []
        for r in rows:
            qualifier, negated = _decode_category(r[4])
            out.append((FactView(r[0], r[1], r[2], r[3], qualifier, r[5], r[6], bool(r[7]),
                                 negated), r[9]))
        return out

    def _store_facts(self, rl: RunLog, facts: list[FactCandidate], now: float) -> None:
        if not facts:
            return
        # Embed new statements outside the write transaction.
        texts = list(dict.fromkeys(f.statement for f in facts))
        vecs = self.vault._embed(texts)
        vec_of = {t: vecs[i] for i, t in enumerate(texts)} if vecs is not None else {}
        created: list[tuple[int, Any]] = []

        def write(conn: Any) -> None:
            for f in facts:
                views = self._fact_views(conn, f.subject)
                new_view = FactView(-1, f.subject, f.predicate, f.object, f.qualifier,
                                    _occurred(conn, f), f.confidence, False, f.negated, f.change)
                dup = next((v for v, _ in views if classify(v, new_view) == "duplicate"), None)
                if dup is not None:
                    self._corroborate(conn, rl, dup, f, now)
                    continue
                mid = self._insert_fact(conn, rl, f, now)
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

    def _insert_fact(self, conn: Any, rl: RunLog, f: FactCandidate, now: float) -> int:
        store = Store.PROCEDURAL if f.store == "procedural" else Store.SEMANTIC
        occurred = _occurred(conn, f)
        extra: dict[str, object] = {"subject": f.subject, "predicate": f.predicate,
                                    "object": f.object,
                                    "category": _encode_category(f.category, f.qualifier,
                                                                 f.negated)}
        d = Draft(text=f.statement, store=store, occurred_at=occurred, speaker=f.subject,
                  confidence=f.confidence, valid_from=f.valid_from,
                  importance=policy.DEFAULT_IMPORTANCE[store.value],
                  derived_from=tuple(MemoryId(i) for i in f.source_ids), extra={} if store is Store.PROCEDURAL
                  else extra)
        scores, decay_class, _conf = self.vault._scores(d, now)
        mid = repo.insert_memory(conn, d, now=now, decay_class=decay_class, scores=scores,
                                 confidence=f.confidence, fts_keys=self.vault.fts_keys(d))
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
            new_conf = min(0.95, max(dup.confidence, f.confidence) + CORROBORATION_BONUS)
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
    def _step_entities(self, rl: RunLog, now: float, cancel: CancelToken) -> int:
        def write(conn: Any) -> None:
            counts: Counter[tuple[str, str]] = Counter()
            members: dict[tuple[str, str], set[int]] = defaultdict(set)
            stated: set[tuple[str, str]] = set()
            for mid, text, speaker in conn.execute(
                    "SELECT id, text, speaker FROM memory WHERE store IN ('episodic','semantic',"
                    "'procedural') AND status = 'active'"):
                found = mentions(text)
                if speaker and speaker.lower() not in ("assistant", "system", "user"):
                    found.setdefault(speaker, "person")
                for name, kind in found.items():
                    counts[(name, kind)] += 1
                    members[(name, kind)].add(mid)
            for subject, obj in conn.execute(
                    "SELECT subject, object FROM fact WHERE predicate = 'relation'"):
                stated.add((obj, "person"))
                stated.add((subject, "person"))
            existing = {(r[1], r[2]): r[0] for r in conn.execute(
                "SELECT id, name_key, kind FROM entity")}
            for (name, kind), n in counts.items():
                key = (name.casefold(), kind)
                eid = existing.get(key)
                if eid is None and (n >= ENTITY_MIN_MENTIONS or (name, kind) in stated):
                    eid = int(conn.execute(
                        "INSERT INTO entity (kind, name, name_key, created_at, updated_at) "
                        "VALUES (?,?,?,?,?)", (kind, name, name.casefold(), now, now)).lastrowid)
                    rl.change(conn, "entity", None, id=eid)
                    rl.counts["entities_created"] += 1
                if eid is None:
                    continue
                for mid in members[(name, kind)]:
                    cur = conn.execute("INSERT OR IGNORE INTO entity_mention VALUES (?, ?)",
                                       (eid, mid))
                    if cur.rowcount:
                        rl.change(conn, "mention", mid, entity=eid)
        self.db.write_sync(write)
        return 0

    # --- step 3: near duplicates -----------------------------------------------------
    def _step_similar(self, rl: RunLog, now: float, cancel: CancelToken) -> int:
        """SIMILAR_TO between facts whose vectors nearly coincide (exact duplicates were
        already merged at extraction)."""
        if self.vault.embedder is None:
            return 0
        created = rl.ids.get("created", [])
        pairs = []
        for mid in created:
            vec = self.vault.index.vector(mid)
            if vec is None:
                continue
            for other, sim in self.vault.index.search_exact(vec, 5):
                if other != mid and sim >= SIMILAR_COSINE:
                    pairs.append((mid, other, sim))

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
        return 0

    # --- step 4: habits become procedures --------------------------------------------
    def _step_procedures(self, rl: RunLog, now: float, cancel: CancelToken) -> int:
        from app.services.habits import detect_patterns

        def read(conn: Any) -> tuple[list[tuple[int, str, str, float, str]], set[str]]:
            rows = conn.execute(
                "SELECT id, text, coalesce(speaker, ''), occurred_at, coalesce(session, '') "
                "FROM memory WHERE store = 'episodic' AND status = 'active' "
                "ORDER BY occurred_at, id").fetchall()
            have = {r[0] for r in conn.execute(
                "SELECT trigger FROM procedure WHERE kind = 'procedure' AND trigger IS NOT NULL")}
            return rows, have
        rows, have = self.db.read(read)
        patterns = [p for p in detect_patterns(rows, PATTERN_MIN) if p.key not in have]
        if not patterns:
            return 0

        def write(conn: Any) -> None:
            for p in patterns:
                d = Draft(text=p.statement, store=Store.PROCEDURAL, occurred_at=p.last_at,
                          speaker=p.who or None,
                          derived_from=tuple(MemoryId(i) for i in p.sources),
                          importance=0.6)
                scores, dc, _c = self.vault._scores(d, now)
                mid = repo.insert_memory(conn, d, now=now, decay_class=dc, scores=scores,
                                         confidence=min(0.9, 0.5 + 0.1 * len(p.sources)),
                                         fts_keys=self.vault.fts_keys(d))
                conn.execute("UPDATE procedure SET kind = 'procedure', trigger = ?, actions = ?,"
                             " success_count = ? WHERE memory_id = ?",
                             (p.key, json.dumps(p.actions), len(p.sources), mid))
                rl.change(conn, "created", mid)
                rl.ids["created"].append(mid)
                rl.counts["procedures_created"] += 1
        self.db.write_sync(write)
        return 0

    # --- step 5: implicit statistics -------------------------------------------------
    def _step_statistics(self, rl: RunLog, now: float, cancel: CancelToken) -> int:
        recompute_statistics(self.vault, now, rl)
        return 0

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
                freq = scoring.frequency(count)
                comp = scoring.composite(imp, rec, freq, emo, soc)
                updates.append((rec, freq, comp, mid))
                retention_d = policy.DECAY[dc].max_retention_d
                too_old = idle_h / 24 > retention_d and not validated
                faded = comp < policy.ARCHIVE_MIN_COMPOSITE and idle_h / 24 >= policy.ARCHIVE_IDLE_D
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
    def _step_synthesis(self, rl: RunLog, now: float, cancel: CancelToken) -> int:
        n = synthesise_summaries(self.db, now)
        rl.counts["summaries_written"] += n
        return 0

    # --- the inbox ---------------------------------------------------------------------
    def contradictions(self, *, status: str | None = "open") -> list[ContradictionItem]:
        def read(conn: Any) -> list[ContradictionItem]:
            q = "SELECT id, a, b, reason, status, resolution, created_at, run_id FROM contradiction"
            rows = conn.execute(q + (" WHERE status = ?" if status else "") + " ORDER BY id",
                                (status,) if status else ()).fetchall()
            out = []
            for r in rows:
                sides = []
                for mid in (r[1], r[2]):
                    m = repo.get_memory(conn, mid)
                    refs = repo.refs_of(conn, [mid])[mid]
                    sides.append({"id": mid, "text": m.text if m else "", "status":
                                  m.status.value if m else "", "occurred_at":
                                  m.occurred_at if m else None, "confidence":
                                  m.confidence if m else None, "refs": refs,
                                  "sources": repo.provenance(conn, [mid])[mid]})
                out.append(ContradictionItem(r[0], sides[0], sides[1], r[3], r[4], r[5], r[6],
                                             r[7]))
            return out
        return self.db.read(read)  # type: ignore[no-any-return]

    def resolve(self, cid: int, keep: str, text: str | None = None) -> int | None:
        """keep a | b | both (true at different times) | edit (with ``text``)."""
        if keep not in ("a", "b", "both", "edit"):
            raise ValidationError("Choose a, b, both or edit.")
        row = self.db.read(lambda c: c.execute(
            "SELECT a, b, status FROM contradiction WHERE id = ?", (cid,)).fetchone())
        if row is None:
            raise NotFound("No contradiction with that id.")
        a, b, status = row
        if status != "open":
            raise ValidationError("That contradiction is already resolved; undo it first.")
        now = self.vault.clock.now()
        new_id: int | None = None
        if keep == "edit":
            if not text:
                raise ValidationError("Give the corrected text.")
            new_id = int(self.vault.correct(b, text).value)

        def write(conn: Any) -> None:
            prior = _statuses(conn, (a, b))
            if keep in ("a", "b"):
                winner, loser = (a, b) if keep == "a" else (b, a)
                _supersede(conn, None, loser, winner, now)
                conn.execute("UPDATE memory SET user_validated = 1, confidence = 1.0 WHERE id = ?",
                             (winner,))
            elif keep == "both":
                first, second = sorted((a, b), key=lambda i: _occurred_id(conn, i))
                conn.execute("UPDATE memory SET valid_until = ? WHERE id = ?",
                             (_occurred_id(conn, second), first))
            elif new_id is not None:
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
        rows = conn.execute("SELECT occurred_at, emotional, speaker FROM memory WHERE store = "
                            "'episodic' AND status = 'active'").fetchall()
        people = conn.execute("SELECT e.name, count(*) FROM entity e JOIN entity_mention em ON "
                              "em.entity_id = e.id WHERE e.kind = 'person' GROUP BY e.id "
                              "ORDER BY count(*) DESC LIMIT 1").fetchone()
        stats = statistics(rows, people)
        existing = {r[0]: (r[1], r[2], r[3]) for r in conn.execute(
            "SELECT metric, memory_id, value, sample_size FROM statistic")}
        n = 0
        for metric, (value, sample, text) in stats.items():
            if metric in existing:
                mid, old_value, old_sample = existing[metric]
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
                      extra={"metric": metric, "value": value, "sample_size": sample,
                             "computed_at": now})
            mid = repo.insert_memory(conn, d, now=now, decay_class="semantic",
                                     scores=scoring_defaults(), confidence=0.9)
            if rl is not None:
                rl.change(conn, "created", mid)
            n += 1
        for metric, (mid, _v, _s) in existing.items():
            if metric not in stats:  # nothing left to compute it from
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
    summarised, per 000)."""
    def write(conn: Any) -> int:
        n = 0
        for (eid,) in conn.execute("SELECT id FROM entity").fetchall():
            rows = conn.execute(
                "SELECT m.text, m.occurred_at, m.last_accessed_at, m.access_count FROM memory m "
                "JOIN entity_mention em ON em.memory_id = m.id WHERE em.entity_id = ? AND "
                "m.status = 'active' AND m.store IN ('semantic','procedural') "
                "ORDER BY m.confidence DESC, m.id DESC LIMIT 40", (eid,)).fetchall()
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


__all__ = ["CancelToken", "ConsolidationService", "ContradictionItem", "RunReport",
           "recompute_statistics", "synthesise_summaries"]
