#!/usr/bin/env python3
"""Extraction coverage on the LoCoMo dev conversations. Prints JSON.

The share of substantive statements that yield at least one fact when the rules extractor
reads each turn on its own, as consolidation does (one episode per turn, the turn's speaker,
its session time). The data (../shared/bench/locomo_dev.json, CC BY-NC 4.0) is read at run
time, never copied.

A turn is *substantive* (``substantive()``) when, after dropping its questions and its
greeting / thanks / congratulation / reaction sentences, what is left has at least
``MIN_WORDS`` words and a first-person (I, my, we, our, ...) or third-person (he, she, they,
his, her, a name, "my sister") subject word. "Hey Mel! How have you been?" is not;
"Lost my job as a banker yesterday, so I'm gonna start my own business." is.

    python bench/extraction_coverage.py                        # JSON report
    python bench/extraction_coverage.py --sample 100 --seed 15 --out /tmp/facts_sample.txt

``--sample N`` writes N facts drawn at random (seeded) from all facts extracted, each with its
source turn, for checking by hand; the file holds LoCoMo text, so it must be outside the
repository (the script refuses a path inside it). Hand-check criteria: tests/data/
natural_pairs.md.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off)
from app.domain.fact import EpisodeView  # noqa: E402
from app.services.extract import extract  # noqa: E402

LOCOMO = ROOT.parent / "shared" / "bench" / "locomo_dev.json"
MIN_WORDS = 6
_SENTENCE = re.compile(r"[^.!?]+(?:[.!?]+|$)")
_WORD = re.compile(r"[A-Za-z0-9']+")
# Sentences that carry no statement: greetings, thanks, congratulations, reactions, sign-offs.
_FILLER = re.compile(
    r"^\W*(?:hey|hi|hello|yo|thanks|thank you|thx|congrats|congratulations|wow|woah|whoa|aw+|"
    r"oh|ooh|haha|lol|omg|yay|yeah|yep|yup|nope|no worries|sure|cool|nice|great|awesome|"
    r"amazing|sounds|that's|that is|glad|sorry|good luck|take care|bye|see you|talk soon|"
    r"catch you|you're|you are|you've|you have|you got|keep it up|way to go|so proud|"
    r"can't wait|i'm so happy for you|good to|great to|nice to|long time)\b", re.I)
_FIRST = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|us|our|ours)\b",
                    re.I)
_THIRD = re.compile(r"\b(?:he|she|they|he's|she's|they're|his|her|their|him|them)\b", re.I)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}\b")


def session_time(text: str) -> datetime:
    """LoCoMo dates look like '1:56 pm on 8 May, 2023'."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def statement_part(text: str) -> str:
    """The turn without its questions and filler sentences."""
    keep = []
    for m in _SENTENCE.finditer(text):
        s = m.group(0).strip()
        if not s or s.endswith("?") or _FILLER.match(s):
            continue
        keep.append(s)
    return " ".join(keep)


def substantive(text: str) -> bool:
    rest = statement_part(text)
    if len(_WORD.findall(rest)) < MIN_WORDS:
        return False
    return bool(_FIRST.search(rest) or _THIRD.search(rest) or _NAME.search(rest))


def turns(path: Path = LOCOMO) -> list[dict[str, Any]]:
    out = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        n = 1
        while f"session_{n}" in conv:
            start = session_time(conv[f"session_{n}_date_time"])
            for i, t in enumerate(conv[f"session_{n}"]):
                out.append({"sample": sample["sample_id"], "dia_id": t["dia_id"],
                            "speaker": t["speaker"], "text": t["text"],
                            "at": (start + timedelta(seconds=30 * i)).timestamp(),
                            "date": start.date().isoformat()})
            n += 1
    return out


def measure(rows: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    per_sample: dict[str, Counter[str]] = {}
    predicates: Counter[str] = Counter()
    facts_out: list[dict[str, Any]] = []
    for n, t in enumerate(rows):
        facts = extract(EpisodeView(n, t["text"], t["speaker"], t["at"]))
        sub = substantive(t["text"])
        c = per_sample.setdefault(t["sample"], Counter())
        c["turns"] += 1
        c["substantive"] += sub
        c["substantive_with_fact"] += sub and bool(facts)
        c["with_fact"] += bool(facts)
        c["facts"] += len(facts)
        for f in facts:
            predicates[f.predicate] += 1
            facts_out.append({"sample": t["sample"], "dia_id": t["dia_id"], "date": t["date"],
                              "speaker": t["speaker"], "turn": t["text"],
                              "substantive": sub, "fact": f.statement,
                              "triple": [f.subject, f.predicate, f.object],
                              "qualifier": f.qualifier, "negated": f.negated,
                              "change": f.change})
    total: Counter[str] = sum(per_sample.values(), Counter())

    def share(c: Counter[str]) -> dict[str, Any]:
        return {**{k: c[k] for k in ("turns", "substantive", "substantive_with_fact",
                                     "with_fact", "facts")},
                "coverage": round(c["substantive_with_fact"] / c["substantive"], 3)
                if c["substantive"] else None}
    report = {"definition": f"substantive: >= {MIN_WORDS} words after dropping questions and "
                            "filler sentences, with a first- or third-person subject word",
              "all": share(total),
              "by_sample": {s: share(c) for s, c in sorted(per_sample.items())},
              "predicates": dict(predicates.most_common())}
    return report, facts_out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locomo", type=Path, default=LOCOMO)
    ap.add_argument("--sample", type=int, default=0, metavar="N")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--out", type=Path, default=Path("/tmp/kept_facts_sample.txt"))
    args = ap.parse_args(argv)
    if not args.locomo.exists():
        print(json.dumps({"error": f"missing {args.locomo}"}))
        return 2
    if args.sample and str(args.out.resolve()).startswith(str(ROOT.resolve()) + "/"):
        print(json.dumps({"error": "the sample holds LoCoMo text: write it outside the "
                                   "repository"}))
        return 2
    report, facts = measure(turns(args.locomo))
    if args.sample:
        picked = random.Random(args.seed).sample(facts, min(args.sample, len(facts)))
        with args.out.open("w", encoding="utf-8") as fh:
            for n, f in enumerate(picked, 1):
                fh.write(f"#{n} {f['sample']} {f['dia_id']} ({f['date']}) {f['speaker']}\n"
                         f"  turn: {f['turn']}\n  fact: {f['fact']}   "
                         f"{'|'.join(map(str, f['triple']))}"
                         f"{' [' + f['qualifier'] + ']' if f['qualifier'] else ''}"
                         f"{' !neg' if f['negated'] else ''}{' !chg' if f['change'] else ''}\n"
                         f"  verdict: \n\n")
        report["sample"] = {"n": len(picked), "of": len(facts), "seed": args.seed,
                            "file": str(args.out)}
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
