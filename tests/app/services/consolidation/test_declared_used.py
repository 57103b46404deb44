"""Issue 12, item 11: nothing declared and unused. Every setting in app/settings.py and every
policy number in app/policy.py is read by the code (guards), and the three that were not now
work: ``recall.context_budget``, the weekly frequency boost (002) and the five-factor
confidence (003)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from app import policy
from app.api import Turn
from app.clock import FixedClock, parse_iso
from app.domain.fact import EpisodeView
from app.domain.memory import Draft
from app.facade import Vault
from app.services import scoring
from app.services.extract import extract
from app.settings import SETTINGS
from tests import ROOT
from tests.conftest import new_vault
from tests.inside import inside

NOW = parse_iso("2026-07-02T00:00:00Z")
HOUR = 3600.0


def _sources(exclude: str) -> Iterator[tuple[Path, ast.Module]]:
    for package in ("app", "storage", "ui"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path != ROOT / exclude:
                yield path, ast.parse(path.read_text("utf-8"))


def test_every_declared_setting_is_read() -> None:
    literals = {node.value for _p, tree in _sources("app/settings.py") for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    unread = [s.key for s in SETTINGS if s.key not in literals]
    assert unread == [], f"declared settings nothing reads: {unread}"


def test_every_policy_number_is_used() -> None:
    declared = {n.id for node in ast.parse((ROOT / "app/policy.py").read_text("utf-8")).body
                if isinstance(node, (ast.Assign, ast.AnnAssign))
                for n in (node.targets if isinstance(node, ast.Assign) else [node.target])
                for n in (n.elts if isinstance(n, ast.Tuple) else [n])
                if isinstance(n, ast.Name) and n.id.isupper()}
    used = set()
    for _path, tree in _sources("app/policy.py"):
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "policy"):
                used.add(node.attr)
            elif isinstance(node, ast.ImportFrom) and node.module == "app.policy":
                used.update(a.name for a in node.names)
    assert declared and sorted(declared - used) == []


# --- recall.context_budget ---------------------------------------------------------------------

@pytest.fixture
def vault(vault_dir: Path, fast_kdf: object) -> Iterator[Vault]:
    v = new_vault(vault_dir, "pw-declared", threaded=False, clock=FixedClock(NOW),
                  use_chroma=False, load_model=False)
    yield v
    if not v.locked:
        v.lock()


def test_context_budget_setting_is_used(vault: Vault) -> None:
    for n in range(12):
        vault.remember(Draft(text=f"Sam talked about the garden plan, part {n} of many.",
                             occurred_at=NOW - n * HOUR, speaker="Sam"))
    assert vault.context("garden plan").budget == policy.DEFAULT_CONTEXT_BUDGET
    vault.set_setting("recall.context_budget", 40)
    ctx = vault.context("garden plan")
    assert ctx.budget == 40 and 0 < ctx.used <= 40
    assert len(ctx.items) < 12
    assert vault.context("garden plan", budget=4000).budget == 4000  # an explicit budget wins


# --- the weekly frequency boost (002) -----------------------------------------------------------

def test_frequency_boost_for_frequent_memories_used_this_week() -> None:
    base = scoring.frequency(12)
    assert scoring.frequency(12, 24.0) == pytest.approx(base * policy.FREQUENT_WEEKLY_BOOST)
    assert scoring.frequency(12, 8 * 24.0) == base       # not used this week: no boost
    assert scoring.frequency(9, 1.0) == scoring.frequency(9)  # not frequent: no boost
    assert scoring.frequency(30, 1.0) == 1.0             # saturated stays 1


def test_the_boost_reaches_stored_scores_and_recall(vault: Vault) -> None:
    used = vault.remember(Draft(text="Sam keeps the spare key under the blue flowerpot.",
                                occurred_at=NOW - 40 * 24 * HOUR)).value
    idle = vault.remember(Draft(text="Sam keeps the bike lock code in the blue notebook.",
                                occurred_at=NOW - 40 * 24 * HOUR)).value
    inside(vault).db.write_sync(lambda c: c.executemany(
        "UPDATE memory SET access_count = 12, last_accessed_at = ? WHERE id = ?",
        [(NOW - 2 * 24 * HOUR, used), (NOW - 20 * 24 * HOUR, idle)]))
    vault.consolidate(steps=("decay",))
    stored = dict(inside(vault).db.read(lambda c: c.execute(
        "SELECT id, frequency FROM memory WHERE id IN (?, ?)", (used, idle)).fetchall()))
    assert stored[used] == pytest.approx(scoring.frequency(12) * policy.FREQUENT_WEEKLY_BOOST)
    assert stored[idle] == pytest.approx(scoring.frequency(12))
    hits = {h.id: h for h in vault.recall("Sam keeps blue", k=5, touch=False)}
    assert hits[used].breakdown["frequency"] == pytest.approx(stored[used])
    assert hits[idle].breakdown["frequency"] == pytest.approx(stored[idle])


# --- the five-factor confidence (003) -----------------------------------------------------------

def turns(*items: tuple[str, str]) -> list[Turn]:
    return [Turn(f"s{n}", "Sam", text, parse_iso(at), f"r{n}")
            for n, (text, at) in enumerate(items)]


def test_a_derived_fact_carries_the_003_confidence(vault: Vault) -> None:
    text, at = "I work at Spotify as a backend engineer.", "2026-06-01T10:00:00Z"
    vault.import_turns(turns((text, at)))
    vault.consolidate(steps=("extract",))
    [(conf,)] = inside(vault).db.read(lambda c: c.execute(
        "SELECT confidence FROM memory WHERE store = 'semantic'").fetchall())
    [cand] = [f for f in extract(EpisodeView(1, text, "Sam", parse_iso(at)))
              if f.predicate == "works_at"]
    hours = (NOW - parse_iso(at)) / HOUR
    expected = scoring.confidence(cand.confidence, 0.0, scoring.recency("semantic", hours),
                                  None, None)
    assert conf == pytest.approx(expected)
    assert 0.4 < conf < 0.6  # one explicit, unreviewed, never-used source


def test_corroboration_outweighs_a_lone_newer_claim(vault: Vault) -> None:
    """003 order with 003 confidence: the older fact, said four times, beats one newer
    statement by the confidence margin; a lone newer statement no longer wins just by being
    newer (it would need > .7)."""
    vault.import_turns(turns(*[("I work at Deezer.", f"2026-05-0{d}T10:00:00Z")
                               for d in range(1, 5)]))
    vault.consolidate(steps=("extract",))
    vault.import_turns([Turn("t", "Sam", "I work at Spotify.", parse_iso("2026-06-01T10:00:00Z"),
                             "t1")])
    report = vault.consolidate(steps=("extract",)).value
    assert report.counts["auto_resolved"] == 1
    [item] = vault.contradictions(status="auto")
    assert "confidence margin" in (item.resolution or "")
    active = {t for (t,) in inside(vault).db.read(lambda c: c.execute(
        "SELECT text FROM memory WHERE store = 'semantic' AND status = 'active'").fetchall())}
    assert active == {"Sam works at Deezer"}


def test_two_lone_statements_that_disagree_go_to_the_person(vault: Vault) -> None:
    vault.import_turns(turns(("I live in Lisbon, in a small flat.", "2026-05-01T10:00:00Z"),
                             ("I live in Porto with two roommates.", "2026-05-03T10:00:00Z")))
    report = vault.consolidate(steps=("extract",)).value
    assert report.counts["sent_to_inbox"] == 1 and "auto_resolved" not in report.counts
