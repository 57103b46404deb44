"""Vault: the one object the UI, the CLI and (later) IPC call. Layer: app.
Runs on: any worker thread, never the GUI thread (methods block: crypto, disk, embeddings).

Plain data in, plain data out (frozen dataclasses), so the facade can later be served over
local IPC. ``Vault.create`` / ``Vault.open`` are the headless composition root: they build the
storage objects (key scheme, Database, vector index, embedder) and hand them to the services.
SQL stays in ``storage/``; this module only orchestrates.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from app import policy
from app.changes import MEMORY_CHANGES, NO_CHANGES, Changes, Result
from app.clock import Clock, SystemClock
from app.domain.memory import Draft, Memory, MemoryId, Scores, Store
from app.errors import NotFound, StorageFull, ValidationError, VaultLocked
from app.services import scoring
from app.services.text import emotional_score, social_score
from app.validation import (  # noqa: F401  (re-exported for callers of the facade)
    MAX_LABEL,
    MAX_TEXT,
    check_string,
    check_text,
    check_time,
    parse_time,
)
from storage import lexicon, repo

log = logging.getLogger(__name__)

Listener = Callable[[Changes], None]
# After unlock, background work (the page self-test, the RAM lexicon build) waits this long so
# the window's first paint and a first search do not share the CPU (and the GIL) with it.
BACKGROUND_GRACE_S = 1.0
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class VaultStatus:
    vault_id: str
    path: str
    kdf: dict[str, Any]
    counts: dict[str, dict[str, int]]
    totals: dict[str, int]
    schema_version: str
    model_found: bool
    model_dir: str | None
    semantic_search: bool
    vectors: int
    index: str
    recovery_code: bool
    remember_device: bool


@dataclass(frozen=True, slots=True)
class ImportReport:
    turns: int
    added: int
    skipped_duplicates: int
    sessions: int
    ids: tuple[MemoryId, ...] = ()


@dataclass(frozen=True, slots=True)
class CreateResult:
    vault: Vault
    recovery_code: str | None
    kdf_seconds: float
    kdf_warning: str | None = None


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
    extra: dict[str, Any] = field(default_factory=dict)


def validate_turn(t: Turn) -> None:
    """Every field of an import turn, as ``validate_draft`` checks a memory."""
    check_string(t.session, "'session'")
    if not t.session:
        raise ValidationError("'session' is empty.")
    check_string(t.speaker, "'speaker'")
    check_text(t.text, "'text'")
    check_string(t.ref, "'ref'")
    check_time(t.at, "'at'")
    if t.store is Store.WORKING:
        raise ValidationError("'store' cannot be working memory.")


class Vault:
    """Owner of one unlocked vault. Thread-safe: writes are serialised by the Database."""

    def __init__(self, opened: Any, *, clock: Clock | None = None, embedder: Any = None,
                 model_dir: Path | None = None, use_chroma: bool = True,
                 vectors: tuple[Any, Any] | None = None) -> None:
        from storage.vector import VectorIndex
        self._opened = opened
        self.clock: Clock = clock or SystemClock()
        self.embedder = embedder
        self.model_dir = model_dir
        self.index = VectorIndex(use_chroma=use_chroma)
        self.lexicon = lexicon.Lexicon(repo.FTS_WEIGHTS)
        self.db.after_write.append(self.lexicon.on_write)
        self._listeners: list[Listener] = []
        self._lock = threading.RLock()
        self._load_index(vectors)
        self._start_lexicon()

    # --- construction ------------------------------------------------------------------
    @staticmethod
    def _embedder(load_model: bool) -> tuple[Any, Path | None]:
        if not load_model:
            return None, None
        from storage.embedder import Embedder, find_model_dir
        model_dir = find_model_dir()
        if model_dir is None:
            log.warning("embedding model not found: semantic search is off")
            return None, None
        try:
            return Embedder(model_dir), model_dir
        except Exception as exc:  # a damaged model file must not stop the vault opening
            log.error("embedding model failed to load (%s): semantic search is off",
                      type(exc).__name__)
            return None, None

    @classmethod
    def create(cls, folder: Path, password: str, *, kdf: Any = None, recovery: bool = False,
               clock: Clock | None = None, load_model: bool = True, threaded: bool = True,
               use_chroma: bool = True) -> CreateResult:
        import time

        from storage.unlock import OpenVault
        start = time.perf_counter()
        opened = OpenVault.create(folder, password, kdf=kdf, threaded=threaded)
        seconds = time.perf_counter() - start
        code = opened.add_recovery_code() if recovery else None
        embedder, model_dir = cls._embedder(load_model)
        vault = cls(opened, clock=clock, embedder=embedder, model_dir=model_dir,
                    use_chroma=use_chroma)
        vault._seed_settings()
        return CreateResult(vault, code, seconds)

    @classmethod
    def open(cls, folder: Path, password: str | None = None, *, recovery_code: str | None = None,
             use_device: bool = False, clock: Clock | None = None, load_model: bool = True,
             threaded: bool = True, use_chroma: bool = True, verify: str = "background",
             new_password: str | None = None) -> Vault:
        """``verify="background"`` (threaded only): the page self-test of requirement 2 runs
        while the index loads and the first searches run; no write happens before it has
        passed, and if it fails every write raises ``VaultCorrupt`` and ``watch_integrity``
        callbacks run. ``"sync"`` checks before returning (the CLI's single-threaded mode
        always does). ``recovery_code`` with ``new_password``: a forgotten password is
        replaced (the code keeps working; ``OpenVault.recover``)."""
        from storage.unlock import OpenVault
        if recovery_code is not None and new_password is not None:
            opened, info = OpenVault.recover(folder, recovery_code, new_password,
                                             threaded=threaded, verify=verify)
        else:
            opened, info = OpenVault.unlock(folder, password, recovery_code=recovery_code,
                                            use_device=use_device, threaded=threaded,
                                            verify=verify)
        log.info("unlocked in %.3f s", info.seconds)
        try:
            # One after the other: loading the model on a second thread while the vectors
            # are read made both slower (they take turns on the GIL: 1.28 s against 0.46 +
            # 0.25 s at 100k).
            vectors = None
            if load_model:
                from storage.embedder import MODEL_NAME
                vectors = (MODEL_NAME, opened.db.read(lambda c: repo.load_vectors(c, MODEL_NAME)))
            embedder, model_dir = cls._embedder(load_model)
            vault = cls(opened, clock=clock, embedder=embedder, model_dir=model_dir,
                        use_chroma=use_chroma, vectors=vectors)
            # Now that the index is in RAM; a write cuts the grace short (storage/db.py).
            opened.db.start_verification(delay=BACKGROUND_GRACE_S if threaded else 0.0)
            return vault
        except BaseException:
            opened.lock()
            raise

    def _seed_settings(self) -> None:
        from app.settings import SETTINGS

        def run(conn: Any) -> None:
            for s in SETTINGS:
                if repo.get_setting(conn, s.key) is None:
                    repo.put_setting(conn, s.key, s.default)
        self.db.write_sync(run)

    def _load_index(self, vectors: tuple[str, Any] | None = None) -> None:
        if self.embedder is None:
            return
        if vectors is not None and vectors[0] == self.embedder.model_name:
            ids, mat = vectors[1]
        else:
            ids, mat = self.db.read(lambda c: repo.load_vectors(c, self.embedder.model_name))
        self.index.load(ids, mat)

    def _start_lexicon(self) -> None:
        """Big vaults: mirror the full-text index in RAM (storage/lexicon.py), built in the
        background; FTS5 answers until it is ready and on small vaults."""
        rows = self.db.read(lambda c: c.execute("SELECT count(*) FROM memory").fetchone()[0])
        chroma = self.index.start_chroma_build if self.embedder is not None else None
        if rows >= lexicon.MIN_ROWS and self.db.threaded:  # not for one-shot CLI commands
            # The lexicon first: it turns 300 ms of FTS5 into 2; Chroma is no faster than
            # exact search at this size, so its build waits rather than compete for the CPU.
            self.lexicon.build_in_background(self.db.read, then=chroma,
                                             delay=BACKGROUND_GRACE_S)
        elif chroma is not None:
            chroma()

    def watch_integrity(self, on_corrupt: Callable[[], None]) -> None:
        """``on_corrupt()`` (from the check's thread) if the background self-test fails, at
        once if it already has."""
        db = self.db
        db.on_corrupt.append(on_corrupt)
        if db.integrity == "failed":  # failed before this call: the thread has called the others
            db.on_corrupt.remove(on_corrupt)
            on_corrupt()

    # --- plumbing ----------------------------------------------------------------------
    @property
    def db(self) -> Any:
        if self._opened is None or self._opened.locked:
            raise VaultLocked()
        return self._opened.db

    @property
    def folder(self) -> Path:
        return Path(self._opened.folder)

    @property
    def locked(self) -> bool:
        return self._opened is None or self._opened.locked

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def _emit(self, changes: Changes) -> None:
        if changes.any:
            for listener in list(self._listeners):
                listener(changes)

    @property
    def semantic_search(self) -> bool:
        return self.embedder is not None

    def lock(self) -> Result[None]:
        """Close connections, drop the vector index and model, wipe keys."""
        if self._opened is not None and not self._opened.locked:
            self.lexicon.clear()  # first: its thread may start the Chroma build when done
            self.index.close()
            self._opened.lock()
        self.embedder = None
        changes = Changes(lock=True)
        self._emit(changes)
        return Result(None, changes)

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

    # --- status ------------------------------------------------------------------------
    def status(self) -> VaultStatus:
        from storage.migrations import schema_version
        kf = self._opened.key_file

        def run(conn: Any) -> tuple[dict[str, dict[str, int]], str]:
            return repo.counts(conn), schema_version(conn)
        counts, version = self.db.read(run)
        totals = {store: sum(v.values()) for store, v in counts.items()}
        kdf = {"alg": kf.kdf.alg, "version": kf.kdf.v, "m_kib": kf.kdf.m, "t": kf.kdf.t,
               "p": kf.kdf.p}
        return VaultStatus(
            vault_id=kf.vault_id, path=str(self.folder), kdf=kdf, counts=counts, totals=totals,
            schema_version=version, model_found=self.model_dir is not None,
            model_dir=str(self.model_dir) if self.model_dir else None,
            semantic_search=self.semantic_search, vectors=len(self.index),
            index=("chroma" if self.index.chroma_ready else "exact") if self.embedder else "off",
            recovery_code=kf.wrap_recovery is not None,
            remember_device=kf.wrap_device is not None)

    def background_work(self) -> list[str]:
        """What is still being prepared after unlock, in words; empty when done. Reads
        in-memory flags only (cheap enough for a timer on the GUI thread)."""
        if self.locked:
            return []
        out = []
        if self.db.integrity == "pending":
            out.append("checking the vault")
        if self.lexicon.building:
            out.append("indexing text")
        if self.index.chroma_building:
            out.append("building the vector index")
        return out

    # --- ingestion ---------------------------------------------------------------------
    @staticmethod
    def validate_draft(d: Draft) -> Draft:
        """Pure and cheap: no I/O (may run inline in a form). Every field, before any write:
        the same limits as an import (``check_*`` above)."""
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

    def _scores(self, d: Draft, now: float, known: tuple[float, float] | None = None
                ) -> tuple[Scores, str, float]:
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

    @staticmethod
    def fts_keys(d: Draft) -> str:
        """Extra lexical keys: who said it and when (so "what did Anna say in May" matches)."""
        from app.services.text import date_words
        parts = [d.speaker or "", d.context or ""]
        if d.occurred_at is not None:
            parts.append(date_words(d.occurred_at))
        return " ".join(p for p in parts if p)

    @staticmethod
    def embed_text(d: Draft) -> str:
        """What the dense vector is made from: a said thing carries its time and speaker,
        "[1:56 pm on 8 May, 2023] Ana: ..." (+.03 R@10 on LoCoMo dev over the bare text)."""
        from app.services.text import date_words
        if d.speaker and d.store in (Store.EPISODIC, Store.SHORT_TERM):
            when = f"[{date_words(d.occurred_at)}] " if d.occurred_at is not None else ""
            return f"{when}{d.speaker}: {d.text}"
        return d.text

    def _embed(self, texts: Sequence[str]) -> np.ndarray | None:
        if self.embedder is None or not texts:
            return None
        return np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)

    def remember(self, draft: Draft) -> Result[MemoryId]:
        d = self.validate_draft(draft)
        now = self.clock.now()
        scores, decay_class, confidence = self._scores(d, now)
        vec = self._embed([self.embed_text(d)]) if d.store is not Store.SHORT_TERM else None
        keys = self.fts_keys(d)
        model = self.embedder.model_name if self.embedder else ""

        def run(conn: Any) -> MemoryId:
            mid = repo.insert_memory(conn, d, now=now, decay_class=decay_class, scores=scores,
                                     confidence=confidence, fts_keys=keys)
            if vec is not None:
                repo.put_vectors(conn, [mid], vec, model)
            return mid
        mid = self.db.write_sync(run)
        if vec is not None:
            self.index.add([mid], vec)
        self._emit(MEMORY_CHANGES)
        return Result(mid, MEMORY_CHANGES)

    def import_turns(self, turns: Sequence[Turn], *, progress: Progress | None = None,
                     batch: int = 256) -> Result[ImportReport]:
        """Turns go to short-term memory; each also becomes an episodic memory (speaker, time)
        derived from it. Re-importing a ``ref`` in the same session adds nothing.

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
        now = self.clock.now()
        existing = self.db.read(lambda c: {
            (t.session, t.ref) for t in turns
            if repo.find_ref(c, t.session, t.ref, Store.SHORT_TERM) is not None})
        seen: set[tuple[str, str]] = set(existing)
        todo: list[Turn] = []
        for t in turns:
            if (t.session, t.ref) not in seen:
                seen.add((t.session, t.ref))
                todo.append(t)
        seq_base = self.db.read(lambda c: {
            s: (c.execute("SELECT coalesce(max(seq), -1) FROM memory WHERE session = ?",
                          (s,)).fetchone()[0]) for s in {t.session for t in todo}})
        next_seq = {s: int(v) + 1 for s, v in seq_base.items()}
        added: list[MemoryId] = []
        model = self.embedder.model_name if self.embedder else ""
        done = 0

        def finish(fut: Any, vecs: Any, n: int) -> None:
            nonlocal done
            ids = fut.result()
            if vecs is not None:
                self.index.add(ids, vecs)
            added.extend(ids)
            done += n
            if progress is not None:
                progress(done, len(todo))

        try:
            self._import_batches(todo, batch, next_seq, model, now, finish)
        except StorageFull as exc:
            if added:
                self._emit(MEMORY_CHANGES)  # the batches that did land
            raise StorageFull(
                f"The disk filled up during the import: {done:,} of {len(todo):,} new turns "
                "were saved, whole; the rest were not.",
                hint="Free some space and run the same import again: it adds only the "
                     "turns still missing.") from exc
        # ``done`` counts turns written; ``added`` only the memories derived from them (a
        # ``short_term`` turn has none, and was reported as "Imported 0 turn(s)").
        report = ImportReport(turns=len(turns), added=done,
                              skipped_duplicates=len(turns) - len(todo),
                              sessions=len({t.session for t in turns}), ids=tuple(added))
        changes = MEMORY_CHANGES if done else NO_CHANGES
        self._emit(changes)
        return Result(report, changes)

    def _import_batches(self, todo: list[Turn], batch: int, next_seq: dict[str, int],
                        model: str, now: float, finish: Callable[[Any, Any, int], None]
                        ) -> None:
        """Pipelined: batch k+1 is scored and embedded while the writer thread commits batch
        k. Commits stay in order, one transaction per batch, and batch k+1 is only queued
        once batch k has committed (a failed write stops the import)."""
        pending: tuple[Any, Any, int] | None = None
        try:
            for start in range(0, len(todo), batch):
                chunk = todo[start:start + batch]
                drafts = []
                for t in chunk:
                    seq = next_seq[t.session]
                    next_seq[t.session] += 1
                    base = Draft(text=t.text, store=Store.SHORT_TERM, occurred_at=t.at,
                                 session=t.session, speaker=t.speaker, seq=seq, ref=t.ref)
                    drafts.append((base, t.store))
                vecs = self._embed([self.embed_text(replace(d, store=st)) for d, st in drafts
                                     if st is not Store.SHORT_TERM])
                prepared = []
                for d, store in drafts:
                    keys = self.fts_keys(d)
                    scored = self._scores(d, now)
                    e: Any = None
                    if store is not Store.SHORT_TERM:
                        extra: dict[str, object] = (
                            {"event_type": "conversation", "actors": [d.speaker]}
                            if store is Store.EPISODIC else {})
                        e = replace(d, store=store, extra=extra)
                        # Same text and speaker: reuse the turn's emotional and social scores.
                        e = (e, *self._scores(e, now, (scored[0].emotional, scored[0].social)))
                    prepared.append((d, *scored, e, keys))

                def run(conn: Any, prepared: list[Any] = prepared, vecs: Any = vecs
                        ) -> list[MemoryId]:
                    derived_ids = []
                    texts = []  # full-text rows, written once per batch (repo.index_texts)
                    for d, ss, sc, sf, e, keys in prepared:
                        tid = repo.insert_memory(conn, d, now=now, decay_class=sc, scores=ss,
                                                 confidence=sf, fts_keys=keys, index_text=False)
                        texts.append((tid, d.text, keys, d.session, d.store.value, d.seq))
                        if e is not None:
                            ed, es, ec, ef = e
                            eid = repo.insert_memory(
                                conn, replace(ed, derived_from=(tid,)), now=now, decay_class=ec,
                                scores=es, confidence=ef, fts_keys=keys, index_text=False)
                            texts.append((eid, ed.text, keys, ed.session, ed.store.value, ed.seq))
                            derived_ids.append(eid)
                    repo.index_texts(conn, texts)
                    if vecs is not None:
                        repo.put_vectors(conn, derived_ids, vecs, model)
                    return derived_ids
                if pending is not None:
                    previous, pending = pending, None
                    finish(*previous)
                pending = (self.db.write(run), vecs, len(chunk))
            if pending is not None:
                previous, pending = pending, None
                finish(*previous)
        finally:
            if pending is not None:
                # Failing while the previous batch was being written: that transaction commits
                # on its own, so keep the in-RAM index in step with it before the error leaves.
                try:
                    finish(*pending)
                except Exception:
                    log.exception("import batch failed")

    # --- reading -----------------------------------------------------------------------
    def get(self, mid: int) -> Memory:
        m = self.db.read(lambda c: repo.get_memory(c, mid))
        if m is None:
            raise NotFound()
        return m

    def refs(self, ids: Iterable[int]) -> dict[int, list[str]]:
        ids = list(ids)
        return self.db.read(lambda c: repo.refs_of(c, ids))

    # --- recall ------------------------------------------------------------------------
    @property
    def recall_service(self) -> Any:
        from app.services.recall import RecallService
        return RecallService(self.db, self.index, self.embedder, lexicon=self.lexicon)

    def recall(self, query: str, *, k: int = 10, now: float | None = None,
               filters: Any = None, touch: bool = True) -> list[Any]:
        """Hybrid recall (DESIGN 6). ``touch`` records the access and applies reinforcement.
        An explicit ``now`` never returns what happened after it."""
        from app.services.recall import Filters
        if not query.strip():
            raise ValidationError("The query is empty.")
        filters = filters or Filters()
        if now is not None:
            filters = replace(filters, happened_by=now)
        now = self.clock.now() if now is None else now
        hits = self.recall_service.recall(query, k=k, now=now, filters=filters)
        if touch and hits:
            self.recall_service.touch([h.id for h in hits], now)
        return hits

    def recall_batch(self, queries: Sequence[tuple[str, str, float | None]], *, k: int = 10,
                     filters: Any = None, progress: Progress | None = None) -> list[Any]:
        """Many queries at once (one embedding batch); read-only, so evaluations do not
        reinforce what they read. Items: (qid, query, now)."""
        from app.services.recall import Filters
        service = self.recall_service
        vecs = self._embed([q for _, q, _ in queries])
        out = []
        for n, (qid, query, now) in enumerate(queries):
            qvec = vecs[n] if vecs is not None else None
            when = self.clock.now() if now is None else now
            f = filters or Filters()
            if now is not None:  # an explicit now never returns what happened after it
                f = replace(f, happened_by=now)
            out.append((qid, service.recall(query, k=k, now=when, filters=f, qvec=qvec)))
            if progress is not None:
                progress(n + 1, len(queries))
        return out

    def context(self, query: str, *, budget: int | None = None,
                now: float | None = None, filters: Any = None) -> Any:
        """``filters``: as for recall (time travel: ``as_of``, ``known_at``). ``budget``
        (tokens): the ``recall.context_budget`` setting unless given."""
        from app.services.context import assemble
        if budget is None:
            budget = int(self.setting("recall.context_budget"))
        if budget < 0:
            raise ValidationError("The context budget cannot be negative.")
        hits = self.recall(query, k=40, now=now, filters=filters, touch=False)
        now = self.clock.now() if now is None else now
        ctx = assemble(self, query, hits, budget=budget, now=now)
        # Only what made it into the context was "returned" (DESIGN 6.5).
        self.recall_service.touch([i.id for i in ctx.items if i.id > 0], now)
        return ctx

    def explain(self, mid: int, query: str | None = None, now: float | None = None) -> Any:
        from app.services.context import explain
        return explain(self, mid, query, self.clock.now() if now is None else now)

    # --- forget, correct, history, archive (DESIGN 8) ------------------------------------
    def forget_plan(self, *, ids: Sequence[int] = (), query: str | None = None,
                    entity: str | None = None, include_sources: bool = True) -> Any:
        """Step 1: everything that would go, grouped by kind. Changes nothing."""
        from app.services import forget
        return forget.plan(self, ids=tuple(ids), query=query, entity=entity,
                           include_sources=include_sources)

    def forget(self, plan: Any) -> Result[Any]:
        """Step 2: delete exactly the plan, in one transaction. Cannot be undone."""
        from app.services import forget
        report = forget.execute(self, plan)
        if report.memories:
            # Implicit statistics are recomputed from what is left (their text may name
            # what was forgotten).
            from app.services.consolidation import recompute_statistics
            recompute_statistics(self, self.clock.now(), create=False)
            self.db.checkpoint()
        changes = Changes(memories=True, entities=True, contradictions=True, history=True,
                          index=True, runs=True)
        self._emit(changes)
        return Result(report, changes)

    def correct(self, mid: int, text: str) -> Result[MemoryId]:
        """A new version, user-validated with confidence 1.0, supersedes the old one; both
        stay in the history."""
        from storage import lifecycle
        old = self.get(mid)
        if old.status.value == "superseded":
            raise ValidationError(
                f"Memory {mid} was already replaced by {old.superseded_by}; correct that one.")
        extra = dict(old.extra)
        if old.store is Store.SEMANTIC:
            extra.pop("object", None)  # the corrected statement no longer says the old object
        d = self.validate_draft(Draft(
            text=text, store=old.store, occurred_at=old.occurred_at, agent=old.agent,
            context=old.context, session=old.session, speaker=old.speaker, seq=old.seq,
            ref=None,
            importance=old.scores.importance, emotional=None, social=None, confidence=1.0,
            user_validated=True, valid_from=old.valid_from, valid_until=old.valid_until,
            extra=extra))
        now = self.clock.now()
        scores, decay_class, _conf = self._scores(d, now)
        vec = self._embed([self.embed_text(d)]) if d.store is not Store.SHORT_TERM else None
        model = self.embedder.model_name if self.embedder else ""
        keys = self.fts_keys(d)

        def run(conn: Any) -> MemoryId:
            new = repo.insert_memory(conn, d, now=now, decay_class=decay_class, scores=scores,
                                     confidence=1.0, fts_keys=keys)
            lifecycle.copy_links(conn, mid, new, now)
            lifecycle.supersede(conn, mid, new, now)
            if old.session is not None and old.seq is not None:
                repo.refresh_context(conn, old.session, old.store.value, old.seq)
            repo.add_history(conn, mid, now, "superseded", old.text, f"corrected as {new}")
            repo.add_history(conn, new, now, "corrected", None, f"correction of {mid}")
            if vec is not None:
                repo.put_vectors(conn, [new], vec, model)
            return new
        new = self.db.write_sync(run)
        if vec is not None:
            self.index.add([new], vec)
        self._emit(MEMORY_CHANGES)
        return Result(new, MEMORY_CHANGES)

    def confirm(self, mid: int) -> Result[None]:
        """The person says this memory is right: user-validated, confidence 1.0."""
        self.get(mid)
        now = self.clock.now()

        def run(conn: Any) -> None:
            conn.execute("UPDATE memory SET user_validated = 1, confidence = 1.0 WHERE id = ?",
                         (mid,))
            repo.add_history(conn, mid, now, "confirmed", None, None)
        self.db.write_sync(run)
        self._emit(MEMORY_CHANGES)
        return Result(None, MEMORY_CHANGES)

    def history(self, mid: int) -> Any:
        from app.services import forget
        return forget.history(self, mid)

    def _set_status(self, mid: int, status: str, action: str, allowed: tuple[str, ...]) -> None:
        from storage import lifecycle
        m = self.get(mid)
        if m.status.value not in allowed:
            raise ValidationError(f"Memory {mid} is {m.status.value}; cannot {action} it.")
        now = self.clock.now()

        def run(conn: Any) -> None:
            lifecycle.set_status(conn, mid, status)
            repo.add_history(conn, mid, now, action, None, None)
        self.db.write_sync(run)
        self._emit(MEMORY_CHANGES)

    def archive(self, mid: int) -> Result[None]:
        """Out of default recall, visible and restorable in the Archive. Nothing is deleted."""
        self._set_status(mid, "archived", "archive", ("active",))
        return Result(None, MEMORY_CHANGES)

    def restore(self, mid: int) -> Result[None]:
        self._set_status(mid, "active", "restore", ("archived",))
        return Result(None, MEMORY_CHANGES)

    # --- consolidation (DESIGN 7) ----------------------------------------------------
    @property
    def consolidation(self) -> Any:
        from app.services.consolidation import ConsolidationService
        return ConsolidationService(self)

    def consolidate(self, *, now: float | None = None, cancel: Any = None,
                    progress: Progress | None = None, kind: str = "consolidation",
                    steps: tuple[str, ...] | None = None) -> Result[Any]:
        """Run the pipeline once; returns the run report (ids and counts only)."""
        kwargs: dict[str, Any] = {"now": now, "cancel": cancel, "progress": progress,
                                  "kind": kind}
        if steps is not None:
            kwargs["steps"] = steps
        report = self.consolidation.run(**kwargs)
        changes = Changes(memories=True, entities=True, contradictions=True, runs=True,
                          index=True)
        self._emit(changes)
        return Result(report, changes)

    def contradictions(self, status: str | None = "open") -> list[Any]:
        return list(self.consolidation.contradictions(status=status))

    def inbox_page(self, status: str, page: int = 0, size: int = 25) -> Any:
        """One page of an inbox list (open, auto or resolved): ids first, batched rows."""
        return self.consolidation.inbox_page(status, page, size)

    def inbox_items(self, ids: Sequence[int]) -> list[Any]:
        """These inbox items (contradictions or review requests), with both sides."""
        return list(self.consolidation.inbox_items(ids))

    def inbox_count(self) -> int:
        """Open contradictions and review requests."""
        return int(self.consolidation.inbox_count())

    def resolve(self, cid: int, keep: str, text: str | None = None) -> Result[int | None]:
        new = self.consolidation.resolve(cid, keep, text)
        changes = Changes(memories=True, contradictions=True, history=True)
        self._emit(changes)
        return Result(new, changes)

    def reopen(self, cid: int) -> Result[None]:
        self.consolidation.reopen(cid)
        changes = Changes(memories=True, contradictions=True)
        self._emit(changes)
        return Result(None, changes)

    def undo_run(self, run_id: int) -> Result[dict[str, int]]:
        counts = self.consolidation.undo(run_id)
        changes = Changes(memories=True, entities=True, contradictions=True, runs=True,
                          index=True)
        self._emit(changes)
        return Result(counts, changes)

    def runs(self, limit: int = 20) -> list[dict[str, Any]]:
        return list(self.consolidation.runs(limit))

    def setting(self, key: str) -> Any:
        from app.settings import BY_KEY
        value = self.db.read(lambda c: repo.get_setting(c, key))
        return BY_KEY[key].default if value is None and key in BY_KEY else value

    def set_setting(self, key: str, value: Any) -> Result[None]:
        from app.settings import BY_KEY
        if key not in BY_KEY:
            raise ValidationError(f"Unknown setting {key!r}.")
        spec = BY_KEY[key]
        try:
            value = spec.type(value) if not isinstance(value, spec.type) else value
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"{key} must be a {spec.type.__name__}.") from exc
        self.db.write_sync(lambda c: repo.put_setting(c, key, value))
        changes = Changes(settings=True)
        self._emit(changes)
        return Result(None, changes)

    # --- browsing (the window's lists; keyset paging, never OFFSET) ------------------
    def page_memories(self, query: Any, after: tuple[float, int] | None = None,
                      limit: int = 200) -> Any:
        from app.services.browse import page
        return page(self, query, after, limit)

    def count_memories(self, query: Any) -> int:
        from app.services.browse import count
        return count(self, query)

    def entities(self, kinds: tuple[str, ...] = ("person", "company", "project", "area",
                                                 "resource", "archive")) -> list[Any]:
        from app.services.browse import entities
        return entities(self, kinds)

    def timeline_days(self, limit: int = 400) -> list[tuple[str, int]]:
        from storage import browse
        return list(self.db.read(lambda c: browse.timeline_days(c, limit)))

    def insights(self) -> Any:
        from app.services.browse import insights
        return insights(self)
