"""One Kept owner in its own process for the engine-over-Syncthing tests (issue 29, "Tests and
targets"): it opens a real vault (real SQLCipher file, real ONNX model, in-memory Chroma),
runs a ``SyncEngine`` on the vault's folder, and asks its Syncthing to scan after every tick
that wrote a segment, as Kept's sync job would. A separate process, so a test can kill -9 it.

    python -m tests.sync_loopback.owner_proc VAULT FOLDER --api 127.0.0.1:PORT --api-key KEY \
        --sub SUBDIR [--skew SECONDS]

Commands arrive as JSON lines on stdin, one reply per line on stdout (``{"ok": ...}`` or
``{"error": class name}``). ``loop`` runs on its own until killed or done, printing one
``{"acked": text}`` line after each memory is committed (so a kill -9 says what was promised).

``--skew`` shifts the clock the vault (and so the journal's hybrid logical clock and the
engine) reads: ``Vault.open(clock=...)``, the app's own injection point, no test hook.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import storage  # noqa: F401  (first: onnxruntime telemetry off, as in every entry point)
from app.domain.memory import Draft, Store
from app.facade import Vault
from app.sync.engine import SyncEngine
from app.sync.merge import state_hash
from app.sync.syncthing import SyncthingApi

PASSWORD = "pw"
TICK_S = 0.05        # how often ``until`` ticks while it waits


class SkewedClock:
    """The real clock, ``skew`` seconds off (a device whose clock is set wrong)."""

    def __init__(self, skew: float) -> None:
        self.skew = skew

    def now(self) -> float:
        return time.time() + self.skew


class Owner:
    def __init__(self, vault_dir: Path, folder: Path, api: SyncthingApi | None, folder_id: str,
                 sub: str, skew: float) -> None:
        self.vault = Vault.open(vault_dir, PASSWORD, clock=SkewedClock(skew), verify="sync")
        self.engine = SyncEngine(self.vault, folder)
        self.api, self.folder_id, self.sub = api, folder_id, sub

    # --- what the person sees -----------------------------------------------------------
    def active(self) -> list[tuple[int, str]]:
        from tests.inside import inside
        ids = inside(self.vault).db.read(lambda c: [r[0] for r in c.execute(
            "SELECT id FROM memory WHERE status = 'active'")])
        return [(i, self.vault.get(i).text) for i in ids]

    def texts(self) -> Counter[str]:
        return Counter(t for _i, t in self.active())

    # --- sync ---------------------------------------------------------------------------
    def tick(self) -> dict[str, int]:
        rep = self.engine.tick()
        if rep.written and self.api is not None:
            self.api.scan(self.folder_id, self.sub)
        return {"written": rep.written, "received": rep.received, "erased": rep.erased,
                "applied": rep.applied, "dropped": rep.dropped}

    # --- commands -----------------------------------------------------------------------
    def run(self, cmd: dict[str, Any]) -> Any:
        op = cmd["op"]
        if op == "remember":
            at = time.time()
            self.vault.remember(Draft(text=cmd["text"], store=Store.EPISODIC))
            self.tick()
            return {"at": at}
        if op == "remember_many":  # one segment of them all
            for text in cmd["texts"]:
                self.vault.remember(Draft(text=text, store=Store.EPISODIC))
            return self.tick()
        if op == "tick":
            return self.tick()
        if op == "forget":
            at = time.time()
            ids = [i for i, t in self.active() if t == cmd["text"]]
            self.vault.forget(self.vault.forget_plan(ids=ids))
            self.tick()
            return {"at": at, "ids": len(ids)}
        if op == "correct":
            (mid,) = [i for i, t in self.active() if t == cmd["old"]]
            self.vault.correct(mid, cmd["new"])
            self.tick()
            return {}
        if op == "until":
            return self.until(cmd.get("present", []), cmd.get("absent", []), cmd["wait_s"])
        if op == "state":
            return {"hash": state_hash(self.engine.state()), "texts": dict(self.texts()),
                    "questions": [q.kind for q in self.engine.state().open_questions()]}
        if op == "recall":
            return [h.text for h in self.vault.recall(cmd["q"])]
        if op == "stamps":  # the HLC stamp of the op that made each text current
            return self.stamps()
        if op == "loop":
            return self.loop(cmd["prefix"], cmd["n"], cmd["seed"], cmd["max_gap_ms"])
        raise ValueError(f"unknown op {op!r}")

    def until(self, present: list[str], absent: list[str], timeout: float) -> dict[str, Any]:
        """Tick until every ``present`` text is listed and no ``absent`` one is; the wall time
        it first held (comparable across processes: one machine)."""
        end = time.monotonic() + timeout
        while True:
            self.tick()
            now = self.texts()
            if all(now[t] for t in present) and not any(now[t] for t in absent):
                return {"at": time.time(), "met": True}
            if time.monotonic() > end:
                return {"at": time.time(), "met": False}
            time.sleep(TICK_S)

    def stamps(self) -> dict[str, str]:
        state = self.engine.state()
        out: dict[str, str] = {}
        for item in state.items.values():
            for version in item.history:
                out[version.text] = version.hlc
            out[item.head.text] = item.head.hlc
        return out

    def loop(self, prefix: str, n: int, seed: int, max_gap_ms: int) -> dict[str, int]:
        """Remember ``n`` memories "<prefix>-<k>", a tick after each (a write, then an apply
        of whatever arrived), random gaps: a kill -9 lands anywhere in a write or an apply."""
        rng = random.Random(seed)
        have = self.texts()
        k = 0
        while k < n:
            text = f"{prefix}-{k} note of the loop"
            if not have[text]:  # after a restart: carry on where the committed ones end
                self.vault.remember(Draft(text=text, store=Store.EPISODIC))
                _say({"acked": text})
            k += 1
            self.tick()
            time.sleep(rng.uniform(0, max_gap_ms) / 1000)
        return {"done": n}


def _say(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("vault", type=Path)
    p.add_argument("folder", type=Path)
    p.add_argument("--api", default="")
    p.add_argument("--api-key", default="")
    p.add_argument("--folder-id", default="kept")
    p.add_argument("--sub", default="")
    p.add_argument("--skew", type=float, default=0.0)
    args = p.parse_args(argv)
    api = SyncthingApi(args.api, args.api_key) if args.api else None
    owner = Owner(args.vault, args.folder, api, args.folder_id, args.sub, args.skew)
    if api is not None:  # after a restart: a segment written before a kill may be unscanned
        api.scan(args.folder_id, args.sub)
    _say({"ready": True})
    try:
        for line in sys.stdin:
            cmd = json.loads(line)
            if cmd["op"] == "quit":
                break
            try:
                _say({"ok": owner.run(cmd)})
            except Exception as exc:  # the boundary: the driver sees the class, fails the test
                _say({"error": type(exc).__name__, "detail": str(exc)[:200]})
    finally:
        owner.vault.lock()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
