#!/usr/bin/env python3
"""``kept mcp install --pair --write`` and ``kept mcp doctor`` twice in a row for each client
kind (issue 26, item 7, "Measured"). Prints JSON.

    python bench/mcp_install.py            # all five clients
    python bench/mcp_install.py --clients cursor,claude-code

A fresh HOME in a temporary folder, a new vault (the 64 MiB KDF floor) served by ``kept serve
--no-schedule`` (password file), and the installed ``kept`` run as a person runs it (a
subprocess; process start included). Claude Code cannot run here (no network, no account):
``claude`` is a small script on PATH that keeps ``~/.claude.json`` as ``claude mcp
add-json``/``remove`` do and refuses to add a name that exists, as the real one does.

Per client and run: wall seconds and exit code of install and of doctor, whether the key was
printed (it must not be: ``--write`` put it in the config), whether the config holds exactly
one Kept entry for the agent, and whether doctor's launch, ``tools/list`` and ``status`` call
through the entry passed. Also the load average at the start and the end.
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
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, as in bench/scale.py)

PW = "bench password 26"
CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode", "lm-studio")
FAKE_CLAUDE = r'''
import json, os, sys
path = os.path.join(os.environ["HOME"], ".claude.json")
conf = json.load(open(path)) if os.path.exists(path) else {}
servers = conf.setdefault("mcpServers", {})
a = sys.argv[1:]
if a[:2] == ["mcp", "--help"]:
    sys.exit(0)
if a[:2] == ["mcp", "add-json"] and len(a) == 6:
    if a[4] in servers:
        print(f"MCP server {a[4]} already exists in user config", file=sys.stderr)
        sys.exit(1)
    servers[a[4]] = json.loads(a[5])
elif a[:2] == ["mcp", "remove"] and len(a) == 5:
    if a[4] not in servers:
        print(f"No user-scoped MCP server found with name: {a[4]}", file=sys.stderr)
        sys.exit(1)
    del servers[a[4]]
else:
    sys.exit(2)
json.dump(conf, open(path, "w"))
'''


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", default=",".join(CLIENTS))
    opts = ap.parse_args()
    clients = [c for c in opts.clients.split(",") if c]
    load_start = os.getloadavg()
    base = Path(tempfile.mkdtemp(prefix="kept-install-bench-"))
    home, folder = base / "home", base / "vault"
    home.mkdir()
    (base / "bin").mkdir()
    fake = base / "bin" / "claude"
    fake.write_text(f"#!{sys.executable}\n{FAKE_CLAUDE}")
    fake.chmod(0o700)
    pw_file = base / "pw"
    pw_file.write_text(PW + "\n")
    pw_file.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if k not in ("KEPT_PASSWORD", "KEPT_AGENT_KEY")}
    env.update(HOME=str(home), PATH=f"{base / 'bin'}{os.pathsep}{env['PATH']}",
               KEPT_KDF_MEMORY_KIB="65536")
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "APPDATA"):
        env.pop(var, None)
    os.environ["KEPT_KDF_MEMORY_KIB"] = "65536"
    from app.facade import Vault
    from storage.crypto import KdfParams
    Vault.create(folder, PW, kdf=KdfParams(m=65_536, t=3, p=4), load_model=False,
                 threaded=False, use_chroma=False).vault.lock()
    kept = str(Path(sys.executable).parent / "kept")
    serve = subprocess.Popen([kept, "--vault", str(folder), "--password-file", str(pw_file),
                              "serve", "--no-schedule"], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    from app.ipc.client import owner_running
    end = time.monotonic() + 120
    while not owner_running(folder) and time.monotonic() < end:
        time.sleep(0.1)
    out: dict[str, object] = {"load_avg_start": load_start}
    try:
        from app import mcp_install
        for client in clients:
            runs = []
            for _ in range(2):
                t0 = time.perf_counter()
                inst = subprocess.run([kept, "--vault", str(folder), "mcp", "install",
                                       "--client", client, "--agent", f"b-{client}", "--pair",
                                       "--write"], env={**env, "KEPT_PASSWORD": PW},
                                      capture_output=True, text=True, timeout=300)
                t1 = time.perf_counter()
                doc = subprocess.run([kept, "mcp", "doctor", "--agent", f"b-{client}",
                                      "--client", client], env=env, capture_output=True,
                                     text=True, timeout=300)
                t2 = time.perf_counter()
                found = mcp_install.find_entry(f"b-{client}", home, client)
                env_of = found[2].get("env") if found else None
                key = env_of.get("KEPT_AGENT_KEY", "") if isinstance(env_of, dict) else ""
                runs.append({
                    "install_s": round(t1 - t0, 2), "install_exit": inst.returncode,
                    "key_printed": bool(key) and key in inst.stdout + inst.stderr,
                    "entry_found": found is not None,
                    "doctor_s": round(t2 - t1, 2), "doctor_exit": doc.returncode,
                    "launch_ok": "launch: yes" in doc.stdout,
                    "call_ok": "call: yes" in doc.stdout})
            out[client] = runs
    finally:
        serve.terminate()
        serve.wait(timeout=60)
    out["load_avg_end"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
