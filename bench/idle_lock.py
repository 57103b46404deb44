#!/usr/bin/env python3
"""``kept serve --idle-lock`` (issue 26, item 6): what locking when idle costs an assistant and
the person. Prints JSON.

    export KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx
    python bench/idle_lock.py [--runs 3] [--calls 200] [--memories 200]

One vault (the default KDF, ``--memories`` notes, assistant "bench" paired), served in this
process by ``app.standby.ServeSession`` with the real ``Vault.open`` (model included) over the
real socket, locked by ``idle_lock()`` instead of waiting:

- ``idle_lock_ms``: jobs stopped and keys wiped (median of ``--runs``);
- ``locked_reply_ms``: an assistant's call on the locked vault answered "locked" (a fresh agent
  ``RemoteVault`` each call: connect, ``hello``, reply), p50/p95 over ``--calls``;
- ``unlock_s``: ``kept unlock``'s request (``RemoteVault.unlock_owner``: Argon2id, SQLCipher,
  the model) until it answers, then the first assistant call (median of ``--runs``);
- ``wake_s``: with the opt-in, an assistant's first call after the lock until answered (the
  keychain read, ``Vault.open`` with the device key, the model, the call; median of
  ``--runs``). This machine has no OS keychain: an in-memory ``keyring`` backend stands in, so
  a real keychain's own latency (D-Bus, a prompt) is not included.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import storage  # noqa: F401  (first: onnxruntime telemetry off, here and in children)

PW = "correct horse battery staple"


def _memory_keyring() -> None:
    import keyring
    from keyring.backend import KeyringBackend

    import storage.crypto

    class MemoryKeyring(KeyringBackend):
        priority = 1  # type: ignore[assignment]

        def __init__(self) -> None:
            super().__init__()
            self.items: dict[tuple[str, str], str] = {}

        def get_password(self, service: str, username: str) -> str | None:
            return self.items.get((service, username))

        def set_password(self, service: str, username: str, password: str) -> None:
            self.items[(service, username)] = password

        def delete_password(self, service: str, username: str) -> None:
            self.items.pop((service, username), None)

    keyring.set_keyring(MemoryKeyring())
    storage.crypto.keyring_available = lambda: True  # type: ignore[assignment]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--memories", type=int, default=200)
    args = ap.parse_args()
    _memory_keyring()
    from app.domain.memory import Draft
    from app.errors import VaultLocked
    from app.facade import Vault
    from app.ipc.client import RemoteVault
    from app.standby import ServeSession

    out: dict[str, Any] = {"loadavg_before": os.getloadavg(), "memories": args.memories,
                           "keychain": "in-memory stand-in (no OS keychain here)"}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "v"
        created = Vault.create(folder, PW, load_model=False, threaded=False, use_chroma=False)
        vault = created.vault
        for i in range(args.memories):
            vault.remember(Draft(text=f"Note {i}: the bench keeps note number {i}."))
        key = vault.pair_agent("bench").value
        vault.lock()

        session = ServeSession.serve(folder, PW, idle_seconds=0, schedule=False)
        session.start()
        try:
            session.vault.remember_device()
            lock_ms: list[float] = []
            unlock_s: list[float] = []
            wake_s: list[float] = []

            def agent_status() -> Any:
                with RemoteVault.at(folder, agent="bench", key=key, timeout=60) as a:
                    return a.status()

            agent_status()
            for _ in range(args.runs):
                t = time.perf_counter()
                session.idle_lock()
                lock_ms.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                with RemoteVault.at(folder, timeout=120) as person:
                    assert person.unlock_owner(PW)
                agent_status()
                unlock_s.append(time.perf_counter() - t)
            session.idle_lock()
            replies: list[float] = []
            for _ in range(args.calls):
                t = time.perf_counter()
                try:
                    agent_status()
                    raise AssertionError("answered while locked")
                except VaultLocked:
                    replies.append((time.perf_counter() - t) * 1000)
            with RemoteVault.at(folder, timeout=120) as person:
                person.unlock_owner(PW)
            session.vault.set_assistant_unlock(True)
            for _ in range(args.runs):
                session.idle_lock()
                t = time.perf_counter()
                agent_status()
                wake_s.append(time.perf_counter() - t)
        finally:
            session.lock()
    out.update(
        idle_lock_ms=round(statistics.median(lock_ms), 1),
        locked_reply_ms={"p50": round(_pct(replies, 0.5), 2),
                         "p95": round(_pct(replies, 0.95), 2), "calls": len(replies)},
        unlock_s=round(statistics.median(unlock_s), 2),
        wake_s=round(statistics.median(wake_s), 2),
        runs=args.runs, loadavg_after=os.getloadavg())
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
