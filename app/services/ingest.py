"""Ingestion: how a memory enters the vault. Layer: app. Runs on: any worker thread.

Scores, full-text keys, the text a vector is made from, the embedding, the insert and the
index update, shared by ``remember``, ``import``, ``correct`` and consolidation (which
inserts inside its own write transactions with :meth:`IngestService.insert`). The one
exception is consolidation's implicit statistics: fixed scores, no vector, no keys.
Collaborators are injected (``app/bootstrap.py``); nothing here imports storage.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace

import numpy as np

from app import policy
from app.api import Turn
from app.domain.memory import Draft, Memory, MemoryId, Scores, Store
from app.errors import NotFound, ValidationError
from app.ports import Clock, Connection, Database, Embedder, Lifecycle, MemoryRows, VectorIndex
from app.services import salience, scoring, slots
from app.services.salience import Salience
from app.services.text import date_words, emotional_score, social_score
from app.services.vector_follow import VectorFollower
from app.threads import background_priority
from app.validation import check_string, check_text, check_time

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
Scored = tuple[Scores, str, float]  # scores, decay class, confidence


def validate_draft(d: Draft) -> Draft:
    """Pure and cheap: no I/O (may run inline in a form). Every field, before any write:
    the same limits as an import (``app/validation.py``)."""
    text = check_text(d.text)
    check_string(d.agent, "The agent")
    for label in ("context", "ref", "session", "speaker"):
        if getattr(d, label) is not None:
            check_string(getattr(d, label), f"The {label}")
    for when in ("occurred_at", "valid_from", "valid_until"):
        if getattr(d, when) is not None:
            check_time(getattr(d, when), f"The {when.replace('_', ' ')} time")
    if d.store is Store.WORKING:
        raise ValidationError("Working memory is assembled per request and never stored.")
    for name in ("importance", "emotional", "social", "confidence"):
        value = getattr(d, name)
        if value is not None and not 0.0 <= value <= 1.0:
            raise ValidationError(f"{name} must be between 0 and 1.")
    return replace(d, text=text)


def _correction(old: Memory, text: str, by: str | None) -> Draft:
    """The new version ``correct`` writes of ``old`` (validated); ValidationError when
    ``old`` was already replaced."""
    if old.status.value == "superseded":
        raise ValidationError(
            f"Memory {old.id} was already replaced by {old.superseded_by}; correct that one.")
    extra = dict(old.extra)
    if old.store is Store.SEMANTIC:
        extra.pop("object", None)  # the corrected statement no longer says the old object
    return validate_draft(Draft(
        text=text, store=old.store, occurred_at=old.occurred_at, agent=old.agent,
        context=old.context, session=old.session, speaker=old.speaker, seq=old.seq,
        ref=None,
        importance=old.scores.importance, emotional=None, social=None,
        confidence=1.0 if by is None else old.confidence,
        user_validated=by is None, valid_from=old.valid_from, valid_until=old.valid_until,
        extra=extra))


def fts_keys(d: Draft) -> str:
    """Extra lexical keys: who said it and when (so "what did Anna say in May" matches), and
    the slots its words are about (``app.services.slots``: "first day at Kitewood" carries the
    employer slot's tag, so "where do I work" finds it)."""
    parts = [d.speaker or "", d.context or ""]
    if d.occurred_at is not None:
        parts.append(date_words(d.occurred_at))
    parts.append(slots.tags(d.text))
    return " ".join(p for p in parts if p)


def embed_text(d: Draft) -> str:
    """What the dense vector is made from: a said thing carries its time and speaker,
    "[1:56 pm on 8 May, 2023] Ana: ..." (+.03 R@10 on LoCoMo dev over the bare text)."""
    if d.speaker and d.store in (Store.EPISODIC, Store.SHORT_TERM):
        when = f"[{date_words(d.occurred_at)}] " if d.occurred_at is not None else ""
        return f"{when}{d.speaker}: {d.text}"
    return d.text


def score(d: Draft, now: float, known: tuple[float, float] | None = None) -> Scored:
    """``known``: (emotional, social) already computed for this very text and speaker
    (an import scores each turn's text once for the turn and its episode)."""
    decay_class = policy.STORE_DECAY[d.store.value]
    emotional = d.emotional if d.emotional is not None else (
        known[0] if known is not None else emotional_score(d.text))
    social = d.social if d.social is not None else (
        known[1] if known is not None else social_score(d.text, d.speaker))
    if d.store in (Store.SEMANTIC, Store.PROCEDURAL) and social > 0.5:
        decay_class = "social"
    elif d.store is Store.EPISODIC and emotional > 0.6:
        decay_class = "emotional"
    importance = d.importance if d.importance is not None else \
        policy.DEFAULT_IMPORTANCE[d.store.value]
    hours = max(0.0, (now - (d.occurred_at or now)) / policy.HOUR)
    rec = scoring.recency(decay_class, hours)
    comp = scoring.composite(importance, rec, 0.0, emotional, social)
    confidence = d.confidence if d.confidence is not None else (
        1.0 if d.user_validated else 0.5)
    return Scores(importance, rec, 0.0, emotional, social, comp), decay_class, confidence


def route_turn(text: str, store: Store) -> Salience:
    """Where an incoming turn goes (issue 27 item 1): a turn meant for episodic memory goes
    there only when its salience reaches ``policy.SALIENCE_EPISODE_MIN``; a turn the import
    sent to another store keeps it (its salience is still recorded)."""
    s = salience.score(text)
    if store is Store.EPISODIC:
        return s
    stores = ("short_term",) if store is Store.SHORT_TERM else ("short_term", store.value)
    return Salience(s.score, stores, f"{s.reason}; the import named the store", s.by)


@dataclass(slots=True)
class ImportTally:
    """What an import has committed so far: turns written, memories derived from them."""
    done: int = 0
    added: list[MemoryId] = field(default_factory=list)


# Texts an import hands the embedder a call (``IngestService._embed_routed``): 64 short chat
# turns take ~0.1-0.3 s on 2 cores, 64 turns cut at 256 tokens about 1-2 s (dev, loaded machine).
IMPORT_EMBED_CALL = 64

# One import batch ready for its transaction: per turn (draft, scores, decay class,
# confidence, the derived memory with its own scoring or None, full-text keys).
_Prepared = list[tuple[Draft, Scores, str, float, tuple[Draft, Scores, str, float] | None, str]]


class IngestService:
    """Owner: the composition of one unlocked vault (``app/bootstrap.py``)."""

    def __init__(self, db: Database, index: VectorIndex, embedder: Embedder | None,
                 clock: Clock, rows: MemoryRows, lifecycle: Lifecycle) -> None:
        self.db = db
        self.index = index
        self.embedder = embedder
        self.clock = clock
        self.rows = rows
        self.lifecycle = lifecycle
        # Set by the composition when there is a model: remember's vectors follow the
        # acknowledgement (app/services/vector_follow.py, issue 28).
        self.follower: VectorFollower | None = None

    # --- the parts ---------------------------------------------------------------------
    scores = staticmethod(score)
    fts_keys = staticmethod(fts_keys)
    embed_text = staticmethod(embed_text)

    @property
    def model_name(self) -> str:
        return self.embedder.model_name if self.embedder is not None else ""

    def embed(self, texts: Sequence[str]) -> np.ndarray | None:
        """One row per text; None without a model (semantic search off) or texts."""
        if self.embedder is None or not texts:
            return None
        return np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)

    def insert(self, conn: Connection, d: Draft, now: float, *,
               confidence: float | None = None, index_text: bool = True) -> MemoryId:
        """Score and insert ``d`` inside the caller's write transaction (no vector: the
        caller embeds outside the transaction and calls :meth:`store_vectors`).
        ``confidence`` overrides the scored one."""
        scores, decay_class, conf = score(d, now)
        return self.rows.insert_memory(
            conn, d, now=now, decay_class=decay_class, scores=scores,
            confidence=conf if confidence is None else confidence, fts_keys=fts_keys(d),
            index_text=index_text)

    def store_vectors(self, ids: Sequence[int], vecs: np.ndarray | None) -> None:
        """Vectors of memories already committed: to the vault (one transaction), then to
        the in-RAM index."""
        if vecs is None or not len(ids) or self.embedder is None:
            return
        model = self.model_name
        ids = list[int](ids)
        self.db.write_sync(lambda c: self.rows.put_vectors(c, ids, vecs, model))
        self.index.add(ids, vecs)

    # --- remember ----------------------------------------------------------------------
    def remember(self, d: Draft) -> MemoryId:
        """``d`` validated (``validate_draft``). Short-term memories get no vector."""
        return self.remember_once(d)[0]

    def remember_once(self, d: Draft, *,
                      also: Callable[[Connection, MemoryId], None] | None = None
                      ) -> tuple[MemoryId, bool]:
        """(id, saved now): a draft with a ``ref`` that its agent already saved in the same
        session and store is not saved again; the first one's id comes back with False
        (checked again inside the write, so two racing calls save one)."""
        if d.ref is not None:
            ref = d.ref
            found = self.db.read(lambda c: self.rows.find_own_ref(c, d.session, ref, d.store,
                                                                  d.agent))
            if found is not None:
                return found, False
        now = self.clock.now()
        scores, decay_class, confidence = score(d, now)
        follower = self.follower if d.store is not Store.SHORT_TERM else None
        vec = self.embed([embed_text(d)]) if d.store is not Store.SHORT_TERM \
            and follower is None else None
        keys = fts_keys(d)
        model = self.model_name

        def run(conn: Connection) -> tuple[MemoryId, bool]:
            if d.ref is not None:
                found = self.rows.find_own_ref(conn, d.session, d.ref, d.store, d.agent)
                if found is not None:
                    return found, False
            mid = self.rows.insert_memory(conn, d, now=now, decay_class=decay_class,
                                          scores=scores, confidence=confidence, fts_keys=keys)
            if vec is not None:
                self.rows.put_vectors(conn, [mid], vec, model)
            if follower is not None:
                follower.rows.mark_pending(conn, mid)
            if also is not None:  # in the same transaction (sync names what it applies)
                also(conn, mid)
            return mid, True
        # Group commit: remembers of concurrent callers share one transaction and its fsync.
        mid, saved = self.db.write_group(run).result()
        if vec is not None and saved:
            self.index.add([mid], vec)
        if follower is not None and saved:
            follower.submit(mid, embed_text(d))
        return mid, saved

    def remember_many(self, drafts: Sequence[Draft],
                      also: Callable[[Connection, list[MemoryId]], None], *,
                      later: list[tuple[int, str]] | None = None) -> list[MemoryId]:
        """Validated drafts saved in ONE transaction with ``also`` (sync applies another
        device's memories so: a crash leaves all or none, and their names go with them).
        No ``ref`` check: the caller knows these are new. Vectors as ``remember_once`` makes
        them (after the commit by the follower when it runs, else embedded in one batch).
        ``later``: the follower's work is appended there instead of queued, for the caller to
        queue (``follow``) after its last batch, so the embeddings do not compete with it."""
        if not drafts:
            return []
        now = self.clock.now()
        scored = [score(d, now) for d in drafts]
        keys = [fts_keys(d) for d in drafts]
        follower = self.follower
        embed_at = [i for i, d in enumerate(drafts) if d.store is not Store.SHORT_TERM]
        vecs = self.embed([embed_text(drafts[i]) for i in embed_at]) \
            if embed_at and follower is None else None
        model = self.model_name

        def run(conn: Connection) -> list[MemoryId]:
            # One statement per table for the batch (``storage/bulk_insert.py``): the same
            # rows as ``insert_memory`` a draft, ~15x less writer CPU a memory (issue 29).
            ids = self.rows.insert_memories(
                conn, [(d, sc[0], sc[1], sc[2]) for d, sc in zip(drafts, scored, strict=True)],
                now=now)
            # Full-text rows once per batch, as an import writes them (``index_texts``).
            self.rows.index_texts(conn, [(m, d.text, k, d.session, d.store.value, d.seq)
                                         for m, d, k in zip(ids, drafts, keys, strict=True)])
            if vecs is not None:
                self.rows.put_vectors(conn, [ids[i] for i in embed_at], vecs, model)
            elif follower is not None:
                for i in embed_at:
                    follower.rows.mark_pending(conn, ids[i])
            also(conn, ids)
            return ids
        ids = self.db.write_sync(run)
        if vecs is not None:
            self.index.add([ids[i] for i in embed_at], vecs)
        elif follower is not None:
            work = [(int(ids[i]), embed_text(drafts[i])) for i in embed_at]
            if later is not None:
                later.extend(work)
            else:
                follower.submit_many(work)
        return ids

    def follow(self, work: list[tuple[int, str]]) -> None:
        """Queue vectors ``remember_many`` left in ``later``."""
        if self.follower is not None and work:
            self.follower.submit_many(work)

    def stop_follow(self) -> None:
        """Before the vault locks: the vectors still to be made stay pending in the vault."""
        if self.follower is not None:
            self.follower.stop()

    # --- correct -----------------------------------------------------------------------
    def get(self, mid: int) -> Memory:
        m = self.db.read(lambda c: self.rows.get_memory(c, mid))
        if m is None:
            raise NotFound()
        return m

    def correct(self, mid: int, text: str, *, by: str | None = None,
                also: Callable[[Connection, MemoryId], None] | None = None) -> MemoryId:
        """A new version, user-validated with confidence 1.0, supersedes the old one; both
        stay in the history. ``by``: an assistant corrects its own memory (issue 26): the new
        version keeps the old confidence and is not the person's confirmation."""
        old = self.get(mid)
        d = _correction(old, text, by)
        now = self.clock.now()
        scores, decay_class, _conf = score(d, now)
        vec = self.embed([embed_text(d)]) if d.store is not Store.SHORT_TERM else None
        model = self.model_name
        keys = fts_keys(d)

        def run(conn: Connection) -> MemoryId:
            new = self._write_correction(conn, old, d, by, scores, decay_class, keys, now)
            if vec is not None:
                self.rows.put_vectors(conn, [new], vec, model)
            if also is not None:  # in the same transaction (sync names what it applies)
                also(conn, new)
            return new
        new = self.db.write_sync(run)
        if vec is not None:
            self.index.add([new], vec)
        return new

    def _write_correction(self, conn: Connection, old: Memory, d: Draft, by: str | None,
                          scores: Scores, decay_class: str, keys: str, now: float) -> MemoryId:
        """The rows of one correction, in the caller's transaction (no vector)."""
        rows, lifecycle, mid = self.rows, self.lifecycle, int(old.id)
        new = rows.insert_memory(conn, d, now=now, decay_class=decay_class, scores=scores,
                                 confidence=1.0 if by is None else old.confidence,
                                 fts_keys=keys)
        lifecycle.copy_links(conn, mid, new, now)
        lifecycle.supersede(conn, mid, new, now)
        if old.session is not None and old.seq is not None:
            rows.refresh_context(conn, old.session, old.store.value, old.seq)
        rows.add_history(conn, mid, now, "superseded", old.text, f"corrected as {new}")
        rows.add_history(conn, new, now, "corrected", None,
                         f"correction of {mid}" + (f" by {by}" if by else ""))
        return new

    def correct_many(self, edits: Sequence[tuple[int, str, str | None]],
                     also: Callable[[Connection, dict[int, MemoryId], set[int]], None], *,
                     later: list[tuple[int, str]] | None = None) -> dict[int, MemoryId]:
        """Many ``correct(mid, text, by=by)`` in ONE transaction with ``also`` (sync applies
        another device's edits so, issue 29): the same rows each, but the vectors are not
        embedded one call an edit before the write (~0.1 s an edit on a loaded machine, the
        whole cost of catching up edits): they follow the commit as ``remember_many``'s do
        (``later``), or, without a follower, are made in one model call. ``also(conn, done,
        refused)``: ``done`` maps each corrected id to its new version; ``refused`` holds the
        ids ``correct`` would refuse (gone, already superseded, an invalid text), which
        nothing is written for. Returns ``done``."""
        if not edits:
            return {}
        found = self.db.read(lambda c: self.rows.get_memories(c, [m for m, _t, _b in edits]))
        now = self.clock.now()
        todo: list[tuple[Memory, Draft, str | None, Scored, str]] = []
        refused: set[int] = set()
        for mid, text, by in edits:
            old = found.get(MemoryId(mid))
            try:
                if old is None:
                    raise NotFound()
                d = _correction(old, text, by)
            except (NotFound, ValidationError) as exc:
                log.info("correction of memory %s refused (%s)", mid, type(exc).__name__)
                refused.add(mid)
                continue
            todo.append((old, d, by, score(d, now), fts_keys(d)))
        follower = self.follower
        embed_at = [i for i, t in enumerate(todo) if t[1].store is not Store.SHORT_TERM]
        vecs = self.embed([embed_text(todo[i][1]) for i in embed_at]) \
            if embed_at and follower is None else None
        model = self.model_name

        def run(conn: Connection) -> dict[int, MemoryId]:
            done: dict[int, MemoryId] = {}
            skipped = set(refused)
            for old, d, by, (scores, decay_class, _c), keys in todo:
                # Checked again inside the write: superseded meanwhile is refused, as
                # ``correct`` refuses it.
                now_old = self.rows.get_memory(conn, int(old.id))
                if now_old is None or now_old.status.value == "superseded":
                    skipped.add(int(old.id))
                    continue
                done[int(old.id)] = self._write_correction(conn, old, d, by, scores,
                                                           decay_class, keys, now)
            rows_at, new_at = written(done)
            if vecs is not None:
                self.rows.put_vectors(conn, [done[int(todo[i][0].id)] for i in new_at],
                                      vecs[rows_at], model)
            elif follower is not None:
                for i in new_at:
                    follower.rows.mark_pending(conn, done[int(todo[i][0].id)])
            also(conn, done, skipped)
            return done

        def written(done: dict[int, MemoryId]) -> tuple[list[int], list[int]]:
            """Of the texts embedded, the rows of ``vecs`` and the ``todo`` indexes written."""
            pairs = [(k, i) for k, i in enumerate(embed_at) if int(todo[i][0].id) in done]
            return [k for k, _i in pairs], [i for _k, i in pairs]
        done = self.db.write_sync(run)
        rows_at, new_at = written(done)
        if vecs is not None and new_at:
            self.index.add([done[int(todo[i][0].id)] for i in new_at], vecs[rows_at])
        elif follower is not None:
            work = [(int(done[int(todo[i][0].id)]), embed_text(todo[i][1])) for i in new_at]
            if later is not None:
                later.extend(work)
            else:
                follower.submit_many(work)
        return done

    # --- import ------------------------------------------------------------------------
    def new_turns(self, turns: Sequence[Turn]) -> list[Turn]:
        """The turns whose ``ref`` is not in their session yet, each (session, ref) once."""
        rows = self.rows
        seen: set[tuple[str, str]] = self.db.read(lambda c: {
            (t.session, t.ref) for t in turns
            if rows.find_ref(c, t.session, t.ref, Store.SHORT_TERM) is not None})
        todo: list[Turn] = []
        for t in turns:
            if (t.session, t.ref) not in seen:
                seen.add((t.session, t.ref))
                todo.append(t)
        return todo

    def import_turns(self, todo: Sequence[Turn], now: float, tally: ImportTally, *,
                     progress: Progress | None = None, batch: int = 256,
                     follow: bool = False) -> None:
        """Write ``todo`` (from :meth:`new_turns`), one transaction per batch. ``tally``
        counts as batches commit, so a caller still knows what landed when one fails.

        ``follow`` (a file import, issue 28): no embedding here; each derived memory is
        committed with its ``vector_pending`` row and the follower makes the vectors after
        (``VectorFollower.pending_written``). A ChatGPT export of realistic lengths embeds at
        ~40-45 turns/s on two cores and goes in at ~350/s without the model (dev, docs/
        architecture.md "Bulk import"); the person should not wait for the first. Without
        ``follow`` the vectors are made inline as before: the callers that measure embedded
        ingest (bench/scale.py ``kept-build``) or recall right after an import."""
        rows = self.rows
        next_seq = self.db.read(lambda c: rows.next_seq(c, {t.session for t in todo}))
        follower = self.follower if follow else None

        def finish(fut: Future[list[MemoryId]], vecs: np.ndarray | None, n: int) -> None:
            ids = fut.result()
            if vecs is not None:
                self.index.add(list[int](ids), vecs)
            if follower is not None:
                follower.pending_written(len(ids))
            tally.added.extend(ids)
            tally.done += n
            if progress is not None:
                progress(tally.done, len(todo))

        self._import_batches(list(todo), batch, next_seq, now, finish,
                             embed=follower is None)

    def _import_batches(self, todo: list[Turn], batch: int, next_seq: dict[str, int],
                        now: float,
                        finish: Callable[[Future[list[MemoryId]], np.ndarray | None, int],
                                         None], *, embed: bool = True) -> None:
        """Pipelined in three (issue 28): the model embeds batch k on the ``import-embed``
        thread while this thread scores batch k and routes batch k+1, and the writer thread
        commits batch k-1. The embedder is never left waiting for Python work (scoring and
        routing ran between embeddings before: 0.61-0.69x the embedder alone, dev).
        Commits stay in order, one transaction per batch, and batch k is only queued once
        batch k-1 has committed (a failed write stops the import). Without ``embed`` the
        derived memories are written with pending rows instead (``import_turns``' ``follow``)."""
        from concurrent.futures import ThreadPoolExecutor
        pending: tuple[Future[list[MemoryId]], np.ndarray | None, int] | None = None
        chunks = [todo[i:i + batch] for i in range(0, len(todo), batch)]
        pool = ThreadPoolExecutor(1, thread_name_prefix="import-embed",
                                  initializer=background_priority)
        embed_fn = self._embed_routed if embed else _no_vectors
        try:
            routed = self._route_chunk(chunks[0], next_seq) if chunks else None
            embedding = pool.submit(embed_fn, routed) if routed is not None else None
            for k in range(len(chunks)):
                assert routed is not None and embedding is not None
                drafts, routes = routed
                prepared = self._prepare_chunk(drafts, now)  # while batch k embeds
                routed = (self._route_chunk(chunks[k + 1], next_seq)
                          if k + 1 < len(chunks) else None)
                vecs = embedding.result()
                if routed is not None:
                    embedding = pool.submit(embed_fn, routed)
                run = self._write_chunk(prepared, vecs, routes, now, pending=not embed)
                if pending is not None:
                    previous, pending = pending, None
                    finish(*previous)
                pending = (self.db.write(run), vecs, len(chunks[k]))
            if pending is not None:
                previous, pending = pending, None
                finish(*previous)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            if pending is not None:
                # Failing while the previous batch was being written: that transaction commits
                # on its own, so keep the in-RAM index in step with it before the error leaves.
                try:
                    finish(*pending)
                except Exception:
                    log.exception("import batch failed")

    @staticmethod
    def _route_chunk(chunk: Sequence[Turn], next_seq: dict[str, int]
                     ) -> tuple[list[tuple[Draft, Store]], list[Salience]]:
        """Each turn as a short-term draft with its sequence number, and the store it goes to
        (``route_turn``)."""
        drafts = []
        for t in chunk:
            seq = next_seq[t.session]
            next_seq[t.session] += 1
            base = Draft(text=t.text, store=Store.SHORT_TERM, occurred_at=t.at,
                         session=t.session, speaker=t.speaker, seq=seq, ref=t.ref)
            drafts.append((base, t.store))
        routes = [route_turn(d.text, st) for d, st in drafts]
        drafts = [(d, st if st is not Store.EPISODIC or r.episode else Store.SHORT_TERM)
                  for (d, st), r in zip(drafts, routes, strict=True)]
        return drafts, routes

    def _embed_routed(self, routed: tuple[list[tuple[Draft, Store]], list[Salience]]
                      ) -> np.ndarray | None:
        """The vectors of a routed chunk's derived memories, in order (the ``import-embed``
        thread). Embedded ``IMPORT_EMBED_CALL`` texts a call, shortest first: the embedder
        serves one call at a time, so a recall's query waits for one such call, not for a
        whole batch of long turns (the vault stays usable during an import); sorting the
        whole batch first keeps similar lengths together, as one call would."""
        texts = [embed_text(replace(d, store=st)) for d, st in routed[0]
                 if st is not Store.SHORT_TERM]
        if self.embedder is None or not texts:
            return None
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: np.ndarray | None = None
        for start in range(0, len(order), IMPORT_EMBED_CALL):
            part = order[start:start + IMPORT_EMBED_CALL]
            vecs = self.embed([texts[i] for i in part])
            assert vecs is not None
            if out is None:
                out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
            out[part] = vecs
            time.sleep(0)  # let a waiting recall take the embedder between calls
        return out

    @staticmethod
    def _prepare_chunk(drafts: list[tuple[Draft, Store]], now: float) -> _Prepared:
        prepared: _Prepared = []
        for d, store in drafts:
            keys = fts_keys(d)
            scored = score(d, now)
            derived: tuple[Draft, Scores, str, float] | None = None
            if store is not Store.SHORT_TERM:
                extra: dict[str, object] = (
                    {"event_type": "conversation", "actors": [d.speaker]}
                    if store is Store.EPISODIC else {})
                e = replace(d, store=store, extra=extra)
                # Same text and speaker: reuse the turn's emotional and social scores.
                derived = (e, *score(e, now, (scored[0].emotional, scored[0].social)))
            prepared.append((d, *scored, derived, keys))
        return prepared

    def _write_chunk(self, prepared: _Prepared, vecs: np.ndarray | None,
                     routes: list[Salience], now: float, *, pending: bool = False
                     ) -> Callable[[Connection], list[MemoryId]]:
        """The one write transaction of a batch (the writer thread runs it); ``pending``: the
        derived memories' ``vector_pending`` rows instead of ``vecs``."""
        rows, model = self.rows, self.model_name
        follower = self.follower if pending else None

        def run(conn: Connection) -> list[MemoryId]:
            derived_ids = []
            turn_ids = []
            texts = []  # full-text rows, written once per batch (repo.index_texts)
            for d, ss, sc, sf, e, keys in prepared:
                tid = rows.insert_memory(conn, d, now=now, decay_class=sc, scores=ss,
                                         confidence=sf, fts_keys=keys, index_text=False)
                texts.append((tid, d.text, keys, d.session, d.store.value, d.seq))
                turn_ids.append(tid)
                if e is not None:
                    ed, es, ec, ef = e
                    eid = rows.insert_memory(
                        conn, replace(ed, derived_from=(tid,)), now=now, decay_class=ec,
                        scores=es, confidence=ef, fts_keys=keys, index_text=False)
                    texts.append((eid, ed.text, keys, ed.session, ed.store.value, ed.seq))
                    derived_ids.append(eid)
            rows.index_texts(conn, texts)
            rows.put_routing(conn, [(tid, r.score, r.stores, r.reason, r.by)
                                    for tid, r in zip(turn_ids, routes, strict=True)])
            if vecs is not None:
                rows.put_vectors(conn, derived_ids, vecs, model)
            elif follower is not None:
                for eid in derived_ids:
                    follower.rows.mark_pending(conn, eid)
            return derived_ids
        return run


def _no_vectors(_routed: object) -> None:
    """A file import's stand-in for ``_embed_routed``: its vectors follow (``follow``)."""
    return None
