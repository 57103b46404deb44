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
  model is not loaded (lexical recall only), which is what a machine without the model does;
  with it every turn is also embedded, and embedding dominates.

The export: conversations of 40 turns (user and assistant in turn) of about 60 words, in the
shape of ``tests/data/import/chatgpt_conversations.json`` (``write_chatgpt_export`` in
tests/app/cli/test_import_formats.py).
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

ROOT = Path(__file__).resolve().parents[1]
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
out = io.StringIO()
t0 = time.perf_counter()
with contextlib.redirect_stdout(out):
    code = main(["--vault", str(folder), "import", str(path)])
dt = time.perf_counter() - t0
print(json.dumps({"code": code, "report": out.getvalue().strip(), "seconds": round(dt, 1),
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                                       1)}))
"""


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
    args = ap.parse_args()
    from tests.app.cli.test_import_formats import write_chatgpt_export
    env = {**os.environ, "KEPT_PASSWORD": "bench password", "ORT_DISABLE_TELEMETRY": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.model:
            env["KEPT_MODEL_DIR"] = str(Path(tmp) / "no-model")
        export = Path(tmp) / "conversations.json"
        t0 = time.perf_counter()
        turns = write_chatgpt_export(export, args.mb)
        size = export.stat().st_size
        result: dict[str, object] = {
            "export": {"mb": round(size / 2**20, 1), "turns": turns,
                       "conversations": turns // 40,
                       "generate_s": round(time.perf_counter() - t0, 1)},
            "read": _child(_READ, str(export), env=env)}
        imp = _child(_IMPORT, str(Path(tmp) / "vault"), str(export), env=env)
        imp["turns_per_s"] = round(turns / float(imp["seconds"]))  # type: ignore[arg-type]
        imp["model"] = bool(args.model)
        result["import"] = imp
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
