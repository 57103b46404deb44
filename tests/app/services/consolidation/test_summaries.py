"""Short-term summaries (issue 27 item 2): a long conversation becomes one summary episode
that keeps its sources (DERIVED_FROM every turn), extractive by default, by the LLM when one is
configured (a local HTTP server replays its replies), counted in the run and undone with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app import policy
from app.api import Turn
from app.clock import parse_iso
from app.facade import Vault
from app.services import summaries
from app.services.summaries import SummaryTurn
from tests.app.services.consolidation.fake_llm import FakeLlm, envelope, llm_vault
from tests.inside import inside

T = parse_iso("2026-05-08T13:56:00Z")
LOCOMO = Path(__file__).resolve().parents[4].parent / "shared" / "bench" / "locomo_dev.json"

# A long chat as people write it: small talk around a few things worth keeping.
SAID = [
    ("Ana", "Hey!"), ("Ben", "Hi Ana, how are you?"), ("Ana", "Good, thanks!"),
    ("Ana", "Big news: I got the job at Kitewood, I start on 3 June."),
    ("Ben", "Wow, congrats!"), ("Ana", "Thanks!! So excited."),
    ("Ben", "Is that the design studio near the river?"),
    ("Ana", "Yes, the one by the old bridge. I'll be a junior architect there."),
    ("Ben", "That's amazing."), ("Ana", "lol yes"),
    ("Ben", "We adopted a puppy last weekend, her name is Miso."),
    ("Ana", "Aww! What breed?"), ("Ben", "A beagle mix, about four months old."),
    ("Ana", "So cute"), ("Ben", "haha"),
    ("Ana", "My sister Eva is moving to Lisbon in August."),
    ("Ben", "Oh nice, will you visit her?"),
    ("Ana", "Yes, I'm planning a trip there in October."), ("Ben", "cool"),
    ("Ana", "ok"), ("Ben", "I started running again, three times a week before work."),
    ("Ana", "Good for you!"), ("Ben", "Thanks"), ("Ana", "sounds good"),
    ("Ben", "My knee still hurts after the half marathon in April though."),
    ("Ana", "Oh no"), ("Ben", "It's fine"), ("Ana", "ok cool"),
    ("Ana", "I've decided to learn Portuguese before the trip."),
    ("Ben", "Nice!"), ("Ana", "Anyway, have to go, bye!"), ("Ben", "Bye!"),
]
KEY = ["Kitewood", "Miso", "Lisbon", "Portuguese"]


def _turns(session: str = "chat-1") -> list[Turn]:
    return [Turn(session, who, text, T + 30 * i, f"{session}:{i}")
            for i, (who, text) in enumerate(SAID)]


def _summary_rows(v: Vault) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in inside(v).db.read(lambda c: c.execute(
        "SELECT m.id, m.text, m.session, m.occurred_at FROM memory m JOIN episode e "
        "ON e.memory_id = m.id WHERE e.event_type = 'summary'").fetchall())]


def test_extractive_keeps_what_was_said_and_drops_small_talk() -> None:
    turns = [SummaryTurn(i, who, text, T + i) for i, (who, text) in enumerate(SAID)]
    text, used = summaries.extractive(turns, None, max_chars=1000)
    assert all(k in text for k in KEY), text
    for chat in ("Hey!", "lol yes", "ok cool", "Bye!", "Good for you!"):
        assert chat not in text
    assert len(text) <= 1000 and used == sorted(used)
    # Time order: the job (turn 3) is told before the Portuguese plan (turn 28).
    assert text.index("Kitewood") < text.index("Portuguese")
    short, _ = summaries.extractive(turns, None, max_chars=120)
    assert 0 < len(short) <= 120


def test_a_long_conversation_becomes_one_summary_episode(vault: Vault) -> None:
    assert len(SAID) >= policy.SUMMARY_MIN_TURNS
    vault.import_turns(_turns() + [Turn("chat-2", "Ana", "Short one: moved desks.", T, "c2")])
    report = vault.consolidate(steps=("summaries",)).value
    assert report.counts["sessions_summarised"] == 1  # chat-2 is too short
    (mid, text, session, at), = _summary_rows(vault)
    assert session == "chat-1" and at == T + 30 * (len(SAID) - 1)
    assert text.startswith("Conversation on 8 May 2026 (32 turns, Ana and Ben):")
    assert sum(k in text for k in KEY) >= 3 and "lol" not in text
    ex = vault.explain(mid)
    assert len(ex.sources) == len(SAID)  # every turn it summarises is a source
    assert {s.store for s in ex.sources} == {"short_term"}
    hit = vault.recall("where does Ana's sister move", k=5, touch=False)
    assert mid in [h.id for h in hit]
    # No one place it was said: a summary hit carries no refs (explain has its sources).
    assert next(h for h in hit if h.id == mid).refs == ()
    assert any(h.refs for h in hit if h.id != mid)
    # Nothing new: the next run summarises nothing. Undone, the turns are summarised again.
    assert vault.consolidate(steps=("summaries",)).value.counts.get("sessions_summarised",
                                                                      0) == 0
    vault.undo_run(report.run_id)
    assert _summary_rows(vault) == []
    again = vault.consolidate(steps=("summaries",)).value
    assert again.counts["sessions_summarised"] == 1
    (mid, *_rest), = _summary_rows(vault)
    run = vault.consolidate(steps=("extract",)).value  # never a source of facts
    assert run.counts.get("facts_created", 0) > 0
    assert not any(int(mid) in _facts_from(vault, f) for f in run.ids.get("created", []))


def _facts_from(v: Vault, fid: int) -> list[int]:
    return [int(r[0]) for r in inside(v).db.read(lambda c: c.execute(
        "SELECT dst FROM link WHERE src = ? AND kind = 'DERIVED_FROM'", (fid,)).fetchall())]


def test_the_llm_writes_it_redacted_when_configured(vault_dir: Path, fast_kdf: object,
                                                    fake: FakeLlm) -> None:
    v = llm_vault(vault_dir, "pw-llm", fast_kdf, T + 3600, fake)
    try:
        v.set_setting("extraction.redact", True)
        v.import_turns(_turns())
        fake.script(envelope(json.dumps(
            {"summary": "[PERSON_1] got a job at Kitewood; [PERSON_2] adopted a puppy."})))
        report = v.consolidate(steps=("summaries",)).value
        assert report.counts["sessions_summarised"] == 1
        (_mid, text, _s, _at), = _summary_rows(v)
        assert "Ana got a job at Kitewood" in text and "Ben adopted a puppy" in text
        sent = json.dumps(fake.requests[-1])
        assert "Ana" not in sent and "[PERSON_1]" in sent
        # A reply that is no JSON: the extractive summary instead, nothing lost.
        v.import_turns(_turns("chat-3"))
        fake.script(envelope("Sure! Here is a summary: they talked."))
        assert v.consolidate(steps=("summaries",)).value.counts["sessions_summarised"] == 1
        assert any("Kitewood" in t for _i, t, s, _a in _summary_rows(v) if s == "chat-3")
    finally:
        v.lock()


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo dev data not present")
def test_long_locomo_dev_sessions_summarise_within_budget(embedder: Any) -> None:
    data = json.loads(LOCOMO.read_text())
    longest = sorted(((len(s["conversation"][k]), s["conversation"][k])
                      for s in data for k in s["conversation"]
                      if k.startswith("session_") and not k.endswith("date_time")),
                     key=lambda x: -x[0])[:2]
    for n, session in longest:
        turns = [SummaryTurn(i, t["speaker"], t["text"], T + i) for i, t in enumerate(session)]
        text, used = summaries.extractive(turns, embedder.embed)
        assert 0 < len(text) <= policy.SUMMARY_MAX_CHARS and n >= policy.SUMMARY_MIN_TURNS
        assert len(used) >= 3 and len({t.speaker for t in turns if t.id in used}) == 2


def test_the_step_ranks_by_the_vectors_the_vault_holds(vault: Vault) -> None:
    """Each turn kept as an event is ranked by that event's stored vector (issue 28: the
    step embedded every sentence of every conversation again); a turn kept as no event that
    has something worth summarising is embedded as its event would be; small talk needs
    none. The summary keeps what was said, in time order."""
    import numpy as np

    from app.domain.memory import Draft, Store
    from app.services.consolidation import summarise
    from app.services.ingest import embed_text
    vault.import_turns(_turns())
    pipeline = inside(vault).consolidation.pipeline
    group = inside(vault).db.read(pipeline.rows.summary_turns)
    vecs = summarise._turn_vectors(pipeline, group)
    assert vecs is not None and vecs.shape[0] == len(group) == len(SAID)
    events = dict(inside(vault).db.read(lambda c: c.execute(
        "SELECT l.dst, l.src FROM link l JOIN memory e ON e.id = l.src "
        "WHERE l.kind = 'DERIVED_FROM' AND e.store = 'episodic'").fetchall()))
    said = {s.turn for s in summaries.sentences(
        [SummaryTurn(t.id, t.speaker, t.text, t.occurred_at) for t in group])}
    embedder = inside(vault).embedder
    assert embedder is not None and events and len(events) < len(group)
    for i, t in enumerate(group):
        if t.id in events:  # the event's own vector, read, not made again
            stored = inside(vault).index.vector(events[t.id])
            assert stored is not None and np.array_equal(vecs[i], stored)
        elif i in said:  # made as the event's would be: time, speaker and text
            want = embedder.embed([embed_text(Draft(text=t.text, store=Store.EPISODIC,
                                                    occurred_at=t.occurred_at,
                                                    speaker=t.speaker))])[0]
            assert float(np.dot(vecs[i], want)) > 0.999
        else:  # nothing in it could be picked
            assert not vecs[i].any()
    text, used = summaries.extractive(
        [SummaryTurn(t.id, t.speaker, t.text, t.occurred_at) for t in group],
        embedder.embed, turn_vecs=vecs)
    assert sum(k in text for k in KEY) >= 3 and "lol" not in text
    assert used == sorted(used) and text.index("Kitewood") < text.index("Portuguese")
