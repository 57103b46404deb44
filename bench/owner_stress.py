"""The owner under concurrent and hostile clients (issue 22), measured against a real
``kept serve`` on a vault with the default Argon2id (256 MiB, t = 3, p = 4). Prints JSON.

    .venv/bin/python bench/owner_stress.py [--rounds 2,8,12]

For each round: N connections send ``elevate`` at once (half the right password, half a wrong
one): how many were answered and how (welcome, wrong password, busy), the wall time until the
last answer, and the owner's RSS before and after (after: once it settles, at most 10 s).
Then: 64 connections that send two bytes and stop, and the latency of a person's ``recall``
and of an assistant's ``recall`` on new connections beside them; and the growing delay of
wrong passwords on one connection. Load: ``os.getloadavg()`` is printed with each figure.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import storage  # noqa: F401  (sets ORT_DISABLE_TELEMETRY before anything can load onnxruntime)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PW = "owner stress password"


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def frame_call(folder: Path, method: str, args: dict[str, object], timeout: float = 180
               ) -> str:
    from app.ipc import protocol as p
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        with p.address(p.socket_path(folder)) as where:
            s.connect(where)
        s.sendall(p.frame({"v": 1, "id": 1, "method": method, "args": args}))
        payload = p.read_frame(s.recv)
        if payload is None:
            return "closed"
        reply = p.decode_reply(payload)
        return "ok" if reply.ok else reply.kind
    except TimeoutError:
        return "no answer"
    finally:
        s.close()


def elevations(folder: Path, pid: int, n: int) -> dict[str, object]:
    out: list[str] = []
    before = rss_mb(pid)
    started = time.perf_counter()
    threads = [threading.Thread(target=lambda pw=(PW if i % 2 == 0 else "wrong"):
                                out.append(frame_call(folder, "elevate", {"password": pw})))
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    wall = time.perf_counter() - started
    after = rss_mb(pid)
    end = time.monotonic() + 10
    while after > before * 1.10 and time.monotonic() < end:
        time.sleep(0.25)
        after = rss_mb(pid)
    return {"parallel": n, "answered": len(out), "kinds": {k: out.count(k) for k in set(out)},
            "last_answer_s": round(wall, 2), "rss_before_mb": round(before),
            "rss_after_mb": round(after), "load": os.getloadavg()[0]}


def stalled(folder: Path, key: str) -> dict[str, object]:
    from app.ipc import protocol as p
    from app.ipc.client import RemoteVault
    socks = []
    for _ in range(64):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with p.address(p.socket_path(folder)) as where:
            s.connect(where)
        s.sendall(struct.pack(">I", 100)[:2])
        socks.append(s)
    time.sleep(0.3)
    try:
        t0 = time.perf_counter()
        RemoteVault.at(folder).recall("Lisbon")
        person = time.perf_counter() - t0
        t0 = time.perf_counter()
        RemoteVault.at(folder, agent="a", key=key).recall("Lisbon")
        agent = time.perf_counter() - t0
    finally:
        for s in socks:
            s.close()
    return {"stalled_connections": 64, "person_recall_ms": round(person * 1000, 1),
            "assistant_recall_ms": round(agent * 1000, 1), "load": os.getloadavg()[0]}


def wrong_passwords(folder: Path) -> dict[str, object]:
    from app.ipc import protocol as p
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(120)
    with p.address(p.socket_path(folder)) as where:
        s.connect(where)
    spent = []
    for n in range(5):
        t0 = time.perf_counter()
        s.sendall(p.frame({"v": 1, "id": n + 1, "method": "elevate",
                           "args": {"password": "wrong"}}))
        p.read_frame(s.recv)
        spent.append(round(time.perf_counter() - t0, 2))
    s.close()
    return {"wrong_passwords_in_a_row_s": spent, "load": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", default="2,8,12")
    args = ap.parse_args()
    from app.agent_scope import AgentSession  # noqa: F401
    from app.domain.memory import Draft
    from app.facade import Vault
    from storage.crypto import KdfParams
    work = Path(tempfile.mkdtemp(prefix="kept-owner-stress-"))
    folder = work / "v"
    v = Vault.create(folder, PW, kdf=KdfParams(), load_model=False, threaded=False,
                     use_chroma=False).vault
    v.remember(Draft("Ana moved to Lisbon in May"))
    key = v.pair_agent("a").value
    v.lock()
    pw_file = work / "pw"
    pw_file.write_text(PW + "\n")
    pw_file.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if k not in ("KEPT_PASSWORD",
                                                            "KEPT_KDF_MEMORY_KIB")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "--vault", str(folder),
                             "--password-file", str(pw_file), "serve", "--no-schedule"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        from app.ipc.client import owner_running
        end = time.monotonic() + 60
        while not owner_running(folder) and time.monotonic() < end:
            time.sleep(0.1)
        frame_call(folder, "elevate", {"password": PW})  # warm
        results: dict[str, object] = {
            "rounds": [elevations(folder, proc.pid, int(n)) for n in args.rounds.split(",")],
            "stalled": stalled(folder, key),
            "throttle": wrong_passwords(folder)}
        print(json.dumps(results, indent=1))
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
