"""What a successor's takeover costs beside the revoke it replaces (docs/sync.md#a-successor-founder).
Prints JSON. Real SQLCipher vaults (one per run), the op set of bench/sync_merge.py (10k
memories from three devices, 1,000 concurrent edit pairs, 1 % forgotten).

    .venv/bin/python bench/sync_succession.py [--memories 10000] [--rounds 3]

Per round, alternating which goes first: **revoke** (the founder revokes a lost device:
``EpochKeeper.revoke``, a signed list and a rotation for the others) and **take over** (the
named successor becomes the founder: ``succession.take_over``, the takeover record, its list,
the same rotation, and its own successor named), each in a fresh vault and folder from the same
ops; then what another device does with the takeover (``Trust.accept_takeover``, and following
the chain from the folder as a joining device does). The ratio take over / revoke is per round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off, as every bench script)
import storage.sync_keys as key_rows  # noqa: E402
from app.sync import succession  # noqa: E402
from app.sync.epochs import EpochKeeper  # noqa: E402
from app.sync.folder import FolderReader  # noqa: E402
from app.sync.keys import (  # noqa: E402
    DeviceSecret,
    Takeover,
    Trust,
    issue_certificate,
    name_successor,
    new_vault_id,
)
from app.sync.ops import Op  # noqa: E402
from app.sync.segments import Cursor  # noqa: E402
from bench.sync_merge import build  # noqa: E402
from storage.db import Database  # noqa: E402
from storage.sync_epochs import SyncEpochRows  # noqa: E402


class Fleet:
    def __init__(self) -> None:
        self.vault_id = new_vault_id()
        self.secrets = [DeviceSecret.generate() for _ in range(3)]
        a = self.secrets[0]
        self.certs = [issue_certificate(a, self.vault_id, s.sign_public, s.box_public,
                                        f"device {i}", 1) for i, s in enumerate(self.secrets)]
        self.heir = name_successor(a, self.vault_id, 0, 1, self.certs[1], 1)

    def trust(self) -> Trust:
        t = Trust(self.vault_id, self.secrets[0].sign_public)
        for c in self.certs:
            t.add_certificate(c)
        t.set_successor(self.heir)
        return t


def _run(kind: str, fleet: Fleet, ops: list[Op], tmp: Path) -> float:
    folder = tmp / "folder"
    db = Database(tmp / "vault.db", os.urandom(32), create=True, threaded=False)
    try:
        me = fleet.secrets[0 if kind == "revoke" else 1]
        keeper = EpochKeeper(db, SyncEpochRows(), folder, me, fleet.trust())
        covers = {s.device_id: Cursor(s.device_id, 100, os.urandom(32)) for s in fleet.secrets}
        t = time.perf_counter()
        if kind == "revoke":
            keeper.revoke(fleet.secrets[2].device_id, 100, ops, covers)
        else:
            succession.take_over(db, key_rows, keeper, folder, ops, covers, time.time)
        return time.perf_counter() - t
    finally:
        db.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    ops = build(args.memories)
    fleet = Fleet()
    times: dict[str, list[float]] = {"revoke": [], "take_over": []}
    ratios = []
    load_before = [round(x, 2) for x in os.getloadavg()]
    for r in range(args.rounds):
        order = ("revoke", "take_over") if r % 2 == 0 else ("take_over", "revoke")
        got = {}
        for kind in order:
            with tempfile.TemporaryDirectory() as tmp:
                got[kind] = _run(kind, fleet, ops, Path(tmp))
            times[kind].append(got[kind])
        ratios.append(got["take_over"] / got["revoke"])
    # What the third device does with a takeover: verify it, and follow the chain from the
    # folder as a joining device does (the root's founder, then the takeover).
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "folder"
        db = Database(Path(tmp) / "vault.db", os.urandom(32), create=True, threaded=False)
        try:
            b = fleet.secrets[1]
            keeper = EpochKeeper(db, SyncEpochRows(), folder, b, fleet.trust())
            succession.take_over(db, key_rows, keeper, folder, [], {}, time.time)
        finally:
            db.close()
        raw = next((folder / "v1" / "founders" / b.device_id).iterdir()).read_bytes()
        n = 200
        t = time.perf_counter()
        for _ in range(n):
            fleet.trust().accept_takeover(Takeover.from_bytes(raw))
        accept_ms = (time.perf_counter() - t) / n * 1000
        t = time.perf_counter()
        for _ in range(n):
            chain = Trust(fleet.vault_id, fleet.secrets[0].sign_public)
            FolderReader(folder, "0" * 32, chain, {}, {}).load_trust()
            assert chain.founder_id == b.device_id
        follow_ms = (time.perf_counter() - t) / n * 1000
    print(json.dumps({
        "bench": "sync_succession", "label": "dev", "memories": args.memories,
        "ops": len(ops), "rounds": args.rounds,
        "revoke_s": [round(x, 3) for x in times["revoke"]],
        "take_over_s": [round(x, 3) for x in times["take_over"]],
        "ratio_take_over_to_revoke": [round(x, 2) for x in ratios],
        "ratio_median": round(statistics.median(ratios), 2),
        "accept_takeover_ms": round(accept_ms, 3),
        "follow_chain_from_folder_ms": round(follow_ms, 3),
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }))


if __name__ == "__main__":
    main()
