"""The vectors of remembered memories, made after the call is acknowledged (issue 28).
Layer: app. Runs on: its own ``vector-follow`` thread (a threaded vault), else the caller's.

Why: one ``remember`` was an embedding (~5 ms on this machine) plus a transaction whose COMMIT
waits for an fsync (~4 ms); an assistant that calls one at a time got 46-62/s. The memory's row
and its full-text row are what must be durable when the call returns: recall finds it
lexically at once (the lexicon mirror refreshes on the commit). The vector is derived from the
text, so it is made here, in batches (one model call and one transaction per
``policy.FOLLOW_BATCH``), and its ``vector_pending`` row (written in the memory's own
transaction) goes in the vector's. A kill -9 in between leaves the row pending and the next
unlock makes the vector (``start``).

A caller never waits for the model. The texts to embed are kept in RAM up to
``policy.FOLLOW_MAX_QUEUED``; past that a submit keeps nothing (its pending row is in the vault
already) and the follower reads the oldest pending rows back from the vault once its queue is
empty, ``FOLLOW_MAX_QUEUED`` at a time. Before, a caller waited while 256 were due: past that
many remembers in a row the model set the rate (~51/s on 2 cores, where a model call of 32
texts took ~1 s wall beside the caller; the acknowledgement alone runs ~270/s). Vectors now lag
a long burst by what the model needs to catch up (bench/remember_rate.py ``--sustained``:
``drain_after_last_s``); recall finds such memories lexically meanwhile.

The model waits for a pause (``policy.FOLLOW_GATHER_S`` without a remember), for
``policy.FOLLOW_MAX_DEFER_S`` after the oldest memory due, or for a full queue, whichever comes
first: on 2 cores, a model call beside a burst of remembers took the cores the acknowledgements
needed (the burst's rate fell by a third to a half, dev). For the same reason the thread runs
at background priority (``app.threads.background_priority``): it gives way to the callers'
threads and the writer, and still gets every core nobody else wants.

A file import (``IngestService.import_turns`` with ``follow``) writes its turns with their
pending rows at text speed and tells the follower how many (``pending_written``): embedding a
ChatGPT export of realistic lengths costs ~45 ms CPU a turn, so two cores embed ~40-45 turns/s
where the text alone goes in at ~350/s (docs/architecture.md, "Bulk import"). The follower reads
them back from the vault and counts its progress over a wave of work (``progress``: done of
total, and the rate measured over its own recent batches, ``app.eta.Rate``), for the window's
status bar and ``kept status``.

An unthreaded vault (one-shot CLI commands) makes a few leftover vectors at ``start`` (a kill -9
between a remember and its vector) but not an import's thousands: ``kept recall`` would wait
minutes for them. ``catch_up`` makes them on the caller's thread with progress (``kept import``
does, after its turns are in).

Thread affinity: ``submit`` from any thread; ``stop`` before the database closes (lock).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import numpy as np

from app import policy
from app.domain.memory import Draft, Store
from app.errors import VaultLocked
from app.eta import Estimate, Rate
from app.ports import Database, Embedder, VectorIndex, VectorPendingRows
from app.threads import background_priority

log = logging.getLogger(__name__)


class VectorFollower:
    """Owner: the ``IngestService`` of one unlocked vault."""

    def __init__(self, db: Database, index: VectorIndex, embedder: Embedder,
                 rows: VectorPendingRows, *, batch: int = policy.FOLLOW_BATCH,
                 max_queued: int = policy.FOLLOW_MAX_QUEUED,
                 gather_s: float = policy.FOLLOW_GATHER_S,
                 max_defer_s: float = policy.FOLLOW_MAX_DEFER_S,
                 start_at: int | None = None, background: bool = True) -> None:
        self.db = db
        self.index = index
        self.embedder = embedder
        self.rows = rows
        self.batch = batch
        self.max_queued = max(1, max_queued)
        self.gather_s = gather_s
        self.max_defer_s = max_defer_s
        self.background = background
        # Due memories at which the model runs whatever else holds: by default when the queue
        # is about to spill (``max_queued``).
        self.start_at = max(batch, self.max_queued - batch) if start_at is None else start_at
        self._cond = threading.Condition()
        # memory id -> (the text its vector is made from, when it was queued: time.monotonic)
        self._todo: dict[int, tuple[str, float]] = {}
        # A submit found the queue full and kept only the vault's pending row: read the pending
        # rows back once the queue is empty (``_refill``).
        self._spilled = False
        self.spills = 0  # submits that spilled (tests, bench)
        # Memories whose vector failed this session: left pending for the next unlock, never
        # read back (a failing text would otherwise be retried in a loop).
        self._failed: set[int] = set()
        self._last_submit = 0.0
        # Progress over a wave of work (from the first vector due after none was, to none
        # left): pending rows known to the vault, vectors made of the wave, its rate.
        self._left = 0
        self._done = 0
        self._total = 0
        self._rate = Rate()
        self._per_s: float | None = None
        self._busy = False
        self._stopped = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Queue what an earlier session left pending (a kill -9 between a memory and its
        vector), then start the thread."""
        waiting = self.db.read(self.rows.count)
        with self._cond:
            self._due(waiting)
            # Unthreaded: only a few (the module docstring); ``catch_up`` makes the rest.
            self._spilled = self.db.threaded or waiting <= self.batch
        left = self._refill() if self._spilled else 0
        if waiting:
            log.info("%d vectors left to make from an earlier session", waiting)
        if self.db.threaded:
            self._thread = threading.Thread(target=self._loop, name="vector-follow",
                                            daemon=True)
            self._thread.start()
        elif left:
            self._drain()

    def submit(self, mid: int, text: str) -> None:
        """The memory ``mid`` was committed with its pending row; make its vector from
        ``text``. Never waits: with the queue full, the pending row alone stands for it."""
        with self._cond:
            if self._stopped:
                return  # locked: the row stays pending for the next unlock
            now = time.monotonic()
            self._due(1)
            if len(self._todo) >= self.max_queued:
                self._spilled = True
                self.spills += 1
            else:
                self._todo[mid] = (text, now)
            self._last_submit = now
            if len(self._todo) == 1 or len(self._todo) >= self.start_at:
                self._cond.notify_all()  # else the follower wakes at its own deadline
        if not self.db.threaded:
            self._drain()

    def submit_many(self, items: list[tuple[int, str]]) -> None:
        """Many committed memories at once (sync catching up, issue 29): queued without the
        lag bound's wait, as ``start`` queues what an earlier session left; the caller is
        not an assistant waiting on one call."""
        with self._cond:
            if self._stopped:
                return
            now = time.monotonic()
            self._due(len(items))
            for mid, text in items:
                self._todo[mid] = (text, now)
            self._cond.notify_all()
        if not self.db.threaded:
            self._drain()

    def pending_written(self, n: int) -> None:
        """``n`` memories were committed with their pending rows and no text handed here (a
        file import's batch): read them back from the vault, oldest first. Unthreaded, they
        wait for ``catch_up``."""
        with self._cond:
            if self._stopped or n <= 0:
                return
            self._due(n)
            if self.db.threaded:
                self._spilled = True
                self._cond.notify_all()

    def catch_up(self, report: Callable[[Estimate], None] | None = None) -> None:
        """Make every pending vector now on the caller's thread (unthreaded), or wait for the
        follower's thread to make them; ``report`` hears the progress after each batch (or
        each half second). A KeyboardInterrupt stops it: what is not made stays pending."""
        if self.db.threaded:
            while not self.wait_idle(0.5):
                if report is not None:
                    report(self.progress())
        else:
            with self._cond:
                self._spilled = True
            self._drain(report)
        if report is not None:
            report(self.progress())

    def _due(self, n: int) -> None:
        """Under ``_cond``: ``n`` more vectors to make; a new wave when none were due."""
        if self._left <= 0:
            self._left = self._done = self._total = 0
            self._rate, self._per_s = Rate(), None
        self._left += n
        self._total += n

    def _made(self, n: int) -> None:
        """Under ``_cond``: ``n`` vectors written; the rate over the follower's own recent
        batches, not a constant (``app.eta``: a 30 s window)."""
        self._done += n
        self._left = max(0, self._left - n)
        self._per_s = self._rate.update(self._done, self._total).per_s or self._per_s

    def progress(self) -> Estimate:
        """The wave under way: vectors made of those due, and, once the rate has settled,
        per second and the seconds left. Reads RAM only (a GUI timer may call it)."""
        with self._cond:
            left = self._left
            done = self._total - left
            per_s = self._per_s
        return Estimate(done, done + left, per_s, None if not per_s else left / per_s)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """True once every submitted vector is made (or the follower stopped)."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self._stopped or (not self._todo and not self._busy
                                          and not self._spilled), timeout)

    @property
    def backlog(self) -> int:
        """Vectors queued in RAM (plus one for a batch in hand); spilled ones are not
        counted (``spilled`` says whether there are any)."""
        with self._cond:
            return len(self._todo) + (1 if self._busy else 0)

    @property
    def spilled(self) -> bool:
        """Whether some pending rows wait to be read back from the vault."""
        with self._cond:
            return self._spilled

    def stop(self) -> None:
        """Finish the batch in hand and stop; the rest stays pending in the vault."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None

    # --- the work -------------------------------------------------------------------------
    def _wait_due(self) -> None:
        """Under ``_cond``, with something queued: wait until a batch is due (module
        docstring) or the follower is stopped."""
        while not self._stopped and len(self._todo) < self.start_at:
            oldest = next(iter(self._todo.values()))[1]
            due = min(self._last_submit + self.gather_s, oldest + self.max_defer_s)
            left = due - time.monotonic()
            if left <= 0:
                return
            self._cond.wait(left)

    def _take(self) -> list[tuple[int, str]]:
        items = [(mid, text) for mid, (text, _at) in list(self._todo.items())[:self.batch]]
        for mid, _ in items:
            del self._todo[mid]
        self._busy = bool(items)
        return items

    def _refill(self) -> int:
        """Queue the oldest pending rows of the vault (at most ``max_queued`` new ones), due at
        once; any thread, with nothing in hand (the queue empty, no batch under way). Returns
        how many were queued."""
        from app.services.ingest import embed_text
        with self._cond:
            self._spilled = False  # a submit that spills from now on sets it again
            failed = set(self._failed)
        limit = self.max_queued + len(failed)
        rows, waiting = self.db.read(lambda c: (self.rows.pending(c, limit), self.rows.count(c)))
        left = [(mid, embed_text(Draft(text=text, store=store, speaker=speaker, occurred_at=at)))
                for mid, store, text, speaker, at in rows if mid not in failed]
        # Shortest first: a model call pads its texts to the longest, and a file import's
        # person's turns (~42 tokens) beside an assistant's (~200) would be padded to that.
        left.sort(key=lambda item: len(item[1]))
        with self._cond:
            for mid, text in left:
                self._todo.setdefault(mid, (text, 0.0))
            if len(rows) >= limit:
                self._spilled = True  # more than one queue's worth: read again once done
            # The vault's count corrects the wave's (a memory forgotten while pending leaves
            # no vector to make).
            waiting = max(0, waiting - len(failed))
            if self._left <= 0:
                self._due(waiting)
            else:
                self._total += waiting - self._left
                self._left = waiting
        return len(left)

    def _drain(self, report: Callable[[Estimate], None] | None = None) -> None:
        """Caller's thread (an unthreaded vault): make everything queued now."""
        while True:
            if report is not None:
                report(self.progress())
            with self._cond:
                refill = not self._todo and self._spilled
                items = [] if refill else self._take()
            if refill:
                self._refill()
                continue
            if not items:
                return
            self._settle(items)

    def _loop(self) -> None:
        if self.background:
            background_priority()
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stopped or bool(self._todo) or self._spilled)
                # Gather a batch (fewer model calls and transactions than one per memory),
                # and leave the CPU to remembers still coming in (the module docstring).
                if self._todo:
                    self._wait_due()
                if self._stopped:
                    return
                refill = not self._todo
                items = [] if refill else self._take()
                self._busy = True
            if refill:
                try:
                    self._refill()
                except VaultLocked:
                    pass  # stopped meanwhile: the rows stay pending for the next unlock
                except Exception:  # the thread's boundary, as in _settle
                    log.exception("pending vectors not read back")
                    with self._cond:
                        self._spilled = False  # not in a loop: the next unlock makes them
                finally:
                    with self._cond:
                        self._busy = False
                        self._cond.notify_all()
                continue
            self._settle(items)

    def _settle(self, items: list[tuple[int, str]]) -> None:
        try:
            self._make(items)
        except VaultLocked:
            pass  # locked while making them: they stay pending for the next unlock
        except Exception:  # the thread's boundary: the rows stay pending for the next unlock
            log.exception("vectors of %d memories not made", len(items))
            with self._cond:
                self._failed.update(mid for mid, _ in items)
        finally:
            with self._cond:
                self._busy = False
                if self.db.threaded and not self._todo and not self._spilled:
                    self._left = min(self._left, len(self._failed))  # all read back: made
                self._cond.notify_all()

    def _make(self, items: list[tuple[int, str]]) -> None:
        ids = [mid for mid, _ in items]
        vecs = np.asarray(self.embedder.embed([text for _, text in items]), dtype=np.float32)
        model = self.embedder.model_name
        # write_group: shares a commit with remembers queued at that moment.
        written = self.db.write_group(
            lambda c: self.rows.settle_vectors(c, ids, vecs, model)).result()
        if not written:
            return
        with self._cond:
            self._made(len(written))
        keep = set(written)
        self.index.add(written, vecs[[n for n, mid in enumerate(ids) if mid in keep]])
        # A forget that committed between the vectors' commit and the add above removed its
        # ids from the index before they were there: take them out again.
        gone = keep - self.db.read(lambda c: self.rows.existing(c, written))
        if gone:
            self.index.remove(sorted(gone))


def follows(store: Store) -> bool:
    """Whether a remembered memory of ``store`` gets a vector (short-term ones never do)."""
    return store is not Store.SHORT_TERM
