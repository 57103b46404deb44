"""Consolidation: facts with sources, contradictions and the inbox, undo, habits, statistics,
decay and archival, and the scheduler wiring (issue 5)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from app.api import Turn
from app.clock import FixedClock, parse_iso
from app.facade import Vault
from app.services.recall import Filters
from storage import lifecycle
from tests.conftest import new_vault
from tests.inside import inside

# The real model, loaded once per session instead of once per vault (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("shared_model")

DAY = 86400.0


@pytest.fixture
def vault(vault_dir: Path, fast_kdf: object) -> Vault:
    v = new_vault(vault_dir, "pw-cons", threaded=False,
                  clock=FixedClock(parse_iso("2026-07-02T00:00:00Z")), use_chroma=False)
    yield v
    if not v.locked:
        v.lock()


def turns(*items: tuple[str, str, str, str]) -> list[Turn]:
    return [Turn(session, "Sam", text, parse_iso(at), ref) for session, text, at, ref in items]


PLANTED = turns(
    ("may", "I live in Lisbon, near the river.", "2026-05-03T10:00:00Z", "a1"),
    ("may", "My sister Ana visits on Sundays.", "2026-05-03T10:01:00Z", "a2"),
    ("jun", "I moved to Porto last week!", "2026-06-10T10:00:00Z", "b1"),
)


def active_texts(v: Vault) -> dict[int, str]:
    return dict(inside(v).db.read(lambda c: c.execute(
        "SELECT id, text FROM memory WHERE status = 'active'").fetchall()))


def snapshot(v: Vault) -> dict[str, object]:
    def read(c: object) -> dict[str, object]:
        return {
            "counts": lifecycle.table_counts(c),  # type: ignore[arg-type]
            "memories": c.execute("SELECT id, status, superseded_by, valid_until, confidence "  # type: ignore[attr-defined]
                                  "FROM memory ORDER BY id").fetchall(),
            "links": c.execute("SELECT src, dst, kind FROM link ORDER BY 1,2,3").fetchall(),  # type: ignore[attr-defined]
        }
    return inside(v).db.read(read)


def test_import_consolidate_recall_returns_facts_with_sources(vault: Vault) -> None:
    vault.import_turns(PLANTED)
    report = vault.consolidate().value
    assert report.counts["facts_created"] >= 3
    hits = vault.recall("where does Sam live", k=5, touch=False)
    top = hits[0]
    assert top.store == "semantic" and top.text == "Sam lives in Porto"
    assert top.refs == ("b1",)  # the fact's source turn
    ex = vault.explain(top.id)
    assert [s.store for s in ex.sources] == ["episodic", "short_term"]
    assert ex.sources[-1].ref == "b1"


def test_planted_update_is_resolved_by_policy_and_undo_puts_everything_back(vault: Vault
                                                                            ) -> None:
    vault.import_turns(PLANTED)
    before = snapshot(vault)
    report = vault.consolidate().value
    assert report.counts["contradictions_found"] == 1
    assert report.counts["auto_resolved"] == 1
    items = vault.contradictions(status="auto")
    assert len(items) == 1
    assert {items[0].a.text, items[0].b.text} == {"Sam lives in Lisbon",
                                                        "Sam lives in Porto"}
    lisbon = items[0].a if "Lisbon" in items[0].a.text else items[0].b
    m = vault.get(lisbon.id)
    assert m.status.value == "superseded" and m.valid_until == parse_iso("2026-06-10T10:00:00Z")
    # Time travel by what Kept knew (learned-at and validity): before the run nothing was
    # learned; after it, Lisbon's validity ended on June 10.
    facts = Filters(stores=("semantic",), known_at=parse_iso("2026-07-01T00:00:00Z"))
    assert vault.recall("where does Sam live", k=3, touch=False, filters=facts) == []
    later = vault.recall("where does Sam live", k=3, touch=False, filters=Filters(
        stores=("semantic",), known_at=parse_iso("2026-07-03T00:00:00Z")))
    assert [h.text for h in later if "lives" in h.text] == ["Sam lives in Porto"]
    vault.undo_run(report.run_id)
    after = snapshot(vault)
    assert after == before
    # Undone runs are done again by the next run.
    again = vault.consolidate().value
    assert again.counts["facts_created"] == report.counts["facts_created"]


def test_plain_contradiction_goes_to_inbox_and_the_person_resolves(vault: Vault) -> None:
    vault.import_turns([
        Turn("a", "Sam", "I think my favorite film is Alien.", parse_iso("2026-05-01T10:00:00Z"), "x1"),
        Turn("b", "Sam", "Honestly, I guess my favorite film is Heat.", parse_iso("2026-05-02T10:00:00Z"), "x2"),
    ])
    report = vault.consolidate().value
    assert report.counts.get("sent_to_inbox") == 1
    [item] = vault.contradictions()
    assert item.status == "open" and item.a.refs == ("x1",) and item.b.refs == ("x2",)
    vault.resolve(item.id, "a")
    assert vault.contradictions() == []
    assert vault.get(item.a.id).user_validated
    assert vault.get(item.b.id).status.value == "superseded"
    vault.reopen(item.id)
    assert [i.id for i in vault.contradictions()] == [item.id]
    assert vault.get(item.b.id).status.value == "active"
    vault.resolve(item.id, "both")
    a = vault.get(item.a.id)
    assert a.valid_until == parse_iso("2026-05-02T10:00:00Z") and a.status.value == "active"
    vault.reopen(item.id)
    new = vault.resolve(item.id, "edit", "Sam's favorite film is Ronin").value
    assert new is not None and vault.get(new).text == "Sam's favorite film is Ronin"


def test_duplicates_merge_and_corroborate(vault: Vault) -> None:
    vault.import_turns([
        Turn("a", "Sam", "I'm allergic to peanuts.", parse_iso("2026-05-01T10:00:00Z"), "d1"),
        Turn("b", "Sam", "Remember, I am allergic to peanuts!", parse_iso("2026-05-09T10:00:00Z"), "d2"),
    ])
    report = vault.consolidate().value
    assert report.counts["facts_created"] == 1 and report.counts["facts_corroborated"] == 1
    [hit] = [h for h in vault.recall("allergy peanuts", k=5, touch=False) if h.store == "semantic"]
    assert set(hit.refs) == {"d1", "d2"}
    # 003 confidence: a second source is corroboration no single source can match, however
    # reliable its pattern; still short of the .7 that lets a newer fact win on its own.
    from app.services import scoring
    conf = vault.get(hit.id).confidence
    assert scoring.derived_confidence(1.0, 1, "semantic", 0.0) < conf < 0.7


def test_habits_become_procedures_and_statistics_follow_forget(vault: Vault) -> None:
    saturdays = ["2026-04-04", "2026-04-11", "2026-04-18", "2026-04-25"]
    vault.import_turns([Turn(f"s{n}", "Sam", "I went climbing with the gang this morning.",
                             parse_iso(d + "T09:00:00Z"), f"c{n}")
                        for n, d in enumerate(saturdays)])
    report = vault.consolidate().value
    assert report.counts["procedures_created"] >= 1
    procs = inside(vault).db.read(lambda c: c.execute(
        "SELECT m.id, m.text, p.trigger FROM memory m JOIN procedure p ON p.memory_id = m.id "
        "WHERE p.kind = 'procedure'").fetchall())
    assert any("often goes climbing on Saturdays" in t for _i, t, _k in procs)
    proc_id = next(i for i, t, _k in procs if "climbing" in t)
    assert len(vault.explain(proc_id).sources) >= 3
    stats = dict(inside(vault).db.read(lambda c: c.execute(
        "SELECT metric, sample_size FROM statistic").fetchall()))
    assert stats["most_active_weekday"] == 4
    # Forgetting the episodes recomputes the statistics from what is left.
    plan = vault.forget_plan(query="climbing")
    vault.forget(plan)
    stats = dict(inside(vault).db.read(lambda c: c.execute(
        "SELECT metric, sample_size FROM statistic").fetchall()))
    assert stats == {}


def test_decay_archives_never_deletes(vault: Vault) -> None:
    from app.domain.memory import Draft
    old = vault.remember(Draft(text="a passing remark about the weather",
                               occurred_at=parse_iso("2024-01-01T00:00:00Z"),
                               importance=0.05)).value
    kept = vault.remember(Draft(text="my passport number is in the drawer",
                                occurred_at=parse_iso("2024-01-01T00:00:00Z"),
                                user_validated=True, importance=0.9)).value
    # Retention counts from when Kept learned a memory (issue 12): a year and more later.
    later = inside(vault).clock.now() + 400 * DAY
    report = vault.consolidate(steps=("decay",), now=later).value
    assert report.counts["archived"] >= 1
    assert vault.get(old).status.value == "archived"
    assert vault.get(kept).status.value == "active"
    # Archived by decay: still found (000: cold facts remain for search), marked archived.
    assert [h.status for h in vault.recall("weather remark", touch=False) if h.id == old] == [
        "archived"]
    vault.restore(old)
    assert vault.get(old).status.value == "active"


def test_a_failing_batch_is_skipped_and_retried(vault: Vault, monkeypatch: pytest.MonkeyPatch
                                                ) -> None:
    import app.services.consolidation.pipeline as cons
    vault.import_turns(PLANTED)
    real = cons.Pipeline._store_facts
    calls = {"n": 0}

    def flaky(self: object, rl: object, facts: object, now: float, *scope: object) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("transient")
        real(self, rl, facts, now, *scope)  # type: ignore[arg-type]
    monkeypatch.setattr(cons.Pipeline, "_store_facts", flaky)
    first = vault.consolidate().value
    assert first.failed_batches == 1 and "facts_created" not in first.counts
    second = vault.consolidate().value
    assert second.counts["facts_created"] >= 3


def test_run_report_holds_no_text(vault: Vault) -> None:
    vault.import_turns(PLANTED)
    report = vault.consolidate().value
    raw = inside(vault).db.read(lambda c: c.execute("SELECT report FROM run WHERE id = ?",
                                                    (report.run_id,)).fetchone()[0])
    payloads = inside(vault).db.read(lambda c: [r[0] or "" for r in c.execute(
        "SELECT payload FROM run_change")])
    for blob in [raw, *payloads]:
        assert "Lisbon" not in blob and "Porto" not in blob
    json.loads(raw)


def test_cancel_stops_between_batches(vault: Vault) -> None:
    from app.services.consolidation import CancelToken
    vault.import_turns(PLANTED)
    token = CancelToken()
    token.cancel()
    report = vault.consolidate(cancel=token).value
    assert report.cancelled and report.counts == {}


# --- scheduler ------------------------------------------------------------------------------

def test_scheduler_wiring_adds_the_jobs(vault: Vault) -> None:
    from app.jobs import Jobs, build_scheduler
    jobs = Jobs(vault, inside(vault).clock)
    sched = build_scheduler(jobs, vault.setting)
    sched.start(paused=True)  # job defaults apply when jobs are scheduled; nothing runs
    try:
        ids = {j.id for j in sched.get_jobs()}
        assert ids == {"heartbeat", "consolidation", "decay", "synthesis", "backup", "sync"}
        sync = sched.get_job("sync")  # its own thread, every SYNC_TICK_S (issue 29)
        assert sync.executor == "sync" and sync.trigger.interval.total_seconds() == 2
        assert sync.max_instances == 1 and sync.coalesce is True
        backup = sched.get_job("backup")  # off by default: added, paused until turned on
        assert backup.next_run_time is None
        hb = sched.get_job("heartbeat")
        assert hb.trigger.interval.total_seconds() == 15 * 60
        assert hb.max_instances == 1 and hb.coalesce is True and hb.misfire_grace_time == 3600
        assert str(sched.get_job("synthesis").trigger.fields[4]) == "6"  # day_of_week
    finally:
        sched.shutdown(wait=False)
    vault.set_setting("consolidation.heartbeat_minutes", 5)
    sched2 = build_scheduler(jobs, vault.setting)
    assert sched2.get_job("heartbeat").trigger.interval.total_seconds() == 300
    # A running scheduler picks up a change at once.
    from app.jobs import reschedule
    sched2.start(paused=True)
    try:
        vault.set_setting("consolidation.heartbeat_minutes", 7)
        reschedule(sched2, vault.setting)
        assert sched2.get_job("heartbeat").trigger.interval.total_seconds() == 420
    finally:
        sched2.shutdown(wait=False)


def test_jobs_never_overlap_and_survive_failures(vault_dir: Path, fast_kdf: object,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A real BackgroundScheduler with the production settings: two jobs never run at once,
    and a job that raises does not stop the scheduler."""
    from app.jobs import Jobs, build_scheduler
    v = Vault.create(vault_dir, "pw-cons", kdf=fast_kdf, threaded=True, use_chroma=False,
                     load_model=False).vault
    try:
        active = {"now": 0, "max": 0, "runs": 0, "fail_next": True}
        lock = threading.Lock()
        real = v.consolidate

        def slow(**kw: object) -> object:
            with lock:
                active["now"] += 1
                active["max"] = max(active["max"], active["now"])
                active["runs"] += 1
                fail = active["fail_next"]
                active["fail_next"] = False
            try:
                time.sleep(0.05)  # hold the worker so overlaps would show
                if fail:
                    raise RuntimeError("boom")
                return real(**kw)  # type: ignore[arg-type]
            finally:
                with lock:
                    active["now"] -= 1
        monkeypatch.setattr(v, "consolidate", slow)
        outcomes = []
        jobs = Jobs(v, inside(v).clock, on_done=outcomes.append)
        sched = build_scheduler(jobs, v.setting)
        sched.start()
        from datetime import UTC, datetime
        now = datetime.now(UTC)
        for job in sched.get_jobs():  # all four due at once: they must queue, not overlap
            job.modify(next_run_time=now)
        deadline = time.time() + 30
        while len(outcomes) < 4 and time.time() < deadline:
            time.sleep(0.02)
        sched.shutdown(wait=True)
        assert active["max"] == 1
        assert active["runs"] == 4 and len(outcomes) == 4
        assert sched.running is False
        assert outcomes[0].ok is False and outcomes[0].error == "RuntimeError"
        assert any(o.ok for o in outcomes[1:])
    finally:
        v.lock()
