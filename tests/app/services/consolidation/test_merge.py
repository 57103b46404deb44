"""Merging what repeats (issue 27 item 4): near-duplicate facts and habits of one scope become
one memory with all the sources; different values, scopes or weekdays never merge; undone with
their run. Sentences written for this test."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.api import Turn
from app.clock import FixedClock, parse_iso
from app.facade import Vault
from app.services.merge import FactItem, HabitItem, fact_merges, habit_merges
from tests.inside import inside

G: tuple[str, str | None] = ("global", None)
pytestmark = pytest.mark.usefixtures("shared_model")


def fact(i: int, pred: str, value: str, scope: tuple[str, str | None] = G,
         subject: str = "Maya", validated: bool = False) -> FactItem:
    return FactItem(i, scope, subject, pred, value, float(i), validated)


def test_the_fact_that_says_more_is_kept() -> None:
    assert fact_merges([fact(1, "works_at", "Northwind"),
                        fact(2, "employer", "Northwind as a product designer"),
                        fact(3, "works at", "northwind")]) == [(1, 2), (3, 2)]


def test_different_values_scopes_people_or_a_confirmed_fact_never_merge() -> None:
    assert fact_merges([fact(1, "works_at", "Northwind"), fact(2, "works_at", "Fabrikam")]) == []
    assert fact_merges([fact(1, "works_at", "Northwind"),
                        fact(2, "works_at", "Northwind", scope=("claude", None))]) == []
    assert fact_merges([fact(1, "works_at", "Northwind"),
                        fact(2, "works_at", "Northwind", subject="Tom")]) == []
    assert fact_merges([fact(1, "works_at", "Northwind", validated=True),
                        fact(2, "works_at", "Northwind Ltd")]) == []


def test_one_habit_in_other_words_and_not_on_another_day() -> None:
    said = HabitItem(1, G, "Maya", "Maya usually runs on Saturday mornings", None, 1.0)
    counted = HabitItem(2, G, "Maya", "Maya often goes running on Saturdays, in the morning",
                        "Maya|go running|weekday=5", 2.0)
    sunday = HabitItem(3, G, "Maya", "Maya often goes running on Sundays",
                       "Maya|go running|weekday=6", 3.0)
    swim = HabitItem(4, G, "Maya", "Maya usually swims on Saturdays", None, 4.0)
    assert habit_merges([said, counted, sunday, swim]) == [(1, 2)]


def test_consolidation_merges_keeps_the_sources_and_undo_splits_them(vault_dir: Path,
                                                                     fast_kdf: object) -> None:
    v = Vault.create(vault_dir, "pw-merge", kdf=fast_kdf, threaded=False, use_chroma=False,
                     clock=FixedClock(parse_iso("2026-10-05T00:00:00Z"))).vault
    v.set_setting("owner.name", "Maya")
    said = [("2026-09-05", "I work at Northwind as a product designer."),
            ("2026-09-06", "Northwind is where I work, been there 3 years."),
            ("2026-09-08", "I'm a designer at Northwind."),
            ("2026-09-07", "I usually run on Saturday mornings."),
            ("2026-09-12", "I went running on Saturday, 5k."),
            ("2026-09-19", "I went running this Saturday again"),
            ("2026-09-26", "I went running, Saturday as always")]

    def state() -> dict[str, str]:
        return dict(inside(v).db.read(lambda c: c.execute(
            "SELECT text, status FROM memory WHERE store IN ('semantic', 'procedural')"
        ).fetchall()))
    try:
        v.import_turns([Turn(f"s{i}", "Maya", t, parse_iso(d + "T09:00:00Z"), f"r{i}")
                        for i, (d, t) in enumerate(said)])
        end = parse_iso("2026-10-04T00:00:00Z")
        v.consolidate(now=end, steps=("extract", "entities", "procedures"))
        before = state()
        assert set(before.values()) == {"active"}
        run = v.consolidate(now=end, steps=("merge",)).value
        after = state()
        assert after["Maya works at Northwind"] == "superseded"
        assert after["Maya works at Northwind as a product designer"] == "active"
        assert after["Maya usually runs on Saturday mornings"] == "superseded"
        assert after["Maya often goes running on Saturdays, in the morning"] == "active"
        assert run.counts["facts_merged"] == 1 and run.counts["habits_merged"] == 1
        kept = next(h.id for h in v.recall("Where does Maya work?", k=5)
                    if h.text == "Maya works at Northwind as a product designer")
        texts = {s.text for s in v.explain(kept).sources}
        # Its own turn, and the turn of the fact merged into it.
        assert {said[0][1], "I'm a designer at Northwind."} <= texts

        v.undo_run(run.run_id)
        assert state() == before
    finally:
        v.lock()
