#!/usr/bin/env python3
"""The summaries step with the turns' stored vectors against re-embedding every sentence
(issue 28: the step was over half of consolidation at 10k). Prints JSON.

Two parts, both **dev**:

1. ``locomo``: every LoCoMo dev session (``../shared/bench/locomo_dev.json``, read at run
   time) long enough to be summarised (``policy.SUMMARY_MIN_TURNS``), summarised by
   ``summaries.extractive`` twice: as before (every sentence embedded) and with one vector per
   turn made as the import makes its event's (``embed_text``: time, speaker and text), which
   is what the step now reads from the vault. Reports how many summaries are identical, the
   share of picked sentences the two have in common, and the sentences embedded.
2. ``chat``: ``--turns`` generated chat turns (``reference_check.chat_turns``, 30 a session)
   imported into one real vault; the summaries step runs as before (``_turn_vectors``
   patched to None), is undone, and runs as now: CPU seconds of each run, texts embedded,
   and how many summaries differ.

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx .venv/bin/python bench/summaries_reuse.py
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import storage  # noqa: E402,F401  (first: onnxruntime telemetry off)

DATA = ROOT.parent / "shared" / "bench" / "locomo_dev.json"


class Counting:
    """The embedder's ``embed`` that counts the texts it is given."""

    def __init__(self, embed: Any) -> None:
        self.embed, self.texts = embed, 0

    def __call__(self, texts: list[str]) -> Any:
        self.texts += len(texts)
        return self.embed(texts)


def locomo(embedder: Any) -> dict[str, Any]:
    import numpy as np
    from locomo_recall import session_time

    from app import policy
    from app.domain.memory import Draft, Store
    from app.services import summaries
    from app.services.ingest import embed_text
    from app.services.summaries import SummaryTurn
    data = json.loads(DATA.read_text())
    same = differ = 0
    overlap: list[float] = []
    kept: list[float] = []
    old_n = Counting(embedder.embed)
    new_n = Counting(embedder.embed)
    for sample in data:
        conv = sample["conversation"]
        n = 1
        while f"session_{n}" in conv:
            start = session_time(conv[f"session_{n}_date_time"]).timestamp()
            turns = [SummaryTurn(i, t["speaker"], t["text"], start + 30 * i)
                     for i, t in enumerate(conv[f"session_{n}"])]
            n += 1
            if len(turns) < policy.SUMMARY_MIN_TURNS:
                continue
            before, _ = summaries.extractive(turns, old_n)
            vecs = new_n([embed_text(Draft(text=t.text, store=Store.EPISODIC,
                                           occurred_at=t.occurred_at, speaker=t.speaker))
                          for t in turns])
            new_n.texts -= len(turns)  # these exist in a vault: stored with each event
            after, _ = summaries.extractive(turns, new_n, turn_vecs=np.asarray(vecs))
            if before == after:
                same += 1
            else:
                differ += 1
            a, b = set(_lines(before)), set(_lines(after))
            overlap.append(len(a & b) / max(1, len(a | b)))
            # The old criterion (sentence centrality and salience) summed over the picks:
            # how much of it the new picks keep.
            items = summaries.sentences(turns)
            central = summaries._centrality(items, embedder.embed([x.text for x in items]))
            worth = {summaries._line(x): policy.SUMMARY_W_CENTRAL * float(c)
                     + (1 - policy.SUMMARY_W_CENTRAL) * x.salience
                     for x, c in zip(items, central, strict=True)}
            kept.append(sum(worth.get(x, 0.0) for x in b) / max(1e-9, sum(
                worth.get(x, 0.0) for x in a)))
    return {"set": "dev (LoCoMo)", "sessions": same + differ, "identical": same,
            "different": differ,
            "mean_jaccard_of_picked_sentences": round(sum(overlap) / max(1, len(overlap)), 3),
            "old_criterion_kept": round(sum(kept) / max(1, len(kept)), 3),
            "old_criterion_kept_min": round(min(kept, default=0.0), 3),
            "sentences_embedded_before": old_n.texts, "sentences_embedded_after": new_n.texts}


def _lines(text: str) -> list[str]:
    import re
    return [x for x in re.split(r"(?<=[.!?])\s+", text) if x]


def chat(n: int) -> dict[str, Any]:
    from reference_check import PASSWORD, chat_turns

    from app.clock import parse_iso
    from app.facade import Vault
    from app.services.consolidation import summarise
    from app.services.importer import parse_import
    from storage.crypto import KdfParams
    from tests.inside import inside
    turns = chat_turns(n, per_session=30, start=datetime(2025, 1, 6, 18, 0, tzinfo=UTC))
    now = parse_iso(turns[-1]["at"]) + 3600
    with tempfile.TemporaryDirectory(prefix="kept-sumreuse-") as tmp:
        vault = Vault.create(Path(tmp) / "v", PASSWORD, kdf=KdfParams(m=65_536, t=3),
                             threaded=False, use_chroma=False).vault
        try:
            vault.import_turns(parse_import([json.dumps(t) for t in turns]))
            embedder = inside(vault).embedder
            assert embedder is not None
            counting = Counting(embedder.embed)
            embedder.embed = counting  # type: ignore[method-assign]
            real = summarise._turn_vectors
            out: dict[str, Any] = {}
            texts: dict[str, list[str]] = {}
            for mode in ("before", "after"):
                summarise._turn_vectors = ((lambda p, g: None) if mode == "before"  # type: ignore[assignment]
                                           else real)
                counting.texts = 0
                c0, t0 = time.process_time(), time.perf_counter()
                report = vault.consolidate(steps=("summaries",), now=now).value
                out[mode] = {"cpu_s": round(time.process_time() - c0, 2),
                             "wall_s": round(time.perf_counter() - t0, 2),
                             "texts_embedded": counting.texts,
                             "sessions_summarised": report.counts.get("sessions_summarised", 0)}
                texts[mode] = [str(r[0]) for r in inside(vault).db.read(lambda c: c.execute(
                    "SELECT m.text FROM memory m JOIN episode e ON e.memory_id = m.id "
                    "WHERE e.event_type = 'summary' ORDER BY m.session").fetchall())]
                if mode == "before":
                    vault.undo_run(report.run_id)
            summarise._turn_vectors = real  # type: ignore[assignment]
        finally:
            vault.lock()
    pairs = list(zip(texts["before"], texts["after"], strict=True))
    return {"set": "dev (generated chat)", "turns": n, **out,
            "identical": sum(a == b for a, b in pairs), "different": sum(a != b for a, b in pairs)}


def whole(n: int) -> dict[str, Any]:
    """``n`` generated chat turns imported once; two copies of that vault each consolidated
    in one whole run (as ``reference_check.py --scale``), the summaries step as before in one
    and as now in the other: CPU seconds per 1,000 episodes of each."""
    import shutil

    from reference_check import PASSWORD, chat_turns

    from app.clock import parse_iso
    from app.facade import Vault
    from app.services.consolidation import summarise
    from app.services.consolidation.pipeline import STEPS
    from app.services.importer import parse_import
    from storage.crypto import KdfParams
    turns = chat_turns(n, per_session=30)
    now = parse_iso(turns[-1]["at"]) + 3600
    real = summarise._turn_vectors
    out: dict[str, Any] = {"set": "dev (generated chat)", "turns": n}
    with tempfile.TemporaryDirectory(prefix="kept-sumwhole-") as tmp:
        vault = Vault.create(Path(tmp) / "v", PASSWORD, kdf=KdfParams(m=65_536, t=3),
                             threaded=False, use_chroma=False).vault
        vault.import_turns(parse_import([json.dumps(t) for t in turns]))
        vault.lock()
        for mode in ("before", "after"):
            folder = Path(tmp) / mode
            shutil.copytree(Path(tmp) / "v", folder)
            v = Vault.open(folder, PASSWORD, threaded=False, use_chroma=False)
            summarise._turn_vectors = ((lambda p, g: None) if mode == "before"  # type: ignore[assignment]
                                       else real)
            try:
                marks: list[float] = []
                c0, t0 = time.process_time(), time.perf_counter()
                report = v.consolidate(now=now, progress=lambda done, total, m=marks: m.append(
                    time.process_time())).value
                cpu, wall = time.process_time() - c0, time.perf_counter() - t0
                episodes = int(v.count_memories(_episodes()))
            finally:
                summarise._turn_vectors = real  # type: ignore[assignment]
                v.lock()
                shutil.rmtree(folder)
            out[mode] = {"consolidation_cpu_s": round(cpu, 1), "wall_s": round(wall, 1),
                         "episodes": episodes,
                         "cpu_s_per_1k_episodes": round(cpu / max(1, episodes) * 1000, 2),
                         "wall_s_per_1k_episodes": round(wall / max(1, episodes) * 1000, 2),
                         "sessions_summarised": report.counts.get("sessions_summarised", 0),
                         "step_cpu_s": {name: round(b - a, 1) for name, a, b in zip(
                             STEPS, [c0, *marks], marks, strict=False)},
                         "failed_batches": report.failed_batches,
                         "load": os.getloadavg()}
    return out


def _episodes() -> Any:
    from app.api import MemoryQuery
    from app.domain.memory import Store
    return MemoryQuery(store=Store.EPISODIC, status=None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=3000, help="generated chat turns (part 2)")
    ap.add_argument("--skip-locomo", action="store_true")
    ap.add_argument("--whole", type=int, metavar="N", help="instead: N generated turns, one "
                    "whole consolidation as before and one as now (CPU per 1,000 episodes)")
    args = ap.parse_args()
    os.environ.setdefault("KEPT_MODEL_DIR", str(ROOT.parent / "shared" / "models" /
                                                "all-MiniLM-L6-v2" / "onnx"))
    from app import bootstrap
    if args.whole:
        print(json.dumps({"benchmark": "summaries_reuse_whole", **whole(args.whole)}, indent=1))
        return 0
    out: dict[str, Any] = {"benchmark": "summaries_reuse"}
    if not args.skip_locomo and DATA.exists():
        embedder, _ = bootstrap.load_embedder(True)
        out["locomo"] = locomo(embedder)
    out["chat"] = chat(args.turns)
    out["load"] = os.getloadavg()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
