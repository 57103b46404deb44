#!/usr/bin/env python3
"""Eleven weeks of an assistant keeping Kept right, over MCP (issue 26). Prints JSON.

The story: Maya names herself in Settings and imports her own chat history (consolidated: the
person's global facts), then talks with an assistant ("claude") for eleven weeks; it reaches
Kept only through ``kept mcp`` (the official SDK client over stdio, a real ``kept serve`` on a
real vault with the model). Each week the assistant saves the turns (``remember`` with session
and ref) and the facts it hears (``remember_fact``); eight of them change something held (a
move, a new job, a new vet, an offsite moved, milk, gym, running day, manager).

Two assistants, each on a fresh vault:

- ``naive``: sends every fact as new (what any memory server gets from today's assistants);
- ``careful``: does what the tool descriptions ask: when it hears a change it recalls the held
  value and sends ``replaces=<id>`` (or ``change: true`` with ``valid_from`` when it finds
  none). Against a server without those parameters it is the naive one.

Then questions are asked through ``recall`` (k = 10) at three moments: right after the eleven
weeks, after consolidation (the owner stopped, ``consolidate`` run, the owner started again) and
after the person accepted every change waiting in the Inbox. Each answer is judged as
``bench/stories.py`` does (current first / stale first / missing, by the hits' texts in order)
and again as an assistant that reads the marks would: hits marked ``earlier`` or ``superseded``
are not answers, and a hit marked ``pending`` names its pending change first. Also counted:
hits that name only a stale value, and how many of them are marked as current.

The story is written for this bench (development, not held out: the rules were not tuned on it).

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx .venv/bin/python bench/assistant_session.py
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import storage  # noqa: F401  (first: onnxruntime telemetry off)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from stories import judge  # noqa: E402

AGENT = "claude"
START = datetime(2026, 8, 3, 9, 0, tzinfo=UTC)  # Monday of week 1

# Before week 1: what Maya said to Kept herself (imported chat; consolidation makes facts).
HISTORY = [
    "I live in Leeds, in a flat near Hyde Park.",
    "I work at Northwind as a product designer.",
    "Our dog Biscuit sees Dr. Shah at Hillside Vets.",
    "I always drink oat milk in my coffee.",
    "I go to PureGym on Kirkstall Road after work.",
    "I run a 5k every Saturday morning with Tom.",
    "My manager at Northwind is Priya.",
    "The team offsite is on 14 October in Lisbon.",
]

# (week, day, what Maya says, the fact the assistant hears, the old value if it is a change)
WEEKS: list[tuple[int, int, str, tuple[str, str, str] | None, str | None]] = [
    (1, 0, "Back from holiday, the garden at the flat in Leeds survived somehow.", None, None),
    (1, 2, "Tom and I are thinking about a trip to the Dales in September.",
     ("Maya", "planned_trip", "the Dales in September"), None),
    (2, 1, "Work is mad, Priya wants the onboarding redesign by Friday.", None, None),
    (2, 4, "Oat milk has been upsetting my stomach, so I've switched to soy milk now.",
     ("Maya", "milk", "soy milk"), "oat"),
    (3, 0, "Cancelled PureGym, I joined The Depot climbing gym instead.",
     ("Maya", "gym", "The Depot climbing gym"), "PureGym"),
    (3, 3, "Biscuit ate a sock again, he's fine.", None, None),
    (4, 2, "The offsite got pushed to 21 October and it's in Porto now, not Lisbon.",
     ("team offsite", "date_and_place", "21 October in Porto"), "Lisbon"),
    (5, 1, "I signed the offer! I start at Fabrikam as a senior designer on 14 September.",
     ("Maya", "works_at", "Fabrikam"), "Northwind"),
    (5, 4, "Tom cooked a massive lasagne for my leaving drinks.", None, None),
    (6, 2, "We're moving Biscuit to Dr. Okafor at Riverside Vets, closer to the new place.",
     ("Biscuit", "vet", "Dr. Okafor at Riverside Vets"), "Shah"),
    (7, 5, "We got the keys, we live in York now! Boxes everywhere.",
     ("Maya", "lives_in", "York"), "Leeds"),
    (8, 0, "My manager at Fabrikam is Dan, he seems lovely.",
     ("Maya", "manager", "Dan"), "Priya"),
    (8, 5, "Saturday runs are dead, Tom and I run on Sunday mornings now along the river.",
     ("Maya", "runs_on", "Sunday mornings"), "Saturday"),
    (9, 3, "The Dales trip was amazing, we want to go back in spring.", None, None),
    (10, 1, "Caffeine is wrecking my sleep, I'm on decaf flat whites from now on.",
     ("Maya", "coffee", "decaf flat white"), None),
    (11, 2, "First proper week at Fabrikam done, Dan took us all for lunch.", None, None),
]

# Each asked twice: by the assistant about Maya, and by Maya herself ("I"): her own history
# says "I", the assistant's facts say "Maya".
_ASKED = [
    ("home", "Where does Maya live?", "where do I live these days?", ["york"], ["leeds"]),
    ("job", "Where does Maya work?", "where am I working now?", ["fabrikam"], ["northwind"]),
    ("milk", "What milk does Maya take in her coffee?", "what milk do I have in my coffee?",
     ["soy"], ["oat"]),
    ("gym", "Which gym does Maya go to?", "which gym am I a member of?", ["depot"],
     ["puregym"]),
    ("vet", "Who is Biscuit's vet?", "who's our vet for Biscuit?", ["okafor"], ["shah"]),
    ("offsite", "When and where is the team offsite?", "where's the offsite this year?",
     ["porto"], ["lisbon"]),
    ("manager", "Who is Maya's manager?", "who's my boss?", ["dan"], ["priya"]),
    ("run", "When does Maya go running?", "what day do I do my run?", ["sunday"],
     ["saturday"]),
    ("coffee", "How does Maya take her coffee?", "how do I take my coffee?", ["decaf"], []),
    ("trip", "Where did Maya and Tom go on their trip?", "where did Tom and I go on our trip?",
     ["dales"], []),
]
QUESTIONS = [{"id": f"{k}-{who}", "q": q, "current": cur, "stale": stale}
             for k, qa, qp, cur, stale in _ASKED
             for who, q in (("assistant", qa), ("person", qp))]
PASSWORD = "eleven weeks of talk"


def at(week: int, day: int) -> datetime:
    return START + timedelta(weeks=week - 1, days=day, hours=(week * 7 + day) % 9)


def iso(d: datetime) -> str:
    return d.isoformat().replace("+00:00", "Z")


# --- the assistant --------------------------------------------------------------------------

async def talk(session: Any, tools: dict[str, Any], careful: bool) -> dict[str, Any]:
    """Eleven weeks through the tools; what the server answered."""
    params = set(tools["remember_fact"].input_schema.get("properties", {}))
    can_change = {"replaces", "change"} <= params
    said: dict[str, int] = {}
    for n, (week, day, text, fact, old) in enumerate(WEEKS):
        when = at(week, day)
        r = await session.call_tool("remember", {
            "text": text, "speaker": "Maya", "at": iso(when), "session": f"week-{week}",
            "ref": f"w{week}-{n}"})
        data = r.structured_content or {}
        if r.is_error:
            raise SystemExit(f"remember failed: {r.content}")
        if fact is None:
            continue
        subject, attribute, value = fact
        args: dict[str, Any] = {"subject": subject, "attribute": attribute, "value": value,
                                "valid_from": iso(when), "source_ids": [int(data["id"])]}
        if careful and can_change and old is not None:
            hit = await _held(session, f"{subject} {attribute.replace('_', ' ')} {old}", old)
            if hit is not None:
                args["replaces"] = hit
            else:
                args["change"] = True
        r = await session.call_tool("remember_fact", args)
        if r.is_error:
            raise SystemExit(f"remember_fact failed: {r.content}")
        out = r.structured_content or {}
        key = str(out.get("status"))
        said[key] = said.get(key, 0) + 1
    return {"can_change": can_change, "fact_outcomes": said}


async def _held(session: Any, query: str, old: str) -> int | None:
    """The id of the held value a careful assistant would name: the first recalled memory
    that says the old value."""
    r = await session.call_tool("recall", {"query": query, "k": 8})
    for m in (r.structured_content or {}).get("memories", []):
        if old.casefold() in str(m.get("text", "")).casefold():
            return int(m["id"])
    return None


# --- the questions --------------------------------------------------------------------------

def _as_read(m: dict[str, Any]) -> str | None:
    """What an assistant that reads the marks takes from a hit (None: not an answer)."""
    status = m.get("standing") or m.get("status")
    if status in ("earlier", "superseded"):
        return None
    if status == "pending" and isinstance(m.get("pending_change"), dict):
        return f"{m['pending_change'].get('value', '')} (waiting for the person) / {m['text']}"
    return str(m.get("text", ""))


async def ask(session: Any) -> dict[str, Any]:
    raw, read, marks = [], [], {}
    stale_current = stale_hits = 0
    for q in QUESTIONS:
        r = await session.call_tool("recall", {"query": q["q"], "k": 10})
        hits = (r.structured_content or {}).get("memories", [])
        for m in hits:
            s = str(m.get("standing") or m.get("status") or "none")
            marks[s] = marks.get(s, 0) + 1
            low = str(m.get("text", "")).casefold()
            if any(k in low for k in q["stale"]) and not any(k in low for k in q["current"]):
                stale_hits += 1
                stale_current += s in ("current", "active", "none")
        raw.append(judge([str(m.get("text", "")) for m in hits], q))
        read.append(judge([t for t in map(_as_read, hits) if t is not None], q))

    def count(rs: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {v: sum(r["verdict"] == v for r in rs)
                               for v in ("current_first", "stale_first", "missing")}
        out["stale_first_ids"] = [r["id"] for r in rs if r["verdict"] == "stale_first"]
        return out
    return {"texts_in_order": count(raw), "reading_the_marks": count(read), "marks": marks,
            "stale_hits": stale_hits, "stale_hits_marked_current": stale_current}


# --- one run --------------------------------------------------------------------------------

def run(careful: bool, tmp: Path) -> dict[str, Any]:
    import anyio

    from app.api import Turn
    from app.clock import FixedClock
    from app.facade import Vault
    from storage.crypto import KdfParams
    from tests.app.mcp.conftest import mcp_params, mcp_session, serving

    folder = tmp / ("careful" if careful else "naive") / "v"
    folder.parent.mkdir(parents=True)
    t0 = at(1, 0) - timedelta(days=14)
    turns = [Turn(session="history", speaker="user", text=t, at=(t0 + timedelta(hours=i))
                  .timestamp(), ref=f"h{i}") for i, t in enumerate(HISTORY)]
    v = Vault.create(folder, PASSWORD, kdf=KdfParams(m=65_536, t=3, p=4), threaded=False,
                     use_chroma=False, clock=FixedClock(t0.timestamp() + 86400)).vault
    try:
        key = v.pair_agent(AGENT).value
        v.set_setting("owner.name", "Maya")  # Settings > Your name, as she filled it in
        v.import_turns(turns)
        v.consolidate(now=t0.timestamp() + 86400)
    finally:
        v.lock()
    import tests.app.mcp.conftest as fx
    fx.PW = PASSWORD  # the owner's password file
    params = mcp_params(folder, AGENT, key)
    out: dict[str, Any] = {"assistant": "careful" if careful else "naive"}

    async def weeks() -> None:
        async with mcp_session(params) as (s, tools):
            out.update(await talk(s, tools, careful))
            out["after_the_weeks"] = await ask(s)

    async def questions(label: str) -> None:
        async with mcp_session(params) as (s, _tools):
            out[label] = await ask(s)

    with serving(folder):
        anyio.run(weeks)
    end = at(11, 6).timestamp()
    v = Vault.open(folder, PASSWORD, threaded=False, use_chroma=False, clock=FixedClock(end))
    try:
        v.consolidate(now=end)
    finally:
        v.lock()
    with serving(folder):
        anyio.run(questions, "after_consolidation")
    v = Vault.open(folder, PASSWORD, threaded=False, use_chroma=False, clock=FixedClock(end))
    accepted = 0
    try:
        for item in v.contradictions("open"):  # she keeps what was said last
            v.resolve(item.id, "b" if (item.b.occurred_at or 0) >= (item.a.occurred_at or 0)
                      else "a")
            accepted += 1
        out["inbox_open"] = len(v.contradictions("open"))
    finally:
        v.lock()
    out["accepted_in_inbox"] = accepted
    with serving(folder):
        anyio.run(questions, "after_the_person_accepts")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--assistant", choices=("naive", "careful", "both"), default="both")
    a = ap.parse_args()
    kinds = {"naive": [False], "careful": [True], "both": [False, True]}[a.assistant]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kept-weeks-") as tmp:
        runs = [run(c, Path(tmp)) for c in kinds]
    import os
    print(json.dumps({"set": "development (written for this bench)",
                      "questions": len(QUESTIONS), "changes": sum(o is not None
                                                                  for *_x, o in WEEKS),
                      "runs": runs, "seconds": round(time.monotonic() - started, 1),
                      "load_average": [round(x, 2) for x in os.getloadavg()]}, indent=1))


if __name__ == "__main__":
    main()
