#!/usr/bin/env python3
"""PARA entities on the LoCoMo dev conversations (issue 15 item 4). Prints JSON.

Each conversation of ../shared/bench/locomo_dev.json (CC BY-NC 4.0; read at run time, never
copied) is imported into a vault of its own exactly as ``bench/consolidation.py`` does, and
consolidated once (``now`` one day after its last turn). Reported per conversation: the
entities made, by kind, and how many memories mention them; summaries written; and the
seconds of the run.

    python bench/para_entities.py
    python bench/para_entities.py --sample 30 --seed 15 --out /tmp/para_sample.txt
    python bench/para_entities.py --stories      # our stories (dev) instead

Also reported (issue 27 item 3): companies and archives (their kinds besides PARA's), the
entities merged and the projects archived in the run; merged entities are not counted.

``--sample N`` writes N projects, areas and resources drawn at random (seeded) from all the
conversations, each with its mention count and the first turns that mention it, for checking
by hand (is it a project, an ongoing area or a resource of one of the speakers, with a name
that says which?). The file holds LoCoMo text, so it must be outside the repository.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from locomo_recall import DATA, PASSWORD, turns_of  # noqa: E402

import storage  # noqa: E402,F401  (first: onnxruntime telemetry off)

PARA = ("project", "area", "resource", "company", "archive")
STORIES = ROOT / "tests" / "data" / "stories"


def story_samples() -> list[dict[str, Any]]:
    """Our stories (tests/data/stories, dev) shaped as LoCoMo samples: their turns as is."""
    return [{"sample_id": p.stem, "turns": [json.loads(line) for line in
                                            p.read_text("utf-8").splitlines() if line.strip()]}
            for p in sorted(STORIES.glob("story_*.jsonl")) if "questions" not in p.name]


def run(sample: dict[str, Any], folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from app.clock import parse_iso
    from app.facade import Vault, internals
    from app.services.importer import parse_import
    from storage.crypto import KdfParams

    turns = sample["turns"] if "turns" in sample else turns_of(sample)
    now = parse_iso((datetime.fromisoformat(max(t["at"] for t in turns))
                     + timedelta(days=1)).isoformat())
    vault = Vault.create(folder, PASSWORD, kdf=KdfParams(m=65_536, t=3), threaded=False,
                         use_chroma=False, load_model=False).vault
    try:
        vault.import_turns(parse_import([json.dumps(t) for t in turns]))
        started = time.perf_counter()
        report = vault.consolidate(now=now).value
        seconds = time.perf_counter() - started

        def q(sql: str, *p: Any) -> list[Any]:
            return internals(vault).db.read(lambda c: c.execute(sql, p).fetchall())
        ents = q("SELECT e.id, e.kind, e.name, e.summary, count(em.memory_id) FROM entity e "
                 "LEFT JOIN entity_mention em ON em.entity_id = e.id WHERE e.status != "
                 "'merged' GROUP BY e.id")
        kinds = Counter(r[1] for r in ents)
        picked = []
        for eid, kind, name, summary, n in ents:
            if kind not in PARA:
                continue
            said = [r[0] for r in q("SELECT m.text FROM entity_mention em JOIN memory m ON "
                                    "m.id = em.memory_id WHERE em.entity_id = ? AND m.store = "
                                    "'episodic' ORDER BY m.occurred_at LIMIT 2", eid)]
            picked.append({"sample": sample["sample_id"], "kind": kind, "name": name,
                           "mentions": n, "summary": summary, "said": said})
        return ({"turns": len(turns), "entities": dict(sorted(kinds.items())),
                 "para_mentions": {k: sum(p["mentions"] for p in picked if p["kind"] == k)
                                   for k in PARA},
                 "summaries_written": report.counts.get("summaries_written", 0),
                 "entities_merged": report.counts.get("entities_merged", 0),
                 "projects_archived": report.counts.get("projects_archived", 0),
                 "consolidation_s": round(seconds, 2)}, picked)
    finally:
        vault.lock()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", help="comma list of sample ids (default: all)")
    ap.add_argument("--sample", type=int, default=0, help="write N entities for hand-checking")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--stories", action="store_true",
                    help="our stories (tests/data/stories, dev) instead of LoCoMo dev")
    ap.add_argument("--out", type=Path, help="where --sample writes (outside the repository)")
    args = ap.parse_args()
    if args.sample and (args.out is None or args.out.resolve().is_relative_to(ROOT)):
        print("--sample needs --out outside the repository (the file holds LoCoMo text)",
              file=sys.stderr)
        return 2
    data = story_samples() if args.stories else json.loads(DATA.read_text("utf-8"))
    wanted = set(args.samples.split(",")) if args.samples else None
    per: dict[str, Any] = {}
    everything: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for sample in data:
            if wanted and sample["sample_id"] not in wanted:
                continue
            per[sample["sample_id"]], picked = run(sample, Path(tmp) / sample["sample_id"])
            everything += picked
    total = Counter[str]()
    for r in per.values():
        total.update(r["entities"])
    print(json.dumps({"benchmark": "stories_para_entities" if args.stories
                      else "locomo_dev_para_entities", "conversations": len(per),
                      "entities_total": dict(sorted(total.items())),
                      "per_conversation_mean": {k: round(v / max(1, len(per)), 1)
                                                for k, v in sorted(total.items())},
                      "per_conversation": per}, indent=1))
    if args.sample:
        rng = random.Random(args.seed)
        chosen = rng.sample(everything, min(args.sample, len(everything)))
        with args.out.open("w", encoding="utf-8") as out:
            for n, e in enumerate(chosen, 1):
                out.write(f"{n}. [{e['sample']}] {e['kind']}: {e['name']} "
                          f"({e['mentions']} mentions)\n   summary: {e['summary']}\n")
                for s in e["said"]:
                    out.write(f"   - {s}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
