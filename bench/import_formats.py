#!/usr/bin/env python3
"""Import benchmark: a generated ChatGPT export (``conversations.json``) of ``--mb`` MB. Prints
JSON.

    python bench/import_formats.py                # 100 MB, lexical only (no model)
    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx python bench/import_formats.py --model
    python bench/import_formats.py --mb 10        # a quick run

Each part runs in its own subprocess, so its peak RSS (``ru_maxrss``) is its own:

- ``read``: both passes of ``app/services/import_formats.py`` (``scan``: every turn checked,
  then ``iter_turns``), no vault: the parsing cost alone.
- ``import``: ``kept import FILE`` (``app.cli.main``) into a new vault (Argon2id at the test
  floor): the two passes plus ``Vault.import_turns`` per 1,024 turns. Without ``--model`` the
  model is not loaded (lexical recall only), which is what a machine without the model does.
  With it the turns go in first (``turns_in_s``, ``turns_per_s``: the "Imported ..." line) and
  the command then makes their vectors (``seconds``, ``turns_per_s_all_vectors``: its end);
  before issue 28's follow they were embedded inline, and both times were the same.
  ``KEPT_BENCH_TREE=/path/to/checkout`` runs the children on that checkout's code (an A/B).
- ``import_turns_only`` (``--turns-only``): ``kept import`` in its own process until its
  "Imported" line, then Ctrl-C: the turns/s a person waits for on an export too large to wait
  for every vector in a bench (its peak RSS is the child's VmHWM).
- ``window_import`` (``--window --model``): File > Import's path (``app.transfer.import_file``)
  on a threaded vault, as the window opens it: until it returns, until every vector is made
  (the follower at background priority), and a recall a second meanwhile.

The export: conversations of 40 turns (user and assistant in turn) of about 60 words, in the
shape of ``tests/data/import/chatgpt_conversations.json`` (``write_chatgpt_export`` in
tests/app/cli/test_import_formats.py).

``--realistic`` (issue 28) writes turns of the lengths people and assistants write instead:
conversations of 2-30 messages, a person's message ~25 words (log-normal, up to 600), an
assistant's ~220 words (up to 1,500: many pass the model's 256-token input and are cut there),
English words, and message metadata of the size a real export carries. Beside the import it
prints ``embed_by_length``: the embedder alone on 512 of the person's and 512 of the
assistant's turns (turns/s, tokens a turn, and the tokenizer's share), i.e. what long turns
cost. Generated in a temporary folder, never in git.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# KEPT_BENCH_TREE: run the children on another checkout (the old code, for an A/B).
ROOT = Path(os.environ.get("KEPT_BENCH_TREE") or Path(__file__).resolve().parents[1])
sys.path.insert(0, str(ROOT))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, inherited by children)

_READ = """
import json, resource, sys, time
from pathlib import Path
from app.services.import_formats import iter_turns, scan
path = Path(sys.argv[1])
t0 = time.perf_counter()
plan = scan(path)
t1 = time.perf_counter()
n = sum(1 for _ in iter_turns(path, plan.format))
t2 = time.perf_counter()
print(json.dumps({"turns": n, "check_s": round(t1 - t0, 2), "second_pass_s": round(t2 - t1, 2),
                  "turns_per_s": round(2 * n / (t2 - t0)),
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                                       1)}))
"""

_IMPORT = """
import io, json, resource, sys, time, contextlib
from pathlib import Path
from app.cli import main
from app.facade import Vault
from storage.crypto import KdfParams
folder, path = Path(sys.argv[1]), Path(sys.argv[2])
Vault.create(folder, "bench password", kdf=KdfParams(m=65_536, t=3, p=4), load_model=False,
             threaded=False, use_chroma=False).vault.lock()
class Out(io.StringIO):
    # When the "Imported ..." line is printed: the turns are in (the vectors may follow).
    turns_in = None
    def write(self, s):
        if self.turns_in is None and s.startswith("Imported"):
            self.turns_in = time.perf_counter()
        return super().write(s)
out = Out()
t0 = time.perf_counter()
with contextlib.redirect_stdout(out):
    code = main(["--vault", str(folder), "import", str(path)])
dt = time.perf_counter() - t0
print(json.dumps({"code": code, "report": out.getvalue().strip().splitlines()[0],
                  "turns_in_s": round(out.turns_in - t0, 1), "seconds": round(dt, 1),
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                                       1)}))
"""


# ``--window``: File > Import's path, on a threaded vault as the window opens it. The time until
# ``import_file`` returns, then until no vector is pending, with a recall once a second meanwhile
# (the vault stays usable). The old code has no ``vectors_pending``: it returns with them made.
_WINDOW = """
import json, resource, statistics, sys, time
from pathlib import Path
from app.facade import Vault
from app.transfer import import_file
from storage.crypto import KdfParams
folder, path = Path(sys.argv[1]), Path(sys.argv[2])
v = Vault.create(folder, "bench password", kdf=KdfParams(m=65_536, t=3, p=4),
                 use_chroma=False).vault
t0 = time.perf_counter()
r = import_file(v, path)
t_in = time.perf_counter() - t0
lat = []
while getattr(v.status(), "vectors_pending", 0):
    q0 = time.perf_counter()
    v.recall("the train to Lisbon and the budget meeting", k=10, touch=False)
    lat.append(time.perf_counter() - q0)
    time.sleep(1.0)
t_all = time.perf_counter() - t0
v.lock()
print(json.dumps({"turns": r.report.added, "returned_s": round(t_in, 1),
                  "all_vectors_s": round(t_all, 1),
                  "turns_per_s": round(r.report.added / t_in),
                  "recalls_meanwhile": len(lat),
                  "recall_ms_p50": round(1000 * statistics.median(lat)) if lat else None,
                  "recall_ms_max": round(1000 * max(lat)) if lat else None,
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                                       1)}))
"""

# ``--turns-only``: ``kept import`` as its own process until it prints "Imported ..." (the turns
# are in), then Ctrl-C (SIGINT), as a person who has what they need does: the vectors stay
# pending. For exports too large to wait for every vector; the peak RSS is the child's VmHWM.
_TURNS_ONLY = """
import json, signal, subprocess, sys, time
from pathlib import Path
from app.facade import Vault
from storage.crypto import KdfParams
folder, path = Path(sys.argv[1]), Path(sys.argv[2])
Vault.create(folder, "bench password", kdf=KdfParams(m=65_536, t=3, p=4), load_model=False,
             threaded=False, use_chroma=False).vault.lock()
t0 = time.perf_counter()
p = subprocess.Popen([sys.executable, "-m", "app.cli", "--vault", str(folder), "import",
                      str(path)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
first = ""
for line in p.stdout:
    if line.startswith("Imported"):
        first = line.strip()
        break
t_in = time.perf_counter() - t0
p.stdout.readline()  # "Finding meaning: ...": the interrupt lands while the vectors are made
hwm = [x for x in Path(f"/proc/{p.pid}/status").read_text().splitlines()
       if x.startswith("VmHWM")]
p.send_signal(signal.SIGINT)
rest = p.stdout.read()
p.wait()
print(json.dumps({"code": p.returncode, "report": first, "turns_in_s": round(t_in, 1),
                  "peak_rss_mb": round(int(hwm[0].split()[1]) / 1024, 1) if hwm else None,
                  "after_ctrl_c": rest.strip().splitlines()[-1:] }))
"""

_EMBED = """
import json, sys, time
from pathlib import Path
from app.services.import_formats import iter_turns, scan
from storage.embedder import Embedder, find_model_dir
path = Path(sys.argv[1])
short, long_ = [], []
for t in iter_turns(path, scan(path).format):
    (short if t.speaker == "user" else long_).append(t.text)
    if len(short) >= 512 and len(long_) >= 512:
        break
emb = Embedder(find_model_dir())
emb.embed(short[:32])  # warm
out = {}
for name, texts in (("person", short[:512]), ("assistant", long_[:512])):
    t0, c0 = time.perf_counter(), time.process_time()
    tok = emb._tokenizer.encode_batch(texts)
    t_tok = time.perf_counter() - t0
    t0 = time.perf_counter()
    emb.embed(texts)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    out[name] = {"turns": len(texts), "turns_per_s": round(len(texts) / dt, 1),
                 "cpu_ms_per_turn": round(1000 * cpu / len(texts), 2),
                 "tokens_per_turn_mean": round(sum(len(e.ids) for e in tok) / len(tok), 1),
                 "words_per_turn_mean": round(sum(len(x.split()) for x in texts) / len(texts), 1),
                 "tokenizer_share": round(t_tok / dt, 3)}
print(json.dumps(out))
"""

WORDS = ("the a to of and in that is for it you with on this be are as can your have or not "
         "will if at by from about but so what more when which one all they we there would "
         "time like just how some use make need also should first data code function garden "
         "trip plan budget recipe sister doctor meeting project deadline email python error "
         "question answer example value list change good better help think know want work "
         "week morning evening weekend family friend house car train flight hotel museum book "
         "read write test result problem step option file server user model training running "
         "knee appointment birthday present dinner lunch coffee kitchen window summer winter "
         "because however therefore instance approach consider important different similar "
         "following include provide create update remove install configure explain describe "
         "Lisbon Porto Berlin Madrid Anna Marco Priya Tom Sam Kim January March May October").split()


def write_realistic_export(path: Path, megabytes: float, seed: int = 28) -> tuple[int, int]:
    """A ChatGPT export of about ``megabytes`` with realistic turn lengths; (turns, conversations)."""
    import random
    rng = random.Random(seed)
    target = int(megabytes * 1024 * 1024)
    n = written = c = 0

    def text(median: float, cap: int) -> str:
        k = max(1, min(cap, round(rng.lognormvariate(0, 0.8) * median)))
        words = [rng.choice(WORDS) for _ in range(k)]
        for i in range(0, k, rng.randint(8, 20)):  # sentences
            words[i] = words[i].capitalize()
            if i:
                words[i - 1] += "."
        return " ".join(words) + "."

    with open(path, "w", encoding="utf-8") as fh:
        fh.write("[")
        while written < target:
            mapping: dict[str, object] = {"root": {"id": "root", "message": None,
                                                   "parent": None, "children": ["m0"]}}
            parent, turns = "root", rng.randint(1, 15) * 2
            for k in range(turns):
                mid = f"m{k}"
                role = ("user", "assistant")[k % 2]
                body = text(25, 600) if role == "user" else text(220, 1500)
                meta = ({"model_slug": "gpt-4o", "finish_details": {"type": "stop"},
                         "citations": [], "request_id": f"{rng.getrandbits(64):016x}",
                         "message_type": None, "default_model_slug": "gpt-4o",
                         "parent_id": parent, "timestamp_": "absolute"}
                        if role == "assistant" else {"request_id": f"{rng.getrandbits(64):016x}",
                                                     "message_source": None,
                                                     "timestamp_": "absolute"})
                mapping[mid] = {"id": mid, "parent": parent,
                                "children": [f"m{k + 1}"] if k + 1 < turns else [],
                                "message": {"id": mid, "author": {"role": role, "name": None,
                                                                  "metadata": {}},
                                            "create_time": 1.7e9 + c * 1000 + k,
                                            "update_time": None,
                                            "content": {"content_type": "text", "parts": [body]},
                                            "status": "finished_successfully", "end_turn": True,
                                            "weight": 1.0, "metadata": meta, "recipient": "all",
                                            "channel": None}}
                parent = mid
            conv = {"title": f"Chat {c}", "create_time": 1.7e9 + c * 1000,
                    "update_time": 1.7e9 + c * 1000 + turns, "mapping": mapping,
                    "moderation_results": [], "current_node": parent, "plugin_ids": None,
                    "conversation_id": f"conv-{c}", "id": f"conv-{c}", "is_archived": False}
            chunk = ("," if c else "") + json.dumps(conv)
            fh.write(chunk)
            written += len(chunk)
            n += turns
            c += 1
        fh.write("]")
    return n, c


def _child(code: str, *args: str, env: dict[str, str]) -> dict[str, object]:
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                       cwd=ROOT, env=env)
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    return dict(json.loads(r.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--model", action="store_true",
                    help="embed every turn (KEPT_MODEL_DIR); default: lexical only")
    ap.add_argument("--realistic", action="store_true",
                    help="turns of realistic lengths (long assistant turns), see above")
    ap.add_argument("--turns-only", action="store_true",
                    help="kept import until its turns are in, then Ctrl-C (with --model)")
    ap.add_argument("--window", action="store_true",
                    help="also File > Import's path on a threaded vault (with --model)")
    args = ap.parse_args()
    from tests.app.cli.test_import_formats import write_chatgpt_export
    env = {**os.environ, "KEPT_PASSWORD": "bench password", "ORT_DISABLE_TELEMETRY": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.model:
            env["KEPT_MODEL_DIR"] = str(Path(tmp) / "no-model")
        export = Path(tmp) / "conversations.json"
        t0 = time.perf_counter()
        if args.realistic:
            turns, convs = write_realistic_export(export, args.mb)
        else:
            turns = write_chatgpt_export(export, args.mb)
            convs = turns // 40
        size = export.stat().st_size
        result: dict[str, object] = {
            "export": {"mb": round(size / 2**20, 1), "turns": turns,
                       "conversations": convs, "realistic": bool(args.realistic),
                       "generate_s": round(time.perf_counter() - t0, 1)},
            "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
            "read": _child(_READ, str(export), env=env)}
        if args.model:
            result["embed_by_length"] = _child(_EMBED, str(export), env=env)
        if args.turns_only:
            imp = _child(_TURNS_ONLY, str(Path(tmp) / "vault"), str(export), env=env)
            imp["turns_per_s"] = round(turns / float(imp["turns_in_s"]))  # type: ignore[arg-type]
            result["import_turns_only"] = imp
            result["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
            print(json.dumps(result, indent=2))
            return
        imp = _child(_IMPORT, str(Path(tmp) / "vault"), str(export), env=env)
        # Until the turns are in (searchable by words; the command goes on making the vectors
        # in its own process), and until every vector is made (the command's end).
        imp["turns_per_s"] = round(turns / float(imp["turns_in_s"]))  # type: ignore[arg-type]
        imp["turns_per_s_all_vectors"] = round(
            turns / float(imp["seconds"]))  # type: ignore[arg-type]
        imp["model"] = bool(args.model)
        result["import"] = imp
        if args.window and args.model:
            result["window_import"] = _child(_WINDOW, str(Path(tmp) / "vault-window"),
                                             str(export), env=env)
        result["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
