"""``storage/bulk_insert.insert_memories`` (issue 29): the rows ``repo.insert_memory`` writes, one
statement per table, with the CHECK constraints compared in Python while SQLite's are off for
those statements only."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from app.domain.memory import Draft, MemoryId, Scores, Store
from storage import repo
from storage.bulk_insert import CHECKED, insert_memories
from storage.crypto import KdfParams
from storage.db import Database
from storage.sqlcipher import Connection, IntegrityError
from storage.unlock import OpenVault

PW = "bulk-insert-password"
NOW = 1_764_151_200.0


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    opened = OpenVault.create(tmp_path_factory.mktemp("bulk") / "v", PW,
                              kdf=KdfParams(m=65_536, t=3, p=4), threaded=False)
    yield opened.db
    opened.lock()


def _drafts(tag: str, source: int) -> list[tuple[Draft, Scores, str, float]]:
    s = Scores(importance=0.7, recency=1.0, frequency=0.1, emotional=0.2, social=0.3,
               composite=0.55)
    return [
        (Draft(text=f"{tag} Anna rated the concert", store=Store.EPISODIC, occurred_at=NOW - 60,
               agent="global", context="music", session="s1", speaker="Anna", seq=4, ref="r4",
               extra={"event_type": "outing", "actors": ["Anna", "me"], "rating": 1,
                      "outcome_by": "person"}, derived_from=(MemoryId(source),)),
         s, "episodic", 0.8),
        (Draft(text=f"{tag} Anna works at Kitewood", store=Store.SEMANTIC, user_validated=True,
               valid_from=NOW - 86_400, extra={"subject": "Anna", "predicate": "works_at",
                                               "object": "Kitewood", "category": "work"}),
         s, "semantic", 1.0),
        (Draft(text=f"{tag} Prefers tea after six", store=Store.PROCEDURAL,
               extra={"kind": "preference", "trigger": "evening"}), s, "social", 0.5),
        (Draft(text=f"{tag} a bare episode", store=Store.EPISODIC), s, "emotional", 0.5),
    ]


def _rows(conn: Connection, mid: int) -> dict[str, Any]:
    """Everything the two paths write about one memory, without ids and the tag."""
    def strip(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        return [tuple(re.sub(r"^(one|many) ", "", v) if isinstance(v, str) else v
                      for v in r) for r in rows]
    memory = conn.execute(f"SELECT {repo.MEMORY_COLUMNS} FROM memory WHERE id = ?",
                          (mid,)).fetchall()
    return {
        "memory": strip([r[1:] for r in memory]),
        "episode": conn.execute("SELECT event_type, actors, outcome, details, rating, "
                                "outcome_by FROM episode WHERE memory_id = ?", (mid,)).fetchall(),
        "fact": conn.execute("SELECT subject, predicate, object, category FROM fact "
                             "WHERE memory_id = ?", (mid,)).fetchall(),
        "procedure": conn.execute("SELECT kind, trigger, actions FROM procedure "
                                  "WHERE memory_id = ?", (mid,)).fetchall(),
        "links": conn.execute("SELECT dst, kind, weight, created_at FROM link WHERE src = ?",
                              (mid,)).fetchall(),
        "history": conn.execute("SELECT at, action, text, detail FROM history "
                                "WHERE memory_id = ?", (mid,)).fetchall(),
    }


def test_the_same_rows_as_one_insert_a_memory(db: Database) -> None:
    def run(conn: Connection) -> tuple[list[int], list[int]]:
        source = int(repo.insert_memory(conn, Draft(text="the source", store=Store.EPISODIC),
                                        now=NOW, decay_class="episodic", scores=Scores(),
                                        confidence=0.5))
        one = [int(repo.insert_memory(conn, d, now=NOW, decay_class=dc, scores=s,
                                      confidence=c, index_text=False))
               for d, s, dc, c in _drafts("one", source)]
        many = [int(m) for m in insert_memories(conn, _drafts("many", source), now=NOW)]
        return one, many
    one, many = db.write_sync(run)
    assert many == list(range(one[-1] + 1, one[-1] + 5))
    for a, b in zip(one, many, strict=True):
        ra, rb = db.read(lambda c, a=a: _rows(c, a)), db.read(lambda c, b=b: _rows(c, b))
        assert ra == rb
        assert ra["memory"] and ra["history"]
    assert db.read(lambda c: _rows(c, many[0]))["episode"][0][4:] == (1, "person")
    assert db.read(lambda c: _rows(c, many[0]))["links"]


def test_ids_never_reuse_a_forgotten_one(db: Database) -> None:
    def run(conn: Connection) -> tuple[int, list[MemoryId]]:
        ids = insert_memories(conn, _drafts("gone", 0)[1:], now=NOW)
        conn.execute("DELETE FROM memory WHERE id >= ?", (ids[0],))
        return int(ids[-1]), insert_memories(conn, _drafts("after", 0)[1:2], now=NOW)
    last, again = db.write_sync(run)
    assert again == [MemoryId(last + 1)]


@pytest.mark.parametrize("bad", ["store", "decay_class", "rating", "kind"])
def test_a_value_a_check_refuses_writes_nothing_and_checks_stay_on(db: Database,
                                                                  bad: str) -> None:
    before = db.read(lambda c: c.execute("SELECT count(*) FROM memory").fetchone()[0])
    new = _drafts("bad", 0)[1:]
    d, s, dc, c = new[-1]
    if bad == "store":
        new[-1] = (Draft(text=d.text, store=Store.WORKING), s, dc, c)
    elif bad == "decay_class":
        new[-1] = (d, s, "forever", c)
    elif bad == "rating":
        new[-1] = (Draft(text=d.text, store=Store.EPISODIC, extra={"rating": 5}), s, dc, c)
    else:
        new[-1] = (Draft(text=d.text, store=Store.PROCEDURAL, extra={"kind": "habit"}), s, dc, c)
    with pytest.raises(IntegrityError, match="CHECK constraint failed"):
        db.write_sync(lambda conn: insert_memories(conn, new, now=NOW))
    assert db.read(lambda c: c.execute("SELECT count(*) FROM memory").fetchone()[0]) == before

    # SQLite checks again on the same (writer) connection afterwards.
    def plain(conn: Connection) -> None:
        repo.insert_memory(conn, Draft(text="x", store=Store.EPISODIC), now=NOW,
                           decay_class="forever", scores=Scores(), confidence=0.5)
    with pytest.raises(IntegrityError, match="CHECK constraint failed"):
        db.write_sync(plain)


def test_checked_is_the_schemas_own_lists(db: Database) -> None:
    """Every CHECK (col IN (...)) of the tables ``insert_memories`` writes is in ``CHECKED``
    with the same values, so turning SQLite's checks off for the batch loses none."""
    tables = {"memory", "episode", "fact", "procedure", "statistic", "link", "history"}
    found: dict[tuple[str, str], frozenset[object]] = {}
    for name, sql in db.read(lambda c: c.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()):
        if name not in tables:
            continue
        for col, values in re.findall(r"CHECK\s*\(\s*(\w+)\s+IN\s*\(([^)]*)\)\s*\)", sql):
            found[(name, col)] = frozenset(
                int(v) if re.fullmatch(r"-?\d+", v) else v.strip("'")
                for v in (x.strip() for x in values.split(",")))
        assert "CHECK" not in re.sub(r"CHECK\s*\(\s*\w+\s+IN\s*\([^)]*\)\s*\)", "", sql), name
    assert found == CHECKED


def test_a_failure_inside_the_batch_turns_sqlites_checks_back_on(db: Database) -> None:
    """A constraint SQLite still checks (NOT NULL) fails in the middle of the statements run
    with CHECKs off: nothing of the batch stays, and the connection checks again after."""
    before = db.read(lambda c: c.execute("SELECT count(*) FROM memory").fetchone()[0])
    new = _drafts("null", 0)[1:]
    d, s, dc, c = new[-1]
    new[-1] = (Draft(text=None, store=Store.EPISODIC), s, dc, c)  # type: ignore[arg-type]
    with pytest.raises(IntegrityError, match="NOT NULL"):
        db.write_sync(lambda conn: insert_memories(conn, new, now=NOW))
    assert db.read(lambda c: c.execute("SELECT count(*) FROM memory").fetchone()[0]) == before
    # A row of its own to break (the module's vault may be empty: pytest-xdist may run this
    # test first on its worker), written the ordinary way.
    mid = int(db.write_sync(lambda conn: insert_memories(conn, _drafts("ok", 0)[1:2],
                                                           now=NOW))[0])
    with pytest.raises(IntegrityError, match="CHECK constraint failed"):
        db.write_sync(lambda conn: conn.execute(
            "UPDATE memory SET decay_class = 'forever' WHERE id = ?", (mid,)))
