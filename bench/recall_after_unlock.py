#!/usr/bin/env python3
"""Recall at an assistant's pace in the first 30 s after unlock, two versions of the code
alternating (issue 28, the first minute). Prints a line a run.

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx \
    python bench/recall_after_unlock.py VAULT ROUNDS OLD_ROOT NEW_ROOT [--crash N]

VAULT: a ``bench/scale.py`` vault (its cache, e.g. ``/tmp/kept-scale-cache/n100000-.../vault``),
copied for each run, so it has no saved lexicon (as after a crash or a first unlock with a new
version). In each child: unlock, then one recall every 0.5 s for 30 s (an assistant's pace, not
back to back as ``bench/scale.py`` asks), then, once the lexicon's thread is done, 40 recalls
back to back for the steady state. Per run: the load, steady p50, and p50 / max / count of the
recalls before the RAM lexicon was ready and after it (the texts worked out ahead run then).
Synthetic queries and vault: dev figures.

``--crash N``: the unlock after a crash instead. Each side first makes its own copy of VAULT
in which a session saved the lexicon at lock, and the next session remembered N memories and
died (``os._exit``, no lock): what a crash after an ordinary session leaves. Every run then
starts from that copy.
"""
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# First, as in every bench script: onnxruntime telemetry off, here and in the children.
try:
    import storage  # noqa: F401
except ImportError:
    sys.path.insert(0, str(HERE.parent))
    import storage  # noqa: F401

CHILD = r'''
import os, sys, shutil, tempfile, time, json
from pathlib import Path
sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "bench")]
import storage
from scale import PASSWORD, make_queries
from app.facade import Vault, internals
work = Path(tempfile.mkdtemp(prefix="kept-pace-"))
shutil.copytree(sys.argv[1], work / "vault"); os.chmod(work / "vault", 0o700); os.sync()
load = os.getloadavg()[0]
t0 = time.perf_counter()
v = Vault.open(work / "vault", PASSWORD)
inner = internals(v)
out = []
for q in make_queries(60, 99):
    s = time.perf_counter(); v.recall(q, k=10, touch=False); w = time.perf_counter() - s
    out.append((time.perf_counter() - t0, w * 1e3, inner.lexicon.ready))
    if time.perf_counter() - t0 > 30: break
    time.sleep(0.5)
th = inner.lexicon._thread
if th is not None: th.join()
steady = []
for q in make_queries(40, 99)[:40]:
    s = time.perf_counter(); v.recall(q, k=10, touch=False); steady.append((time.perf_counter() - s) * 1e3)
print(json.dumps({"load": load, "out": out, "steady": steady}))
v.lock(); shutil.rmtree(work)
'''


CRASH = r'''
import os, sys, shutil, time
from pathlib import Path
sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "bench")]
import storage
from scale import PASSWORD
from app.domain.memory import Draft, Store
from app.facade import Vault, internals
src, dst, n = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
if dst.exists(): shutil.rmtree(dst)
shutil.copytree(src, dst); os.chmod(dst, 0o700)
v = Vault.open(dst, PASSWORD)
assert internals(v).lexicon.wait_ready(600)
v.lock()  # saves the lexicon
v = Vault.open(dst, PASSWORD)
for i in range(n):
    v.remember(Draft(text=f"Crash drill {i}: the heron by the canal took a sardine",
                     store=Store.EPISODIC))
os._exit(0)  # no lock: the process dies as in a crash
'''


def crashed(side: str, root: str, vault: str, n: int) -> str:
    """A copy of ``vault`` left by a crash after ``n`` remembers, made by ``root``'s code."""
    dst = str(Path(vault).parent.parent / f"crashed-{side}-{n}" / "vault")
    env = dict(os.environ, PYTHONPATH=root)
    p = subprocess.run([sys.executable, "-c", CRASH, vault, dst, str(n)], cwd=root, env=env,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{side}: preparing the crashed vault failed: {p.stderr[-800:]}")
    return dst


def summary(xs: list[float]) -> str:
    return f"p50 {statistics.median(xs):.0f} max {max(xs):.0f} n{len(xs)}" if xs else "-"


def run(side: str, root: str, vault: str) -> None:
    env = dict(os.environ, PYTHONPATH=root)
    p = subprocess.run([sys.executable, "-c", CHILD, vault], cwd=root, env=env,
                       capture_output=True, text=True)
    try:
        d = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        print(side, "failed", p.stderr[-800:])
        return
    steady = statistics.median(d["steady"])
    before = [w for _, w, ready in d["out"] if not ready]
    after = [w for _, w, ready in d["out"] if ready]
    ratio = [statistics.median(xs) / steady if xs else 0.0 for xs in (before, after)]
    print(side, f"load {d['load']:.1f}", f"steady p50 {steady:.1f}",
          "| before the lexicon:", summary(before), "| after it:", summary(after),
          f"| p50 over steady {ratio[0]:.2f}x / {ratio[1]:.2f}x", flush=True)


def main() -> None:
    args = sys.argv[1:]
    crash = None
    if "--crash" in args:
        at = args.index("--crash")
        crash = int(args[at + 1])
        del args[at:at + 2]
    vault, rounds = args[0], int(args[1])
    sides = {"old": args[2], "new": args[3]}
    vaults = {side: crashed(side, root, vault, crash) if crash is not None else vault
              for side, root in sides.items()}
    for r in range(rounds):
        for side in (["old", "new"] if r % 2 == 0 else ["new", "old"]):
            run(side, sides[side], vaults[side])


if __name__ == "__main__":
    main()
