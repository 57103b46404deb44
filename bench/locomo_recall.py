#!/usr/bin/env python3
"""LoCoMo evidence retrieval through Kept's own recall. Prints JSON.

Each conversation of ../shared/bench/locomo_dev.json goes into its own vault (text as said by
the speaker, the session date as ``at``, ``ref`` = the turn's ``dia_id``), every question is
recalled with ``now`` just after the last session, and the ranked refs are scored with
``locomo_score.py --rankers none --external``.

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx python bench/locomo_recall.py
    python bench/locomo_recall.py --via-cli     # the same through `kept import` / `kept recall --batch`
    python bench/locomo_recall.py --consolidate --tune hop_weight=0.2   # links, then hops

The data is CC BY-NC 4.0 and is read from ../shared at run time, never copied.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, here and in children)

sys.path.insert(0, str(ROOT / "bench"))
import tuning  # noqa: E402

SHARED = ROOT.parent / "shared"
DATA = SHARED / "bench" / "locomo_dev.json"
SCORER = SHARED / "bench" / "locomo_score.py"
PASSWORD = "locomo-bench-password"


def session_time(text: str) -> datetime:
    """LoCoMo dates look like '1:56 pm on 8 May, 2023'."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turns_of(sample: dict) -> list[dict]:
    conv = sample["conversation"]
    out = []
    n = 1
    while f"session_{n}" in conv:
        start = session_time(conv[f"session_{n}_date_time"])
        for i, turn in enumerate(conv[f"session_{n}"]):
            out.append({"session": f"{sample['sample_id']}/S{n}", "speaker": turn["speaker"],
                        "text": turn["text"], "ref": turn["dia_id"],
                        "at": (start + timedelta(seconds=30 * i)).isoformat()})
        n += 1
    return out


def ranked_refs(hits: list[dict], k: int) -> list[str]:
    out: list[str] = []
    for h in hits:
        for r in h["refs"]:
            if r not in out:
                out.append(r)
    return out[:k]


def run_facade(sample: dict, questions: list[dict], now: str, folder: Path, depth: int,
               tune: dict | None = None, consolidate: bool = False,
               query_model: str | None = None, summaries: bool = False
               ) -> tuple[list[dict], dict]:
    from app.clock import parse_iso
    from app.facade import Vault
    from app.services.importer import parse_import
    from storage.crypto import KdfParams
    lines = [json.dumps(t) for t in turns_of(sample)]
    t0 = time.perf_counter()
    vault = Vault.create(folder, PASSWORD, kdf=KdfParams(m=65_536, t=3), threaded=False,
                         use_chroma=False).vault
    tuning.apply(vault, tune or {})
    vault.import_turns(parse_import(lines))
    if consolidate:  # the whole pipeline once (facts, entities, links), as the app's schedule
        vault.consolidate(now=parse_iso(now))
    if query_model:  # the vault built with one model, opened and queried with another
        vault.lock()
        built_with, os.environ["KEPT_MODEL_DIR"] = os.environ["KEPT_MODEL_DIR"], query_model
        try:
            vault = Vault.open(folder, PASSWORD, threaded=False, use_chroma=False)
        finally:
            os.environ["KEPT_MODEL_DIR"] = built_with
        tuning.apply(vault, tune or {})
    if summaries:  # long conversations summarised first (the consolidation step, issue 27)
        vault.consolidate(steps=("summaries",), now=parse_iso(now))
    t1 = time.perf_counter()
    results = vault.recall_batch([(q["qid"], q["question"], parse_iso(now)) for q in questions],
                                 k=depth)
    t2 = time.perf_counter()
    vault.lock()
    ranked = [{"qid": qid, "ranked": ranked_refs(
        [{"refs": list(h.refs)} for h in hits], depth)} for qid, hits in results]
    return ranked, {"turns": len(lines), "import_s": t1 - t0, "recall_s": t2 - t1}


def run_cli(sample: dict, questions: list[dict], now: str, folder: Path, depth: int
            ) -> tuple[list[dict], dict]:
    env = dict(os.environ, KEPT_PASSWORD=PASSWORD)
    kept = [sys.executable, "-m", "app.cli", "--vault", str(folder)]
    tmp = folder.parent
    (tmp / "turns.jsonl").write_text("\n".join(json.dumps(t) for t in turns_of(sample)))
    (tmp / "queries.jsonl").write_text("\n".join(
        json.dumps({"qid": q["qid"], "query": q["question"], "now": now}) for q in questions))
    t0 = time.perf_counter()
    subprocess.run([*kept, "init", "--kdf-memory-mib", "64"], env=env, check=True, cwd=ROOT,
                   capture_output=True)
    subprocess.run([*kept, "import", str(tmp / "turns.jsonl")], env=env, check=True, cwd=ROOT,
                   capture_output=True)
    t1 = time.perf_counter()
    out = subprocess.run([*kept, "recall", "--batch", str(tmp / "queries.jsonl"), "--json",
                          "--k", str(depth)], env=env, check=True, cwd=ROOT,
                         capture_output=True, text=True).stdout
    t2 = time.perf_counter()
    ranked = []
    for line in out.splitlines():
        obj = json.loads(line)
        ranked.append({"qid": obj["qid"], "ranked": ranked_refs(obj["hits"], depth)})
    return ranked, {"turns": len(turns_of(sample)), "import_s": t1 - t0, "recall_s": t2 - t1}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--via-cli", action="store_true")
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--samples", help="comma list of sample ids (default: all)")
    ap.add_argument("--consolidate", action="store_true",
                    help="run consolidation once after the import (facade path only): facts, "
                    "entities and links before the questions")
    ap.add_argument("--tune", action="append", default=[], metavar="FIELD=VALUE",
                    help="override a RecallTuning field (an experiment; facade path only)")
    ap.add_argument("--query-model-dir", metavar="DIR",
                    help="build each vault with KEPT_MODEL_DIR's model, then reopen it with the "
                         "model in DIR and query with that (mixing fp32 and int8 vectors)")
    ap.add_argument("--summaries", action="store_true",
                    help="run the consolidation step 'summaries' after each import "
                         "(facade path only)")
    args = ap.parse_args()
    tune = tuning.parse(args.tune)
    if not DATA.exists():
        print(json.dumps({"error": f"missing {DATA}"}))
        return 2
    os.environ.setdefault("KEPT_MODEL_DIR", str(SHARED / "models" / "all-MiniLM-L6-v2" / "onnx"))
    data = json.loads(DATA.read_text())
    with tempfile.TemporaryDirectory(prefix="kept-locomo-") as tmpdir:
        tmp = Path(tmpdir)
        qfile = tmp / "q.jsonl"
        subprocess.run([sys.executable, str(SCORER), "--dump-questions", str(qfile)], check=True,
                       capture_output=True)
        questions = [json.loads(x) for x in qfile.read_text().splitlines()]
        ranked_all: list[dict] = []
        timings = {}
        for sample in data:
            sid = sample["sample_id"]
            if args.samples and sid not in args.samples.split(","):
                continue
            qs = [q for q in questions if q["sample_id"] == sid]
            last = max(t["at"] for t in turns_of(sample))
            now = (datetime.fromisoformat(last) + timedelta(days=1)).isoformat()
            folder = tmp / sid / "vault"
            folder.parent.mkdir(parents=True)
            if args.via_cli:
                ranked, timing = run_cli(sample, qs, now, folder, args.depth)
            else:
                ranked, timing = run_facade(sample, qs, now, folder, args.depth, tune,
                                            args.consolidate, args.query_model_dir,
                                            args.summaries)
            ranked_all += ranked
            timings[sid] = timing
        rfile = tmp / "ranked.jsonl"
        rfile.write_text("\n".join(json.dumps(r) for r in ranked_all))
        jfile = tmp / "scores.json"
        subprocess.run([sys.executable, str(SCORER), "--rankers", "none", "--external",
                        str(rfile), "--json-out", str(jfile)], check=True, capture_output=True)
        scores = json.loads(jfile.read_text())
    print(json.dumps({"benchmark": "locomo_dev_evidence_recall", "path": "cli" if args.via_cli
                      else "facade", "consolidated": args.consolidate, "tune": tune,
                      "model_dir": os.environ["KEPT_MODEL_DIR"],
                      "query_model_dir": args.query_model_dir,
                      "questions": len(ranked_all), "scores": scores,
                      "timings": timings}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
