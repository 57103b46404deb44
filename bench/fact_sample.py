#!/usr/bin/env python3
"""Extracted facts for checking by hand (issue 23 item 3: malformed facts never enter).

Every turn of four sources is read by the rules extractor on its own, as consolidation does
(one episode per turn, its speaker, its time), and only the facts ``fact_check`` lets in are
kept (what would be stored):

- ``locomo``: every turn of the LoCoMo dev conversations (../shared/bench/locomo_dev.json,
  CC BY-NC 4.0, read at run time, never copied), ref ``conv-42/D2:23``;
- ``story_a`` .. ``story_c``: the person's turns of tests/data/stories (ref ``a6:7``), the
  person named as consolidation names them ("user" -> User; story_b's human says she is
  Nadia; story_c's speaker is Mateo);
- ``natural_pairs`` / ``natural_pairs_reworded``: both sides of every pair of
  tests/data/natural_pairs*.jsonl (ref ``n057/b``, ``n032-r1/a``);
- ``fact_pairs`` / ``_holdout`` / ``_stress``: both sides of tests/data/fact_pairs*.jsonl
  (short written statements, ref ``c01/a``), only with ``--fact-pairs N``.

    python bench/fact_sample.py sample --seed 2311 --out /tmp/fresh.txt   # draw facts
    python bench/fact_sample.py rerun bench/handcheck_issue23.tsv --out /tmp/rerun.json

``sample`` draws, seeded, ``--locomo N`` facts from LoCoMo, ``--pairs N`` from the natural
pairs, ``--reworded N`` from the rewordings and ``--stories N`` from the stories (default
90 / 60 / 40 / 20), or ``--total N`` from all of them together, each with its source turn,
and writes a blank graded file (``--tsv``: n, source, ref, grade, fact, reason) beside the
text file. ``--exclude`` leaves out the turns of a graded file or of a list of turns seen
while tuning (and the same text met in another source), for a sample never looked at:

    python bench/fact_sample.py sample --seed 2377 --total 210 \\
        --exclude bench/handcheck_issue23.tsv --exclude bench/handcheck_issue23_seen.tsv \\
        --out /tmp/fresh.txt --tsv /tmp/fresh.tsv ``rerun`` reads the
source turns of a graded file again and writes, per row, the facts its turn yields now
(JSON). Both outputs hold LoCoMo text, so they must be outside the repository; the graded
tsv (refs and fact text only) may be kept in bench/. Grades: right (a memory a person would
accept as true and well-formed), noisy (true but clumsy), wrong (not true, not lasting or
misleading), garbled (malformed text).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off)
from app.domain.fact import EpisodeView, FactCandidate  # noqa: E402
from app.services import fact_check, slots  # noqa: E402
from app.services.extract import extract  # noqa: E402

LOCOMO = ROOT.parent / "shared" / "bench" / "locomo_dev.json"
DATA = ROOT / "tests" / "data"
STORY_PERSON = {"user": "User", "human": "Nadia"}


def _iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def turns(locomo: Path = LOCOMO) -> dict[tuple[str, str], dict[str, Any]]:
    """(source, ref) -> {speaker, text, at (epoch seconds)} for every turn of every source."""
    import extraction_coverage
    import natural_pairs
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for t in extraction_coverage.turns(locomo):
        out[("locomo", f"{t['sample']}/{t['dia_id']}")] = {
            "speaker": t["speaker"], "text": t["text"], "at": t["at"]}
    for path in sorted((DATA / "stories").glob("story_?.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            t = json.loads(line)
            if t["speaker"] == "assistant":
                continue
            out[(path.stem, t["ref"])] = {"speaker": STORY_PERSON.get(t["speaker"], t["speaker"]),
                                          "text": t["text"], "at": _iso(t["at"])}
    for name in ("fact_pairs", "fact_pairs_holdout", "fact_pairs_stress"):
        for line in (DATA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                for side in ("a", "b"):
                    s = r[side]
                    out[(name, f"{r['id']}/{side}")] = {"speaker": s["speaker"], "text": s["text"],
                                                        "at": _iso(s["at"])}
    for name in ("natural_pairs", "natural_pairs_reworded"):
        for r in natural_pairs.load(DATA / f"{name}.jsonl", locomo):
            for side in ("a", "b"):
                s = r[side]
                out[(name, f"{r['id']}/{side}")] = {"speaker": s["speaker"], "text": s["text"],
                                                    "at": s["ts"]}
    return out


def stored(turn: dict[str, Any], n: int = 1) -> list[FactCandidate]:
    """The facts of one turn that would be stored (as ``Pipeline._store_facts`` lets in)."""
    facts = extract(EpisodeView(n, turn["text"], turn["speaker"], turn["at"]))
    out = []
    for f in facts:
        f2 = replace(f, predicate=slots.canonical_predicate(f.predicate))
        if f2.predicate != "corrects" and fact_check.problem(f2) is None:
            out.append(f)
    return out


def _inside(path: Path) -> bool:
    return str(path.resolve()).startswith(str(ROOT.resolve()) + "/")


def _refs(path: Path) -> set[tuple[str, str]]:
    """(source, ref) of every row of a graded tsv, or of a list of "source<TAB>ref" lines."""
    out = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = line.split("\t")
        if len(cells) >= 3 and cells[0].isdigit():
            out.add((cells[1], cells[2]))
        elif len(cells) == 2:
            out.add((cells[0], cells[1]))
    return out


def sample(args: argparse.Namespace) -> int:
    all_turns = turns(args.locomo)
    excluded = set().union(*(_refs(p) for p in args.exclude)) if args.exclude else set()
    # A turn seen before (a graded file, a list of turns looked at while tuning) is left out,
    # and so is the same text met again (a pair side that is a LoCoMo turn).
    seen_text = {all_turns[k]["text"] for k in excluded if k in all_turns}
    pools: dict[str, list[tuple[str, str, FactCandidate]]] = {
        "locomo": [], "natural_pairs": [], "natural_pairs_reworded": [], "stories": [],
        "fact_pairs": []}
    for (source, ref), t in all_turns.items():
        if (source, ref) in excluded or t["text"] in seen_text:
            continue
        seen_text.add(t["text"])
        pool = "stories" if source.startswith("story_") else \
            "fact_pairs" if source.startswith("fact_pairs") else source
        for f in stored(t):
            pools[pool].append((source, ref, f))
    rng = random.Random(args.seed)
    picked: list[tuple[str, str, FactCandidate]] = []
    if args.total:
        everything = [x for pool in pools.values() for x in pool]
        picked = rng.sample(everything, min(args.total, len(everything)))
    for pool, k in (() if args.total else (
            ("locomo", args.locomo_n), ("natural_pairs", args.pairs),
            ("natural_pairs_reworded", args.reworded), ("stories", args.stories),
            ("fact_pairs", args.fact_pairs))):
        picked += rng.sample(pools[pool], min(k, len(pools[pool])))
    with args.out.open("w", encoding="utf-8") as fh:
        for n, (source, ref, f) in enumerate(picked, 1):
            t = all_turns[(source, ref)]
            fh.write(f"#{n} {source} {ref} {t['speaker']}\n  turn: {t['text']}\n"
                     f"  fact: {f.statement}   {f.subject}|{f.predicate}|{f.object}"
                     f"{' [' + f.qualifier + ']' if f.qualifier else ''}"
                     f"{' !neg' if f.negated else ''}{' !chg' if f.change else ''}\n\n")
    if args.tsv:
        with args.tsv.open("w", encoding="utf-8") as fh:
            fh.write("n\tsource\tref\tgrade\tfact\treason\n")
            for n, (source, ref, f) in enumerate(picked, 1):
                fh.write(f"{n}\t{source}\t{ref}\t\t{f.statement}\t\n")
    print(json.dumps({"seed": args.seed, "picked": len(picked),
                      "pools": {k: len(v) for k, v in pools.items()}, "file": str(args.out)}))
    return 0


def rerun(args: argparse.Namespace) -> int:
    all_turns = turns(args.locomo)
    rows = []
    for line in args.graded.read_text(encoding="utf-8").splitlines()[1:]:
        n, source, ref, grade, fact, reason = (line.split("\t") + [""] * 6)[:6]
        t = all_turns.get((source, ref))
        now = [f.statement for f in stored(t)] if t else None
        rows.append({"n": n, "source": source, "ref": ref, "grade": grade, "fact": fact,
                     "reason": reason, "kept": now is not None and fact in now,
                     "now": now, "turn": t["text"] if t else None})
    args.out.write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")
    print(json.dumps({"rows": len(rows), "unchanged": sum(r["kept"] for r in rows),
                      "missing_turn": sum(r["now"] is None for r in rows)}))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locomo-file", dest="locomo", type=Path, default=LOCOMO)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sample")
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--locomo", dest="locomo_n", type=int, default=90)
    s.add_argument("--pairs", type=int, default=60)
    s.add_argument("--reworded", type=int, default=40)
    s.add_argument("--stories", type=int, default=20)
    s.add_argument("--fact-pairs", type=int, default=0,
                   help="facts from tests/data/fact_pairs*.jsonl (short written statements)")
    s.add_argument("--total", type=int, default=0, metavar="N",
                   help="N facts drawn from all sources together (instead of per source)")
    s.add_argument("--exclude", type=Path, action="append", default=[],
                   help="a graded tsv or a source<TAB>ref list whose turns are left out")
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--tsv", type=Path)
    r = sub.add_parser("rerun")
    r.add_argument("graded", type=Path)
    r.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if _inside(args.out):
        print(json.dumps({"error": "the output holds LoCoMo text: write it outside the "
                                   "repository"}))
        return 2
    return sample(args) if args.cmd == "sample" else rerun(args)


if __name__ == "__main__":
    raise SystemExit(main())
