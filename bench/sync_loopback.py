"""Sync between two real vaults over one local folder (issue 29: a change visible on the other
device within 5 s; catching up 10k ops after 30 days offline <= 30 s with 0 resurrections).
Prints JSON. Real SQLCipher vaults, the real ONNX model (``KEPT_MODEL_DIR``), no network.

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx .venv/bin/python bench/sync_loopback.py \
        [--visible 40] [--catch-up 10000] [--idle 100]

- ``visible_ms``: a memory remembered on A, then ``tick`` on A (its segment written) and ``tick``
  on B (scanned, merged, applied): the time from the remember's return until B lists it. No
  sync tool in between (its own delay comes on top: Syncthing's scan after a write).
- ``idle``: a tick on A then on B when nothing is new, ``--idle`` times (p50, p90).
- ``catch_up``: B was offline while another device (C, writing its log directly) made 10k ops:
  creates, edits, and forgets of memories B had and edited offline. B's one ``tick`` is timed,
  then the wait until B's vectors are all made (the follower embeds after the commit).
  ``resurrections``: forgotten memories found afterwards on B (listed, in its merged state, in
  what it wrote to the folder); must be 0. ``tick_cpu_s``: the process's CPU seconds (every
  thread) during the tick, less sensitive to the other workers' load than ``tick_s``;
  ``peak_rss_mb_*``: the process's peak resident set before the tick (the vault, the model and
  C's ops already made), after it, and after the vectors; ``rss_mb_tick_start`` and
  ``rss_mb_tick_max``: the resident set when the tick starts and its highest sample (every
  20 ms) during the tick (Linux ``/proc``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, as every bench script)

PASSWORD = "sync-loopback-bench"
T0 = 1_764_151_200.0


def _vault(folder: Path) -> Any:
    from app.facade import Vault
    from storage.crypto import KdfParams
    return Vault.create(folder, PASSWORD, kdf=KdfParams(m=65_536, t=3, p=4),
                        use_chroma=False).vault


def _identity(vaults: list[Any], names: list[str]) -> tuple[list[Any], Any, str]:
    from app.facade import internals
    from app.sync.keys import DeviceSecret, EpochKey, issue_certificate, new_vault_id
    from storage import sync_keys
    vault_id = new_vault_id()
    secrets = [DeviceSecret.generate() for _ in names]
    key = EpochKey.generate(1)
    certs = [issue_certificate(secrets[0], vault_id, s.sign_public, s.box_public, n, int(T0))
             for s, n in zip(secrets, names, strict=True)]
    for v, s, n in zip(vaults, secrets, names, strict=False):
        def setup(conn: Any, s: Any = s, n: str = n) -> None:
            sync_keys.put_self(conn, vault_id, s.device_id, s.to_bytes(), n,
                               secrets[0].sign_public, T0)
            for c in certs:
                sync_keys.put_device(conn, c.device_id, c.to_bytes(), T0)
            sync_keys.put_epoch_key(conn, key.epoch, key.key, T0)
        internals(v).db.write_sync(setup)
    return secrets, key, vault_id


def _listed(v: Any) -> set[str]:
    from app.facade import internals
    return set(internals(v).db.read(lambda c: [r[0] for r in c.execute(
        "SELECT text FROM memory WHERE status = 'active'")]))


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def visible(tmp: Path, n: int) -> dict[str, Any]:
    from app.sync.engine import SyncEngine
    a, b = _vault(tmp / "a"), _vault(tmp / "b")
    folder = tmp / "folder"
    folder.mkdir()
    _identity([a, b], ["laptop", "desktop"])
    ea, eb = SyncEngine(a, folder), SyncEngine(b, folder)
    from app.domain.memory import Draft
    times, sizes = [], []
    try:
        for i in range(n):
            text = f"Note {i}: the plumber comes on day {i % 28 + 1} at {9 + i % 8} o'clock"
            a.remember(Draft(text=text))
            t0 = time.perf_counter()
            ea.tick()
            eb.tick()
            times.append((time.perf_counter() - t0) * 1000)
            if text not in _listed(b):
                raise AssertionError("not visible after one tick each")
        logs = sorted((folder / "v1" / "log" / ea.device.device_id).iterdir())
        sizes = [p.stat().st_size for p in logs]
        same = ea.state_hash() == eb.state_hash()
    finally:
        a.lock()
        b.lock()
    return {"n": n, "p50_ms": round(statistics.median(times), 1),
            "p95_ms": round(_pct(times, .95), 1), "max_ms": round(max(times), 1),
            "segment_bytes_p50": int(statistics.median(sizes)), "equal_state_hash": same}


def idle(tmp: Path, n: int) -> dict[str, Any]:
    """A tick on each of two synced vaults when nothing is new: what a scheduler pays each
    time it looks (the keys, the snapshot, the acknowledgement and the logs checked)."""
    from app.domain.memory import Draft
    from app.sync.engine import SyncEngine
    a, b = _vault(tmp / "a"), _vault(tmp / "b")
    folder = tmp / "folder"
    folder.mkdir()
    _identity([a, b], ["laptop", "desktop"])
    ea, eb = SyncEngine(a, folder), SyncEngine(b, folder)
    try:
        for i in range(5):
            a.remember(Draft(text=f"Warm-up note {i}"))
            ea.tick()
            eb.tick()
        for _ in range(3):
            ea.tick()
            eb.tick()
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            ea.tick()
            eb.tick()
            times.append((time.perf_counter() - t0) * 1000)
    finally:
        a.lock()
        b.lock()
    return {"n": n, "pair_p50_ms": round(statistics.median(times), 2),
            "pair_p90_ms": round(_pct(times, .9), 2)}


def catch_up(tmp: Path, total: int, old_edits: int = 0) -> dict[str, Any]:
    from app.facade import internals
    from app.sync.engine import SyncEngine
    from app.sync.folder import FolderWriter
    from app.sync.hlc import HybridClock
    from app.sync.merge import fold, state_hash
    from app.sync.ops import Forget, MemoryCreate, MemoryEdit, OpWriter, new_gid, parse_ops
    from app.sync.segments import Cursor
    rng = random.Random(29)
    b = _vault(tmp / "b")
    folder = tmp / "folder"
    folder.mkdir()
    secrets, key, vault_id = _identity([b], ["desktop", "laptop"])
    c_secret = secrets[1]
    writer = FolderWriter(folder, c_secret, vault_id, Cursor(c_secret.device_id))
    wall = [int(T0 * 1000)]
    clock = HybridClock(c_secret.device_id, lambda: wall[0])
    ops_writer = OpWriter(clock)
    written: list[Any] = []

    def create(gid: str, text: str) -> MemoryCreate:
        return MemoryCreate(
            gid=gid, store="episodic", text=text, occurred_at=T0, learned_at=T0, agent="global",
            context=None, written_by="person", confidence=None, user_validated=False,
            valid_from=None, valid_to=None, sources=(), session=None, speaker=None, turn=None,
            ref=None, importance=None, emotional=None, social=None, side={})

    def send(bodies: list[Any]) -> None:
        for i in range(0, len(bodies), 200):
            ops = ops_writer.batch(bodies[i:i + 200])
            written.extend(ops)
            writer.append([o.to_dict() for o in ops], key)
            wall[0] += 1000
    words = ["garden", "invoice", "train", "dentist", "birthday", "tax", "holiday", "boiler"]
    first = [new_gid() for _ in range(total // 10)]
    send([create(g, f"Before: {rng.choice(words)} note {i}") for i, g in enumerate(first)])
    n_first = len(written)
    eb = SyncEngine(b, folder)
    eb.tick()  # B has the first tenth
    # B goes offline and edits some of what C will forget meanwhile.
    forgotten = rng.sample(first, max(1, total // 100))
    local = internals(b).db.read(lambda c: dict(c.execute(
        "SELECT gid, memory_id FROM sync_gids").fetchall()))
    for g in forgotten[:len(forgotten) // 2]:
        b.correct(local[g], f"Edited offline: {g[:6]} secret detail")
    # C: creates, edits, forgets (30 days of ops).
    wall[0] += 30 * 86_400_000
    later = [new_gid() for _ in range(total - len(first) - total // 10 - 1 - old_edits)]
    send([create(g, f"Later: {rng.choice(words)} note {i}") for i, g in enumerate(later)])
    send([MemoryEdit(gid=g, bases=(g,), text=f"Edited: {g[:6]}", confidence=None,
                     user_validated=True) for g in rng.sample(later, total // 10)])
    kept = sorted(set(first) - set(forgotten))
    send([MemoryEdit(gid=g, bases=(g,), text=f"Edited before: {g[:6]}", confidence=None,
                     user_validated=True) for g in rng.sample(kept, old_edits)])
    send([Forget(gids=tuple(sorted(forgotten)))])
    load_at_tick = os.getloadavg()[0]
    rss_before = _peak_rss_mb()
    sampler = _RssSampler()
    t0, cpu0 = time.perf_counter(), time.process_time()
    report = eb.tick()
    tick_s = time.perf_counter() - t0
    tick_cpu = time.process_time() - cpu0
    rss_tick = _peak_rss_mb()
    rss_at = sampler.stop()
    wait_vectors(b)
    vectors_s = time.perf_counter() - t0
    # Resurrections: a forgotten memory listed on B, in its merged state, or in what B wrote.
    mine = folder / "v1" / "log" / eb.device.device_id
    sent = [o for p in (sorted(mine.iterdir()) if mine.exists() else [])
            for o in parse_ops(_decode(p, eb))]
    gone = set(forgotten)
    listed = _listed(b)
    res = sum(1 for t in listed if "secret detail" in t or any(g[:6] in t for g in gone
                                                              if t.startswith("Edited")))
    res += len(gone & set(eb.state().items))
    res += sum(1 for o in sent if o.body.targets() & gone and not isinstance(o.body, Forget))
    same = state_hash(fold([*written, *sent])) == eb.state_hash()
    n_ops = len(written) - n_first
    b.lock()
    return {"ops": len(written), "ops_after_offline": n_ops, "tick_s": round(tick_s, 2),
            "tick_cpu_s": round(tick_cpu, 2), "load_at_tick": round(load_at_tick, 2),
            "peak_rss_mb_before_tick": rss_before, "peak_rss_mb_after_tick": rss_tick,
            "rss_mb_tick_start": rss_at[0], "rss_mb_tick_max": rss_at[1],
            "peak_rss_mb_after_vectors": _peak_rss_mb(),
            "until_vectors_s": round(vectors_s, 2), "applied": report.applied,
            "old_edits": old_edits,
            "erased": report.erased, "dropped": report.dropped, "resurrections": res,
            "equal_state_hash": same, "forgotten": len(gone)}


class _RssSampler:
    """The resident set every 20 ms while the tick runs (the process's peak so far may be
    older than the tick: the model, C's ops)."""

    def __init__(self) -> None:
        import threading
        self.first = self.top = _rss_mb()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(0.02):
            self.top = max(self.top, _rss_mb())

    def stop(self) -> tuple[float, float]:
        self._done.set()
        self._thread.join()
        return self.first, max(self.top, _rss_mb())


def wait_vectors(v: Any) -> None:
    """Until every vector the vault queued (``vector_pending``) is made."""
    from app.facade import internals
    while internals(v).db.read(lambda c: c.execute(
            "SELECT count(*) FROM vector_pending").fetchone()[0]):
        time.sleep(0.05)


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        kib = next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:"))
    return round(kib / 1024, 1)


def _peak_rss_mb() -> float:
    """This process's peak resident set so far (Linux: ru_maxrss in KiB)."""
    import resource
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _decode(path: Path, engine: Any) -> list[dict[str, Any]]:
    from app.sync.segments import decode_segment
    return decode_segment(path.read_bytes(), engine.trust, engine.keys).ops


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--visible", type=int, default=40)
    ap.add_argument("--catch-up", type=int, default=10_000)
    ap.add_argument("--idle", type=int, default=100)
    ap.add_argument("--old-edits", type=int, default=0,
                    help="of the catch-up's ops, edits of memories B had before it went "
                         "offline (the rest as before: creates, edits of new ones, a forget)")
    args = ap.parse_args()
    out: dict[str, Any] = {"load_before": os.getloadavg()[0], "set": "synthetic (dev)"}
    with tempfile.TemporaryDirectory() as d:
        out["idle"] = idle(Path(d), args.idle)
    with tempfile.TemporaryDirectory() as d:
        out["visible"] = visible(Path(d), args.visible)
    with tempfile.TemporaryDirectory() as d:
        out["catch_up"] = catch_up(Path(d), args.catch_up, args.old_edits)
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
