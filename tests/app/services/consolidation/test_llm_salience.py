"""Reference 004's fields in LLM mode (issue 27 item 1): the prompt asks for ``analysis``,
each episode's ``salience_score`` with its ``reasoning``, per-fact ``reasoning`` and
``entry_type`` (ENTITY_UPDATE a change); the LLM's salience replaces the rules' routing
decision and sets aside an episode it rates low, all undone with the run. Against the local
fake OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

from app.api import Turn
from app.clock import parse_iso
from app.domain.memory import Store
from app.services.llm.parsing import parse_reply, parse_salience
from tests.app.services.consolidation.fake_llm import FakeLlm, envelope, llm_vault
from tests.inside import inside

NOW = parse_iso("2026-07-02T00:00:00Z")
AT = parse_iso("2026-06-01T10:00:00Z")


def test_entity_update_is_a_change_and_salience_is_read_forgivingly() -> None:
    reply = json.dumps({
        "analysis": "A move.", "deletes": [],
        "facts": [{"subject": "Sam", "predicate": "lives_in", "object": "Porto",
                   "statement": "Sam lives in Porto", "entry_type": "ENTITY_UPDATE",
                   "reasoning": "a move", "source_ids": [5]},
                  {"subject": "Sam", "predicate": "habit", "object": "runs on Sundays",
                   "statement": "Sam runs on Sundays", "entry_type": "procedure",
                   "source_ids": [5]}],
        "salience": [{"id": 5, "salience_score": 0.8, "reasoning": "a move"},
                     {"id": 6, "salience_score": "0.1"}, {"id": 99, "salience_score": 0.5},
                     {"id": 7, "salience_score": 1.5}, "junk"]})
    facts, _ = parse_reply(reply, [5, 6, 7])
    assert facts[0].change is True and facts[1].store == "procedural"
    note, rated = parse_salience(reply, [5, 6, 7])
    assert note == "A move." and rated == {5: (0.8, "a move"), 6: (0.1, "")}
    assert parse_salience("not json at all", [5]) == (None, {})


def test_llm_salience_routes_and_is_undone_with_the_run(vault_dir: Path, fast_kdf: object,
                                                        fake: FakeLlm) -> None:
    v = llm_vault(vault_dir, "pw-llm", fast_kdf, NOW, fake)
    try:
        v.import_turns([Turn("s", "Sam", "I moved to Porto last week.", AT, "t1"),
                        Turn("s", "Sam", "Anyway, speak soon and say hi to everyone!",
                             AT + 60, "t2")])
        eps = dict(inside(v).db.read(lambda c: c.execute(
            "SELECT m.ref, e.id FROM memory m JOIN link l ON l.dst = m.id AND l.kind = "
            "'DERIVED_FROM' JOIN memory e ON e.id = l.src WHERE e.store = 'episodic'"
        ).fetchall()))
        assert set(eps) == {"t1", "t2"}  # the rules kept both
        fake.script(envelope(json.dumps({
            "analysis": "One move; a sign-off.", "deletes": [],
            "facts": [{"subject": "Sam", "predicate": "lives_in", "object": "Porto",
                       "statement": "Sam lives in Porto", "category": "place",
                       "source_ids": [eps["t1"]], "entry_type": "ENTITY_UPDATE"}],
            "salience": [{"id": eps["t1"], "salience_score": 0.9, "reasoning": "a new home"},
                         {"id": eps["t2"], "salience_score": 0.1,
                          "reasoning": "a sign-off"}]})))
        report = v.consolidate(steps=("extract",)).value
        assert "salience_score" in fake.requests[0]["messages"][0]["content"]
        assert report.counts["routed_by_llm"] == 2 and report.counts["episodes_set_aside"] == 1
        low = v.explain(eps["t2"])
        assert low.status == "archived" and low.routing is not None
        assert low.routing.by == "llm" and low.routing.stores == (Store.SHORT_TERM,)
        assert low.routing.reason == "a sign-off" and low.routing.salience == 0.1
        high = v.explain(eps["t1"])
        assert high.status == "active" and high.routing is not None
        assert (high.routing.by, high.routing.salience) == ("llm", 0.9)
        v.undo_run(report.run_id)
        back = v.explain(eps["t2"])
        assert back.status == "active" and back.routing is not None
        assert back.routing.by == "rules" and Store.EPISODIC in back.routing.stores
    finally:
        v.lock()
