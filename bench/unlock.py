#!/usr/bin/env python3
"""Unlock time of a vault made with the default, calibrated KDF. Prints JSON.

    python bench/unlock.py [--repeats 7]

Creates a small vault in a private temp folder exactly as ``kept init`` does (Argon2id
with memory from installed RAM, 256 MiB from 4 GiB up, and t raised until a derive takes
0.5-1.0 s), then times
``OpenVault.unlock`` (read key file, Argon2id, AES-GCM unwrap, HKDF, SQLCipher open, pragma
checks, page self-test) several times, half a second apart. Target (SECURITY.md req. 6):
0.5-2.0 s on this machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, here and in children)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    from storage import crypto
    from storage.paths import private_umask
    from storage.unlock import OpenVault
    private_umask()
    tmp = Path(tempfile.mkdtemp(prefix="kept-unlock-"))
    try:
        folder = tmp / "vault"
        t0 = time.perf_counter()
        cal = crypto.calibrate()
        calibrate_s = time.perf_counter() - t0
        OpenVault.create(folder, "unlock benchmark password", kdf=cal.params).lock()
        times = []
        for _ in range(args.repeats):
            time.sleep(0.5)
            t0 = time.perf_counter()
            v, _info = OpenVault.unlock(folder, "unlock benchmark password")
            times.append(time.perf_counter() - t0)
            v.lock()
        kf = crypto.read_key_file(folder)
        median = statistics.median(times)
        print(json.dumps({
            "kdf": {"alg": kf.kdf.alg, "m_kib": kf.kdf.m, "t": kf.kdf.t, "p": kf.kdf.p},
            "calibration": {"derive_s": round(cal.seconds, 3), "total_s": round(calibrate_s, 2),
                            "warning": cal.warning},
            "unlock_s": [round(x, 3) for x in times],
            "unlock_median_s": round(median, 3),
            "target_s": [0.5, 2.0],
            "met": 0.5 <= median <= 2.0,
        }, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
