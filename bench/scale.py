#!/usr/bin/env python3
"""Scale benchmark: Kept at 10k and 100k synthetic memories, next to "Chroma alone". Prints JSON.

    export KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx
    python bench/scale.py                      # --n 10000 and --n 100000 (builds are cached)
    python bench/scale.py --n 10000            # one size
    python bench/scale.py --quick              # 2k smoke run

Per size, each part runs in its own subprocess so peak RSS figures are separate:

- ``kept-build``: a vault created with the default KDF (Argon2id 256 MiB); ``import_turns`` of
  n/2 synthetic turns (each turn is stored as a short-term memory plus an episodic memory, so n
  memories, n/2 vectors). The built vault is cached in ``--cache`` and reused by later runs
  (``--rebuild`` builds again; ingest figures of a reused build are those of its build run).
- ``kept-read``: on a copy of the cached vault: unlock (``Vault.open``: KDF, SQLCipher open,
  model load, vector load) until the first ``recall`` returns (exact search serves while the
  Chroma index builds), then until Chroma is ready; recall latency p50/p95 over the queries
  (query embedding included, ``touch=False``) with Chroma and with exact search, interleaved
  query by query so machine noise hits both alike; the floor beside them (the same queries'
  embedding, vector search and lexical search alone, nothing else); then ``remember()`` one at
  a time. ``recall_speed`` in each size puts recall over the bare embedding and over the floor,
  recall during the background builds over steady state, unlock to first recall and peak RSS.
- ``chroma``: what a developer would do with Chroma alone: a ``PersistentClient`` with Chroma's
  default embedding function (``ONNXMiniLM_L6_V2``, pointed at the same model files, never
  downloading) ingesting the same turn texts as documents; query with ``query_texts``.
  Chroma's function embeds about 11 texts/s here, so only ``--chroma-embed-docs`` documents go
  through it (ingest rate and a flagged extrapolation); the rest of the collection is added with
  Kept's vectors of the same texts (the same model and pooling: identical vectors in float32,
  cosine .99 where Kept runs the int8 model's products in int8) so query latency is measured
  on a full-size collection.

Synthetic data: templates filled with random names, places, dates and activities (fixed seed),
10-25 words per turn, sessions of 10-30 turns between the user and one person, spread over 3
years. Queries are questions built from the same vocabularies.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, here and in children)

DEFAULT_MODEL = ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2" / "onnx"
PASSWORD = "scale-bench-password"
GEN_VERSION = 1  # bump when the generator changes: cached vaults are keyed by it
TARGETS = {"ingest_memories_per_s": 200.0, "recall_p95_ms_at_100k": 50.0,
           "unlock_to_searchable_s_at_100k": 2.0, "peak_rss_mb_at_100k": 1536.0}

# --- synthetic data --------------------------------------------------------------------------

NAMES = """Anna Marco Priya Tom Lucia Kenji Sofia Daniel Amara Jonas Elena Omar Grace Mateo Hana
Lars Chloe Ravi Nadia Felix Ingrid Samuel Yuki Leo Maya Tariq Olivia Pablo Zoe Ethan Mira Hugo
Aisha Noah Clara Diego Freya Ibrahim Julia Kofi Lena Mohammed Nora Oscar Rosa Stefan Talia Victor
Wen Xavier Yara Aditi Bruno Carmen Dmitri Esther Finn Gabriela Henrik Isla""".split()
PLACES = """Lisbon|Kyoto|Berlin|the lake house|Brooklyn|the farmers market|Barcelona|the cabin|
Montreal|grandma's place|the coast|Vienna|the climbing gym|Oslo|the community garden|Edinburgh|
the old bookstore|Marrakech|the hospital|Seattle|the beach in Porto|the mountains|Prague|
Istanbul|the office downtown|Copenhagen|the park by the river|Dublin|Mexico City|the library|
Amsterdam|the vineyard|Buenos Aires|the ski resort|Helsinki|the pottery studio|Athens|
the jazz bar|Tokyo|Reykjavik|the dentist|Melbourne|the train station|Cape Town|the yoga studio|
Vancouver""".replace("\n", "").split("|")
ACTIVITIES = """went hiking|cooked a big paella|painted a sunrise|ran a half marathon|
learned to make sourdough|went to a pottery class|played chess all afternoon|visited a museum|
went kayaking|volunteered at the food bank|started learning Portuguese|fixed the old bike|
planted tomatoes|watched a documentary about whales|went to a jazz concert|baked a lemon cake|
went camping|tried rock climbing|practised the guitar|read a novel about Iceland|
went birdwatching|took a photography walk|joined a book club|went ice skating|
built a bookshelf|went to a wine tasting|adopted a puppy|went to a job interview|
had a long video call|organised a surprise party|went swimming in the sea|
started a vegetable garden|signed up for a marathon|went to a comedy show|
repainted the kitchen|made dumplings from scratch|went to the dentist|got a new tattoo|
finished a knitting project|went to a yoga retreat|moved into a new flat|
started therapy|went to a wedding|took a cooking class|went on a road trip""".replace(
    "\n", "").split("|")
FEELINGS = """happy|exhausted|proud|nervous|relieved|a bit sad|excited|grateful|stressed|
calm|frustrated|inspired|lonely|thrilled|worried|content""".replace("\n", "").split("|")
FOODS = """ramen|tacos|a mushroom risotto|pancakes|green curry|falafel|lasagna|sushi|
a tomato salad|pho|apple pie|dumplings|grilled fish|a lentil soup""".replace("\n", "").split("|")
RELATIONS = """my sister|my brother|my mom|my dad|my partner|my best friend|my boss|
my neighbour|my cousin|my daughter|my son|my grandmother|my colleague|my aunt""".replace(
    "\n", "").split("|")
WHEN = """last weekend|on Saturday|yesterday|this morning|last Tuesday|over the holidays|
two weeks ago|on my birthday|after work|during the summer|in early spring|on Sunday night|
last month|the day before the trip""".replace("\n", "").split("|")
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]

TEMPLATES = [
    "{when} I {act} in {place} with {name}, and honestly I felt {feel} the whole time.",
    "{name} told me {rel} {act} in {place} {when}, which surprised everyone at dinner.",
    "I {act} {when} because {name} kept insisting, and it turned out to be so much fun.",
    "We had {food} at a tiny place in {place} {when}; {name} says it was the best ever.",
    "{rel} called {when} to say they {act}, and I could hear how {feel} they were.",
    "Remind me that {name}'s birthday is on {month} {day}, and they love {food}.",
    "I'm {feel} about the trip to {place} in {month}; {name} is coming along with {rel}.",
    "{when} {name} and I {act}, then we grabbed {food} near {place} before heading home.",
    "My goal for {month} is to {act_base} at least twice a week, maybe with {name}.",
    "I felt {feel} after {name} cancelled our plans in {place} {when}, but we rescheduled.",
    "{name} recommended a doctor near {place}; the appointment is on {month} {day} at {hour}.",
    "Note to self: {rel} prefers {food} over pizza, and hates when we are late.",
    "{when} was rough, I {act} to clear my head and felt {feel} afterwards.",
    "{name} finally {act} in {place}! They sent photos and looked really {feel}.",
    "I keep thinking about the conversation with {rel} {when} about moving to {place}.",
    "In {month} {year} {name} and {rel} {act} together, and we still laugh about it.",
    "Booked tickets to {place} for {month} {day}; {name} will water the plants while I'm away.",
    "{name} lent me a book about {place}; I promised to give it back by {month} {day}.",
    "Budget check: spent too much on {food} deliveries in {month}, cook more with {name}.",
    "{rel} and {name} finally met {when} at {place}, and they got along really well.",
]
QUESTIONS = [
    "When did I go to {place} with {name}?",
    "What did {name} do in {place}?",
    "How did I feel after I {act}?",
    "What food does {name} love?",
    "When is {name}'s birthday?",
    "Who {act} {when}?",
    "What did {rel} say about {place}?",
    "Which doctor did {name} recommend?",
    "What happened in {month} {year} with {name}?",
    "Did {name} and {rel} ever meet?",
    "What are my goals for {month}?",
    "Where did we eat {food}?",
    "What book did {name} lend me?",
    "When is the trip to {place}?",
    "What did I do to clear my head?",
]


def _fill(rng: random.Random, template: str, year: int) -> str:
    act = rng.choice(ACTIVITIES)
    return template.format(
        name=rng.choice(NAMES), place=rng.choice(PLACES), act=act,
        act_base=_base_verb(act), feel=rng.choice(FEELINGS), food=rng.choice(FOODS),
        rel=rng.choice(RELATIONS), when=rng.choice(WHEN), month=rng.choice(MONTHS),
        day=rng.randint(1, 28), hour=f"{rng.randint(8, 18)}:{rng.choice(['00', '15', '30'])}",
        year=year)


_IRREGULAR = {"went": "go", "cooked": "cook", "painted": "paint", "ran": "run",
              "learned": "learn", "played": "play", "visited": "visit", "volunteered":
              "volunteer", "started": "start", "fixed": "fix", "planted": "plant",
              "watched": "watch", "baked": "bake", "tried": "try", "practised": "practise",
              "read": "read", "took": "take", "joined": "join", "built": "build",
              "adopted": "adopt", "had": "have", "organised": "organise", "signed": "sign",
              "repainted": "repaint", "made": "make", "got": "get", "finished": "finish",
              "moved": "move"}


def _base_verb(act: str) -> str:
    first, _, rest = act.partition(" ")
    return f"{_IRREGULAR.get(first, first)} {rest}".strip()


def make_turns(n_turns: int, seed: int) -> list[dict[str, Any]]:
    """n_turns turns in sessions of 10-30 between the user ("Me") and one person."""
    rng = random.Random(seed)
    start = datetime(2022, 1, 1, tzinfo=UTC)
    span_s = 3 * 365 * 86400
    out: list[dict[str, Any]] = []
    s = 0
    while len(out) < n_turns:
        s += 1
        other = rng.choice(NAMES)
        at0 = start + timedelta(seconds=int(span_s * len(out) / max(1, n_turns))
                                + rng.randint(0, 3600 * 6))
        for i in range(rng.randint(10, 30)):
            if len(out) >= n_turns:
                break
            text = _fill(rng, rng.choice(TEMPLATES), at0.year)
            text = text[0].upper() + text[1:]
            out.append({"session": f"S{s:06d}", "speaker": "Me" if i % 2 == 0 else other,
                        "text": text, "at": (at0 + timedelta(seconds=45 * i)).timestamp(),
                        "ref": f"S{s:06d}:{i}"})
    return out


def make_queries(n: int, seed: int) -> list[str]:
    rng = random.Random(seed + 7919)
    return [_fill(rng, rng.choice(QUESTIONS), rng.choice([2022, 2023, 2024]))
            for _ in range(n)]


# --- helpers ---------------------------------------------------------------------------------

def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def lat(values_s: list[float], cpu_s: list[float] | None = None) -> dict[str, float]:
    """Wall-clock percentiles; with ``cpu_s``, also the process CPU time per call (on a busy
    machine wall time includes waiting for a core; CPU time is what the call itself costs)."""
    ms = [v * 1000 for v in values_s]
    out = {"p50_ms": round(pct(ms, .5), 2), "p95_ms": round(pct(ms, .95), 2),
           "mean_ms": round(statistics.fmean(ms), 2), "max_ms": round(max(ms), 2),
           "count": len(ms)}
    if cpu_s is not None:
        cms = [v * 1000 for v in cpu_s]
        out.update({"cpu_p50_ms": round(pct(cms, .5), 2), "cpu_p95_ms": round(pct(cms, .95), 2)})
    return out


def timed_call(fn: Any, *a: Any, **k: Any) -> tuple[Any, float, float]:
    """(result, wall seconds, process CPU seconds)."""
    t0, c0 = time.perf_counter(), time.process_time()
    r = fn(*a, **k)
    return r, time.perf_counter() - t0, time.process_time() - c0


def dir_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20, 1)


def emit(obj: Any) -> None:
    sys.stdout.write("\n@@RESULT@@" + json.dumps(obj) + "\n")
    sys.stdout.flush()


def cache_dir(args: argparse.Namespace) -> Path:
    """Keyed by size, seed, generator and schema (a schema change means a rebuild)."""
    import hashlib
    h = hashlib.sha256()
    for sql in sorted((ROOT / "storage" / "migrations").glob("*.sql")):
        h.update(sql.name.encode() + sql.read_bytes())
    return Path(args.cache) / f"n{args.n}-seed{args.seed}-g{GEN_VERSION}-s{h.hexdigest()[:8]}"


# --- role: kept-build ------------------------------------------------------------------------

def role_kept_build(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    from app.api import Turn
    from app.domain.memory import Store
    from app.facade import Vault, internals
    from storage.crypto import KdfParams
    cdir = cache_dir(args)
    done = cdir / "build.json"
    if done.exists() and not args.rebuild:
        report = json.loads(done.read_text())
        report["reused_cached_build"] = True
        return report
    if cdir.exists():
        shutil.rmtree(cdir)
    cdir.mkdir(parents=True)
    folder = cdir / "vault"
    n_turns = args.n // 2
    turns = [Turn(session=t["session"], speaker=t["speaker"], text=t["text"], at=t["at"],
                  ref=t["ref"]) for t in make_turns(n_turns, args.seed)]
    t0 = time.perf_counter()
    created = Vault.create(folder, PASSWORD, kdf=KdfParams(), use_chroma=False)  # 256 MiB
    t_create = time.perf_counter() - t0
    vault = created.vault
    rss_before = peak_rss_mb()
    load_before = os.getloadavg()
    t0, c0 = time.perf_counter(), time.process_time()
    embedded = _record_embedded(internals(vault).embedder)
    if args.profile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.enable()
    # follow=False: embedded inline, as this figure (embedded ingest against the embedder
    # alone) has always measured; a file import's vectors follow it instead (issue 28).
    report_ = vault.import_turns(turns, follow=False).value
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    embedded.stop()
    if args.profile:
        prof.disable()
        pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
    assert report_.added == n_turns, report_
    mems = sum(sum(v.values()) for v in vault.status().counts.values())
    # Kept's vectors of the turn texts, in turn order, for the Chroma-alone collection.
    inner = internals(vault)
    ids, mat = inner.db.read(lambda c: __import__("storage.repo", fromlist=["x"]).load_vectors(
        c, inner.embedder.model_name))
    order = inner.db.read(lambda c: [r[0] for r in c.execute(
        "SELECT id FROM memory WHERE store = ? ORDER BY id", (Store.EPISODIC.value,))])
    row = {int(i): r for r, i in enumerate(ids)}
    np.save(cdir / "turn_vectors.npy", mat[[row[i] for i in order]])
    alone = embedder_alone(inner.embedder, embedded.calls)
    # The same texts in calls of 256 (one import batch a call, as before the import handed the
    # embedder 64 texts a call so that recall can get in between): what the split costs.
    flat = [t for c in embedded.calls for t in c]
    alone_256 = embedder_alone(inner.embedder, [flat[i:i + 256] for i in range(0, len(flat), 256)])
    vault.lock()
    n_embedded = sum(len(c) for c in embedded.calls)
    out = {
        "n_memories": mems, "n_turns": n_turns, "n_vectors": len(ids),
        # Turns counted as the issue counts them: what is embedded (routing keeps a few
        # turns short-term only, unembedded). The embedder alone runs the very texts import
        # embedded, in the same calls, right after the import (same machine state).
        "embedded_turns": n_embedded,
        "embedded_turns_per_s": round(n_embedded / seconds, 1),
        "embedder_alone": alone,
        "embedder_alone_calls_of_256": alone_256,
        "ingest_over_embedder_alone_calls_of_256": ratio(
            round(n_embedded / seconds, 1), alone_256["turns_per_s"] if alone_256 else None),
        "ingest_over_embedder_alone": ratio(round(n_embedded / seconds, 1),
                                            alone["turns_per_s"] if alone else None),
        # Per CPU second: the ratio that holds when other processes share the cores.
        "ingest_over_embedder_alone_per_cpu_s": ratio(
            round(n_embedded / cpu, 1), alone["turns_per_cpu_s"] if alone else None),
        "create_seconds_default_kdf": round(t_create, 3),
        "import_turns_seconds": round(seconds, 2),
        "turns_per_s": round(n_turns / seconds, 1),
        "memories_per_s": round(mems / seconds, 1),
        "import_cpu_seconds": round(cpu, 1),
        "memories_per_cpu_s": round(mems / cpu, 1),
        "cpu_utilisation_of_2_cores": round(cpu / seconds / 2, 2),
        "load_avg_1m_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "peak_rss_mb": round(peak_rss_mb(), 1), "peak_rss_mb_before_import": round(rss_before, 1),
        "vault_size_mb": dir_mb(folder),
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "reused_cached_build": False,
    }
    done.write_text(json.dumps(out, indent=1))
    return out


class _EmbedRecorder:
    """Keeps the texts of every ``embed`` call on one embedder instance until :meth:`stop`."""

    def __init__(self, embedder: Any) -> None:
        self.embedder, self.calls = embedder, []  # type: ignore[var-annotated]
        real = embedder.embed

        def embed(texts: Any) -> Any:
            self.calls.append(list(texts))
            return real(texts)
        embedder.embed = embed

    def stop(self) -> None:
        del self.embedder.embed  # the class's method again


def _record_embedded(embedder: Any) -> _EmbedRecorder:
    return _EmbedRecorder(embedder)


def embedder_alone(embedder: Any, calls: list[list[str]]) -> dict[str, float] | None:
    """Texts per second (wall and per CPU second) of the bare embedder over ``calls`` (the
    import's own batches): the ceiling ingest is measured against (issue 28: >= 0.8x)."""
    n = sum(len(c) for c in calls)
    if not n:
        return None
    t0, c0 = time.perf_counter(), time.process_time()
    for c in calls:
        embedder.embed(c)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"turns_per_s": round(n / wall, 1), "turns_per_cpu_s": round(n / cpu, 1),
            "seconds": round(wall, 2), "cpu_seconds": round(cpu, 1)}


# --- role: kept-read -------------------------------------------------------------------------

class ExactOnly:
    """Wraps the VectorIndex so recall uses exact search even when Chroma is ready."""

    def __init__(self, index: Any) -> None:
        self._index = index

    def __len__(self) -> int:
        return len(self._index)

    def __getattr__(self, name: str) -> Any:  # everything else as the real index
        return getattr(self._index, name)

    def search(self, q: Any, k: int, keep: Any = None) -> Any:
        return self._index.search_exact(q, k, keep)

    def search_with_floor(self, q: Any, k: int, *, exact: bool = True) -> Any:
        return self._index.search_with_floor(q, k, exact=True)


def _timed(obj: Any, name: str, sink: dict[str, float], key: str) -> Any:
    """Wrap ``obj.name`` to add its wall time to ``sink[key]``; returns the undo."""
    raw = obj.__dict__[name]  # keeps a staticmethod a staticmethod when put back
    fn = getattr(obj, name)

    def wrapper(*a: Any, **k: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            sink[key] = sink.get(key, 0.0) + time.perf_counter() - t0
    setattr(obj, name, staticmethod(wrapper) if isinstance(raw, staticmethod) else wrapper)
    return lambda: setattr(obj, name, raw)


STAGES = (("repo", "fts_search"), ("repo", "recall_meta"), ("repo", "refs_of"),
          ("repo", "texts"), ("service", "known_people"), ("index", "search"),
          ("index", "search_exact"), ("index", "similarities"), ("index", "min_similarity"),
          ("index", "search_with_floor"),
          ("embedder", "embed_one"), ("lexicon", "search"))


def stage_profile(vault: Any, queries: list[str]) -> dict[str, Any]:
    """CPU ms per recall stage (median, p95 over the queries), by wrapping the functions
    recall calls (each stage its own thread's CPU); "total" is the process's CPU per recall
    and "rest" everything else (query analysis, ranking, Python glue)."""
    from app.facade import internals
    from app.services import recall as recall_mod
    from storage import repo
    inner = internals(vault)
    owners = {"repo": repo, "service": recall_mod.RecallService,
              "index": type(inner.index), "embedder": type(inner.embedder),
              "lexicon": type(inner.lexicon)}
    acc: dict[str, float] = {}
    # Per thread: recall embeds the query on a thread of its own while its caller searches
    # (app/services/recall.py:QueryEmbedding), so each stage counts its own thread's CPU and
    # a stage nested in another on the same thread is not counted twice.
    local = threading.local()
    saved = []
    for owner, name in STAGES:
        obj = owners[owner]
        fn = getattr(obj, name, None)
        if fn is None:
            continue
        saved.append((obj, name, fn))

        def wrapper(*a: Any, __fn: Any = fn, __key: str = name, **k: Any) -> Any:
            if getattr(local, "depth", 0):
                return __fn(*a, **k)
            local.depth = 1
            c0 = time.thread_time()
            try:
                return __fn(*a, **k)
            finally:
                acc[__key] = acc.get(__key, 0.0) + time.thread_time() - c0
                local.depth = 0
        setattr(obj, name, wrapper)
    per: dict[str, list[float]] = {}
    try:
        for q in queries:
            acc.clear()
            c0 = time.process_time()
            vault.recall(q, k=10, touch=False)
            total = time.process_time() - c0
            for key, v in acc.items():
                per.setdefault(key, []).append(v)
            per.setdefault("rest", []).append(total - sum(acc.values()))
            per.setdefault("total", []).append(total)
    finally:
        for obj, name, fn in saved:
            setattr(obj, name, fn)
    return {k: {"cpu_p50_ms": round(pct(v, .5) * 1000, 2), "cpu_p95_ms": round(pct(v, .95) * 1000, 2),
                "calls": len(v)} for k, v in per.items()}


def role_kept_read(args: argparse.Namespace) -> dict[str, Any]:
    import storage.vector
    from app.domain.memory import Draft, Store
    from app.facade import Vault, internals
    from storage import crypto, repo
    from storage.db import Database
    src = cache_dir(args) / "vault"
    work = Path(tempfile.mkdtemp(prefix="kept-scale-"))
    folder = work / "vault"
    shutil.copytree(src, folder)
    os.chmod(folder, 0o700)
    os.sync()  # the copy's writeback must not land inside the unlock being timed
    time.sleep(2)
    queries = make_queries(args.queries, args.seed)
    out: dict[str, Any] = {"n_queries": len(queries), "load_avg_at_start": os.getloadavg()}
    try:
        # 1. Unlock to searchable (default KDF), then to Chroma ready.
        parts: dict[str, float] = {}
        undo = [_timed(crypto, "unwrap", parts, "kdf_unwrap_s")]
        orig_init = Database.__init__

        def db_init(self: Any, *a: Any, **k: Any) -> None:
            t0 = time.perf_counter()
            orig_init(self, *a, **k)
            parts["db_open_s"] = parts.get("db_open_s", 0.0) + time.perf_counter() - t0
        Database.__init__ = db_init  # type: ignore[method-assign]
        from app import bootstrap
        undo.append(_timed(bootstrap, "load_embedder", parts, "model_load_s"))
        undo.append(_timed(repo, "load_vectors", parts, "load_vectors_s"))
        t0, c0 = time.perf_counter(), time.process_time()
        vault = Vault.open(folder, PASSWORD)
        t_open, c_open = time.perf_counter() - t0, time.process_time() - c0
        verified: dict[str, float] = {}
        inner = internals(vault)

        def watch_verify(db: Any = inner.db) -> None:
            db.wait_verified(900)
            verified["s"] = time.perf_counter() - t0
        threading.Thread(target=watch_verify, daemon=True).start()
        vault.recall(queries[0], k=10, touch=False)
        t_first, c_first = time.perf_counter() - t0, time.process_time() - c0
        Database.__init__ = orig_init  # type: ignore[method-assign]
        for u in undo:
            u()
        # Queries while the background builds run: the RAM lexicon, then Chroma.
        during: list[float] = []
        during_cpu: list[float] = []
        j = 1
        lex_thread = inner.lexicon._thread
        lex_at: dict[str, float] = {}

        def watch_lexicon(lex: Any = inner.lexicon) -> None:
            if lex.wait_ready(900):
                lex_at["s"] = time.perf_counter() - t0
        threading.Thread(target=watch_lexicon, daemon=True).start()

        def building() -> bool:
            if lex_thread is not None and lex_thread.is_alive():
                return True
            t = inner.index._build_thread
            return t is not None and not inner.index.chroma_ready and t.is_alive()
        during_thread: list[float] = []  # the recall's own thread: not the builds beside it
        during_ids: dict[str, list[int]] = {}
        while building() and j < len(queries):
            t_c = time.thread_time()
            hits, w, c = timed_call(vault.recall, queries[j], k=10, touch=False)
            during_thread.append(time.thread_time() - t_c)
            during_ids[queries[j]] = [h.id for h in hits]
            during.append(w)
            during_cpu.append(c)
            j += 1
        lex_ready = inner.lexicon.wait_ready(900)
        time.sleep(0.1)
        t_lex = lex_at.get("s", time.perf_counter() - t0)
        if lex_thread is not None:
            lex_thread.join()  # it starts the Chroma build when done
        builds = inner.index._build_thread is not None
        ready = inner.index.wait_ready(900) if builds else False
        t_ready = time.perf_counter() - t0
        out["unlock"] = {
            "kdf_mib": vault._opened.key_file.kdf.m // 1024,
            "open_s": round(t_open, 3), "unlock_to_first_recall_s": round(t_first, 3),
            "unlock_to_first_recall_process_cpu_s": round(c_first, 3),
            "open_process_cpu_s": round(c_open, 3),
            "unlock_to_chroma_ready_s": round(t_ready, 3) if ready else None,
            "chroma_built": bool(ready),
            "unlock_to_lexicon_ready_s": round(t_lex, 3) if lex_ready else None,
            "unlock_to_page_self_test_passed_s": round(verified["s"], 3) if "s" in verified
            else None,
            **{k: round(v, 3) for k, v in parts.items()},
            "vectors": len(inner.index),
            "note": ("open_s = KDF + SQLCipher open + vector load (model load alongside); the "
                     "page self-test (cipher_integrity_check) then runs in the background and "
                     "holds writes, not reads; the first recall is served by exact search and "
                     "FTS5 while the RAM lexicon and then Chroma build in the background"),
        }
        if during:
            out["recall_while_lexicon_and_chroma_build"] = lat(during, during_cpu)
            out["recall_while_lexicon_and_chroma_build"]["thread_cpu_p50_ms"] = round(
                pct(during_thread, .5) * 1000, 2)
        if not builds:
            out["unlock"]["note_chroma"] = (
                f"{len(inner.index)} vectors < CHROMA_MIN_ROWS {storage.vector.CHROMA_MIN_ROWS}: "
                "exact search only, by design; the Chroma latency below uses a forced build")
            vault.lock()
            storage.vector.CHROMA_MIN_ROWS = 0
            t1 = time.perf_counter()
            vault = Vault.open(folder, PASSWORD)
            inner = internals(vault)
            inner.lexicon.wait_ready(900)
            inner.index.wait_ready(900)  # started by the lexicon thread once it is done
            out["chroma_forced_below_min_rows"] = True
            out["forced_unlock_to_chroma_ready_s"] = round(time.perf_counter() - t1, 3)
        # 2. Recall latency, Chroma vs exact, interleaved query by query.
        real = inner.index
        exact = ExactOnly(real)
        for q in queries[:5]:  # warm both paths
            vault.recall(q, k=10, touch=False)
        lex = inner.lexicon
        # Recall reads the index and lexicon its service was built with (once per unlock):
        # the modes swap them there.
        service = inner.recall
        modes = ("chroma", "exact", "chroma_fts5")  # the last: Chroma, lexical on FTS5 not RAM
        times: dict[str, list[float]] = {m: [] for m in modes}
        cpus: dict[str, list[float]] = {m: [] for m in modes}
        agree, agree_fts = [], []
        served_mode = "chroma" if out["unlock"]["chroma_built"] else "exact"
        served_thread: list[float] = []
        agree_during: list[float] = []  # top 10 while building vs once built, same query
        for j, q in enumerate(queries):
            res = {}
            for mode in modes[j % 3:] + modes[:j % 3]:
                service.index = exact if mode == "exact" else real
                service.lexicon = None if mode == "chroma_fts5" else lex
                t_c = time.thread_time()
                hits, w, c = timed_call(vault.recall, q, k=10, touch=False)
                if mode == served_mode:
                    served_thread.append(time.thread_time() - t_c)
                times[mode].append(w)
                cpus[mode].append(c)
                res[mode] = [h.id for h in hits]
            service.index, service.lexicon = real, lex
            if q in during_ids and res[served_mode]:
                agree_during.append(len(set(during_ids[q]) & set(res[served_mode]))
                                    / len(res[served_mode]))
            if res["exact"]:
                agree.append(len(set(res["exact"]) & set(res["chroma"])) / len(res["exact"]))
            if res["chroma_fts5"]:
                agree_fts.append(res["chroma"] == res["chroma_fts5"])
        emb, emb_cpu = [], []
        for q in queries:
            _, w, c = timed_call(inner.embedder.embed_one, q)
            emb.append(w)
            emb_cpu.append(c)
        # The floor: what any hybrid recall must do for the same queries, the query's
        # embedding, the vector search (dense candidates and the similarity floor) and the
        # lexical search (RAM lexicon, else FTS5), and nothing else.
        from app.services.recall import query_tokens
        from storage import repo as repo_mod
        floor, floor_cpu = [], []
        depth = service.tuning.dense_depth
        served_exact = not out["unlock"]["chroma_built"]  # the index this size is served by

        def floor_call(q: str) -> None:
            qv = inner.embedder.embed_one(q)
            inner.index.search_with_floor(qv, depth, exact=served_exact)
            toks = query_tokens(q)
            if lex.search(toks, service.tuning.lexical_depth) is None:
                inner.db.read(lambda c: repo_mod.fts_search(
                    c, repo_mod.fts_query(toks), service.tuning.lexical_depth))
        for q in queries:
            _, w, c = timed_call(floor_call, q)
            floor.append(w)
            floor_cpu.append(c)
        out["recall"] = {"chroma": lat(times["chroma"], cpus["chroma"]),
                         "exact": lat(times["exact"], cpus["exact"]),
                         "chroma_with_fts5_lexical": lat(times["chroma_fts5"],
                                                         cpus["chroma_fts5"]),
                         "lexicon_ready": lex.ready,
                         "same_top10_ram_lexicon_vs_fts5": round(statistics.fmean(agree_fts), 3)
                         if agree_fts else None,
                         "query_embedding_only": lat(emb, emb_cpu),
                         "floor_embedding_vector_lexical": lat(floor, floor_cpu),
                         "top10_overlap_chroma_vs_exact": round(statistics.fmean(agree), 3),
                         "served_thread_cpu_p50_ms": round(pct(served_thread, .5) * 1000, 2),
                         "top10_same_during_build_vs_built": round(
                             statistics.fmean(agree_during), 3) if agree_during else None}
        service.index = exact if served_exact else real  # the stages of the served index
        out["recall_stages_cpu_ms"] = stage_profile(vault, queries[:min(len(queries), 100)])
        service.index = real
        # 3. remember() one at a time.
        rng = random.Random(args.seed + 1)
        texts = [_fill(rng, rng.choice(TEMPLATES), 2024) for _ in range(args.remember)]
        t0, c0 = time.perf_counter(), time.process_time()
        for t in texts:
            vault.remember(Draft(text=t, store=Store.EPISODIC, speaker="Me"))
        sec, cpu = time.perf_counter() - t0, time.process_time() - c0
        out["remember_one_at_a_time"] = {"count": len(texts), "seconds": round(sec, 2),
                                         "memories_per_s": round(len(texts) / sec, 1),
                                         "cpu_ms_per_memory": round(cpu / len(texts) * 1000, 2),
                                         "note": "one caller: one commit (fsync) per memory; "
                                                 "its vector follows (bench/remember_rate.py: "
                                                 "old and new paths, concurrent callers)"}
        t0 = time.perf_counter()
        vault.lock()  # saves the RAM lexicon into the vault (migration 0032): the repeats load it
        out["lock_s"] = round(time.perf_counter() - t0, 3)
        # 4. Unlock again, as a person would the next time: the first unlock above follows a
        # fresh 236 MB copy of the vault, and on this VM the kernel's reclaim (kdamond) then
        # slowed the KDF and the vector read by up to 2x. Report every repeat and the median.
        repeats = []
        for _ in range(args.unlock_repeats):
            time.sleep(1)
            t0 = time.perf_counter()
            vault = Vault.open(folder, PASSWORD)
            t_open = time.perf_counter() - t0
            vault.recall(queries[0], k=10, touch=False)
            repeats.append({"open_s": round(t_open, 3),
                            "unlock_to_first_recall_s": round(time.perf_counter() - t0, 3)})
            repeats[-1].update(_while_saved_lexicon_loads(vault, queries, t0, out))
            vault.lock()
        if repeats:
            out["unlock_repeats"] = repeats
            out["unlock_to_first_recall_median_s"] = round(statistics.median(
                r["unlock_to_first_recall_s"] for r in [out["unlock"] | {}, *repeats]
                if "unlock_to_first_recall_s" in r), 3)
        out["peak_rss_mb"] = round(peak_rss_mb(), 1)
        out["load_avg_at_end"] = os.getloadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _while_saved_lexicon_loads(vault: Any, queries: list[str], t0: float,
                               out: dict[str, Any]) -> dict[str, Any]:
    """After a lock the next unlock loads the saved RAM lexicon instead of building it (issue
    28, migration 0032). Recall until it is ready: the first repeat's queries go into
    ``recall_while_saved_lexicon_loads`` (none when it was ready by the first recall)."""
    from app.facade import internals
    lex = internals(vault).lexicon
    first = lex.ready
    during, cpu = [], []
    j = 1
    while not lex.ready and (lex.building or lex._loading.is_set()) and j < len(queries):
        _, w, c = timed_call(vault.recall, queries[j], k=10, touch=False)
        during.append(w)
        cpu.append(c)
        j += 1
    lex.wait_ready(900)
    if during and "recall_while_saved_lexicon_loads" not in out:
        out["recall_while_saved_lexicon_loads"] = lat(during, cpu)
    return {"lexicon_ready_at_first_recall": first,
            "unlock_to_lexicon_ready_s": round(time.perf_counter() - t0, 3)}


# --- role: chroma (Chroma alone) -------------------------------------------------------------

def role_chroma(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    model_dir = Path(os.environ.get("KEPT_MODEL_DIR") or DEFAULT_MODEL)
    import chromadb
    from chromadb.config import Settings
    from chromadb.utils.embedding_functions import onnx_mini_lm_l6_v2 as ef_mod
    cls = ef_mod.ONNXMiniLM_L6_V2

    def no_download(*_a: Any, **_k: Any) -> None:
        raise RuntimeError("the benchmark never downloads a model")
    # Chroma reads <DOWNLOAD_PATH>/onnx/*: point it at the same model files, offline.
    cls.DOWNLOAD_PATH = model_dir.parent
    cls.EXTRACTED_FOLDER_NAME = model_dir.name
    cls._download = no_download  # type: ignore[method-assign]
    ef = cls()
    n_turns = args.n // 2
    texts = [t["text"] for t in make_turns(n_turns, args.seed)]
    vecs = np.load(cache_dir(args) / "turn_vectors.npy", mmap_mode="r")
    assert len(vecs) == n_turns
    queries = make_queries(args.queries, args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="chroma-alone-"))
    out: dict[str, Any] = {"n_documents": n_turns}
    try:
        client = chromadb.PersistentClient(path=str(tmp),
                                           settings=Settings(anonymized_telemetry=False))
        col = client.create_collection("memories", embedding_function=ef)
        m = min(args.chroma_embed_docs, n_turns)
        batch = 100
        t0 = time.perf_counter()
        for s in range(0, m, batch):
            col.add(ids=[str(i) for i in range(s, min(m, s + batch))],
                    documents=texts[s:min(m, s + batch)])
        sec = time.perf_counter() - t0
        rate = m / sec
        out["ingest"] = {
            "documents_embedded_by_chroma": m, "seconds": round(sec, 2),
            "docs_per_s": round(rate, 2),
            "note": ("measured on a subset: the default embedding function embeds every text "
                     "padded to 256 tokens" if m < n_turns else "all documents"),
            "extrapolated_full_ingest_s": round(n_turns / rate, 0) if m < n_turns else None,
            "extrapolated": m < n_turns,
        }
        # Fill the rest with precomputed vectors of the same texts (Kept's embedder).
        t0 = time.perf_counter()
        bmax = min(5000, int(client.get_max_batch_size()))
        for s in range(m, n_turns, bmax):
            e = min(n_turns, s + bmax)
            col.add(ids=[str(i) for i in range(s, e)], documents=texts[s:e],
                    embeddings=np.asarray(vecs[s:e]))
        out["ingest"]["rest_added_with_precomputed_vectors"] = n_turns - m
        out["ingest"]["precomputed_add_docs_per_s"] = (
            round((n_turns - m) / (time.perf_counter() - t0), 1) if n_turns > m else None)
        assert col.count() == n_turns
        for q in queries[:5]:
            col.query(query_texts=[q], n_results=10)
        times = []
        for q in queries:
            t0 = time.perf_counter()
            col.query(query_texts=[q], n_results=10)
            times.append(time.perf_counter() - t0)
        out["query"] = lat(times)
        # Query with a precomputed query vector: Chroma's HNSW alone, no embedding.
        qv = [ef([q])[0] for q in queries]
        times = []
        for v in qv:
            t0 = time.perf_counter()
            col.query(query_embeddings=[v], n_results=10)
            times.append(time.perf_counter() - t0)
        out["query_hnsw_only"] = lat(times)
        out["peak_rss_mb"] = round(peak_rss_mb(), 1)
        out["note_rss"] = ("includes the memory-mapped precomputed vectors file "
                           f"({vecs.nbytes / 2**20:.0f} MiB) used to fill the collection")
        out["disk_mb_plaintext"] = dir_mb(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


# --- driver ----------------------------------------------------------------------------------

def run_role(role: str, args: argparse.Namespace, n: int) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--role", role, "--n", str(n),
           "--seed", str(args.seed), "--queries", str(args.queries), "--cache", args.cache,
           "--chroma-embed-docs", str(args.chroma_embed_docs), "--remember", str(args.remember),
           "--unlock-repeats", str(args.unlock_repeats)]
    if args.rebuild:
        cmd.append("--rebuild")
    if args.profile:
        cmd.append("--profile")
    print(f"[scale] n={n} {role} ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-4000:])
        raise SystemExit(f"{role} n={n} failed")
    if args.profile and p.stderr:
        sys.stderr.write(p.stderr)
    line = [x for x in p.stdout.splitlines() if x.startswith("@@RESULT@@")][-1]
    print(f"[scale] n={n} {role} done in {time.perf_counter() - t0:.0f} s", file=sys.stderr,
          flush=True)
    return json.loads(line[len("@@RESULT@@"):])


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def one_size(args: argparse.Namespace, n: int) -> dict[str, Any]:
    build = run_role("kept-build", args, n)
    read = run_role("kept-read", args, n)
    chroma = run_role("chroma", args, n)
    big = n >= 100_000
    rec = read["recall"]
    served = rec["chroma"] if read["unlock"]["chroma_built"] else rec["exact"]
    kept_rss = max(build["peak_rss_mb"], read["peak_rss_mb"])
    vs = {
        "ingest_memories_per_s": {"value": build["memories_per_s"],
                                  "target": TARGETS["ingest_memories_per_s"],
                                  "met": build["memories_per_s"] >= 200},
        # issue 28: counted in embedded turns, against the embedder alone on the same texts.
        "ingest_embedded_turns_per_s": {
            "value": build.get("embedded_turns_per_s"), "target": 250.0,
            "met": (build.get("embedded_turns_per_s") or 0) >= 250,
            "applies": "at 100k" if big else "target is stated at 100k"},
        "ingest_over_embedder_alone": {
            "value": build.get("ingest_over_embedder_alone"), "target": 0.8,
            "met": (build.get("ingest_over_embedder_alone") or 0) >= 0.8},
        "recall_p95_ms": {"value": max(rec["chroma"]["p95_ms"], rec["exact"]["p95_ms"]),
                          "target": TARGETS["recall_p95_ms_at_100k"],
                          "met": max(rec["chroma"]["p95_ms"], rec["exact"]["p95_ms"]) <= 50,
                          "applies": "at 100k" if big else "target is stated at 100k"},
        "unlock_to_searchable_s": {
            "value": read.get("unlock_to_first_recall_median_s",
                              read["unlock"]["unlock_to_first_recall_s"]),
            "first_unlock_after_copy": read["unlock"]["unlock_to_first_recall_s"],
            "target": TARGETS["unlock_to_searchable_s_at_100k"],
            "met": read.get("unlock_to_first_recall_median_s",
                            read["unlock"]["unlock_to_first_recall_s"]) <= 2.0},
        "peak_rss_mb": {"value": kept_rss, "target": TARGETS["peak_rss_mb_at_100k"],
                        "met": kept_rss <= TARGETS["peak_rss_mb_at_100k"]},
    }
    ratios = {
        "ingest_embedded_turns_per_s_over_embedder_alone": build.get(
            "ingest_over_embedder_alone"),
        "ingest_turns_per_s_kept_over_chroma": ratio(build["turns_per_s"],
                                                     chroma["ingest"]["docs_per_s"]),
        "ingest_memories_per_s_kept_over_chroma_docs_per_s": ratio(
            build["memories_per_s"], chroma["ingest"]["docs_per_s"]),
        "query_p50_kept_recall_over_chroma_query": ratio(served["p50_ms"],
                                                         chroma["query"]["p50_ms"]),
        "query_p95_kept_recall_over_chroma_query": ratio(served["p95_ms"],
                                                         chroma["query"]["p95_ms"]),
        "peak_rss_kept_over_chroma": ratio(kept_rss, chroma["peak_rss_mb"]),
        "note": ("Kept recall is hybrid (BM25 + dense + ranking + SQL metadata) and its served "
                 "index is the one the vault uses at that size; Chroma alone is a pure vector "
                 "query. A Chroma document is one turn; Kept stores each turn twice "
                 "(short-term + episodic), so turns/s is the like-for-like ingest ratio."),
    }
    emb, flo = rec["query_embedding_only"], rec.get("floor_embedding_vector_lexical")
    steady = served["p50_ms"]
    during = read.get("recall_while_lexicon_and_chroma_build")
    speed = {  # issue 28's targets: recall at the speed of its parts, no slow first minute
        "served_index": "chroma" if read["unlock"]["chroma_built"] else "exact",
        "recall_p50_over_embedding_p50": ratio(served["p50_ms"], emb["p50_ms"]),
        "recall_p95_over_embedding_p95": ratio(served["p95_ms"], emb["p95_ms"]),
        "target_p50_p95": [2.0, 2.5],
        "floor_p50_ms": flo["p50_ms"] if flo else None,
        "floor_p95_ms": flo["p95_ms"] if flo else None,
        "recall_p50_over_floor_p50": ratio(served["p50_ms"], flo["p50_ms"]) if flo else None,
        "recall_p95_over_floor_p95": ratio(served["p95_ms"], flo["p95_ms"]) if flo else None,
        "during_build_p50_over_steady_p50": ratio(during["p50_ms"], steady) if during else None,
        "during_build_p95_over_steady_p95": ratio(during["p95_ms"], served["p95_ms"])
        if during else None,
        "target_during_build": 1.5,
        # The recall's own thread CPU (wall time on a loaded machine is mostly the wait for a
        # core) and how much of its top 10 the built structures keep (issue 28: the same).
        "during_build_thread_cpu_p50_over_steady": ratio(
            during.get("thread_cpu_p50_ms"), rec.get("served_thread_cpu_p50_ms"))
        if during else None,
        "top10_same_during_build_vs_built": rec.get("top10_same_during_build_vs_built"),
        # After a lock (migration 0032): the saved lexicon loads; None when it was ready
        # before the first recall, i.e. no recall ran without it.
        "during_saved_lexicon_load_p50_over_steady_p50": ratio(
            read["recall_while_saved_lexicon_loads"]["p50_ms"], steady)
        if "recall_while_saved_lexicon_loads" in read else None,
        "lexicon_ready_at_first_recall_after_lock": [
            r.get("lexicon_ready_at_first_recall") for r in read.get("unlock_repeats", [])],
        "lock_s": read.get("lock_s"),
        "unlock_to_first_recall_s": read.get("unlock_to_first_recall_median_s",
                                             read["unlock"]["unlock_to_first_recall_s"]),
        "peak_rss_mb": kept_rss,
    }
    return {"n": n, "kept": {"build": build, "read": read}, "chroma_alone": chroma,
            "targets": vs, "ratios_kept_over_chroma_alone": ratios, "recall_speed": speed}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, action="append", help="memories (repeatable)")
    ap.add_argument("--quick", action="store_true", help="2k smoke run")
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--remember", type=int, default=200)
    ap.add_argument("--unlock-repeats", type=int, default=4,
                    help="extra unlock-to-first-recall measurements after the run")
    ap.add_argument("--chroma-embed-docs", type=int, default=1000,
                    help="documents embedded by Chroma's default function (ingest rate)")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "kept-scale-cache"))
    ap.add_argument("--rebuild", action="store_true", help="rebuild cached vaults")
    ap.add_argument("--profile", action="store_true", help="cProfile the import to stderr")
    ap.add_argument("--out", help="also write the JSON here")
    ap.add_argument("--role", choices=["kept-build", "kept-read", "chroma"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("KEPT_MODEL_DIR", str(DEFAULT_MODEL))
    if args.role:
        args.n = args.n[0]
        fn = {"kept-build": role_kept_build, "kept-read": role_kept_read,
              "chroma": role_chroma}[args.role]
        emit(fn(args))
        return
    if args.quick:
        sizes, args.queries, args.remember = [2000], min(args.queries, 50), 50
        args.chroma_embed_docs = min(args.chroma_embed_docs, 100)
    else:
        sizes = args.n or [10_000, 100_000]
    import platform
    result = {
        "bench": "kept scale", "machine": {"cpus": os.cpu_count(), "python":
                                           platform.python_version(),
                                           "load_avg_at_start": os.getloadavg()},
        "model_dir": os.environ["KEPT_MODEL_DIR"], "seed": args.seed,
        "sizes": [one_size(args, n) for n in sizes],
    }
    result["machine"]["load_avg_at_end"] = os.getloadavg()
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
