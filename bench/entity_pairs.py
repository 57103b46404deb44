#!/usr/bin/env python3
"""Entity merging on a labelled set of name pairs (issue 27 item 3). Prints JSON: for each
cosine threshold, the precision and recall of ``entity_merge.same_thing`` on the pairs below
(the real ONNX MiniLM embedder), and the pairs it gets wrong at the chosen threshold.

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx python bench/entity_pairs.py

The pairs were written for this (dev): same thing (True) or not (False), with the two kinds
consolidation would give them. Hard negatives share letters or words but name different things
("Ana" / "Anna's bakery", "Java" / "JavaScript", "Spanish" / "Spanish omelette recipe").
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import storage  # noqa: E402,F401  (first: onnxruntime telemetry off)

P, R, A, C, PR, W = "person", "resource", "area", "company", "project", "work"
PL = "place"
PAIRS: list[tuple[str, str, str, str, bool]] = [
    # the same thing
    ("Spanish", R, "Spanish on Duolingo", R, True),
    ("Dr. Silva", P, "Silva", P, True),
    ("Mum", P, "Mom", P, True),
    ("Mom", P, "Mother", P, True),
    ("Dad", P, "Daddy", P, True),
    ("Spanish", P, "Spanish", R, True),
    ("Duolingo", P, "Duolingo", R, True),
    ("Kitchen renovation", PR, "Kitchen renovation project", PR, True),
    ("Garden project", PR, "Garden", PR, True),
    ("Photography course", R, "Online photography course", R, True),
    ("Atomic Habits", R, "Atomic Habits", W, True),
    ("Prof. Okafor", P, "Okafor", P, True),
    ("Mrs. Patel", P, "Patel", P, True),
    ("Northwind", C, "Northwind Traders", C, True),
    ("Python", R, "Python programming", R, True),
    ("Guitar", A, "Guitar lessons", A, True),
    ("Marathon training", PR, "Marathon", PR, True),
    ("Children's book", PR, "Children's book project", PR, True),
    ("Grandma", P, "Granny", P, True),
    ("Lasagna recipe", R, "Grandma's lasagna recipe", R, True),
    ("Notion", R, "Notion app", R, True),
    ("Melanie", P, "Mel", P, True),  # a nickname: not provable from the name, so missed
    ("Swift", R, "Swift on the iPad", R, True),
    # hard negatives: different things
    ("Ana", P, "Anna's bakery", C, False),
    ("Java", R, "JavaScript", R, False),
    ("Spanish", R, "Spanish omelette recipe", R, False),
    ("Mum", P, "Dad", P, False),
    ("Caroline", P, "Carolina", P, False),
    ("Anna", P, "Anna's bakery", C, False),
    ("Kitchen renovation", PR, "Bathroom renovation", PR, False),
    ("Photography course", R, "Pottery course", R, False),
    ("Python", R, "Python course", R, False),
    ("Silva", P, "Silva Street", C, False),
    ("John", P, "Johnson", P, False),
    ("Sam", P, "Samantha", P, False),
    ("Garden", PR, "Garden party", PR, False),
    ("Health", A, "Mental health", A, False),
    ("Running", A, "Running shoes", R, False),
    ("Google", C, "Google Docs", R, False),
    ("Paris", P, "Paris trip", PR, False),
    ("Book club", A, "Book", R, False),
    ("French", R, "French Bulldog", R, False),
    ("Dr. Silva", P, "Dr. Santos", P, False),
    ("Marathon", PR, "Half marathon", PR, False),
    ("Mother", P, "Grandmother", P, False),
    ("Atomic Habits", R, "Habits", R, False),
    ("Emma", P, "Emma's wedding", PR, False),
    ("Spanish course", R, "English course", R, False),
    ("Chess", A, "Chess club", C, False),
    ("Ruby", R, "Ruby on Rails", R, False),  # a language and a framework in it
    ("Bakery", PR, "Bakery in Lisbon", PR, False),
    # issue 27 row 8 (added after the first figures; dev): one entity per real thing
    ("Kitewood", C, "Kitewood Studio", C, True),
    ("Halvorsen", P, "Halvorsen", C, True),
    ("Dr Halvorsen", P, "Halvorsen", P, True),
    ("Mercy", C, "Mercy Hospital", C, True),
    ("Anna", P, "Anna's mum", P, False),
    ("Lisbon", PL, "Lisbon office", C, False),
    ("Northwind", C, "Northwind office", C, False),
    ("Cardiff", PL, "Cardiff Half", PR, False),
    ("Bristol", PL, "Bristol 10K", PR, False),
    ("Spanish", R, "Spanish teacher", P, False),
    ("Marlow", C, "Marlow Street", PL, False),
]


def main() -> None:
    from app.policy import ENTITY_MERGE_COSINE
    from app.services.entity_merge import Named, same_thing
    from storage.embedder import Embedder, find_model_dir

    model = find_model_dir()
    assert model is not None, "set KEPT_MODEL_DIR"
    embedder = Embedder(model)
    names = sorted({n for a, _, b, _, _ in PAIRS for n in (a, b)})
    vec = dict(zip(names, embedder.embed(names), strict=True))
    rows = []
    for a, ka, b, kb, same in PAIRS:
        cos = float(vec[a] @ vec[b])
        rows.append((a, ka, b, kb, same, cos))
    out: dict[str, object] = {"pairs": len(PAIRS), "same": sum(r[4] for r in rows),
                              "chosen": ENTITY_MERGE_COSINE, "by_threshold": {}}
    for t in (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9):
        said = [same_thing(Named(r[0], r[1]), Named(r[2], r[3]), r[5], t) is not None
                for r in rows]
        tp = sum(1 for s, r in zip(said, rows, strict=True) if s and r[4])
        fp = sum(1 for s, r in zip(said, rows, strict=True) if s and not r[4])
        fn = sum(1 for s, r in zip(said, rows, strict=True) if not s and r[4])
        out["by_threshold"][f"{t:.2f}"] = {  # type: ignore[index]
            "precision": round(tp / (tp + fp), 3) if tp + fp else None,
            "recall": round(tp / (tp + fn), 3) if tp + fn else None, "tp": tp, "fp": fp,
            "fn": fn}
    wrong = []
    for r in rows:
        s = same_thing(Named(r[0], r[1]), Named(r[2], r[3]), r[5], ENTITY_MERGE_COSINE)
        if (s is not None) != r[4]:
            wrong.append({"a": r[0], "b": r[2], "same": r[4], "cosine": round(r[5], 3),
                          "said": s})
    out["wrong_at_chosen"] = wrong
    out["cosines"] = {f"{r[0]} / {r[2]}": round(r[5], 3) for r in rows}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
