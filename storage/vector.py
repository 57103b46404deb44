"""The in-RAM vector index. Layer: storage. Runs on: callers' threads (a lock guards state);
the Chroma build runs on its own ``vector-index`` thread.

SQLCipher holds the vectors; this only mirrors them in memory. Exact search (numpy over the
matrix) serves at once after unlock; a ``chromadb.EphemeralClient`` HNSW index is built in the
background and takes over when ready. Never a PersistentClient: it writes documents and
vectors in plaintext and does not really delete (docs/architecture.md#the-vector-index). Lock drops
everything.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from app.threads import background_priority
from storage import blas
from storage.embedder import EMBED_DIM
from storage.vector_int8 import Int8Pass, Quantised

log = logging.getLogger(__name__)

# Below this many vectors exact search (one matrix product) answers in under ~10 ms
# (measured: 3.3 ms at 50k, 8.6 ms at 100k, 20 ms at 200k, top-200 plus the minimum), as
# fast as HNSW, while building the HNSW index holds the GIL in Chroma's add() and slows every
# other thread for the build's minute. So no build below it (a 100k-memory vault of turns
# holds ~50k vectors).
CHROMA_MIN_ROWS = 100_000
CHROMA_BATCH = 50
# From this many vectors exact search takes a first pass over an int8 copy of the matrix
# (storage/vector_int8.py) and rescores in float32 only the rows that pass can't rule out:
# the same answers, a quarter of the bytes read. CPU per search_with_floor(k=200), caches
# cold, random unit vectors, dev, rows within +-63 (storage/vector_int8.py): 4,096 rows 1.18 ms
# against 0.89 exact; 8,192 1.76 / 1.76; 16,384 1.87 / 2.81; 32,768 3.09 / 5.75.
INT8_MIN_ROWS = 12_288
# The copy is made again (on the ``vector-int8`` thread) once more rows than this, or an
# eighth of the copy, lie outside it (added or changed since): those are scored exactly.
INT8_STALE_ROWS = 4096
INT8_SLICE = 4096  # rows quantised per hold of the index's lock while the copy is made
# Rows the similarity floor is taken over (every n // FLOOR_SAMPLE-th row): one value for
# min_similarity and both of search_with_floor's paths, so they agree.
FLOOR_SAMPLE = 8192


class VectorIndex:
    """Owner: the unlocked Vault. Thread-safe."""

    def __init__(self, dim: int = EMBED_DIM, *, use_chroma: bool = True,
                 int8_min_rows: int | None = INT8_MIN_ROWS) -> None:
        blas.one_thread()  # no spinning BLAS workers beside each search (storage/blas.py)
        self.dim = dim
        self._lock = threading.RLock()
        self._ids = np.zeros(0, dtype=np.int64)
        self._mat = np.zeros((0, dim), dtype=np.float32)
        self._n = 0
        self._row: dict[int, int] = {}
        self._use_chroma = use_chroma
        self._chroma: Any = None
        self._chroma_ready = threading.Event()
        self._build_thread: threading.Thread | None = None
        self._cancel = threading.Event()
        self._pending_chroma_deletes: set[int] = set()
        self._closed = False
        # The int8 first pass: None below int8_min_rows, while its first copy is made, or if
        # onnxruntime can't run it. ``_int8_dirty``: rows of the copy changed since it was
        # made; ``_int8_next_dirty``: the same for the copy being made, if one is.
        self._int8_min_rows = int8_min_rows
        self._int8: Int8Pass | None = None
        self._int8_dirty: set[int] = set()
        self._int8_next_dirty: set[int] | None = None
        self._int8_thread: threading.Thread | None = None
        self._int8_gen = 0

    # --- contents ----------------------------------------------------------------------
    def load(self, ids: np.ndarray, mat: np.ndarray) -> None:
        with self._lock:
            self._ids = ids.astype(np.int64).copy()
            self._mat = np.ascontiguousarray(mat, dtype=np.float32)
            self._n = len(ids)
            self._row = {int(i): r for r, i in enumerate(self._ids)}
            self._int8, self._int8_dirty = None, set()
            self._int8_gen += 1  # a copy still being made of the old contents is not installed
            self._start_int8()

    def add(self, ids: np.ndarray | list[int], vecs: np.ndarray) -> None:
        ids_arr = np.asarray(ids, dtype=np.int64)
        if len(ids_arr) == 0:
            return
        with self._lock:
            need = self._n + len(ids_arr)
            if need > len(self._ids):
                cap = max(need, 2 * len(self._ids), 1024)
                ids_new = np.full(cap, -1, dtype=np.int64)
                mat_new = np.zeros((cap, self.dim), dtype=np.float32)
                ids_new[:self._n] = self._ids[:self._n]
                mat_new[:self._n] = self._mat[:self._n]
                self._ids, self._mat = ids_new, mat_new
            for j, mid in enumerate(ids_arr):
                r = self._row.get(int(mid))
                if r is None:
                    r = self._n
                    self._n += 1
                    self._row[int(mid)] = r
                else:  # a changed vector: the int8 copies that hold the row are stale there
                    self._int8_dirty.add(r)
                    if self._int8_next_dirty is not None:
                        self._int8_next_dirty.add(r)
                self._ids[r] = mid
                self._mat[r] = vecs[j]
            chroma = self._chroma if self._chroma_ready.is_set() else None
            self._start_int8()
        if chroma is not None:
            chroma.upsert(ids=[str(int(i)) for i in ids_arr], embeddings=np.asarray(vecs).tolist())

    def remove(self, ids: list[int]) -> None:
        with self._lock:
            for mid in ids:
                r = self._row.pop(int(mid), None)
                if r is not None:
                    self._ids[r] = -1
                    self._mat[r] = 0.0
            chroma = self._chroma if self._chroma_ready.is_set() else None
            if chroma is None:
                self._pending_chroma_deletes.update(int(i) for i in ids)
        if chroma is not None and ids:
            chroma.delete(ids=[str(int(i)) for i in ids])

    def __contains__(self, mid: int) -> bool:
        with self._lock:
            return int(mid) in self._row

    def __len__(self) -> int:
        with self._lock:
            return len(self._row)

    def vector(self, mid: int) -> np.ndarray | None:
        with self._lock:
            r = self._row.get(int(mid))
            return None if r is None else self._mat[r].copy()

    # --- search ------------------------------------------------------------------------
    def search(self, q: np.ndarray, k: int, keep: Callable[[int], bool] | None = None
               ) -> list[tuple[int, float]]:
        """Top ``k`` (id, cosine) among ids that ``keep`` accepts, best first."""
        if k <= 0:
            return []
        if self._chroma_ready.is_set() and self._chroma is not None:
            hits = self._search_chroma(q, k, keep)
            if hits is not None:
                return hits
        return self.search_exact(q, k, keep)

    def search_exact(self, q: np.ndarray, k: int, keep: Callable[[int], bool] | None = None
                     ) -> list[tuple[int, float]]:
        with self._lock:
            n = self._n
            if n == 0:
                return []
            sims = self._mat[:n] @ np.asarray(q, dtype=np.float32)
            ids = self._ids[:n].copy()
        sims[ids < 0] = -np.inf
        want = min(n, k if keep is None else max(4 * k, k + 64))
        while True:
            top = np.argpartition(-sims, want - 1)[:want] if want < n else np.arange(n)
            top = top[np.argsort(-sims[top], kind="stable")]
            out = [(int(ids[i]), float(sims[i])) for i in top
                   if ids[i] >= 0 and (keep is None or keep(int(ids[i])))]
            if len(out) >= k or want >= n:
                return out[:k]
            want = min(n, want * 4)

    def search_with_floor(self, q: np.ndarray, k: int, *, exact: bool = False
                          ) -> tuple[list[tuple[int, float]], float]:
        """``search(q, k)`` and ``min_similarity(q)`` together. Served by exact search, both
        come from one product of the matrix with ``q`` (the floor from the same sampled rows
        as ``min_similarity``): recall needs both, and the second product cost 1.2 ms of a
        25 ms recall at 10k memories (bench/scale.py, dev). ``exact``: never Chroma."""
        if k <= 0:
            return [], self.min_similarity(q)
        if not exact and self._chroma_ready.is_set() and self._chroma is not None:
            hits = self._search_chroma(q, k, None)
            if hits is not None:
                return hits, self.min_similarity(q)
        with self._lock:
            n = self._n
            if n == 0:
                return [], 0.0
            if self._int8 is not None and np.isfinite(q).all():
                try:
                    return self._search_int8(self._int8, np.asarray(q, dtype=np.float32), k)
                except Exception:  # never fails a recall: the full product below serves
                    log.exception("int8 vector pass failed; exact search stays in use")
                    self._int8, self._int8_min_rows = None, None
            sims = self._mat[:n] @ np.asarray(q, dtype=np.float32)
            ids = self._ids[:n].copy()
        step = max(1, n // FLOOR_SAMPLE)  # min_similarity's sample
        sample = sims[::step][ids[::step] >= 0]
        floor = float(sample.min()) if len(sample) else 0.0
        sims[ids < 0] = -np.inf
        want = min(n, k)
        top = np.argpartition(-sims, want - 1)[:want] if want < n else np.arange(n)
        top = top[np.argsort(-sims[top], kind="stable")]
        top = top[ids[top] >= 0]
        # tolist(): the same ints and floats as int()/float() of each element, in C.
        return list(zip(ids[top].tolist(), sims[top].tolist(), strict=True))[:k], floor

    def _search_int8(self, first: Int8Pass, q: np.ndarray, k: int
                     ) -> tuple[list[tuple[int, float]], float]:
        """``search_with_floor``'s exact answer by way of the int8 pass (caller holds the
        lock): every row gets an interval that holds its cosine (from the pass, or the cosine
        itself for rows outside the copy), and only rows whose interval reaches the k-th best
        lower bound, or the sample's lowest upper bound, are computed in float32."""
        n, n0 = self._n, first.n
        ids = self._ids[:n]
        approx, bound = first.scores(q)
        lo = np.empty(n, dtype=np.float32)
        hi = np.empty(n, dtype=np.float32)
        lo[:n0] = approx - bound
        hi[:n0] = approx + bound
        exact_rows = np.fromiter((r for r in self._int8_dirty if r < n0), dtype=np.int64)
        if len(exact_rows):
            lo[exact_rows] = hi[exact_rows] = self._mat[exact_rows] @ q
        if n > n0:
            lo[n0:] = hi[n0:] = self._mat[n0:n] @ q
        live = ids >= 0
        lo[~live] = hi[~live] = -np.inf

        # The floor: min_similarity's sample, its rows whose lower bound is under the
        # sample's lowest upper bound, computed.
        step = max(1, n // FLOOR_SAMPLE)  # min_similarity's sample
        sample = np.arange(0, n, step)[live[::step]]
        floor = 0.0
        if len(sample):
            low = sample[lo[sample] <= hi[sample].min()]
            floor = float((self._mat[low] @ q).min())

        want = min(int(live.sum()), k)
        if want == 0:
            return [], floor
        kth = np.partition(lo, n - want)[n - want]
        cand = np.flatnonzero(hi >= kth)
        sims = self._mat[cand] @ q
        order = np.lexsort((cand, -sims))[:want]  # best first; ties by row
        return list(zip(ids[cand[order]].tolist(), sims[order].tolist(), strict=True)), floor

    # --- the int8 copy --------------------------------------------------------------------
    def _start_int8(self) -> None:
        """Start making the int8 copy if there is none and the index is large enough, or if
        too many rows lie outside the one there is (caller holds the lock)."""
        if self._int8_min_rows is None or self._closed or self._n < self._int8_min_rows:
            return
        if self._int8_thread is not None and self._int8_thread.is_alive():
            return  # (after a load, the copy of the old contents ends, and the next add starts one)
        if self._int8 is not None:
            outside = self._n - self._int8.n + len(self._int8_dirty)
            if outside <= max(INT8_STALE_ROWS, self._int8.n // 8):
                return
        self._int8_next_dirty = set()
        self._int8_thread = threading.Thread(target=self._make_int8,
                                             args=(self._n, self._int8_gen),
                                             name="vector-int8", daemon=True)
        self._int8_thread.start()

    def _make_int8(self, n: int, gen: int) -> None:
        background_priority()  # exact search serves meanwhile
        first: Int8Pass | None = None
        try:
            parts = []
            # No give_way() between slices: recall is cheaper once the copy is made (a profile
            # of recalls back to back after unlock, 100k memories: the full product 8.7 ms a
            # recall), and held back by them it took 0.5 s a slice.
            for start in range(0, n, INT8_SLICE):
                with self._lock:
                    if self._cancel.is_set() or gen != self._int8_gen:
                        break
                    rows = self._mat[start:min(n, start + INT8_SLICE)].copy()
                parts.append(Quantised(rows))
            else:
                first = Int8Pass(Quantised.join(parts))
        except Exception:  # exact search over the float32 matrix keeps serving
            log.exception("int8 vector pass could not be made; exact search stays in use")
            with self._lock:
                self._int8_min_rows = None
                self._int8_next_dirty = None
            return
        with self._lock:
            if self._cancel.is_set():
                return
            if self._int8_min_rows is None:  # the pass failed meanwhile: not again
                return
            if first is None or gen != self._int8_gen:  # loaded anew: copy the new contents
                self._int8_thread = None
                self._start_int8()
                return
            self._int8, self._int8_dirty = first, self._int8_next_dirty or set()
            self._int8_next_dirty = None
        log.info("int8 vector pass ready: %d rows", n)

    def similarities(self, q: np.ndarray, ids: list[int]) -> dict[int, float]:
        """Cosines of ``q`` with the given ids (those in the index)."""
        with self._lock:
            rows = [(int(i), self._row[int(i)]) for i in ids if int(i) in self._row]
            if not rows:
                return {}
            sims = self._mat[[r for _, r in rows]] @ np.asarray(q, dtype=np.float32)
        return {i: float(x) for (i, _), x in zip(rows, sims, strict=True)}

    def min_similarity(self, q: np.ndarray, sample: int = FLOOR_SAMPLE) -> float:
        """The lowest cosine of ``q`` over the store (exact up to ``sample`` rows, else over an
        even sample): the floor that dense scores are scaled from."""
        with self._lock:
            n = self._n
            if n == 0:
                return 0.0
            step = max(1, n // sample)
            rows = self._mat[:n:step]
            live = self._ids[:n:step] >= 0
            sims = rows[live] @ np.asarray(q, dtype=np.float32)
        return float(sims.min()) if len(sims) else 0.0

    def _search_chroma(self, q: np.ndarray, k: int, keep: Callable[[int], bool] | None
                       ) -> list[tuple[int, float]] | None:
        want = k if keep is None else max(4 * k, k + 64)
        try:
            res = self._chroma.query(query_embeddings=[np.asarray(q).tolist()],
                                     n_results=min(want, max(1, len(self))),
                                     include=["distances"])
        except Exception:  # Chroma failing must never fail recall: exact search serves
            log.exception("chroma query failed; using exact search")
            return None
        out = [(int(i), 1.0 - float(d)) for i, d in zip(res["ids"][0], res["distances"][0],
                                                        strict=True)]
        out = [(i, s) for i, s in out if i in self and (keep is None or keep(i))]
        if len(out) < k and want < len(self):
            return None  # the filter ate too many: exact search is complete
        return out[:k]

    # --- the background Chroma build ----------------------------------------------------
    def start_chroma_build(self, on_ready: Callable[[], None] | None = None) -> None:
        if not self._use_chroma or self._build_thread is not None:
            return
        with self._lock:
            if self._n < CHROMA_MIN_ROWS:
                return
        self._build_thread = threading.Thread(target=self._build, args=(on_ready,),
                                              name="vector-index", daemon=True)
        self._build_thread.start()

    def _build(self, on_ready: Callable[[], None] | None) -> None:
        background_priority()  # exact search serves meanwhile (storage/threads.py)
        try:
            import chromadb
            from chromadb.config import Settings
            client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
            col = client.create_collection(name=f"kept-{uuid.uuid4().hex}",
                                           embedding_function=None,
                                           metadata={"hnsw:space": "cosine"})
            # Chroma's add() holds the GIL for its whole batch: 5,000 vectors froze every
            # other thread (search, the window) for up to 2.8 s. 50 a call keeps the longest
            # stall near 0.1 s; the build takes about twice as long, and exact search serves
            # until it is done.
            batch = min(CHROMA_BATCH, int(client.get_max_batch_size()))
            with self._lock:
                n = self._n
                ids = self._ids[:n].copy()
                mat = self._mat[:n].copy()
            live = ids >= 0
            ids, mat = ids[live], mat[live]
            for start in range(0, len(ids), batch):
                if self._cancel.is_set():
                    client.delete_collection(col.name)
                    return
                col.add(ids=[str(int(i)) for i in ids[start:start + batch]],
                        embeddings=mat[start:start + batch])
                time.sleep(0.001)  # let waiting threads take the GIL between batches
            with self._lock:
                # Catch up with what changed during the build.
                built = set(ids.tolist())
                missing = [int(i) for i in self._ids[:self._n] if i >= 0 and int(i) not in built]
                deletes = list(self._pending_chroma_deletes)
                self._pending_chroma_deletes.clear()
                if missing:
                    col.add(ids=[str(i) for i in missing],
                            embeddings=np.stack([self._mat[self._row[i]] for i in missing]))
                if deletes:
                    col.delete(ids=[str(i) for i in deletes])
                self._chroma = col
                self._client = client
                self._chroma_ready.set()
            log.info("vector index ready: %d vectors", len(ids))
            if on_ready is not None:
                on_ready()
        except Exception:  # exact search keeps serving
            log.exception("vector index build failed; exact search stays in use")

    def wait_int8(self, timeout: float | None = None) -> int:
        """Wait for a copy being made; the rows the int8 copy holds (0: none)."""
        thread = self._int8_thread
        if thread is not None:
            thread.join(timeout)
        with self._lock:
            return 0 if self._int8 is None else self._int8.n

    @property
    def chroma_building(self) -> bool:
        t = self._build_thread
        return t is not None and t.is_alive() and not self._chroma_ready.is_set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._chroma_ready.wait(timeout)

    @property
    def chroma_ready(self) -> bool:
        return self._chroma_ready.is_set()

    def close(self) -> None:
        """Drop every vector from RAM (lock)."""
        self._cancel.set()
        if self._build_thread is not None:
            self._build_thread.join(timeout=30)
        if self._int8_thread is not None:
            self._int8_thread.join(timeout=30)
        with self._lock:
            self._int8, self._int8_dirty, self._int8_next_dirty = None, set(), None
            if self._chroma is not None:
                try:
                    self._client.delete_collection(self._chroma.name)
                except Exception:
                    log.warning("chroma collection could not be dropped")
            self._chroma = None
            self._chroma_ready.clear()
            self._mat[:] = 0.0
            self._ids = np.zeros(0, dtype=np.int64)
            self._mat = np.zeros((0, self.dim), dtype=np.float32)
            self._row.clear()
            self._n = 0
            self._closed = True
