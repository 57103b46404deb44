"""How an episode went (issue 27 item 8): outcomes said after it ("it went really well",
"that was a disaster"), the person's rating (``rate_episode``), and habits' success and
failure counts moving with both. Sentences written for this test, in other words than the
rules' own."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.api import Turn
from app.clock import FixedClock, parse_iso
from app.errors import NotFound, ValidationError
from app.facade import Vault
from app.services.habits import reports_activity
from app.services.outcomes import Turn as OTurn
from app.services.outcomes import infer, side_of
from tests.inside import inside

pytestmark = pytest.mark.usefixtures("shared_model")


@pytest.mark.parametrize("text, side", [
    ("Honestly the whole thing went brilliantly", 1),
    ("Our gig was a huge success!", 1),
    ("The dinner party was a total fiasco.", -1),
    ("Ugh, it didn't go well at all", -1),
    ("The hike went south after lunch", -1),
    ("We nailed it", 1),
    ("You nailed it!", None),                         # praise, not the speaker's outcome
    ("It was so amazing!", None),                     # enthusiasm alone is no outcome
    ("I really hope it goes well tomorrow", None),   # a wish, not an outcome
    ("Did the interview go well?", None),             # a question
    ("It was great to see you", None),                # a pleasantry
    ("The talk went fine but the drive home was a nightmare", None),  # both: unknown
    ("thanks!", None),
])
def test_outcome_cues_reworded(text: str, side: int | None) -> None:
    assert side_of(text) == side


def test_an_outcome_points_back_to_what_the_person_did_in_that_conversation() -> None:
    turns = [OTurn(1, "I went bouldering at the Depot after work", "Maya", "a"),
             OTurn(2, "Nice! How was it?", "assistant", "a"),
             OTurn(3, "It went really well, sent my first V4", "Maya", "a"),
             OTurn(4, "I went swimming this morning", "Maya", "b"),
             OTurn(5, "That was a complete disaster", "Tom", "b"),   # another speaker
             OTurn(6, "I went climbing today and it went great", "Maya", "c"),  # its own
             OTurn(7, "Wow, you nailed it!", "Maya", "d")]   # praise for the other speaker
    found = infer(turns, reports_activity)
    assert [(f.episode, f.side, f.cue) for f in found] == [(1, 1, 3), (6, 1, 6)]


def _episode(v: Vault, ref: str) -> int:
    return int(inside(v).db.read(lambda c: c.execute(
        "SELECT id FROM memory WHERE store = 'episodic' AND ref = ?", (ref,)).fetchone()[0]))


def _habit(v: Vault) -> tuple[str, int, int]:
    return tuple(inside(v).db.read(lambda c: c.execute(
        "SELECT m.text, p.success_count, p.failure_count FROM procedure p JOIN memory m ON "
        "m.id = p.memory_id WHERE p.kind = 'procedure' AND m.status = 'active'").fetchone()))


def test_ratings_and_outcomes_move_a_habits_counts_and_undo_clears_them(
        vault_dir: Path, fast_kdf: object) -> None:
    v = Vault.create(vault_dir, "pw-outcome", kdf=fast_kdf, threaded=False, use_chroma=False,
                     clock=FixedClock(parse_iso("2026-10-05T00:00:00Z"))).vault
    v.set_setting("owner.name", "Maya")
    # Four Tuesday evenings of climbing; after the third, "that was a disaster".
    said = [("2026-09-08", "s1", "I went climbing at the Depot tonight"),
            ("2026-09-15", "s2", "I went climbing at the Depot again"),
            ("2026-09-22", "s3", "I went climbing after work"),
            ("2026-09-22", "s3", "Honestly that was a disaster, tweaked my finger"),
            ("2026-09-29", "s4", "I went climbing, new routes were up")]
    try:
        v.import_turns([Turn(s, "Maya", t, parse_iso(d + f"T19:{n:02d}:00Z"), f"r{n}")
                        for n, (d, s, t) in enumerate(said)])
        end = parse_iso("2026-10-04T00:00:00Z")
        v.consolidate(now=end, steps=("extract",))
        run = v.consolidate(now=end, steps=("outcomes", "procedures")).value
        assert run.counts.get("outcomes_inferred") == 1
        third = v.get(_episode(v, "r2"))
        assert (third.extra.get("outcome"), third.extra.get("outcome_by")) == (
            "went badly", "inferred")
        text, success, failure = _habit(v)
        assert "Tuesday" in text and (success, failure) == (3, 1)
        # Undone with its run, and inferred again by the next.
        v.undo_run(int(run.run_id))
        assert "outcome_by" not in v.get(_episode(v, "r2")).extra
        run = v.consolidate(now=end, steps=("outcomes", "procedures")).value
        assert _habit(v)[1:] == (3, 1)

        # The person rates another evening badly and says the bad one went well after all.
        v.rate_episode(_episode(v, "r0"), -1, "fell off the warm-up")
        middle = v.consolidate(now=end, steps=("outcomes", "procedures")).value
        assert _habit(v)[1:] == (2, 2)
        v.rate_episode(_episode(v, "r2"), 1)
        assert v.get(_episode(v, "r2")).extra.get("outcome_by") == "person"
        again = v.consolidate(now=end, steps=("outcomes", "procedures")).value
        assert again.counts.get("outcomes_inferred", 0) == 0  # never over the person's word
        assert _habit(v)[1:] == (3, 1)
        history = [e.action for e in v.history(_episode(v, "r0")).entries]
        assert "rated" in history

        # Undoing the runs leaves the person's word as it is.
        for r in (again, middle, run):
            v.undo_run(int(r.run_id))
        assert v.get(_episode(v, "r2")).extra.get("rating") == 1
        v.rate_episode(_episode(v, "r0"), None)   # cleared: no rating, no words
        cleared = v.get(_episode(v, "r0")).extra
        assert "rating" not in cleared and "outcome" not in cleared
    finally:
        v.lock()


def test_rate_episode_refuses_what_is_not_an_episode_or_a_rating(
        vault_dir: Path, fast_kdf: object) -> None:
    v = Vault.create(vault_dir, "pw-rate", kdf=fast_kdf, threaded=False, use_chroma=False).vault
    try:
        v.import_turns([Turn("s", "Maya", "I went to the dentist", parse_iso(
            "2026-09-08T10:00:00Z"), "r0")])
        ep = _episode(v, "r0")
        turn = int(inside(v).db.read(lambda c: c.execute(
            "SELECT id FROM memory WHERE store = 'short_term'").fetchone()[0]))
        for bad in (5, True, -2):
            with pytest.raises(ValidationError):
                v.rate_episode(ep, bad)
        with pytest.raises(ValidationError):
            v.rate_episode(turn, 1)
        with pytest.raises(ValidationError):
            v.rate_episode(ep, 1, "x" * 201)
        with pytest.raises(NotFound):
            v.rate_episode(10_000, 1)
        assert "rating" not in v.get(ep).extra  # nothing changed
        v.rate_episode(ep, 0, "  took an hour longer  ")
        assert (v.get(ep).extra["rating"], v.get(ep).extra["outcome"]) == (
            0, "took an hour longer")
    finally:
        v.lock()
