"""Consolidation's run log: one ``run`` row per run and, per change it made, a ``run_change``
row holding the inverse (ids and numbers only, never text, so forgetting leaves no copy
there). Layer: storage. Writes run inside ``Database.write``.

Implements ``app.ports.RunLogRows`` as a module. Undoing a run reads its changes newest
first and applies each inverse with :func:`revert`; the pipeline decides what to log.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from app.ports import RunChange, RunRow
from storage.sqlcipher import Connection


def start(conn: Connection, kind: str, started_at: float) -> int:
    return int(conn.execute("INSERT INTO run (kind, started_at) VALUES (?, ?)",
                            (kind, started_at)).lastrowid or 0)


def finish(conn: Connection, run_id: int, finished_at: float, status: str,
           report: Mapping[str, Any]) -> None:
    conn.execute("UPDATE run SET finished_at = ?, status = ?, report = ? WHERE id = ?",
                 (finished_at, status, json.dumps(report), run_id))


def add_change(conn: Connection, run_id: int, seq: int, kind: str, memory_id: int | None,
               payload: Mapping[str, Any]) -> None:
    conn.execute("INSERT INTO run_change (run_id, seq, kind, memory_id, payload) VALUES "
                 "(?,?,?,?,?)", (run_id, seq, kind, memory_id,
                                 json.dumps(payload) if payload else None))


def get(conn: Connection, run_id: int) -> RunRow | None:
    row = conn.execute("SELECT id, kind, started_at, finished_at, status, report, undone_at "
                       "FROM run WHERE id = ?", (run_id,)).fetchone()
    return None if row is None else _run_row(row)


def _run_row(r: Any) -> RunRow:
    return RunRow(*r)


def later_runs_with_changes(conn: Connection, run_id: int) -> list[int]:
    """Runs after ``run_id``, not undone, that still have changes to undo."""
    return [int(r[0]) for r in conn.execute(
        "SELECT id FROM run WHERE id > ? AND undone_at IS NULL AND "
        "EXISTS (SELECT 1 FROM run_change WHERE run_id = run.id)", (run_id,))]


def changes(conn: Connection, run_id: int) -> list[RunChange]:
    """The run's changes, newest first (the order to undo them in)."""
    return [RunChange(kind, mid, json.loads(payload) if payload else {})
            for kind, mid, payload in conn.execute(
                "SELECT kind, memory_id, payload FROM run_change WHERE run_id = ? "
                "ORDER BY seq DESC", (run_id,))]


def revert(conn: Connection, change: RunChange) -> None:
    """Apply the inverse of one change. ``created`` and ``watermark`` are the caller's (it
    forgets what the run made in one go, and owns the settings the watermark lives in)."""
    kind, mid, p = change
    if kind == "status" and mid is not None:
        conn.execute("UPDATE memory SET status = ?, superseded_by = ?, valid_until = ? "
                     "WHERE id = ?", (p["status"], p["superseded_by"], p["valid_until"], mid))
    elif kind == "link":
        conn.execute("DELETE FROM link WHERE src = ? AND dst = ? AND kind = ?",
                     (p["src"], p["dst"], p["kind"]))
    elif kind == "confidence" and mid is not None:
        conn.execute("UPDATE memory SET confidence = ? WHERE id = ?", (p["old"], mid))
    elif kind == "contradiction":
        conn.execute("DELETE FROM contradiction WHERE id = ?", (p["id"],))
    elif kind == "settled":  # an item the run closed: open again
        conn.execute("UPDATE contradiction SET status = 'open', resolution = NULL, "
                     "resolved_at = NULL WHERE id = ?", (p["id"],))
    elif kind == "entity":
        conn.execute("DELETE FROM entity WHERE id = ?", (p["id"],))
    elif kind == "mention" and mid is not None:
        conn.execute("DELETE FROM entity_mention WHERE entity_id = ? AND memory_id = ?",
                     (p["entity"], mid))
    elif kind == "habit_counts" and mid is not None:
        conn.execute("UPDATE procedure SET success_count = ?, failure_count = ? "
                     "WHERE memory_id = ?", (p["success"], p["failure"], mid))
    elif kind == "episode_outcome" and mid is not None:
        # An outcome the run inferred; one the person set since stays.
        conn.execute("UPDATE episode SET rating = ?, outcome = ?, outcome_by = ?, rated_at = ? "
                     "WHERE memory_id = ? AND outcome_by = 'inferred'",
                     (p["rating"], p["outcome"], p["outcome_by"], p["rated_at"], mid))
    elif kind == "routing" and mid is not None:  # the decision the LLM's replaced
        if p:
            conn.execute("INSERT OR REPLACE INTO routing (memory_id, salience, stores, reason, "
                         "by) VALUES (?, ?, ?, ?, ?)",
                         (mid, p["salience"], p["stores"], p["reason"], p["by"]))
        else:
            conn.execute("DELETE FROM routing WHERE memory_id = ?", (mid,))
    elif kind == "entity_archived":  # issue 27 item 3: a project that ended is one again
        conn.execute("UPDATE entity SET kind = was_kind, was_kind = NULL, ended_at = NULL, "
                     "ended_how = NULL WHERE id = ? AND was_kind IS NOT NULL", (p["id"],))
    elif kind == "entity_merged":  # both entities as they were (no-op if undone already)
        from storage.consolidation_rows import unmerge_entity
        unmerge_entity(conn, p["merge"])
    elif kind == "statistic" and mid is not None:
        conn.execute("UPDATE statistic SET value = ?, sample_size = ? WHERE memory_id = ?",
                     (p["value"], p["sample_size"], mid))
    elif kind == "boost" and mid is not None:  # 002 scheduled booster (issue 27)
        conn.execute("UPDATE memory SET importance = ?, boosted_at = ? WHERE id = ?",
                     (p["importance"], p["boosted_at"], mid))
    elif kind == "confidence_factors" and mid is not None:  # 003 factors (issue 27)
        conn.execute("UPDATE memory SET confidence = ?, conf_user = ?, conf_usage = ? "
                     "WHERE id = ?", (p["old"], p["user"], p["usage"], mid))


def mark_undone(conn: Connection, run_id: int, at: float) -> None:
    """The run stays listed (undone, with its counts); its change log, now applied, goes."""
    conn.execute("UPDATE run SET undone_at = ?, status = 'undone' WHERE id = ?", (at, run_id))
    conn.execute("DELETE FROM run_change WHERE run_id = ?", (run_id,))


def recent(conn: Connection, limit: int) -> list[RunRow]:
    """The newest ``limit`` runs, newest first."""
    return [_run_row(r) for r in conn.execute(
        "SELECT id, kind, started_at, finished_at, status, report, undone_at FROM run "
        "ORDER BY id DESC LIMIT ?", (limit,))]
