"""The vectors of remembered memories, made after the call is acknowledged (issue 28).
Layer: app. Runs on: its own ``vector-follow`` thread (a threaded vault), else the caller's.

Why: one ``remember`` was an embedding (~5 ms on this machine) plus a transaction whose COMMIT
waits for an fsync (~4 ms); an assistant that calls one at a time got 46-62/s. The memory's row
and its full-text row are what must be durable when the call returns: recall finds it
lexically at once (the lexicon mirror refreshes on the commit). The vector is derived from the
text, so it is made here, in batches (one model call and one transaction per
``policy.FOLLOW_BATCH``), and its ``vector_pending`` row (written in the memory's own
transaction) goes in the vector's. A kill -9 in between leaves the row pending and the next
unlock makes the vector (``start``). A caller waits while ``policy.FOLLOW_MAX_PENDING``
vectors are still to be made, which bounds how long a vector can lag.

The model waits for a pause (``policy.FOLLOW_GATHER_S`` without a remember), for
``policy.FOLLOW_MAX_DEFER_S`` after the oldest memory due, or for a caller about to wait,
whichever comes first: on 2 cores, a model call beside a burst of remembers took the cores
the acknowledgements needed (the burst's rate fell by a third to a half, dev).

Thread affinity: ``submit`` from any thread; ``stop`` before the database closes (lock).
"""

from __future__ import annotations

import logging
import threading
import time

import numpy as np

from app import policy
from app.domain.memory import Draft, Store
from app.errors import VaultLocked
from app.ports import Database, Embedder, VectorIndex, VectorPendingRows

log = logging.getLogger(__name__)


class VectorFollower:
    """Owner: the ``IngestService`` of one unlocked vault."""

    def __init__(self, db: Database, index: VectorIndex, embedder: Embedder,
                 rows: VectorPendingRows, *, batch: int = policy.FOLLOW_BATCH,
                 max_pending: int = policy.FOLLOW_MAX_PENDING,
                 gather_s: float = policy.FOLLOW_GATHER_S,
                 max_defer_s: float = policy.FOLLOW_MAX_DEFER_S,
                 start_at: int | None = None) -> None:
        self.db = db
        self.index = index
        self.embedder = embedder
        self.rows = rows
        self.batch = batch
        self.max_pending = max_pending
        self.gather_s = gather_s
        self.max_defer_s = max_defer_s
        # Due memories at which the model runs whatever else holds: by default when a caller
        # would soon wait on ``max_pending``.
        self.start_at = max(batch, max_pending - batch) if start_at is None else start_at
        self._cond = threading.Condition()
        # memory id -> (the text its vector is made from, when it was queued: time.monotonic)
        self._todo: dict[int, tuple[str, float]] = {}
        self._last_submit = 0.0
        self._busy = False
        self._stopped = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Queue what an earlier session left pending (a kill -9 between a memory and its
        vector), then start the thread."""
        from app.services.ingest import embed_text
        left = [(mid, embed_text(Draft(text=text, store=store, speaker=speaker, occurred_at=at)))
                for mid, store, text, speaker, at in self.db.read(self.rows.pending)]
        with self._cond:
            for mid, text in left:
                self._todo[mid] = (text, 0.0)  # due at once
        if left:
            log.info("%d vectors left to make from an earlier session", len(left))
        if self.db.threaded:
            self._thread = threading.Thread(target=self._loop, name="vector-follow",
                                            daemon=True)
            self._thread.start()
        elif left:
            self._drain()

    def submit(self, mid: int, text: str) -> None:
        """The memory ``mid`` was committed with its pending row; make its vector from
        ``text``. Waits while ``max_pending`` are still to be made (the lag bound)."""
        with self._cond:
            while len(self._todo) >= self.max_pending and not self._stopped:
                self._cond.wait()
            if self._stopped:
                return  # locked: the row stays pending for the next unlock
            now = time.monotonic()
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
            for mid, text in items:
                self._todo[mid] = (text, now)
            self._cond.notify_all()
        if not self.db.threaded:
            self._drain()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """True once every submitted vector is made (or the follower stopped)."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self._stopped or (not self._todo and not self._busy), timeout)

    @property
    def backlog(self) -> int:
        with self._cond:
            return len(self._todo) + (1 if self._busy else 0)

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

    def _drain(self) -> None:
        """Caller's thread (an unthreaded vault): make everything queued now."""
        while True:
            with self._cond:
                items = self._take()
            if not items:
                return
            self._settle(items)

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stopped or bool(self._todo))
                # Gather a batch (fewer model calls and transactions than one per memory),
                # and leave the CPU to remembers still coming in (the module docstring).
                self._wait_due()
                if self._stopped:
                    return
                items = self._take()
            self._settle(items)

    def _settle(self, items: list[tuple[int, str]]) -> None:
        try:
            self._make(items)
        except VaultLocked:
            pass  # locked while making them: they stay pending for the next unlock
        except Exception:  # the thread's boundary: the rows stay pending for the next unlock
            log.exception("vectors of %d memories not made", len(items))
        finally:
            with self._cond:
                self._busy = False
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
