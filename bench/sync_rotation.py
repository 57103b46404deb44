"""How long a key rotation takes (issue 29: a key rotation of a 10k-memory vault <= 10 s).
Prints JSON. A real SQLCipher vault for the founder's keys; the op set of bench/sync_merge.py
(10k memories from three devices, 1,000 concurrent edit pairs, 1 % forgotten).

    .venv/bin/python bench/sync_rotation.py [--memories 10000] [--devices 3]

Measured: ``EpochKeeper.rotate`` end to end (new key saved in the vault, sealed for every device,
the op set compacted, the snapshot encrypted, padded and written once with fsync); then what
another device does with it: open its sealed key, decrypt and parse the snapshot
(``latest_snapshot``); and ``destroy`` once every device acknowledged (with the WAL checkpoint).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, as every bench script)
from app.sync.epochs import EpochKeeper, compact, founder_keys, latest_snapshot  # noqa: E402
from app.sync.folder import FolderReader  # noqa: E402
from app.sync.keys import (  # noqa: E402
    DeviceSecret,
    Trust,
    issue_certificate,
    new_vault_id,
)
from app.sync.merge import fold, state_hash  # noqa: E402
from app.sync.segments import Cursor, compress, encode_ops  # noqa: E402
from bench.sync_merge import build  # noqa: E402
from storage.db import Database  # noqa: E402
from storage.sync_epochs import SyncEpochRows  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--devices", type=int, default=3)
    args = ap.parse_args()
    ops = build(args.memories)
    vault_id = new_vault_id()
    secrets = [DeviceSecret.generate() for _ in range(args.devices)]
    founder = secrets[0]

    def trust() -> Trust:
        t = Trust(vault_id, founder.sign_public)
        for i, s in enumerate(secrets):
            t.add_certificate(issue_certificate(founder, vault_id, s.sign_public, s.box_public,
                                                f"device {i}", 1))
        return t

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "folder"
        db = Database(Path(tmp) / "vault.db", os.urandom(32), create=True, threaded=False)
        try:
            keeper = EpochKeeper(db, SyncEpochRows(), folder, founder, trust())
            # 100 segments per device, as a log of 10k ops written in batches would have.
            covers = {s.device_id: Cursor(s.device_id, 100, os.urandom(32)) for s in secrets}
            t = time.perf_counter()
            kept = compact(ops)
            compact_s = time.perf_counter() - t
            t = time.perf_counter()
            rotation = keeper.rotate(ops, covers)
            rotate_s = time.perf_counter() - t
            other = secrets[1]
            t = time.perf_counter()
            other_trust = trust()
            reader = FolderReader(folder, other.device_id, other_trust, {}, {})
            keys = {e: k.key for e, k in founder_keys(folder, other, other_trust).items()}
            reader.keys = keys
            snap = latest_snapshot(reader)
            load_s = time.perf_counter() - t
            assert snap is not None and len(snap.ops) == len(kept)
            assert state_hash(fold(snap.ops)) == state_hash(fold(ops))
            size = rotation.snapshot.stat().st_size
            json_bytes = sum(len(json.dumps(o.to_dict(), separators=(",", ":"))) for o in kept)
            # What the envelope seals (version 2: the ops' JSON compressed), the snapshot's
            # small head object aside.
            sealed_bytes = len(compress(encode_ops([o.to_dict() for o in kept])))
            db.write_sync(lambda c: SyncEpochRows().put_epoch_key(c, 0, os.urandom(32), 0.0))
            t = time.perf_counter()
            destroyed = db.write_sync(lambda c: SyncEpochRows().destroy_epoch_keys(
                c, rotation.epoch, time.time()))
            db.checkpoint()
            destroy_s = time.perf_counter() - t
        finally:
            db.close()
    print(json.dumps({
        "bench": "sync_rotation", "memories": args.memories, "devices": args.devices,
        "ops": len(ops), "ops_in_snapshot": len(kept),
        "rotate_s": round(rotate_s, 3), "target_s": 10.0, "compact_s": round(compact_s, 3),
        "load_snapshot_s": round(load_s, 3), "destroy_s": round(destroy_s, 4),
        "keys_destroyed": destroyed, "snapshot_bytes": size, "snapshot_json_bytes": json_bytes,
        "snapshot_sealed_bytes": sealed_bytes, "padding_share": round(1 - sealed_bytes / size, 3),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }))


if __name__ == "__main__":
    main()
