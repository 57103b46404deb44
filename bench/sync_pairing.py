#!/usr/bin/env python3
"""Pairing a device (issue 29, item 5): what one pairing costs, apart from the sync tool's
delay. Prints JSON.

    .venv/bin/python bench/sync_pairing.py [--repeat 20]

``try_ms``: median of ``--repeat`` full tries over a temp folder with the right code (founder
offer, joiner answer, founder check, certificate and one sealed epoch key published, welcome,
joiner open): CPU and local file writes only, both sides in one process. ``wrong_try_ms``: the
same with a wrong code, up to the refusal. ``files`` / ``bytes``: what one right try leaves in
the folder (the pairing files, the certificate and the sealed key). The pure-Python SPAKE2 of
``spake2`` 0.9 is most of it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import storage  # noqa: F401  (first: onnxruntime telemetry off, as in every bench script)
from app.sync.folder import FolderWriter
from app.sync.keys import (
    Certificate,
    DeviceSecret,
    EpochKey,
    issue_certificate,
    new_vault_id,
    seal_epoch_key,
)
from app.sync.pairing import Code, Inviter, Joiner, WrongCode
from app.sync.segments import Cursor


def _one(folder: Path, right: bool) -> tuple[float, int, int]:
    founder, vault_id = DeviceSecret.generate(), new_vault_id()
    writer = FolderWriter(folder, founder, vault_id, Cursor(founder.device_id))
    writer.write_root(1)
    key = EpochKey.generate(1)

    def admit(sign: bytes, box: bytes, name: str) -> Certificate:
        cert = issue_certificate(founder, vault_id, sign, box, name, 1)
        writer.publish_certificate(cert)
        writer.publish_sealed(seal_epoch_key(founder, vault_id, key, cert))
        return cert
    start = time.perf_counter()
    inv = Inviter(folder, founder, vault_id, 0.0)
    code = inv.code if right else Code(inv.code.tag, f"{(int(inv.code.secret) + 1) % 10**8:08d}")
    joiner = Joiner(folder, code, "desktop", 0.0)
    try:
        inv.poll(1.0, admit)
        assert joiner.poll(1.0) is not None
    except WrongCode:
        pass
    took = (time.perf_counter() - start) * 1000
    files = [p for p in (folder / "v1").rglob("*") if p.is_file()]
    return took, len(files), sum(p.stat().st_size for p in files)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    out: dict[str, object] = {"python": platform.python_version(),
                              "loadavg": [round(x, 2) for x in os.getloadavg()]}
    for name, right in (("try_ms", True), ("wrong_try_ms", False)):
        runs = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as d:
                took, files, size = _one(Path(d), right)
                runs.append(took)
        out[name] = round(statistics.median(runs), 1)
        if right:
            out["files"], out["bytes"] = files, size
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
