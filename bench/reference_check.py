#!/usr/bin/env python3
"""The 38 capabilities of the five reference designs, checked on a real vault (issue 27,
"Measured in the closing note"). Prints JSON; ``--md`` also prints the table in markdown.

The vault (real SQLCipher, the real model) is built from our own chat, never LoCoMo: the three
development stories (``tests/data/stories/story_*.jsonl``), ``bench/data/reference_story.jsonl``
(five weeks of one person's chat: small talk, a job and a sister's city that change, a project
that finishes, climbing on Thursdays, Spanish every morning, two ways of saying one running
habit, a salary and a diagnosis) and one long planning session made by ``chat_turns``. Then
one consolidation run (``now`` an hour after the last turn), an assistant's fact through
``remember_fact``, recalls and a context request, a second run a day later (what a request
used, boosters), and last a run two years on (archival).

Each row: capability, reference (000 MyCasa PARA/decay, 001 atomic facts, 002 LifeOS layers,
003 QuantumLife, 004 routing prompt), status (working / partial / missing) and the evidence:
counts read from the vault, never from the code's intentions. Features still being built are
detected by their effects (a PROMOTED_FROM row, an entity of kind 'archive', a rated episode,
an episode summarising a session), so a row turns "working" when its feature lands.

``--scale N`` instead imports N chat-like turns (``chat_turns``: people, places, plans,
small talk, repetition) into a fresh vault, consolidates once and prints the time per 1,000
episodes and the run report.

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx .venv/bin/python bench/reference_check.py --md
    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx .venv/bin/python bench/reference_check.py --scale 10000

All figures are DEVELOPMENT figures (our own stories, written for tuning).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off)

STORIES = ROOT / "tests" / "data" / "stories"
OWN = ROOT / "bench" / "data" / "reference_story.jsonl"
PASSWORD = "reference check bench"
DAY = 86_400.0
REF = {"000": "000 MyCasa PARA/decay", "001": "001 atomic facts", "002": "002 LifeOS layers",
       "003": "003 QuantumLife", "004": "004 routing prompt"}
# What people say in passing, with no memory in it (the stories' own small talk, labelled by
# hand), and a one-off request about the text at hand. The last three were labelled content
# before (four words or more) though they are thanks, an acknowledgement and such a request.
SMALL = {"thanks!", "ok cool", "haha", "hey", "ok thanks", "never mind", "you're welcome!",
         "nice, thanks a lot", "yeah. ok sending both", "can you summarise this article for me?"}


# --- chat-like turns, for the long session and --scale ------------------------------------
PEOPLE = ["Ana", "Jonas", "Mia", "Tom", "Priya", "Luis", "Noor", "Kenji", "Sara", "Omar"]
PLACES = ["Porto", "Lisbon", "Berlin", "Leeds", "Lyon", "Gdansk", "Bilbao", "Turin"]
THINGS = ["the garden shed", "the wedding playlist", "the tax return", "the bike repair",
          "the book club list", "the move", "the quarterly report", "the birthday dinner"]
ACTS = ["climbing", "swimming", "yoga", "running", "choir practice", "pottery class"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
TEMPLATES = [
    "had lunch with {p} today, {p} just got back from {c}",
    "{p} is moving to {c} in the summer",
    "can you help me plan {t}? I want it done by {d}",
    "went {a} after work, felt great",
    "I usually go {a} on {d} evenings",
    "{p} recommended a restaurant in {c}, remind me to book it",
    "ugh {t} is taking forever",
    "finally finished {t}!",
    "my friend {p} starts a new job next week",
    "I'm thinking about a weekend in {c} with {p}",
    "skipped {a} today, too tired",
    "what should I cook tonight? something quick",
]
CHATTER = ["thanks!", "ok cool", "haha", "nice", "ok", "great, thank you", "lol", "hey"]
REPLIES = ["Sounds good!", "Happy to help with that.", "That sounds lovely.",
           "Here is a quick plan: start small and keep a list.", "Noted."]


def chat_turns(n: int, *, seed: int = 7, start: datetime | None = None,
               per_session: int = 12, prefix: str = "gen") -> list[dict[str, Any]]:
    """``n`` chat-like turns (Kept import lines), a session a day of ``per_session`` turns:
    the person's news and plans about a few people, places and projects, repeated
    activities, the assistant's short replies and small talk."""
    rnd = random.Random(seed)
    t0 = start or datetime(2025, 1, 6, 18, 0, tzinfo=UTC)
    out = []
    for i in range(n):
        day, k = divmod(i, per_session)
        at = t0 + timedelta(days=day, minutes=2 * k)
        r = rnd.random()
        if r < 0.25:
            speaker, text = "assistant", rnd.choice(REPLIES)
        elif r < 0.35:
            speaker, text = "user", rnd.choice(CHATTER)
        else:
            speaker = "user"
            text = rnd.choice(TEMPLATES).format(p=rnd.choice(PEOPLE), c=rnd.choice(PLACES),
                                                t=rnd.choice(THINGS), a=rnd.choice(ACTS),
                                                d=rnd.choice(DAYS))
        out.append({"session": f"{prefix}-{day:05d}", "speaker": speaker, "text": text,
                    "at": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "ref": f"{prefix}{i}"})
    return out


# --- the vault ------------------------------------------------------------------------------
def sql(vault: Any, query: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    from app.facade import internals
    return list(internals(vault).db.read(lambda c: c.execute(query, args).fetchall()))


def one(vault: Any, query: str, args: tuple[Any, ...] = ()) -> Any:
    rows = sql(vault, query, args)
    return rows[0][0] if rows else None


def columns(vault: Any, table: str) -> set[str]:
    return {r[1] for r in sql(vault, f"PRAGMA table_info({table})")}


def story_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted(STORIES.glob("story_*.jsonl")):
        if not path.name.endswith(".questions.jsonl"):
            lines += [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    lines += [x for x in OWN.read_text(encoding="utf-8").splitlines() if x.strip()]
    # One long planning session (60 turns in an evening): what a short-term summary is for.
    long = chat_turns(60, seed=3, start=datetime(2026, 4, 9, 19, 0, tzinfo=UTC),
                      per_session=60, prefix="long")
    lines += [json.dumps(t) for t in long]
    return lines


def build(folder: Path) -> tuple[Any, dict[str, Any]]:
    from app.facade import Vault
    from app.services.importer import parse_import
    from storage.crypto import KdfParams
    vault = Vault.create(folder, PASSWORD, kdf=KdfParams(m=65_536, t=3), threaded=False,
                         use_chroma=False).vault
    lines = story_lines()
    turns = parse_import(lines)
    t0 = time.perf_counter()
    vault.import_turns(turns)
    t1 = time.perf_counter()
    last = max(datetime.fromisoformat(json.loads(x)["at"].replace("Z", "+00:00"))
               for x in lines).timestamp()
    now = last + 3600
    report = vault.consolidate(now=now).value
    t2 = time.perf_counter()
    episodes = one(vault, "SELECT count(*) FROM memory WHERE store = 'episodic'")
    return vault, {"turns": len(lines), "import_s": round(t1 - t0, 2),
                   "consolidation_s": round(t2 - t1, 2), "episodes": episodes,
                   "consolidation_s_per_1k_episodes": round((t2 - t1) / max(1, episodes) * 1000,
                                                            2),
                   "now": now, "report": report.counts}


# --- the checks -----------------------------------------------------------------------------
Row = dict[str, Any]


def row(name: str, ref: str, status: str, **evidence: Any) -> Row:
    return {"capability": name, "reference": REF[ref], "status": status,
            "evidence": evidence}


def grade(ok: bool, some: bool) -> str:
    return "working" if ok else "partial" if some else "missing"


def link_count(vault: Any, kind: str, extra: str = "") -> int:
    return int(one(vault, "SELECT count(*) FROM link l JOIN memory a ON a.id = l.src "
                   f"JOIN memory b ON b.id = l.dst WHERE l.kind = ? {extra}", (kind,)) or 0)


def turns_with_episode(vault: Any, texts: set[str], alone: bool = False) -> tuple[int, int]:
    """(turns whose text is in ``texts`` (case-insensitive), those of them kept as an event).
    ``alone``: only an event of the turn's own counts, not a summary of its whole
    conversation (which cites every turn it covers, small talk too)."""
    own = (" AND (SELECT count(*) FROM link l2 WHERE l2.src = e.id AND l2.kind = "
           "'DERIVED_FROM') = 1") if alone else ""
    rows = sql(vault, "SELECT t.id, lower(t.text), EXISTS (SELECT 1 FROM link l JOIN memory e "
               "ON e.id = l.src WHERE l.dst = t.id AND l.kind = 'DERIVED_FROM' "
               f"AND e.store = 'episodic'{own}) FROM memory t WHERE t.store = 'short_term'")
    mine = [r for r in rows if r[1].strip() in texts]
    return len(mine), sum(1 for r in mine if r[2])


def routing(vault: Any) -> list[Row]:
    out = []
    # The routing decision (migration 0021): one row per incoming turn, shown by explain.
    scored = int(one(vault, "SELECT count(*) FROM routing r JOIN memory m ON m.id = "
                     "r.memory_id WHERE m.store = 'short_term'") or 0)
    turn = one(vault, "SELECT id FROM memory WHERE store = 'short_term' AND text LIKE "
               "'%accepted an offer at Kitewood%'")
    ex = vault.explain(turn) if turn else None
    in_explain = bool(ex and ex.routing is not None)
    turns = int(one(vault, "SELECT count(*) FROM memory WHERE store = 'short_term'"))
    out.append(row("Salience score on each incoming turn, shown by explain", "004",
                   grade(scored >= turns and in_explain, bool(scored)),
                   turns=turns, turns_with_salience=scored,
                   explain_shows_routing=in_explain))
    small, small_kept = turns_with_episode(vault, SMALL, alone=True)
    # The routing decision per small-talk turn: which stores it went to.
    decided = [json.loads(r[1]) for r in sql(
        vault, "SELECT lower(m.text), r.stores FROM routing r JOIN memory m ON m.id = "
        "r.memory_id WHERE m.store = 'short_term'") if r[0].strip() in SMALL]
    small_short_only = sum(1 for st in decided if set(st) <= {"short_term"})
    user_turns = [r for r in sql(vault, "SELECT lower(text) FROM memory WHERE store = "
                                 "'short_term' AND speaker = 'user'")]
    content = {r[0].strip() for r in user_turns if r[0].strip() not in SMALL
               and len(r[0].split()) >= 4}
    n_content, content_kept = turns_with_episode(vault, content)
    not_kept = [r[0] for r in sql(vault, "SELECT t.text FROM memory t WHERE t.store = "
                                  "'short_term' AND NOT EXISTS (SELECT 1 FROM link l JOIN "
                                  "memory e ON e.id = l.src WHERE l.dst = t.id AND l.kind = "
                                  "'DERIVED_FROM' AND e.store = 'episodic')")
                if r[0].lower().strip() in content]
    out.append(row("Low-salience turns stay short-term only; content is never dropped", "004",
                   grade(small > 0 and small_short_only == small and small_kept == 0
                         and content_kept == n_content,
                         small_short_only > 0 and content_kept >= 0.9 * n_content),
                   small_talk_turns=small, small_talk_routed_short_term_only=small_short_only,
                   small_talk_kept_as_events=small_kept,
                   content_turns=n_content, content_kept_as_events=content_kept,
                   content_not_kept=not_kept[:5]))
    prompt = "".join(p.read_text(encoding="utf-8") for p in
                     (ROOT / "app" / "services" / "llm").glob("*.py"))
    wanted = ("salience_score", "analysis", "reasoning", "ENTITY_UPDATE", "working_memory")
    kept = [w for w in wanted if re.search(rf"\b{w}\b", prompt)]
    out.append(row("LLM routing keeps 004's fields", "004",
                   grade(len(kept) >= 4, bool(kept)), fields_found=kept,
                   fields_wanted=list(wanted)))
    return out


def summaries(vault: Any) -> list[Row]:
    typed = int(one(vault, "SELECT count(*) FROM episode WHERE event_type LIKE '%summar%'")
                or 0)
    wide = int(one(vault, "SELECT count(*) FROM (SELECT l.src FROM link l JOIN memory e ON "
                   "e.id = l.src JOIN memory t ON t.id = l.dst WHERE l.kind = 'DERIVED_FROM' "
                   "AND e.store = 'episodic' AND t.store = 'short_term' GROUP BY l.src "
                   "HAVING count(*) >= 3)") or 0)
    long_turns = int(one(vault, "SELECT count(*) FROM memory WHERE store = 'short_term' "
                         "AND session LIKE 'long-%'") or 0)
    return [row("Long session summarised into an episode that keeps its sources", "003",
                grade(typed > 0 and wide > 0, typed > 0 or wide > 0),
                long_session_turns=long_turns, summary_episodes=typed,
                episodes_from_3_or_more_turns=wide)]


def para(vault: Any) -> list[Row]:
    # A merged entity keeps its row only so the merge can be undone: it is no thing of its own.
    kinds = dict(sql(vault, "SELECT kind, count(*) FROM entity WHERE status != 'merged' "
                     "GROUP BY kind"))
    para_kinds = ("person", "project", "area", "resource", "company")
    used = [k for k in para_kinds if kinds.get(k)]
    out = [row("PARA kinds in use (people, projects, areas, resources, companies)", "000",
               grade(len(used) == len(para_kinds), len(used) >= 2), by_kind=kinds)]
    reno = sql(vault, "SELECT kind FROM entity WHERE lower(name) LIKE '%renovation%'")
    archived = kinds.get("archive", 0)
    out.append(row("A finished project becomes an archive", "000",
                   grade(any(k == "archive" for (k,) in reno), archived > 0),
                   archive_entities=archived, renovation_entities=[k for (k,) in reno]))
    out.append(row("Companies and areas filled", "001",
                   grade(bool(kinds.get("company")) and bool(kinds.get("area")),
                         bool(kinds.get("company")) or bool(kinds.get("area"))),
                   companies=kinds.get("company", 0), areas=kinds.get("area", 0)))
    names = sql(vault, "SELECT name_key, kind, agent, ifnull(context, '') FROM entity "
                "WHERE status != 'merged'")
    by_key: dict[tuple[str, str, str], set[str]] = {}
    for key, kind, agent, ctx in names:
        by_key.setdefault((key, agent, ctx), set()).add(kind)
    two_kinds = sorted(k[0] for k, v in by_key.items() if len(v) > 1)
    keys = sorted({k[0] for k in by_key})
    variants = sorted(f"{a} / {b}" for a in keys for b in keys
                      if a != b and len(a) >= 4 and re.match(rf"{re.escape(a)}\b", b))
    out.append(row("One entity per thing (no name in two kinds, variants merged)", "000",
                   grade(not two_kinds and not variants,
                         len(two_kinds) + len(variants) <= 2),
                   names_in_two_kinds=two_kinds[:10], name_variants_apart=variants[:10]))
    return out


def merging(vault: Any, report: dict[str, int]) -> list[Row]:
    merged = {k: v for k, v in report.items() if "merge" in k}
    employer = int(one(vault, "SELECT count(*) FROM memory m JOIN fact f ON f.memory_id = m.id "
                       "WHERE m.status = 'active' AND m.text LIKE '%Northwind%'") or 0)
    out = [row("Near-duplicate facts merge, keeping their sources", "002",
               grade(sum(merged.values()) > 0 and employer <= 2, sum(merged.values()) > 0),
               merged_in_run=merged, active_facts_naming_old_employer=employer)]
    running = sql(vault, "SELECT m.text FROM memory m WHERE m.store = 'procedural' AND "
                  "m.status = 'active' AND m.text LIKE '%run%' AND m.text LIKE '%Saturday%'")
    out.append(row("Near-duplicate habits merge", "003",
                   grade(len(running) == 1, len(running) >= 1),
                   active_saturday_running_habits=len(running)))
    return out


def habits(vault: Any) -> list[Row]:
    def habit(*words: str) -> list[str]:
        like = " OR ".join("lower(m.text) LIKE ?" for _ in words)
        return [r[0] for r in sql(vault, "SELECT m.text FROM memory m WHERE m.store = "
                                  f"'procedural' AND m.status = 'active' AND ({like})",
                                  tuple(f"%{w}%" for w in words))]
    climb = habit("climb", "boulder", "klimmhalle")
    spanish = habit("spanish", "duolingo")
    weekday = [t for t in climb if "thursday" in t.lower()]
    out = [row("Habits from repetition (a weekday, every day)", "003",
               grade(bool(weekday) and bool(spanish), bool(climb) or bool(spanish)),
               climbing_habits=len(climb), on_thursday=len(weekday),
               spanish_habits=len(spanish))]
    counts = sql(vault, "SELECT sum(success_count), sum(failure_count), count(*) FROM "
                 "procedure WHERE success_count + failure_count > 0")
    s, f, n = counts[0] if counts else (0, 0, 0)
    out.append(row("Habit success and failure counts move", "003",
                   grade(bool(s) and bool(f), bool(n)), habits_counted=n, successes=s or 0,
                   failures=f or 0))
    ended = int(one(vault, "SELECT count(*) FROM memory WHERE store = 'procedural' AND "
                    "(status = 'superseded' OR valid_until IS NOT NULL)") or 0)
    out.append(row("The old habit or preference ends when a new one replaces it", "003",
                   grade(ended > 0, False), ended_habits=ended))
    return out


def scores(vault: Any, ctx: dict[str, Any]) -> list[Row]:
    from app import policy
    from app.services import scoring
    from app.services.consolidation.pipeline import job_steps
    from app.services.recall import RecallTuning
    out = []
    # Boosters, confidence factors and promotion live in the `scores` step of the daily
    # decay job; the second run a day later runs that job's steps.
    decay_job = list(job_steps("decay"))
    boosted = int(ctx["report2"].get("boosted", 0))
    week = int(ctx["report_week"].get("boosted", 0))
    out.append(row("Scheduled boosters (daily / 3 days / weekly by score)", "002",
                   grade("scores" in decay_job and boosted + week > 0, "scores" in decay_job),
                   decay_job_steps=decay_job, steps_in_second_run=ctx["steps2"],
                   boosted_in_second_run=boosted, boosted_by_decay_job_8_days_on=week,
                   composite_band_counts=ctx["bands"]))
    promoted = link_count(vault, "PROMOTED_FROM")
    out.append(row("Promotion (working -> episodic of what a request used) with PROMOTED_FROM",
                   "002", grade(promoted > 0, False), promoted_from_links=promoted,
                   promoted_in_second_run=int(ctx["report2"].get("promoted", 0)),
                   assistant_opened_a_short_term_only_turn=ctx["assistant_opened_turn"],
                   short_term_turns_used=ctx["turns_used"]))
    mid = ctx["fact"]
    a = vault.explain(mid, now=ctx["now"]).scores["recency"]
    b = vault.explain(mid, now=ctx["now"] + 60 * DAY).scores["recency"]
    out.append(row("Recency computed at read time", "002", grade(b < a - 1e-6, False),
                   recency_now=round(a, 4), recency_60_days_later=round(b, 4)))
    w = RecallTuning().w_composite
    docs = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md"))
    documented = bool(re.search(r"composite[^.\n]{0,80}(weight|\.05|0\.05)", docs, re.I))
    out.append(row("Composite's weight in ranking (002: .4)", "002",
                   grade(abs(w - 0.4) < 1e-9 or documented, True), weight=w,
                   reference=0.4, chosen_and_documented=documented))
    conf = [r[0] for r in sql(vault, "SELECT confidence FROM memory WHERE store = 'semantic' "
                              "AND status = 'active' AND user_validated = 0")]
    spread = (max(conf) - min(conf)) if conf else 0.0
    moved = int(ctx["report2"].get("confidence_moved", 0))
    factored = int(one(vault, "SELECT count(*) FROM memory WHERE store IN ('semantic', "
                       "'procedural') AND (conf_user IS NOT NULL OR conf_usage IS NOT NULL)")
                   or 0)
    out.append(row("Confidence factors move (user validation, usage success)", "003",
                   grade(spread >= 0.2 or (moved + factored > 0 and spread >= 0.05),
                         spread >= 0.05 or moved + factored > 0), facts=len(conf),
                   confidence_moved_in_second_run=moved, with_a_factor_applied=factored,
                   min=round(min(conf), 3) if conf else None,
                   max=round(max(conf), 3) if conf else None,
                   stdev=round(statistics.pstdev(conf), 3) if len(conf) > 1 else 0.0))
    quotas = [n for n in dir(policy) if "QUOTA" in n or "SHARE" in n and "STORE" in n]
    out.append(row("Per-store quotas in the context briefing", "002",
                   grade(bool(quotas), False), policy_names=quotas,
                   briefing_items_by_section=ctx["sections"]))
    out.append(row("Reinforcement on use (+15% importance within 24 h)", "002",
                   grade(abs(ctx["reinforce"] - policy.REINFORCE_FACTOR) < 0.02,
                         ctx["reinforce"] > 1.0), importance_ratio=round(ctx["reinforce"], 3),
                   reference=1.15))
    tiers = vault.insights().by_tier
    out.append(row("Tiers by days since access (hot 7, warm 30)", "000",
                   grade((policy.HOT_DAYS, policy.WARM_DAYS) == (7.0, 30.0)
                         and scoring.tier(6.9, 0) == "hot" and scoring.tier(29, 0) == "warm"
                         and scoring.tier(31, 0) == "cold", True), by_tier=tiers,
                   hot_days=policy.HOT_DAYS, warm_days=policy.WARM_DAYS))
    ref = {"working": (0.8, 2.0), "episodic": (0.3, 168.0), "semantic": (0.1, 720.0),
           "social": (0.2, 336.0), "emotional": (0.4, 72.0)}
    measured = {k: round(scoring.recency(k, h), 4) for k, (_r, h) in ref.items()}
    expect = {k: round(2 ** -r, 4) for k, (r, _h) in ref.items()}
    out.append(row("Decay rates and half-lives per class", "002",
                   grade(measured == expect, any(measured[k] == expect[k] for k in ref)),
                   recency_at_half_life=measured, reference=expect))
    out.append(row("Archival of what fades (never deletion)", "001",
                   grade(ctx["archived"] > 0 and ctx["deleted"] == 0, ctx["archived"] > 0),
                   archived_two_years_on=ctx["archived"], deleted=ctx["deleted"]))
    open_items = len(vault.contradictions("open"))
    superseded = int(one(vault, "SELECT count(*) FROM memory WHERE store = 'semantic' AND "
                         "status = 'superseded'") or 0)
    out.append(row("Contradictions resolved by confidence (newer wins >= .7, margin .2)", "003",
                   grade((policy.NEWER_WINS_CONFIDENCE, policy.CONFIDENCE_MARGIN) == (0.7, 0.2)
                         and open_items + superseded > 0, open_items + superseded > 0),
                   inbox_open=open_items, facts_superseded=superseded,
                   newer_wins=policy.NEWER_WINS_CONFIDENCE, margin=policy.CONFIDENCE_MARGIN))
    out.append(row("Context budget (4,000 tokens)", "004",
                   grade(ctx["used"] <= ctx["budget"] == policy.DEFAULT_CONTEXT_BUDGET,
                         ctx["used"] <= ctx["budget"]), budget=ctx["budget"], used=ctx["used"]))
    from app.settings import SETTINGS
    got = {s.key.rsplit(".", 1)[-1]: s.default for s in SETTINGS
           if s.key.startswith("consolidation.")}
    want = {"heartbeat_minutes": 15, "interval_minutes": 240, "decay_hour": 3}
    out.append(row("Schedules (heartbeat 15 min, consolidation 4 h, daily decay, weekly "
                   "synthesis)", "002",
                   grade(all(got.get(k) == v for k, v in want.items())
                         and "synthesis_weekday" in got, bool(got)), settings=got))
    return out


def links(vault: Any) -> list[Row]:
    same = "AND a.session IS NOT NULL AND a.session = b.session"
    across = "AND a.session IS NOT NULL AND b.session IS NOT NULL AND a.session != b.session"
    rows = [("PRECEDED_BY within a conversation", "PRECEDED_BY", same),
            ("PRECEDED_BY between conversations of a topic", "PRECEDED_BY", across),
            ("RELATES_TO (facts about the same person or thing)", "RELATES_TO", ""),
            ("REINFORCES (a turn says a fact again)", "REINFORCES", ""),
            ("SIMILAR_TO (near duplicates)", "SIMILAR_TO", ""),
            ("SUPERSEDES (a newer version)", "SUPERSEDES", ""),
            ("DERIVED_FROM (provenance)", "DERIVED_FROM", ""),
            ("CONTRADICTS (kept for the person to decide)", "CONTRADICTS", "")]
    return [row(f"Link: {name}", "002", grade(n > 0, False), links=n)
            for name, kind, extra in rows for n in [link_count(vault, kind, extra)]]


def episodes(vault: Any, ctx: dict[str, Any]) -> list[Row]:
    cols = columns(vault, "episode")
    outcome = int(one(vault, "SELECT count(*) FROM episode WHERE outcome IS NOT NULL "
                      "AND outcome != ''") or 0)
    rating_col = next((c for c in cols if "rating" in c), None)
    rated = int(one(vault, f"SELECT count(*) FROM episode WHERE {rating_col} IS NOT NULL")
                or 0) if rating_col else 0
    return [row("Episodes with outcome and the person's rating", "003",
                grade(outcome > 0 and rated > 0, outcome > 0 or rated > 0 or bool(rating_col)),
                with_outcome=outcome, rating_column=rating_col, rated=rated,
                rated_by_the_person_in_bench=ctx["rated"],
                outcomes_inferred=int(ctx["report1"].get("outcomes_inferred", 0))
                + int(ctx["report2"].get("outcomes_inferred", 0)))]


def insights(vault: Any) -> list[Row]:
    metrics = {m.key: m for m in vault.insights().metrics}
    wanted = ("retrieval_efficiency", "layer_utilisation", "promotion_rate", "archive_rate",
              "quality_ratio")
    found = [w for w in wanted if w in metrics]
    return [row("Insights: retrieval efficiency, layer utilisation, promotion and archive "
                "rates, quality ratio", "002", grade(len(found) == len(wanted), bool(found)),
                metrics_found=found, texts={k: metrics[k].text for k in found})]


def workspace(vault: Any, folder: Path, agent: str, now: float) -> list[Row]:
    from app import transfer
    target = folder.parent / "export-md"
    transfer.export(vault, "markdown", target, now=now)
    files = [p for p in target.rglob("*") if p.is_file()]
    named = [p for p in files if agent in str(p.relative_to(target)).lower()]
    mentioned = sum(1 for p in files if agent in p.read_text(encoding="utf-8").lower())
    return [row("Per-assistant workspace in the window and the export", "000",
                grade(bool(named), mentioned > 0), export_files=len(files),
                files_named_for_assistant=len(named), files_mentioning_it=mentioned)]


def redaction(vault: Any) -> list[Row]:
    from app.services.llm.redaction import Redactor
    texts = [r[0] for r in sql(vault, "SELECT text FROM memory WHERE store = 'short_term' AND "
                               "(text LIKE '%salary%' OR text LIKE '%diagnosed%')")]
    red = Redactor(["Lena", "Ana"])
    masked = [red.redact(t) for t in texts]
    kinds = {k: v for k, v in red.counts.items() if v}
    leaked = [w for w in ("48,000", "asthma") if any(w in m for m in masked)]
    return [row("Redaction before an LLM call (money, health, ids, addresses, secrets)", "003",
                grade(bool(texts) and not leaked, bool(kinds)), turns=len(texts),
                masked_by_kind=kinds, leaked=leaked)]


# --- the run --------------------------------------------------------------------------------
def exercise(vault: Any, now: float) -> dict[str, Any]:
    """What a person and an assistant do between runs: an assistant's fact, recalls, a
    context request; then a second run a day later."""
    from app.api import AssistantFact
    vault.pair_agent("helper")
    vault.remember_fact(AssistantFact("Lena", "prefers_reply_style", "short bullet points",
                                      "Lena prefers short bullet points in replies"),
                        agent="helper")
    fact = one(vault, "SELECT m.id FROM memory m WHERE m.store = 'semantic' AND m.status = "
               "'active' ORDER BY m.id LIMIT 1")
    hits = vault.recall("where does my sister live", now=now)
    first = hits[0].id if hits else fact
    before = vault.get(first).scores.importance
    vault.recall("where does my sister live", now=now + 600)
    after = vault.get(first).scores.importance
    ctx = vault.context("what is going on with work and the kitchen", now=now + 900)
    sections: dict[str, int] = {}
    for item in ctx.items:
        sections[item.section] = sections.get(item.section, 0) + 1
    # An assistant opens a turn that only short-term holds (what a request used).
    used = one(vault, "SELECT m.id FROM memory m WHERE m.store = 'short_term' AND NOT EXISTS "
               "(SELECT 1 FROM link l JOIN memory e ON e.id = l.src WHERE l.dst = m.id AND "
               "e.store = 'episodic') AND m.speaker = 'user' ORDER BY m.id DESC LIMIT 1")
    if used:
        vault.get_memory(used, agent="helper")
    assistant_opened_turn = used is not None
    turns_used = int(one(vault, "SELECT count(*) FROM memory WHERE store = 'short_term' "
                         "AND access_count > 0") or 0)
    # The person rates one episode, as they would in the window.
    ep = one(vault, "SELECT memory_id FROM episode ORDER BY memory_id LIMIT 1")
    rated = 0
    if ep is not None:
        vault.rate_episode(ep, 1, "went well")
        rated = 1
    # A day later the app's schedule has run the consolidation job and the daily decay job
    # (03:00): all their steps, in order (decay's `scores` step: boosters, confidence,
    # promotion).
    from app.services.consolidation.pipeline import job_steps
    steps2 = tuple(dict.fromkeys([*job_steps("consolidation"), *job_steps("decay")]))
    report2 = vault.consolidate(now=now + DAY, steps=steps2).value.counts
    return {"fact": fact, "now": now, "reinforce": after / before if before else 0.0,
            "sections": sections, "used": ctx.used, "budget": ctx.budget,
            "report2": report2, "steps2": list(steps2), "turns_used": turns_used,
            "rated": rated, "assistant_opened_turn": assistant_opened_turn}


def check(md: bool) -> dict[str, Any]:
    os.environ.setdefault("KEPT_MODEL_DIR", str(ROOT.parent / "shared" / "models" /
                                                "all-MiniLM-L6-v2" / "onnx"))
    with tempfile.TemporaryDirectory(prefix="kept-refcheck-") as tmp:
        folder = Path(tmp) / "vault"
        vault, built = build(folder)
        try:
            now = built["now"]
            ctx = exercise(vault, now)
            ctx["report1"] = built["report"]
            rows: list[Row] = []
            parts: list[Callable[[], list[Row]]] = [
                lambda: routing(vault), lambda: summaries(vault), lambda: para(vault),
                lambda: merging(vault, built["report"]), lambda: habits(vault),
                lambda: links(vault), lambda: episodes(vault, ctx), lambda: insights(vault),
                lambda: workspace(vault, folder, "helper", now + DAY),
                lambda: redaction(vault)]
            for part in parts:
                rows += part()
            # A week on the daily decay job has run again (weekly boosters fall due).
            ctx["bands"] = dict(sql(vault, "SELECT CASE WHEN composite > 0.8 THEN '>.8' WHEN "
                                    "composite >= 0.6 THEN '.6-.8' WHEN composite >= 0.4 "
                                    "THEN '.4-.6' ELSE '<.4' END, count(*) FROM memory WHERE "
                                    "status = 'active' AND store IN ('episodic', 'semantic', "
                                    "'procedural') GROUP BY 1"))
            from app.services.consolidation.pipeline import job_steps
            ctx["report_week"] = vault.consolidate(now=now + 8 * DAY, kind="decay",
                                                   steps=job_steps("decay")).value.counts
            # Last: two years on, what fades is archived (and nothing is deleted).
            total = one(vault, "SELECT count(*) FROM memory")
            before = one(vault, "SELECT count(*) FROM memory WHERE status = 'archived'")
            vault.consolidate(now=now + 730 * DAY, steps=("decay",))
            ctx["archived"] = one(vault, "SELECT count(*) FROM memory WHERE status = "
                                  "'archived'") - before
            ctx["deleted"] = total - one(vault, "SELECT count(*) FROM memory")
            rows += scores(vault, ctx)
        finally:
            vault.lock()
    order = {"working": 0, "partial": 1, "missing": 2}
    summary = {s: sum(1 for r in rows if r["status"] == s) for s in order}
    built.pop("now")
    out = {"benchmark": "reference_check", "set": "dev (our stories)", "rows": len(rows),
           "summary": summary, "vault": built, "checks": rows}
    if md:
        out["markdown"] = markdown(rows)
    return out


def markdown(rows: list[Row]) -> str:
    lines = ["| # | capability | reference | status | evidence |", "|---|---|---|---|---|"]
    for n, r in enumerate(rows, 1):
        ev = ", ".join(f"{k} {json.dumps(v, ensure_ascii=False)}"
                       for k, v in r["evidence"].items())
        lines.append(f"| {n} | {r['capability']} | {r['reference']} | {r['status']} | "
                     f"{ev.replace('|', '/')} |")
    return "\n".join(lines)


def scale(n: int) -> dict[str, Any]:
    """``n`` chat-like turns into a fresh vault, one consolidation run, timed."""
    from app.clock import parse_iso
    from app.facade import Vault
    from app.services.importer import parse_import
    from storage.crypto import KdfParams
    os.environ.setdefault("KEPT_MODEL_DIR", str(ROOT.parent / "shared" / "models" /
                                                "all-MiniLM-L6-v2" / "onnx"))
    # 30 turns a day: 10,000 turns are 11 months of chat (under episodic's one-year retention,
    # so the run's archive count is what fades, not what is simply older than a year).
    turns = chat_turns(n, per_session=30)
    with tempfile.TemporaryDirectory(prefix="kept-refscale-") as tmp:
        vault = Vault.create(Path(tmp) / "v", PASSWORD, kdf=KdfParams(m=65_536, t=3),
                             threaded=False, use_chroma=False).vault
        try:
            t0 = time.perf_counter()
            vault.import_turns(parse_import([json.dumps(t) for t in turns]))
            t1 = time.perf_counter()
            c0 = time.process_time()
            report = vault.consolidate(now=parse_iso(turns[-1]["at"]) + 3600).value
            t2 = time.perf_counter()
            cpu = time.process_time() - c0
            episodes = one(vault, "SELECT count(*) FROM memory WHERE store = 'episodic'")
            stores = dict(sql(vault, "SELECT store, count(*) FROM memory GROUP BY store"))
            link_kinds = dict(sql(vault, "SELECT kind, count(*) FROM link GROUP BY kind"))
        finally:
            vault.lock()
    return {"benchmark": "reference_check_scale", "set": "dev (generated chat)", "turns": n,
            "import_s": round(t1 - t0, 1), "consolidation_s": round(t2 - t1, 1),
            "consolidation_cpu_s": round(cpu, 1), "episodes": episodes,
            "consolidation_s_per_1k_episodes": round((t2 - t1) / max(1, episodes) * 1000, 2),
            "consolidation_cpu_s_per_1k_episodes": round(cpu / max(1, episodes) * 1000, 2),
            "days": round((parse_iso(turns[-1]["at"]) - parse_iso(turns[0]["at"])) / DAY),
            "run_report": {"seconds": round(report.seconds, 1), "counts": report.counts,
                           "failed_batches": report.failed_batches},
            "stores": stores, "links": link_kinds, "load": os.getloadavg()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--md", action="store_true", help="also print the markdown table")
    ap.add_argument("--scale", type=int, metavar="N",
                    help="instead: time one consolidation of N generated chat turns")
    args = ap.parse_args()
    if args.scale is not None:
        if args.scale < 1:
            print(json.dumps({"error": "--scale needs a positive number of turns"}))
            return 2
        print(json.dumps(scale(args.scale), indent=1))
        return 0
    result = check(args.md)
    table = result.pop("markdown", None)
    print(json.dumps(result, indent=1, ensure_ascii=False))
    if table:
        print()
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
