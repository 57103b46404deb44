"""The in-RAM lexical index: FTS5's own BM25, computed with numpy. Layer: storage. Runs on:
callers' threads (a lock guards state); the build runs on its own ``lexicon`` thread; updates
run on the database writer thread right after each write transaction.

Why: FTS5 scores every row that matches any query word before it can sort, about 7 us a row.
On a big vault an ordinary question matches a third of all rows (the ``ctx`` column repeats
each turn's neighbours), so at 100k memories the lexical search alone took 220 ms (p50) of a
50 ms budget. This mirror holds, per term, the rows that contain it and their weighted term
frequency, and scores a query as a few vectorised numpy passes over those postings.

It is a mirror, like the vector index: ``memory_fts`` in SQLCipher stays the source of truth,
serves every query until the mirror is built, and is what the mirror is built and refreshed
from. The scores are FTS5's ``bm25(memory_fts, 1, 1, .5)`` (same tokenizer: every word is
tokenized by FTS5 itself, in an in-memory FTS5 table; same formula, idf and length
normalisation; tests compare the two), so recall ranks the same whichever serves.

Freshness: every statement that writes ``memory_fts`` marks the rowids it touched
(``mark_fts``); after each write transaction, committed or rolled back, the writer hands the
marked rowids to ``refresh``, which re-reads those rows and replaces their postings. A row
that is gone (forgotten) has its postings dropped from RAM at once (compaction), so no term
of a forgotten memory outlives the transaction that deleted it. Lock drops everything.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import threading
import time
from array import array
from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from app.threads import background_priority, give_way
from storage import batching, sqlcipher

if TYPE_CHECKING:
    from sqlite3 import Connection

Reader = Callable[[Callable[["Connection"], None]], None]  # Database.read, for a scan

log = logging.getLogger(__name__)

MIN_ROWS = 5_000  # below this FTS5 answers in a few ms; no mirror is built
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"  # as in migrations/0001_initial.sql
K1, B = 1.2, 0.75  # FTS5's bm25 constants
_WORD = re.compile(r"[^\W_]+")
# While recall is served before the mirror is ready, the build gives way: it scans in slices
# of this many rows (about 20-40 ms of the GIL at 100k memories) and after a search it waits
# up to _GIVE_WAY_S before its next slice, so a recall does not share the GIL and a core with
# it; a stream of searches slows the build at most (slice + wait) / slice, never stops it.
_SLICE = 500
_GIVE_WAY_S = 0.06
# A recall under way (``app.threads.foreground``) holds the build back this long at most per slice.
_GIVE_WAY_MAX_S = 0.5
# A saved mirror with more rows written since it was taken than this and than half its rows is
# not loaded: re-reading them would cost about what building from memory_fts does.
_REREAD_MAX = 20_000
_FTS_STATE = ("(SELECT block FROM memory_fts_data WHERE id = 10), "  # FTS5's structure record
              "(SELECT block FROM memory_fts_data WHERE id = 1)")    # ... and its averages

# --- which rowids a write touched (per writing connection) ----------------------------------
_dirty: dict[int, set[int]] = {}
_dirty_lock = threading.Lock()


def mark_fts(conn: Connection, rowids: Iterable[int]) -> None:
    """Record that ``memory_fts`` rows were written on ``conn`` (call next to the write): for
    the mirror in RAM after the commit, and in the vault, in the same transaction, for the
    saved mirror (``save_snapshot``), which the next unlock loads and then re-reads these rows
    into (migration 0041), so a crash does not cost it."""
    ids = {int(r) for r in rowids}
    with _dirty_lock:
        _dirty.setdefault(id(conn), set()).update(ids)
    if _snapshot_sql(conn, "INSERT OR IGNORE INTO lexicon_snapshot_dirty (fts_rowid) VALUES (?)",
                     [(r,) for r in ids]) is None:  # a vault before migration 0041: invalidate
        _snapshot_sql(conn, "DELETE FROM lexicon_snapshot_state")


def drop_snapshot(conn: Connection) -> None:
    """Delete the saved mirror itself, in the transaction that forgets or rewrites a memory:
    its terms must not outlive the memory (secure_delete zeroes the pages)."""
    _snapshot_sql(conn, "DELETE FROM lexicon_snapshot_state")
    _snapshot_sql(conn, "DELETE FROM lexicon_snapshot")
    _snapshot_sql(conn, "DELETE FROM lexicon_snapshot_dirty")


def _snapshot_sql(conn: Connection, sql: str, params: Any = (),
                  ) -> list[tuple[Any, ...]] | None:
    """``sql`` on one of the saved mirror's tables: its rows; None on a vault from before the
    table's migration (0032, or 0041 for ``lexicon_snapshot_dirty``). A list of parameter
    tuples runs it once for each."""
    try:
        if isinstance(params, list):
            conn.executemany(sql, params)
            return []
        return list(conn.execute(sql, params).fetchall())
    except sqlcipher.OperationalError as e:
        if "no such table" not in str(e):
            raise
        return None


def _written_since(conn: Connection, limit: int | None = 1) -> list[int]:
    """``memory_fts`` rowids written since the saved mirror was taken (at most ``limit``)."""
    rows = _snapshot_sql(conn, "SELECT fts_rowid FROM lexicon_snapshot_dirty LIMIT ?",
                         (-1 if limit is None else limit,))
    return [r for (r,) in rows or []]


def take_fts_marks(conn: Connection) -> set[int]:
    with _dirty_lock:
        return _dirty.pop(id(conn), set())


class _Tokenizer:
    """word -> FTS5 terms, by FTS5 itself (an in-memory FTS5 table with the vault's tokenizer
    and its ``fts5vocab`` instance view). Nothing touches a disk: the database is ``:memory:``."""

    def __init__(self) -> None:
        self._conn = sqlcipher.sqlcipher3.connect(":memory:", check_same_thread=False)
        self._conn.execute("PRAGMA temp_store = MEMORY")  # its sorts never spill to a file
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '{FTS_TOKENIZE}')")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        self._cache: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()

    def terms(self, words: Iterable[str]) -> dict[str, tuple[str, ...]]:
        with self._lock:
            new = [w for w in dict.fromkeys(words) if w not in self._cache]
            if new:
                self._conn.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)",
                                       enumerate(new, 1))
                out: dict[int, list[str]] = {}
                for doc, term in self._conn.execute(
                        "SELECT doc, term FROM v ORDER BY doc, offset"):
                    out.setdefault(doc, []).append(term)
                self._conn.execute("DELETE FROM t")
                for i, w in enumerate(new, 1):
                    self._cache[w] = tuple(out.get(i, ()))
            return self._cache

    def close(self) -> None:
        with self._lock:
            self._cache.clear()
            self._conn.close()

_COLUMNS = ("text", "keys", "ctx")  # memory_fts's columns, in order: the weights follow them
_INSTANCES = ("SELECT group_concat(doc * 4 + CASE col WHEN 'text' THEN 0 WHEN 'keys' THEN 1 "
              "ELSE 2 END) FROM memory_fts_instance WHERE term = ?")  # migration 0037
_Sizes = tuple["np.ndarray[Any, Any]", "np.ndarray[Any, Any]"]  # rowids ascending, tokens
_Post = tuple["np.ndarray[Any, Any]", "np.ndarray[Any, Any]"]  # rowids ascending, weighted tf


class _Direct:
    """BM25 for a query's terms only, read from FTS5's index, while the mirror is not ready
    (issue 28: no slow first minute after a first unlock or a crash, when there is no saved
    mirror to load). FTS5's ``bm25()`` looks up the size of every row matching any query word
    (100k memories: 50-300 ms a query); here each term's occurrences come from the
    ``memory_fts_instance`` view (migration 0037) as one string aggregated in SQL, the sizes of
    all rows from ``memory_fts_docsize`` once (the build thread fetches them first), and numpy
    scores them with FTS5's formula, so the scores are the mirror's (and FTS5's) to rounding.
    A term's postings are kept until the next write to ``memory_fts`` (``changed``); sizes
    are kept and only the written rows' are read again.

    Owner: its Lexicon. Thread-safe: callers' threads read through ``read`` (the database's
    reader, set when a build starts); ``_lock`` guards the caches only, never a database read,
    and postings read while a write committed are not kept (generation check)."""

    def __init__(self, weights: Sequence[float]) -> None:
        self.read: Reader | None = None
        self._weights = np.array([*weights, 0.0], dtype=np.float64)  # index 3: never used
        self._lock = threading.Lock()
        self._sizes_lock = threading.Lock()  # one sizes read at a time; others wait for it
        self._gen = 0
        self._tok: _Tokenizer | None = None
        self._sizes: _Sizes | None = None
        self._dirty: set[int] = set()  # rows written since the sizes were read
        self._post: dict[str, _Post] = {}
        self._off = False  # it failed once: FTS5 serves until the mirror is ready

    def changed(self, rowids: Iterable[int]) -> None:
        """``memory_fts`` rows were written (called after the commit)."""
        with self._lock:
            self._gen += 1
            self._post = {}
            self._dirty.update(rowids)

    def clear(self) -> None:
        """The mirror is ready: drop the caches."""
        with self._lock:
            self._gen += 1
            self._sizes, self._post, self._dirty = None, {}, set()

    def close(self) -> None:
        self.clear()
        with self._lock:
            tok, self._tok, self.read = self._tok, None, None
        if tok is not None:
            tok.close()

    def prefetch(self) -> None:
        """Build thread, first thing: the row sizes, so the first recall need not read them."""
        read = self.read
        if read is not None and not self._off:
            try:
                self._sizes_now(read)
            except Exception:
                log.exception("FTS5's row sizes could not be read; FTS5 answers")
                self._off = True

    def search(self, tokens: Sequence[str], limit: int) -> list[tuple[int, float]] | None:
        read = self.read
        if read is None or self._off:
            return None
        try:
            return self._search(read, tokens, limit)
        except Exception:  # an accelerator like the mirror: FTS5 answers instead
            log.exception("direct full-text scoring failed; FTS5 answers")
            self._off = True
            return None

    def _search(self, read: Reader, tokens: Sequence[str],
                limit: int) -> list[tuple[int, float]] | None:
        with self._lock:
            if self._tok is None:
                self._tok = _Tokenizer()
            tok = self._tok
        terms = tok.terms(tokens)
        phrases = [terms[t] for t in dict.fromkeys(tokens) if t]
        if any(len(p) != 1 for p in phrases):
            return None  # a multi-term phrase needs positions; FTS5 handles it
        sizes = self._sizes_now(read)
        if sizes is None:
            return None
        want = list(dict.fromkeys(p[0] for p in phrases))
        with self._lock:
            gen = self._gen
            post = {t: self._post[t] for t in want if t in self._post}
        need = [t for t in want if t not in post]
        if need:
            got: list[dict[str, _Post]] = []
            read(lambda conn: got.append(self._postings(conn, need)))
            post.update(got[0])
            with self._lock:
                if self._gen == gen:  # no write committed since: still what memory_fts holds
                    self._post.update(got[0])
        # One term per phrase, repeats included: FTS5 scores "runs OR running" twice for "run".
        return _bm25(sizes, [post[p[0]] for p in phrases], limit)

    def _sizes_now(self, read: Reader) -> _Sizes | None:
        """The sizes of all rows, read once, then only the written rows' again."""
        with self._sizes_lock:
            with self._lock:
                sizes, dirty = self._sizes, set(self._dirty)
            if sizes is not None and not dirty:
                return sizes
            got: list[_Sizes | None] = []
            if sizes is None:
                read(lambda conn: got.append(_all_sizes(conn)))
            else:
                read(lambda conn: got.append(_merge_sizes(sizes, conn, dirty)))
            new = got[0]
            if new is None:
                log.warning("FTS5's row sizes could not be decoded; FTS5 answers")
                self._off = True
                return None
            with self._lock:
                # A row written after ``dirty`` was taken is still in ``_dirty``: read next time.
                self._sizes = new
                self._dirty -= dirty
            return new

    def _postings(self, conn: Connection, terms: Sequence[str]) -> dict[str, _Post]:
        post = {}
        for t in terms:
            (codes_s,) = conn.execute(_INSTANCES, (t,)).fetchone()
            codes = _ints(codes_s or "")
            docs, inverse = np.unique(codes >> 2, return_inverse=True)
            post[t] = (docs, np.bincount(inverse, weights=self._weights[codes & 3],
                                         minlength=len(docs)))
        return post


def _all_sizes(conn: Connection) -> _Sizes | None:
    rows = conn.execute("SELECT id, sz FROM memory_fts_docsize").fetchall()
    return _row_sizes(np.array([r[0] for r in rows], dtype=np.int64),
                      b"".join(r[1] for r in rows))


def _merge_sizes(sizes: _Sizes, conn: Connection, rowids: set[int]) -> _Sizes | None:
    """``sizes`` with the rows in ``rowids`` read again (a row gone is dropped)."""
    rows: list[tuple[Any, ...]] = []
    for chunk in batching.chunks(sorted(rowids)):
        rows += conn.execute(f"SELECT id, sz FROM memory_fts_docsize WHERE id IN "
                             f"({batching.marks(len(chunk))})", chunk).fetchall()
    fresh = _row_sizes(np.array([r[0] for r in rows], dtype=np.int64),
                       b"".join(r[1] for r in rows))
    if fresh is None:
        return None
    keep = ~np.isin(sizes[0], np.fromiter(rowids, dtype=np.int64, count=len(rowids)))
    ids = np.concatenate([sizes[0][keep], fresh[0]])
    size = np.concatenate([sizes[1][keep], fresh[1]])
    order = np.argsort(ids, kind="stable")
    return ids[order], size[order]


def _ints(text: str) -> np.ndarray[Any, Any]:
    """A group_concat of integers, parsed in C."""
    if not text:
        return np.zeros(0, dtype=np.int64)
    return np.fromstring(text, dtype=np.int64, sep=",")


def _row_sizes(ids: np.ndarray[Any, Any], blob: bytes) -> _Sizes | None:
    """Rowids (ascending) and tokens per row, from ``memory_fts_docsize``: each ``sz`` is one
    SQLite varint per column (big-endian groups of 7 bits, high bit set: more follow), the
    rows' ``sz`` concatenated in ``blob``. None when the bytes do not hold one count per column
    of every row."""
    raw = np.frombuffer(blob, dtype=np.uint8)
    if len(raw) == 0:
        return (ids, np.zeros(0, dtype=np.float64)) if len(ids) == 0 else None
    ends = np.flatnonzero(raw < 0x80)  # the last byte of each varint
    if len(ends) != len(_COLUMNS) * len(ids) or ends[-1] != len(raw) - 1:
        return None
    starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64)
    if int((ends - starts).max()) >= 8:  # a 9-byte varint: never a token count
        return None
    group = np.repeat(np.arange(len(ends)), ends - starts + 1)
    shift = 7 * (ends[group] - np.arange(len(raw)))
    counts = np.add.reduceat((raw & 0x7F).astype(np.int64) << shift, starts)
    size = counts.reshape(-1, len(_COLUMNS)).sum(axis=1).astype(np.float64)
    order = np.argsort(ids, kind="stable")
    return ids[order], size[order]


def _bm25(sizes: _Sizes, posts: Sequence[_Post],
          limit: int) -> list[tuple[int, float]]:
    """FTS5's bm25 over whole rows (as ``Lexicon.search``), best first, rowid order on ties."""
    rowids, size = sizes
    n = len(rowids)
    if n == 0 or not posts:
        return []
    avgdl = float(size.sum()) / n
    scores = np.zeros(n, dtype=np.float64)
    hit = np.zeros(n, dtype=bool)
    for docs, freq in posts:
        slot = np.minimum(np.searchsorted(rowids, docs), n - 1)
        known = rowids[slot] == docs  # a row written after the sizes were read: not scored
        slot, f = slot[known], freq[known]
        n_hit = len(slot)
        if n_hit == 0:
            continue
        idf = math.log((n - n_hit + 0.5) / (n_hit + 0.5))
        if idf <= 0.0:
            idf = 1e-6
        scores[slot] += idf * f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * size[slot] / avgdl))
        hit[slot] = True
    cand = np.flatnonzero(hit)
    sc = scores[cand]
    if len(cand) > limit:
        part = np.argpartition(-sc, limit - 1)[:limit]
        cand, sc = cand[part], sc[part]
    order = np.lexsort((cand, -sc))  # best first, then the older row
    return [(int(rowids[c]), float(v)) for c, v in zip(cand[order], sc[order], strict=True)]


class _Loaded(dict):  # type: ignore[type-arg]
    """A saved mirror's postings, term -> (slots, weighted frequencies), made into arrays on
    first use. Making every term's arrays at load was a Python loop of about 0.5 s at 100k
    memories, beside the first recalls after unlock on the GIL (a first recall took 0.4-0.65 s
    of wall for 0.09 s of its own CPU, dev); a search needs a few terms. The owner's lock
    guards it like any dict of the mirror."""

    def __init__(self, term_id: dict[str, int], counts: np.ndarray, slots: bytes,
                 freqs: bytes) -> None:
        """``term_id``: the mirror's own term ids (they grow past ``counts``; new terms have
        no saved postings)."""
        super().__init__()
        self._id = term_id
        self._n = len(counts)
        self._counts = counts
        self._ends = np.cumsum(counts) * 4
        self._slots, self._freqs = slots, freqs
        self._made = bytearray(len(counts))  # made (or replaced) already: not from the bytes

    def _make(self, term: str) -> tuple[array[int], array[float]] | None:
        i = self._id.get(term)
        if i is None or i >= self._n or self._made[i]:
            return None
        self._made[i] = 1
        c = int(self._counts[i])
        if not c:
            return None
        end = int(self._ends[i])
        s_a, f_a = array("i"), array("f")
        s_a.frombytes(self._slots[end - 4 * c:end])
        f_a.frombytes(self._freqs[end - 4 * c:end])
        dict.__setitem__(self, term, (s_a, f_a))
        return s_a, f_a

    def get(self, term: str, default: Any = None) -> Any:
        got = dict.get(self, term)
        if got is None:
            got = self._make(term)
        return default if got is None else got

    def __getitem__(self, term: str) -> tuple[array[int], array[float]]:
        got = self.get(term)
        if got is None:
            raise KeyError(term)
        return got  # type: ignore[no-any-return]

    def __contains__(self, term: object) -> bool:
        return self.get(term) is not None  # type: ignore[arg-type]

    def __setitem__(self, term: str, value: tuple[array[int], array[float]]) -> None:
        i = self._id.get(term)
        if i is not None and i < self._n:
            self._made[i] = 1
        dict.__setitem__(self, term, value)

    def make_all(self) -> None:
        for term, i in list(self._id.items()):
            if i < self._n and not self._made[i]:
                self._make(term)

    def items(self) -> Any:
        self.make_all()
        return dict.items(self)

    def values(self) -> Any:
        self.make_all()
        return dict.values(self)

    def keys(self) -> Any:
        self.make_all()
        return dict.keys(self)

    def __iter__(self) -> Any:
        self.make_all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self.make_all()
        return dict.__len__(self)


class Lexicon:
    """Owner: the unlocked Vault. Thread-safe. ``search`` returns None until built."""

    def __init__(self, weights: Sequence[float] = (1.0, 1.0, 0.5)) -> None:
        self.weights = tuple(float(w) for w in weights)
        self._lock = threading.RLock()
        self._tok: _Tokenizer | None = _Tokenizer()
        self._post: dict[str, tuple[array[int], array[float]]] = {}
        self._terms: list[str] = []           # term id -> term
        self._term_id: dict[str, int] = {}
        self._wids: dict[str, tuple[int, ...]] = {}  # word -> its term ids
        self._slot_rowid: array[int] = array("q")
        self._slot_len: array[float] = array("d")
        self._alive = bytearray()
        self._slot_of: dict[int, int] = {}
        self._n_alive = 0
        self._tokens_alive = 0.0
        self._ready = threading.Event()
        self._building = False
        self._pending: set[int] = set()
        self._thread: threading.Thread | None = None
        self._cancel = threading.Event()
        self._loading = threading.Event()  # a saved mirror is being read
        self._direct = _Direct(self.weights)  # serves until the mirror is ready
        self._searched_at = -math.inf  # the last search before the mirror was ready

    # --- state --------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def __len__(self) -> int:
        return self._n_alive

    def __bool__(self) -> bool:
        # Present even while empty: callers write ``lexicon.search(...) if lexicon else None``,
        # and before the mirror is ready ``search`` still answers (``_Direct``).
        return True

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    # --- build --------------------------------------------------------------------------
    @property
    def building(self) -> bool:
        return self._building

    def build_in_background(self, read: Reader,
                            then: Callable[[], None] | None = None, delay: float = 0.0,
                            before_scan: Callable[[], None] | None = None) -> None:
        """Build from ``memory_fts`` through ``read`` (the database's reader) on a thread,
        after ``delay`` seconds, then call ``then()`` there (unless cleared meanwhile).
        ``before_scan()`` runs on that thread before a scan (not before loading a saved
        mirror, which is quicker): work that makes recall cheaper during the scan."""
        with self._lock:
            self._building = True
        self._direct.read = read

        def run() -> None:
            background_priority()  # recall and the window before the build (storage/threads.py)
            self._direct.prefetch()  # recall reads FTS5's index until the mirror is ready
            loaded = self._try_load(read)  # at once: reading is mostly I/O and numpy
            if not loaded and self._cancel.wait(delay):
                with self._lock:
                    self._building = False
                return
            if not loaded and before_scan is not None:
                before_scan()
            self._build(read, scan=not loaded)
            if then is not None and not self._cancel.is_set():
                then()
        self._thread = threading.Thread(target=run, name="lexicon", daemon=True)
        self._thread.start()

    def build(self, read: Reader) -> None:
        with self._lock:
            self._building = True
        self._direct.read = read
        self._build(read, scan=not self._try_load(read))

    def _build(self, read: Reader, scan: bool = True) -> None:
        try:
            def scan_rows(conn: Connection) -> None:
                last = 0
                while not self._cancel.is_set():
                    self._give_way()
                    rows = conn.execute(
                        "SELECT rowid, text, keys, ctx FROM memory_fts WHERE rowid > ? "
                        "ORDER BY rowid LIMIT ?", (last, _SLICE)).fetchall()
                    if not rows:
                        return
                    with self._lock:
                        if self._cancel.is_set():
                            return
                        self._add_rows(rows)
                    last = rows[-1][0]
            if scan:
                read(scan_rows)
            # Writes that committed while the scan ran: re-read them now, until none are left.
            while not self._cancel.is_set():
                with self._lock:
                    todo, self._pending = self._pending, set()
                    if not todo:
                        self._building = False
                        self._ready.set()
                        self._loading.clear()
                        self._direct.clear()
                        return
                read(functools.partial(self.refresh, rowids=todo))
        except Exception:  # the mirror is an accelerator: FTS5 keeps serving without it
            log.exception("lexicon build failed; full-text search stays on FTS5")
            with self._lock:
                self._building = False
            self._loading.clear()

    def _give_way(self) -> None:
        """Build thread, between slices: wait while recalls are under way
        (``app.threads.give_way``), and while a search outside one is likely still running
        (``_GIVE_WAY_S`` after it); at most ``_GIVE_WAY_MAX_S`` in all, so a stream of recalls
        slows the build but never stops it."""
        end = time.monotonic() + _GIVE_WAY_MAX_S
        give_way(_GIVE_WAY_MAX_S, self._cancel)
        wait = min(self._searched_at + _GIVE_WAY_S, end) - time.monotonic()
        if wait > 0:
            self._cancel.wait(min(wait, _GIVE_WAY_S))

    # --- the saved mirror (migration 0032) -----------------------------------------------
    def save_snapshot(self, conn: Connection) -> bool:
        """Write the mirror into the vault, inside the caller's write transaction on the
        writer (where it matches the committed ``memory_fts``: ``on_write`` refreshed it after
        every earlier transaction). Nothing when it is not ready or the saved one is still
        valid. True when written."""
        with self._lock:
            if not self._ready.is_set() or self._building or self._tok is None:
                return False
            state = _fts_state(conn.execute(f"SELECT {_FTS_STATE}").fetchone())
            row = conn.execute("SELECT fts_state FROM lexicon_snapshot_state").fetchone()
            if row is not None and bytes(row[0]) == state and conn.execute(
                    "SELECT 1 FROM lexicon_snapshot").fetchone() and not _written_since(conn):
                return False
            posts = [self._post.get(t) for t in self._terms]
            counts = np.array([0 if p is None else len(p[0]) for p in posts], dtype=np.int64)
            data = ("\x00".join(self._terms).encode(), counts.tobytes(),
                    b"".join(p[0].tobytes() for p in posts if p is not None),
                    b"".join(p[1].tobytes() for p in posts if p is not None),
                    self._slot_rowid.tobytes(), self._slot_len.tobytes(), bytes(self._alive),
                    self._n_alive, self._tokens_alive)
        conn.execute("DELETE FROM lexicon_snapshot")
        conn.execute("DELETE FROM lexicon_snapshot_state")
        _snapshot_sql(conn, "DELETE FROM lexicon_snapshot_dirty")  # all of them are in it now
        conn.execute("INSERT INTO lexicon_snapshot (id, terms, counts, slots, freqs, rowids, "
                     "lens, alive, n_alive, tokens) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?)", data)
        conn.execute("INSERT INTO lexicon_snapshot_state (id, fts_state) VALUES (1, ?)",
                     (state,))
        return True

    def _try_load(self, read: Reader) -> bool:
        """Load the saved mirror when it is valid for ``memory_fts`` as it is now (one
        statement, one read snapshot); False (and nothing changed) otherwise."""
        done: list[bool] = []
        self._loading.set()
        try:
            read(lambda conn: done.append(self._load(conn)))
        except Exception:  # a damaged or missing snapshot: build as before
            log.warning("the saved full-text mirror could not be read; building it")
        if not done or not done[0]:
            self._loading.clear()
            return False
        return True

    def _load(self, conn: Connection) -> bool:
        try:
            row = conn.execute(
                "SELECT s.terms, s.counts, s.slots, s.freqs, s.rowids, s.lens, s.alive, "
                f"s.n_alive, s.tokens, v.fts_state, {_FTS_STATE} FROM lexicon_snapshot s "
                "JOIN lexicon_snapshot_state v ON v.id = s.id").fetchone()
        except sqlcipher.OperationalError as e:  # a vault before migration 0032
            if "no such table" in str(e):
                return False
            raise
        if row is None:
            return False
        # Rows written since it was saved (migration 0041) are re-read after it is loaded. If
        # memory_fts changed and none were recorded, something wrote it unmarked: build.
        written = _written_since(conn, limit=None)
        if bytes(row[9]) != _fts_state(row[10:12]) and not written:
            return False
        if len(written) > max(_REREAD_MAX, int(row[7]) // 2):
            return False  # re-reading them would cost about what a scan does
        terms = bytes(row[0]).decode().split("\x00") if row[0] else []
        counts = np.frombuffer(row[1], dtype=np.int64)
        slots, freqs = memoryview(row[2]), memoryview(row[3])
        rowids = np.frombuffer(row[4], dtype=np.int64)
        n_slots = len(rowids)
        if (len(counts) != len(terms) or not int(counts.sum()) * 4 == len(slots) == len(freqs)
                or len(row[5]) != 8 * n_slots or len(row[6]) != n_slots):
            log.warning("the saved full-text mirror is inconsistent; building it")
            return False
        term_id = {t: i for i, t in enumerate(terms)}
        post = _Loaded(term_id, counts, bytes(row[2]), bytes(row[3]))
        alive = bytearray(row[6])
        live = np.flatnonzero(np.frombuffer(alive, dtype=np.uint8))
        with self._lock:
            if self._cancel.is_set() or self._tok is None:
                return False
            self._terms = terms
            self._term_id = term_id  # grows with new terms; post reads only the loaded ones
            self._wids = {}
            self._post = post
            self._slot_rowid = array("q")
            self._slot_rowid.frombytes(row[4])
            self._slot_len = array("d")
            self._slot_len.frombytes(row[5])
            self._alive = alive
            self._slot_of = dict(zip(rowids[live].tolist(), live.tolist(), strict=True))
            self._n_alive = int(row[7])
            self._tokens_alive = float(row[8])
            self._pending |= set(written)  # _build re-reads them before the mirror is ready
        return True

    # --- updates ------------------------------------------------------------------------
    def on_write(self, conn: Connection) -> None:
        """Writer thread, after each write transaction (committed or rolled back)."""
        ids = take_fts_marks(conn)
        if not ids:
            return
        self._direct.changed(ids)
        with self._lock:
            if self._building:
                self._pending |= ids
                return
            if not self._ready.is_set():
                return
        try:
            self.refresh(conn, ids)
        except Exception:
            log.exception("lexicon refresh failed; full-text search falls back to FTS5")
            self._ready.clear()

    def refresh(self, conn: Connection, rowids: Iterable[int]) -> None:
        """Make the mirror match ``memory_fts`` for these rowids, as ``conn`` sees it now."""
        ids = sorted(set(int(r) for r in rowids))
        rows: list[tuple[Any, ...]] = []
        for chunk in batching.chunks(ids):
            marks = batching.marks(len(chunk))
            rows += conn.execute(f"SELECT rowid, text, keys, ctx FROM memory_fts "
                                 f"WHERE rowid IN ({marks})", chunk).fetchall()
        with self._lock:
            for r in ids:
                self._drop(r)
            self._add_rows(rows)
            gone = len(ids) - len(rows)
            dead = len(self._alive) - self._n_alive
            # A deleted row's terms leave RAM with it; otherwise compact when half is dead.
            if gone or (dead > 10_000 and dead > self._n_alive):
                self._compact()

    def _drop(self, rowid: int) -> None:
        slot = self._slot_of.pop(rowid, None)
        if slot is not None and self._alive[slot]:
            self._alive[slot] = 0
            self._n_alive -= 1
            self._tokens_alive -= self._slot_len[slot]

    def _add_rows(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Append a slot per row and its postings, vectorised per batch: words -> term ids
        (FTS5's tokenizer, cached per word), then numpy sums the weighted count of every
        (row, term) pair and the token count of every row."""
        assert self._tok is not None
        if not rows:
            return
        cols = [[_WORD.findall(r[c] or "") for r in rows] for c in (1, 2, 3)]  # FTS5 folds case
        ids = self._word_ids(set(chain.from_iterable(chain.from_iterable(cols))))
        for r in rows:
            if int(r[0]) in self._slot_of:
                self._drop(int(r[0]))
        n = len(rows)
        slot_parts, term_parts, weight_parts = [], [], []
        for col, weight in zip(cols, self.weights, strict=True):
            flat: list[int] = []
            lens = []
            for words in col:
                before = len(flat)
                flat.extend([t for w in words for t in ids[w]])
                lens.append(len(flat) - before)
            term_parts.append(np.array(flat, dtype=np.int64))
            slot_parts.append(np.repeat(np.arange(n, dtype=np.int64), lens))
            weight_parts.append(np.full(len(flat), weight, dtype=np.float64))
        slots = np.concatenate(slot_parts)
        terms = np.concatenate(term_parts)
        size = np.bincount(slots, minlength=n).astype(np.float64)  # FTS5's tokens per row
        n_terms = len(self._terms)
        pair, inverse = np.unique(slots * n_terms + terms, return_inverse=True)
        freq = np.bincount(inverse, weights=np.concatenate(weight_parts))
        p_slot, p_term = pair // n_terms, pair % n_terms
        order = np.argsort(p_term, kind="stable")  # by term, rows ascending within a term
        p_slot, p_term, freq = p_slot[order], p_term[order], freq[order]
        base = len(self._alive)
        p_slot = (p_slot + base).astype(np.int32)
        freq32 = freq.astype(np.float32)
        cuts = np.flatnonzero(np.diff(p_term)) + 1
        for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), len(p_term)], strict=True):
            term = self._terms[int(p_term[lo])]
            post = self._post.get(term)
            if post is None:
                post = self._post[term] = (array("i"), array("f"))
            post[0].frombytes(p_slot[lo:hi].tobytes())
            post[1].frombytes(freq32[lo:hi].tobytes())
        rowids = [int(r[0]) for r in rows]
        self._slot_rowid.frombytes(np.array(rowids, dtype=np.int64).tobytes())
        self._slot_len.frombytes(size.tobytes())
        self._alive.extend(b"\x01" * n)
        self._slot_of.update(zip(rowids, range(base, base + n), strict=True))
        self._n_alive += n
        self._tokens_alive += float(size.sum())

    def _word_ids(self, words: Iterable[str]) -> dict[str, tuple[int, ...]]:
        assert self._tok is not None
        todo = [w for w in words if w not in self._wids]
        if todo:
            terms = self._tok.terms(todo)
            for w in todo:
                out = []
                for t in terms[w]:
                    tid = self._term_id.get(t)
                    if tid is None:
                        tid = self._term_id[t] = len(self._terms)
                        self._terms.append(t)
                    out.append(tid)
                self._wids[w] = tuple(out)
        return self._wids

    def _compact(self) -> None:
        alive = np.frombuffer(self._alive, dtype=np.uint8).astype(bool)
        new_index = np.cumsum(alive, dtype=np.int64) - 1
        post: dict[str, tuple[array[int], array[float]]] = {}
        for t, (slots_a, freq_a) in self._post.items():
            slots = np.frombuffer(slots_a, dtype=np.int32)
            keep = alive[slots]
            if not keep.any():
                continue
            s, f = array("i"), array("f")
            s.frombytes(new_index[slots[keep]].astype(np.int32).tobytes())
            f.frombytes(np.frombuffer(freq_a, dtype=np.float32)[keep].tobytes())
            del slots
            post[t] = (s, f)
        self._post = post
        rowid = np.frombuffer(self._slot_rowid, dtype=np.int64)[alive]
        size = np.frombuffer(self._slot_len, dtype=np.float64)[alive]
        self._slot_rowid = array("q")
        self._slot_rowid.frombytes(rowid.tobytes())
        self._slot_len = array("d")
        self._slot_len.frombytes(size.tobytes())
        self._alive = bytearray(b"\x01" * len(rowid))
        self._slot_of = {int(r): i for i, r in enumerate(rowid.tolist())}
        self._n_alive = len(rowid)
        self._tokens_alive = float(size.sum())

    # --- search -------------------------------------------------------------------------
    def search(self, tokens: Sequence[str], limit: int) -> list[tuple[int, float]] | None:
        """BM25 hits for the OR of ``tokens`` (one FTS5 phrase each), best first, as
        (rowid, positive score). Until built, the same scores from FTS5's index for these terms
        only (``_Direct``); None when that cannot answer either (the caller asks FTS5)."""
        if not self._ready.is_set():
            self._searched_at = time.monotonic()  # the build gives way (``_give_way``)
            return self._direct.search(tokens, limit)
        with self._lock:
            if not self._ready.is_set() or self._tok is None:
                return self._direct.search(tokens, limit)
            terms = self._tok.terms(tokens)
            phrases = [terms[t] for t in dict.fromkeys(tokens) if t]
            if any(len(p) != 1 for p in phrases):
                return None  # a multi-term phrase needs positions; FTS5 handles it
            n = self._n_alive
            if not phrases or n == 0:
                return []
            avgdl = self._tokens_alive / n
            alive = np.frombuffer(self._alive, dtype=np.uint8)
            size = np.frombuffer(self._slot_len, dtype=np.float64)
            scores = np.zeros(len(alive), dtype=np.float64)
            hit = np.zeros(len(alive), dtype=bool)
            for (term,) in phrases:
                post = self._post.get(term)
                if post is None:
                    continue
                slots = np.frombuffer(post[0], dtype=np.int32)
                live = alive[slots].astype(bool)
                n_hit = int(np.count_nonzero(live))
                if n_hit == 0:
                    continue
                idf = math.log((n - n_hit + 0.5) / (n_hit + 0.5))
                if idf <= 0.0:
                    idf = 1e-6
                s = slots[live]
                f = np.frombuffer(post[1], dtype=np.float32)[live].astype(np.float64)
                d = size[s]
                scores[s] += idf * f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * d / avgdl))
                hit[s] = True
                del slots, s
            cand = np.flatnonzero(hit)
            if len(cand) == 0:
                return []
            sc = scores[cand]
            if len(cand) > limit:
                part = np.argpartition(-sc, limit - 1)[:limit]
                cand, sc = cand[part], sc[part]
            order = np.argsort(-sc, kind="stable")
            rowids = np.frombuffer(self._slot_rowid, dtype=np.int64)
            # tolist(): the same ints and floats as int()/float() of each element, in C.
            out = list(zip(rowids[cand[order]].tolist(), sc[order].tolist(), strict=True))
            del alive, size, rowids
            return out

    # --- lock ---------------------------------------------------------------------------
    def clear(self) -> None:
        """Drop everything (on lock). A running build stops at its next batch."""
        self._cancel.set()
        self._ready.clear()
        self._loading.clear()
        self._direct.close()
        with self._lock:
            self._post = {}
            self._terms, self._term_id, self._wids = [], {}, {}
            self._slot_rowid = array("q")
            self._slot_len = array("d")
            self._alive = bytearray()
            self._slot_of = {}
            self._n_alive = 0
            self._tokens_alive = 0.0
            self._pending = set()
            if self._tok is not None:
                self._tok.close()
                self._tok = None
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)


def _fts_state(records: Sequence[Any]) -> bytes:
    """FTS5's structure and averages records as one value (any write to the index changes
    them: a new segment, a row count or a token total)."""
    structure, averages = (bytes(r or b"") for r in records)
    return len(structure).to_bytes(4, "little") + structure + averages


__all__ = ["MIN_ROWS", "Lexicon", "drop_snapshot", "mark_fts", "take_fts_marks"]
