#!/usr/bin/env python3
"""Encrypted backups (issue 16, "Figures"): backup, verify and restore MB/s of a big vault and
the memory they take. Prints JSON.

    python bench/backup.py --cache /tmp/kept-ipc-cache            # the 100k vault
    python bench/backup.py --cache /tmp/kept-ipc-cache --n 10000

The vault is bench/scale.py's cached build (``--role kept-build``, default KDF: Argon2id
256 MiB), copied to a temp folder. One child process per step, so each RSS is its own:

- ``backup``: ``Vault.open`` (no model), then ``Vault.backup(FILE)`` (VACUUM INTO a snapshot,
  stream it in 1 MiB AES-256-GCM chunks, fsync, read it back whole, rename); the vault's
  own password wrap is copied, so no Argon2id derive happens here.
- ``verify``: decrypt everything to a temp database (still SQLCipher-encrypted), then
  ``integrity_check``, ``cipher_integrity_check`` and the counts; one Argon2id derive.
- ``restore``: the same into a new vault folder, then the key file.

Per step: wall seconds, MB/s of the vault database (``db_mb`` / seconds), ``rss_before_mb``
(after imports and, for backup, the unlock), ``peak_rss_mb`` (psutil sampled every 10 ms
during the step) and ``maxrss_mb`` (the process's own peak: it includes Argon2id's 256 MiB
for verify and restore).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, as in bench/scale.py)


class Sampler:
    def __init__(self) -> None:
        import psutil
        self.proc = psutil.Process()
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            self._stop.wait(0.01)

    def __enter__(self) -> Sampler:
        self.peak = self.proc.memory_info().rss
        self._t.start()
        return self

    def __exit__(self, *a: object) -> None:
        self._stop.set()
        self._t.join()


def child(step: str, vault: Path, target: Path, out: Path, password: str) -> dict[str, Any]:
    import resource

    import psutil

    from app import bootstrap
    from app.facade import Vault
    rss = psutil.Process().memory_info().rss
    if step == "backup":
        v = Vault.open(vault, password, load_model=False, threaded=False, use_chroma=False)
        rss = psutil.Process().memory_info().rss
        try:
            start = time.perf_counter()
            with Sampler() as s:
                v.backup(target)
            secs = time.perf_counter() - start
        finally:
            v.lock()
    else:
        start = time.perf_counter()
        with Sampler() as s:
            if step == "verify":
                bootstrap.verify_backup(target, password)
            else:
                bootstrap.restore_backup(target, password, out)
        secs = time.perf_counter() - start
    db_mb = (vault / "vault.db").stat().st_size / 1e6
    return {"seconds": round(secs, 2), "db_mb": round(db_mb, 1),
            "mb_per_s": round(db_mb / secs, 1), "rss_before_mb": round(rss / 1e6, 1),
            "peak_rss_mb": round(s.peak / 1e6, 1),
            "maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3, 1)}


def run() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "kept-scale-cache"))
    ap.add_argument("--step", help=argparse.SUPPRESS)
    ap.add_argument("--paths", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    import scale
    if a.step:
        vault, target, out = (Path(p) for p in a.paths)
        print(json.dumps(child(a.step, vault, target, out, scale.PASSWORD)))
        return
    ns = argparse.Namespace(n=a.n, seed=a.seed, cache=a.cache)
    src = Path(scale.cache_dir(ns)) / "vault"
    if not (src / "vault.db").exists():
        # A build for an earlier schema serves as well: the copy is migrated when it opens.
        older = sorted(Path(a.cache).glob(f"n{a.n}-seed{a.seed}-g*/vault/vault.db"),
                       key=lambda p: p.stat().st_mtime)
        if older:
            src = older[-1].parent
    if not (src / "vault.db").exists():
        raise SystemExit(f"no cached vault at {src}: build it with bench/scale.py --role "
                         f"kept-build --n {a.n} --cache {a.cache}")
    tmp = Path(tempfile.mkdtemp(prefix="kept-bench-backup-"))
    try:
        vault, target, out = tmp / "vault", tmp / "out" / "vault.kept-backup", tmp / "restored"
        shutil.copytree(src, vault)
        target.parent.mkdir()
        result: dict[str, Any] = {"n": a.n, "chunk_bytes": 1 << 20, "source": src.parent.name}
        env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1"}
        for step in ("backup", "verify", "restore"):
            r = subprocess.run([sys.executable, __file__, "--n", str(a.n), "--cache", a.cache,
                                "--step", step, "--paths", str(vault), str(target), str(out)],
                               cwd=ROOT, env=env, capture_output=True, text=True)
            if r.returncode:
                raise SystemExit(f"{step} failed: {r.stderr[-2000:]}")
            result[step] = json.loads(r.stdout.strip().splitlines()[-1])
        result["backup_file_mb"] = round(target.stat().st_size / 1e6, 1)
        print(json.dumps(result, indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    run()
