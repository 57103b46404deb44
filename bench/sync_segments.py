#!/usr/bin/env python3
"""Sync segments (issue 29, part E): encode and decode time of a 1-op and a 100-op segment, and
the bytes on the wire of one small memory. Prints JSON.

    .venv/bin/python bench/sync_segments.py [--repeat 300]

``encode_ms`` / ``decode_ms``: median of ``--repeat`` runs of ``app.sync.segments``'
``encode_segment`` (canonical JSON, pad to the bucket, HKDF, ChaCha20-Poly1305, Ed25519 sign)
and ``decode_segment`` (size, header, certificate, signature, HKDF, AEAD, padding, JSON). The
ops are memory creations like issue 29's example, with texts of 20 to 200 characters (dev
sample, fixed seed). ``wire_bytes``: the file's size; ``payload_bytes``: the JSON inside.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import time
from typing import Any

import storage  # noqa: F401  (first: onnxruntime telemetry off, as in every bench script)
from app.sync.keys import DeviceSecret, EpochKey, Trust, issue_certificate, new_vault_id
from app.sync.segments import GENESIS, decode_segment, encode_ops, encode_segment

WORDS = ("Sam moved to Lisbon and started a new job at the harbour office while Ana kept the "
         "flat in Porto for the summer and visits every other weekend by train").split()


def _op(rng: random.Random, text: str | None = None) -> dict[str, Any]:
    if text is None:
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(4, 36)))[:200]
    return {"kind": "memory.create", "gid": os.urandom(16).hex(), "text": text,
            "at": "2026-11-26T10:00:00Z"}


def _median_ms(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return round(statistics.median(times) * 1000, 3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=300)
    args = ap.parse_args()
    rng = random.Random(29)
    founder = DeviceSecret.generate()
    vault = new_vault_id()
    trust = Trust(vault, founder.sign_public)
    trust.add_certificate(issue_certificate(founder, vault, founder.sign_public,
                                            founder.box_public, "laptop", 1))
    key = EpochKey.generate(1)
    keys = {1: key.key}
    out: dict[str, Any] = {"bench": "sync_segments", "repeat": args.repeat,
                           "python": platform.python_version(),
                           "loadavg": [round(x, 2) for x in os.getloadavg()]}
    small = [_op(rng, "Sam moved to Lisbon")]
    data = encode_segment(founder, vault, key, 1, GENESIS, small)
    out["small_memory"] = {"wire_bytes": len(data), "payload_bytes": len(encode_ops(small))}
    for n in (1, 100):
        ops = [_op(rng) for _ in range(n)]
        seg = encode_segment(founder, vault, key, 1, GENESIS, ops)
        out[f"ops_{n}"] = {
            "payload_bytes": len(encode_ops(ops)), "wire_bytes": len(seg),
            "encode_ms": _median_ms(
                lambda ops=ops: encode_segment(founder, vault, key, 1, GENESIS, ops), args.repeat),
            "decode_ms": _median_ms(lambda seg=seg: decode_segment(seg, trust, keys),
                                    args.repeat)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
