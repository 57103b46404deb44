#!/usr/bin/env python3
"""Sync over real Syncthing on loopback (issue 29 targets): how long from a segment written on
device A to its ops read on device B, and how many bytes one small memory costs on the wire.
Prints JSON.

    .venv/bin/python bench/sync_syncthing.py [--writes 100] [--gap-ms 200]

Two Syncthing instances (``tests/sync_loopback/harness.py``: 127.0.0.1 only, discovery,
relays, NAT, reporting and upgrades off, watcher off). Each write: ``FolderWriter.append`` of
one ``memory.create`` op ("Sam moved to Lisbon"-sized texts) on A, then a REST scan of that
file on A (what Kept's sync job does after a write); the clock stops when ``FolderReader.scan``
on B yields the segment (polled every 10 ms). ``visible_s``: p50, p95, max; ``within_5s``: the
share within 5 s (target 95 %). ``wire_bytes_per_memory``: the growth of the connection's
byte counters (sent plus received, both directions, TLS and Syncthing's index and request
messages included) per memory, and ``file_bytes``: the segment file itself.
``--per-segment N`` puts N memories in each segment (a writer batching a few seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, as in every bench script)
from app.sync.folder import FolderReader, FolderWriter  # noqa: E402
from app.sync.keys import DeviceSecret, EpochKey, Trust, issue_certificate, new_vault_id  # noqa: E402
from app.sync.segments import Cursor  # noqa: E402
from tests.sync_loopback.harness import loopback, wait_synced  # noqa: E402

TEXTS = ("Sam moved to Lisbon", "Ana prefers green tea in the afternoon",
         "The dentist appointment moved to Thursday at 9")


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--writes", type=int, default=100)
    ap.add_argument("--gap-ms", type=int, default=200, help="pause between writes")
    ap.add_argument("--per-segment", type=int, default=1,
                    help="memories per segment (a writer batching a few seconds of changes)")
    args = ap.parse_args()
    vault = new_vault_id()
    a_dev, b_dev, key = DeviceSecret.generate(), DeviceSecret.generate(), EpochKey.generate(1)
    trust = Trust(vault, a_dev.sign_public)
    for d, name in ((a_dev, "laptop"), (b_dev, "desktop")):
        trust.add_certificate(issue_certificate(a_dev, vault, d.sign_public, d.box_public,
                                                name, int(time.time())))
    load_before = os.getloadavg()
    visible: list[float] = []
    with tempfile.TemporaryDirectory(prefix="kept-sync-bench-") as tmp, \
            loopback(Path(tmp)) as (a, b):
        writer = FolderWriter(a.folder, a_dev, vault, Cursor(a_dev.device_id))
        reader = FolderReader(b.folder, b_dev.device_id, trust, {1: key.key}, {})
        # The first write makes the folders (v1/, log/, the device's); not a steady-state cost.
        writer.append([{"kind": "memory.create", "gid": os.urandom(16).hex(),
                        "text": "warm up", "at": "2026-11-27T03:00:00Z"}], key)
        a.scan()
        while not reader.scan().segments:
            time.sleep(0.01)
        wait_synced([a, b])
        bytes_before = a.wire_bytes(b)
        file_bytes = 0
        for i in range(args.writes):
            ops = [{"kind": "memory.create", "gid": os.urandom(16).hex(),
                    "text": TEXTS[(i + j) % len(TEXTS)], "at": "2026-11-27T03:00:00Z"}
                   for j in range(args.per_segment)]
            t0 = time.perf_counter()
            seg = writer.append(ops, key)
            a.scan(f"v1/log/{a_dev.device_id}/{seg.seq:012d}")
            while True:
                got = reader.scan().segments
                if got:
                    break
                if time.perf_counter() - t0 > 60:
                    raise SystemExit(f"write {i}: not visible on B within 60 s")
                time.sleep(0.01)
            visible.append(time.perf_counter() - t0)
            assert [s.hash for s in got] == [seg.hash] and got[0].ops == ops
            file_bytes = (a.folder / f"v1/log/{a_dev.device_id}/{seg.seq:012d}").stat().st_size
            time.sleep(args.gap_ms / 1000)
        wait_synced([a, b])
        wire = a.wire_bytes(b) - bytes_before
        version = subprocess.run(["syncthing", "--version"], capture_output=True,
                                 text=True).stdout.split(" (")[0]
    out = {
        "bench": "sync_syncthing", "sample": "dev (synthetic small memories)",
        "writes": args.writes, "gap_ms": args.gap_ms, "per_segment": args.per_segment,
        "visible_s": {"p50": round(statistics.median(visible), 4),
                      "p95": round(_pct(visible, 95), 4), "max": round(max(visible), 4)},
        "within_5s": round(sum(v <= 5 for v in visible) / len(visible), 4),
        "target": {"within_5s": 0.95, "wire_bytes_per_memory": 1536},
        "file_bytes": file_bytes,
        "wire_bytes_per_memory": round(wire / (args.writes * args.per_segment)),
        "syncthing": version, "python": platform.python_version(),
        "cpus": os.cpu_count(), "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
