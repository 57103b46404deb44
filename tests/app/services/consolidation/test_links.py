"""Links of reference 002 on real consolidation (issue 27 item 7): PRECEDED_BY within a
conversation and between conversations about one topic, RELATES_TO between facts about the same
person, REINFORCES when a turn says a fact again; all undone with their run."""

from __future__ import annotations

from pathlib import Path

from app.clock import FixedClock, parse_iso
from app.facade import Vault
from tests.conftest import turns_vault
from tests.inside import inside


def links(v: Vault, kind: str) -> set[tuple[str, str]]:
    return {(a, b) for a, b in inside(v).db.read(lambda c: c.execute(
        "SELECT s.text, d.text FROM link l JOIN memory s ON s.id = l.src "
        "JOIN memory d ON d.id = l.dst WHERE l.kind = ?", (kind,)).fetchall())}


def test_links_between_turns_topics_and_facts(vault_dir: Path, fast_kdf: object) -> None:
    v = turns_vault(vault_dir, fast_kdf, "pw-links", [
        ("s1", "2026-09-01T10:00:00Z", "Maya", "We kicked off Project Falcon at work today."),
        ("s1", "2026-09-01T10:01:00Z", "Maya", "My sister Ana lives in Porto."),
        ("s1", "2026-09-01T10:02:00Z", "Maya", "Anyway, lunch was good."),
        ("s2", "2026-09-08T09:00:00Z", "Maya", "Coffee first."),
        ("s2", "2026-09-08T09:05:00Z", "Maya", "Project Falcon slipped a week, again."),
        ("s2", "2026-09-08T09:06:00Z", "Maya", "Ana works at Fabrikam as a nurse."),
        ("s3", "2026-09-15T09:00:00Z", "Maya", "Project Falcon shipped!"),
        ("s3", "2026-09-15T09:01:00Z", "Maya", "My sister Ana lives in Porto.")],
        load_model=False, clock=FixedClock(parse_iso("2026-10-01T00:00:00Z")))
    try:
        run = v.consolidate(now=parse_iso("2026-09-16T00:00:00Z")).value
        before = links(v, "PRECEDED_BY")
        # Within each conversation, each turn after the one before it.
        assert ("My sister Ana lives in Porto.", "We kicked off Project Falcon at work today."
                ) in before
        assert ("Project Falcon slipped a week, again.", "Coffee first.") in before
        assert not any(a == "Coffee first." for a, _ in before)  # a conversation's first turn
        # Between conversations about the project: first mention after the last one before.
        assert ("Project Falcon slipped a week, again.",
                "We kicked off Project Falcon at work today.") in before
        assert ("Project Falcon shipped!", "Project Falcon slipped a week, again.") in before
        # The same fact said again: the turn supports it.
        assert any(a == "My sister Ana lives in Porto." and "Porto" in b and a != b
                   for a, b in links(v, "REINFORCES"))
        # Facts about Ana relate to each other.
        related = links(v, "RELATES_TO")
        assert any("Fabrikam" in a and "Porto" in b or "Porto" in a and "Fabrikam" in b
                   for a, b in related), related
        assert run.counts["sequence_links"] >= 7

        v.undo_run(run.run_id)
        assert links(v, "PRECEDED_BY") == set() and links(v, "RELATES_TO") == set()
        assert links(v, "REINFORCES") == set()
    finally:
        v.lock()
