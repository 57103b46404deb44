"""SECURITY.md requirement 21: logs, faulthandler output and error output hold no content.

Canaries go into every content field (text, speaker, session, ref, context, agent, query), a
failure is forced during processing (a damaged embedding model, a malformed import line, a
wrong password), and the whole DEBUG log, stderr and a faulthandler dump are scanned.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests import ROOT

CANARIES = ["LogCanaryText91", "LogCanarySpeaker92", "LogCanarySession93", "LogCanaryRef94",
            "LogCanaryContext95", "LogCanaryAgent96", "LogCanaryQuery97"]

SESSION = r'''
import faulthandler, logging, sys, json
from pathlib import Path
log_file = open(sys.argv[2], "w")
logging.basicConfig(level=logging.DEBUG, stream=log_file,
                    format="%(levelname)s %(threadName)s %(name)s: %(message)s")
faulthandler.enable(file=log_file)
from app.facade import Vault
from app.api import Turn
from app.domain.memory import Draft
from app.services.recall import Filters
from storage.crypto import KdfParams
c = json.loads(sys.argv[3])
folder = Path(sys.argv[1])
v = Vault.create(folder, "pw-logs", kdf=KdfParams(m=65536, t=3), threaded=True).vault
v.remember(Draft(text=c[0] + " likes tea", speaker=c[1], context=c[4], agent=c[5], ref=c[3]))
v.import_turns([Turn(c[2], c[1], c[0] + " moved house", 1.7e9, c[3])])
v.recall(c[6] + " " + c[0], filters=Filters(agent=c[5]))
v.context(c[0])
plan = v.forget_plan(query=c[0])
v.forget(plan)
faulthandler.dump_traceback(file=log_file, all_threads=True)
try:
    v.correct(999999, c[0])
except Exception:
    logging.getLogger("test").exception("expected failure")
v.lock()
try:
    Vault.open(folder, "wrong " + c[0])
except Exception:
    logging.getLogger("test").exception("expected failure")
log_file.close()
'''


def test_no_content_in_logs(tmp_path: Path) -> None:
    broken = tmp_path / "model"
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"not a model " + CANARIES[0].encode())
    (broken / "tokenizer.json").write_text("{}")
    log_file = tmp_path / "debug.log"
    env = dict(os.environ, KEPT_MODEL_DIR=str(broken))
    r = subprocess.run([sys.executable, "-c", SESSION, str(tmp_path / "v"), str(log_file),
                        json.dumps(CANARIES)], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    text = log_file.read_text()
    assert "embedding model failed to load" in text  # the forced failure was logged
    assert "expected failure" in text and "Traceback" in text
    assert "Current thread" in text or "Thread 0x" in text  # faulthandler wrote its dump
    for canary in CANARIES:
        assert canary not in text, f"{canary} leaked into the log"
        assert canary not in r.stderr and canary not in r.stdout


def test_cli_errors_hold_no_content(tmp_path: Path) -> None:
    folder = tmp_path / "v"
    env = dict(os.environ, KEPT_PASSWORD="pw-logs-cli")
    kept = [sys.executable, "-m", "app.cli", "--debug", "--vault", str(folder)]
    subprocess.run([*kept, "init", "--kdf-memory-mib", "64"], env=env, cwd=ROOT, check=True,
                   capture_output=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"session": CANARIES[2], "speaker": CANARIES[1],
                               "text": CANARIES[0], "ref": CANARIES[3]}) + "\n"
                   + "{" + CANARIES[0] + "\n")
    r = subprocess.run([*kept, "import", str(bad)], env=env, cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 2 and "line 1" in r.stderr and "line 2" in r.stderr
    r2 = subprocess.run([*kept, "remember", CANARIES[0], "--context", CANARIES[4]], env=env,
                        cwd=ROOT, capture_output=True, text=True)
    assert r2.returncode == 0
    for canary in CANARIES:
        assert canary not in r.stderr and canary not in r2.stderr
