#!/usr/bin/env python3
"""Sync segments (issue 29, part E): encode and decode time of a 1-op and a 100-op segment, and
the bytes on the wire of one small memory, for envelope version 1 (JSON as is) and version 2
(JSON through DEFLATE with a preset dictionary), side by side in one run. Prints JSON.

    .venv/bin/python bench/sync_segments.py [--repeat 300]

``encode_ms`` / ``decode_ms``: median of ``--repeat`` runs of ``app.sync.segments``'
``encode_segment`` (canonical JSON, compress (v2), pad to the bucket, HKDF, ChaCha20-Poly1305,
Ed25519 sign) and ``decode_segment`` (size, header, certificate, signature, HKDF, AEAD, padding,
inflate (v2), JSON); the two versions' runs alternate. The ops are ``memory.create`` ops as the
engine writes them (every field, a 32-hex device id, ``OpWriter`` stamps), with texts of 20 to
200 characters (dev sample, fixed seed). ``wire_bytes``: the file's size; ``payload_bytes``:
the JSON inside; ``sealed_bytes``: what is sealed (v2: compressed). ``longest_text_in_512``:
the longest text (English words of the sample) whose lone memory is still a 512-byte file.
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
from app.sync.hlc import HybridClock
from app.sync.keys import DeviceSecret, EpochKey, Trust, issue_certificate, new_vault_id
from app.sync.ops import OpWriter, body_from_mapping, new_gid
from app.sync.segments import GENESIS, compress, decode_segment, encode_ops, encode_segment

WORDS = ("Sam moved to Lisbon and started a new job at the harbour office while Ana kept the "
         "flat in Porto for the summer and visits every other weekend by train").split()


WRITER = OpWriter(HybridClock(os.urandom(16).hex()))


def _op(rng: random.Random, text: str | None = None) -> dict[str, Any]:
    if text is None:
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(4, 36)))[:200]
    body = body_from_mapping("memory.create", dict(
        gid=new_gid(), store="episodic", text=text, occurred_at=1_764_151_200.0,
        learned_at=1_764_151_200.0, agent="global", context=None, written_by="person",
        confidence=None, user_validated=False, valid_from=None, valid_to=None, sources=[],
        session=None, speaker=None, turn=None, ref=None, importance=None, emotional=None,
        social=None, side={}))
    return WRITER.batch([body])[0].to_dict()


def _sealed(ops: list[dict[str, Any]], version: int) -> int:
    return len(encode_ops(ops) if version == 1 else compress(encode_ops(ops)))


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
                           "sample": "dev (synthetic memories, fixed seed)",
                           "loadavg": [round(x, 2) for x in os.getloadavg()]}
    small = [_op(rng, "Ana prefers green tea at eleven.")]  # 32 characters
    out["small_memory"] = {"payload_bytes": len(encode_ops(small))}
    for v in (1, 2):
        data = encode_segment(founder, vault, key, 1, GENESIS, small, version=v)
        out["small_memory"][f"v{v}"] = {"wire_bytes": len(data),
                                        "sealed_bytes": _sealed(small, v)}
    # The sample's 26 words repeat (they compress well); random lowercase words compress about
    # as little as a short English text does (DEFLATE finds few repeats in 200 characters).
    longest = {}
    for name, word in (("sample_words", lambda: rng.choice(WORDS)),
                       ("random_letters", lambda: "".join(
                           rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(
                               rng.randrange(2, 9))))):
        text = ""
        while True:
            longer = (text + " " + word()).strip()
            if len(encode_segment(founder, vault, key, 1, GENESIS, [_op(rng, longer)])) > 512:
                break
            text = longer
        longest[name] = len(text)
    out["longest_text_in_512"] = longest
    for n in (1, 100):
        ops = [_op(rng) for _ in range(n)]
        row: dict[str, Any] = {"payload_bytes": len(encode_ops(ops))}
        segs = {v: encode_segment(founder, vault, key, 1, GENESIS, ops, version=v)
                for v in (1, 2)}
        times: dict[str, list[float]] = {}
        for _round in range(3):  # alternate v1 and v2, best of three medians each
            for v in (1, 2):
                times.setdefault(f"v{v}_encode", []).append(_median_ms(
                    lambda ops=ops, v=v: encode_segment(founder, vault, key, 1, GENESIS, ops,
                                                        version=v), args.repeat))
                times.setdefault(f"v{v}_decode", []).append(_median_ms(
                    lambda seg=segs[v]: decode_segment(seg, trust, keys), args.repeat))
        for v in (1, 2):
            row[f"v{v}"] = {"wire_bytes": len(segs[v]), "sealed_bytes": _sealed(ops, v),
                            "encode_ms": min(times[f"v{v}_encode"]),
                            "decode_ms": min(times[f"v{v}_decode"])}
        out[f"ops_{n}"] = row
    out["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
