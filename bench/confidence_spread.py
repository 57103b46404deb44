#!/usr/bin/env python3
"""How far the confidence of facts and habits spreads (issue 27 item 6). Prints JSON.

For the demo conversation (app/demo.py) and each development story (tests/data/stories, see
bench/stories.py): import it into a fresh vault, consolidate once (``now`` one hour after the
last turn) and read the confidence of every active fact and habit (**before**: what Kept stored
until issue 27, two of 003's five factors fixed at the neutral .5). Then use the vault as an
assistant would: ask its questions through the context briefing (the demo's three queries;
each story's questions), which marks what a request used, and run the consolidation step
``scores`` (usage success from use and contradictions; user validation from the person's
confirmations and corrections, none in these stories) and read them again (**after**).

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx .venv/bin/python bench/confidence_spread.py

Development data only (the demo and tests/data/stories); no held-out text.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import storage  # noqa: F401  (first: onnxruntime telemetry off)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from stories import STORIES, load  # noqa: E402

PASSWORD = "confidence bench"


def spread(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return {"n": len(values), "min": round(min(values), 3), "p25": round(q[0], 3),
            "median": round(q[1], 3), "p75": round(q[2], 3), "max": round(max(values), 3),
            "stdev": round(statistics.pstdev(values), 3),
            "share_43_49": round(sum(0.43 <= v <= 0.49 for v in values) / len(values), 3),
            "distinct": len({round(v, 3) for v in values})}


def confidences(vault: Any) -> list[float]:
    from tests.inside import inside
    return [float(r[0]) for r in inside(vault).db.read(lambda c: c.execute(
        "SELECT confidence FROM memory WHERE status = 'active' AND store IN "
        "('semantic', 'procedural')").fetchall())]


def run(name: str, turns: list[Any], queries: list[str]) -> dict[str, Any]:
    from app.clock import FixedClock
    from app.facade import Vault
    from storage.crypto import KdfParams
    end = max(t.at for t in turns) + 3600
    folder = Path(tempfile.mkdtemp(prefix=f"kept-conf-{name}-")) / "v"
    vault = Vault.create(folder, PASSWORD, kdf=KdfParams(m=65_536, t=3, p=4), threaded=False,
                         use_chroma=False, clock=FixedClock(end)).vault
    try:
        vault.import_turns(turns)
        vault.consolidate(now=end)
        before = confidences(vault)
        for q in queries:
            vault.context(q, now=end)
        report = vault.consolidate(steps=("scores",), now=end).value
        after = confidences(vault)
    finally:
        vault.lock()
    return {"name": name, "queries": len(queries), "before": spread(before),
            "after": spread(after), "confidence_moved": report.counts.get("confidence_moved", 0)}


def main() -> None:
    from app.demo import DEMO_QUERIES, demo_turns
    from app.services.importer import parse_import
    out = [run("demo", demo_turns(), list(DEMO_QUERIES))]
    names = sorted(p.name.removesuffix(".questions.jsonl")
                   for p in STORIES.glob("*.questions.jsonl"))
    for n in names:
        lines, questions = load(n)
        out.append(run(n, parse_import(lines), [q["q"] for q in questions]))
    print(json.dumps({"set": "development (app/demo.py, tests/data/stories)", "vaults": out},
                     indent=1))


if __name__ == "__main__":
    main()
