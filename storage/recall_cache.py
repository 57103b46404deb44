"""What recall reads per memory (its ranking fields, its text, its conversation refs), kept in
RAM and following the writer. Layer: storage. Runs on: callers' threads (a lock guards the
dicts, never a database read); marks arrive on the ``db-writer`` thread.

Recall spent a third of its own time reading the same rows again for every query (issue 28:
at 10k memories ``recall_meta``, ``texts`` and ``refs_of`` were 5.6 ms of a 21 ms recall,
bench/scale.py, dev). ``RecallRows`` is ``storage.repo`` with those three answered from here
when they can be; every other function is repo's own.

Invalidation (a forgotten memory must never come back from here): ``install`` puts TEMP
triggers on the write connection (the one connection that writes while a vault is unlocked, as
for the RAM lexicon, storage/lexicon.py). They call back into Python, in the same statement as
the change, with what to drop:

- a memory inserted or updated: that id (its ranking fields, text and refs);
- a memory deleted, or its ``ref``, ``created_at`` or id changed: everything (a deleted id
  may be reused; another memory's refs and ``superseded_at`` are read from it);
- an episode row written: its memory (whether it is a conversation's summary decides its refs);
- a DERIVED_FROM or PROMOTED_FROM link: the refs of its source, or every memory's refs when
  that source has sources or descendants of its own (refs follow the chain).

``on_write`` (``Database.after_write``, after COMMIT or ROLLBACK and before the writer's caller
sees the result) drops them. A read that started before the write cannot put a stale row back:
every drop moves ``_gen``, and a read stores what it read only if ``_gen`` has not moved since
it began. Lock calls ``clear``: no memory text stays in RAM after it.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from app.ports import RecallMeta
from storage import repo
from storage.sqlcipher import Connection

log = logging.getLogger(__name__)

# Memories kept; past it nothing more is (a bound on RAM: a 100k-memory vault fits whole, its
# ranking fields, texts and refs in about 100 MB).
CAP = 131_072
PRELOAD_SLICE = 1_000  # memories per read of the preload; it yields the GIL between reads

_ONE, _REFS, _ALL = 1, 2, 3  # what a mark drops: one id; every id's refs; everything
_DERIVED = "('DERIVED_FROM','PROMOTED_FROM')"
_FN = "kept_recall_drop"
_TRIGGERS = (
    f"CREATE TEMP TRIGGER IF NOT EXISTS kept_rc_memory_ins AFTER INSERT ON main.memory "
    f"BEGIN SELECT {_FN}({_ONE}, NEW.id); END",
    f"CREATE TEMP TRIGGER IF NOT EXISTS kept_rc_memory_upd AFTER UPDATE ON main.memory "
    f"BEGIN SELECT {_FN}(CASE WHEN OLD.id IS NOT NEW.id OR OLD.ref IS NOT NEW.ref "
    f"OR OLD.created_at IS NOT NEW.created_at THEN {_ALL} ELSE {_ONE} END, NEW.id); END",
    f"CREATE TEMP TRIGGER IF NOT EXISTS kept_rc_memory_del AFTER DELETE ON main.memory "
    f"BEGIN SELECT {_FN}({_ALL}, OLD.id); END",
    f"CREATE TEMP TRIGGER IF NOT EXISTS kept_rc_episode_ins AFTER INSERT ON main.episode "
    f"BEGIN SELECT {_FN}({_ONE}, NEW.memory_id); END",
    f"CREATE TEMP TRIGGER IF NOT EXISTS kept_rc_episode_upd AFTER UPDATE ON main.episode "
    f"BEGIN SELECT {_FN}({_ONE}, OLD.memory_id); SELECT {_FN}({_ONE}, NEW.memory_id); END",
    f"CREATE TEMP TRIGGER IF NOT EXISTS kept_rc_episode_del AFTER DELETE ON main.episode "
    f"BEGIN SELECT {_FN}({_ONE}, OLD.memory_id); END",
    # A new source for a memory nothing derives from and that had none: its refs only.
    f"CREATE TEMP TRIGGER IF NOT EXISTS kept_rc_link_ins AFTER INSERT ON main.link "
    f"WHEN NEW.kind IN {_DERIVED} BEGIN SELECT {_FN}(CASE WHEN EXISTS (SELECT 1 FROM main.link "
    f"WHERE (dst = NEW.src OR (src = NEW.src AND NOT (dst = NEW.dst AND kind = NEW.kind))) "
    f"AND kind IN {_DERIVED}) "
    f"THEN {_REFS} ELSE {_ONE} END, NEW.src); END",
    f"CREATE TEMP TRIGGER IF NOT EXISTS kept_rc_link_upd AFTER UPDATE ON main.link "
    f"WHEN OLD.kind IN {_DERIVED} OR NEW.kind IN {_DERIVED} "
    f"BEGIN SELECT {_FN}({_REFS}, NEW.src); END",
    f"CREATE TEMP TRIGGER IF NOT EXISTS kept_rc_link_del AFTER DELETE ON main.link "
    f"WHEN OLD.kind IN {_DERIVED} BEGIN SELECT {_FN}({_REFS}, OLD.src); END",
)


class RecallRows:
    """``storage.repo`` for recall (``app.ports.RecallRows``), with ``recall_meta``, ``texts``
    and ``refs_of`` answered from RAM when they can be. Owner: the unlocked vault's recall
    service. Thread-safe."""

    # Everything else recall reads and writes is repo's own.
    fts_query = staticmethod(repo.fts_query)
    fts_search = staticmethod(repo.fts_search)
    archived_by_person = staticmethod(repo.archived_by_person)
    mentioning = staticmethod(repo.mentioning)
    ancestors = staticmethod(repo.ancestors)
    known_people = staticmethod(repo.known_people)
    fact_keys = staticmethod(repo.fact_keys)
    reinforcement_state = staticmethod(repo.reinforcement_state)
    touch = staticmethod(repo.touch)
    derived_ids = staticmethod(repo.derived_ids)
    open_changes = staticmethod(repo.open_changes)
    factor_rows = staticmethod(repo.factor_rows)
    set_confidence_factors = staticmethod(repo.set_confidence_factors)
    linked = staticmethod(repo.linked)
    sharing_entities = staticmethod(repo.sharing_entities)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gen = 0
        self._meta: dict[int, RecallMeta] = {}
        self._texts: dict[int, str] = {}
        self._refs: dict[int, list[str]] = {}
        self._marks: list[tuple[int, int]] = []  # (what, id) since the last on_write
        self._installed: set[int] = set()  # id() of connections with the triggers
        self._cleared = 0  # clear() calls: a preload under way stops at the next
        self.enabled = True

    # --- following the writer ------------------------------------------------------------
    def install(self, conn: Connection) -> None:
        """The triggers on ``conn``, the connection that writes (before its first write)."""
        if id(conn) in self._installed:
            return
        conn.create_function(_FN, 2, self._mark)
        for sql in _TRIGGERS:
            conn.execute(sql)
        self._installed.add(id(conn))

    def _mark(self, what: int, mid: int | None) -> None:
        """Called by the triggers, on the writer thread, inside the writing statement."""
        with self._lock:
            self._marks.append((int(what), int(mid) if mid is not None else 0))
            self._gen += 1  # reads under way store nothing: they may predate this change

    def on_write(self, conn: Connection) -> None:
        """``Database.after_write``: drop what the transaction changed."""
        with self._lock:
            marks, self._marks = self._marks, []
            if not marks:
                return
            self._gen += 1
            if any(w == _ALL for w, _ in marks):
                self._meta.clear()
                self._texts.clear()
                self._refs.clear()
                return
            if any(w == _REFS for w, _ in marks):
                self._refs.clear()
            for _w, mid in marks:
                self._meta.pop(mid, None)
                self._texts.pop(mid, None)
                self._refs.pop(mid, None)

    def clear(self) -> None:
        """Lock: nothing read stays in RAM."""
        with self._lock:
            self._gen += 1
            self._cleared += 1
            self._meta.clear()
            self._texts.clear()
            self._refs.clear()
            self._marks.clear()

    # --- the cached reads ----------------------------------------------------------------
    def recall_meta(self, conn: Connection, ids: Sequence[int]) -> dict[int, RecallMeta]:
        return self._through(self._meta, repo.recall_meta, conn, ids)

    def texts(self, conn: Connection, ids: Sequence[int]) -> dict[int, str]:
        return self._through(self._texts, repo.texts, conn, ids)

    def refs_of(self, conn: Connection, ids: Sequence[int]) -> dict[int, list[str]]:
        got = self._through(self._refs, repo.refs_of, conn, ids)
        return {i: list(v) for i, v in got.items()}  # callers may change their lists

    def _through(self, cache: dict[int, Any], read: Any, conn: Connection,
                 ids: Sequence[int]) -> dict[int, Any]:
        """``read(conn, ids)`` for the ids not in ``cache``; stores what it read unless a
        write's marks arrived meanwhile. Ids ``read`` does not return are not cached."""
        if not self.enabled or not self._installed:
            # Nothing follows the writer yet (no trigger): every read from the database.
            return dict(read(conn, ids))
        out: dict[int, Any] = {}
        with self._lock:
            gen = self._gen
            get = cache.get
            missing = []
            for i in ids:
                v = get(i)
                if v is None:
                    missing.append(i)
                else:
                    out[i] = v
        if missing:
            got = read(conn, missing)
            out.update(got)
            with self._lock:
                if self._gen == gen and len(cache) + len(got) <= CAP:
                    cache.update(got)
        return out

    def said(self) -> list[tuple[str, str | None]]:
        """(text, speaker) of every memory kept with its ranking fields, in id order: what
        ``RecallService.warm_texts`` works out ahead of the first query."""
        with self._lock:
            return [(t, m.speaker) for i, t in sorted(self._texts.items())
                    if (m := self._meta.get(i)) is not None]

    # --- filled ahead ----------------------------------------------------------------------
    def preload(self, read: Callable[[Callable[[Connection], Any]], Any],
                stop: Callable[[], bool] = lambda: False) -> int:
        """Every memory's ranking fields, text and refs, read in id order in slices
        (``read``: the database's reader), so a query's first recall need not read them
        (issue 28: a fresh query's candidates cost 2.7 ms of ranking fields and its head 3.9
        ms of texts and refs at 10k memories, bench/scale.py's stages, dev). A slice read
        while a write committed is read again. Returns the memories kept; stops at ``CAP``,
        at ``stop()`` or at lock (``clear``)."""
        if not self.enabled or not self._installed:
            return 0
        after, kept = 0, 0
        with self._lock:
            started = self._cleared
        while not stop():
            with self._lock:
                gen = self._gen
            meta, texts, refs = read(functools.partial(_slice, after=after))
            if not meta:
                break
            with self._lock:
                if self._cleared != started or len(self._meta) + len(meta) > CAP:
                    break
                if self._gen != gen:
                    continue  # a write meanwhile: this slice again
                for kept_, got in ((self._meta, meta), (self._texts, texts),
                                   (self._refs, refs)):
                    for i, v in got.items():
                        kept_.setdefault(i, v)
            kept += len(meta)
            after = max(meta)
            time.sleep(0)  # let a recall have the GIL between slices
        return kept


def _slice(conn: Connection, after: int) -> tuple[dict[int, RecallMeta], dict[int, str],
                                                  dict[int, list[str]]]:
    """One preload slice: the next ``PRELOAD_SLICE`` memories after id ``after``, read in one
    go on one connection."""
    meta = repo.recall_meta_after(conn, after, PRELOAD_SLICE)
    ids = list(meta)
    return meta, repo.texts(conn, ids), repo.refs_of(conn, ids)


__all__ = ["CAP", "RecallRows"]
