"""Several real vaults of one synced vault for the engine tests (issue 29): each a real
SQLCipher vault with its own device identity (what pairing stores), one epoch key, and its own
view of the synced folder. Moving files between the views is the test's job (a shared folder,
or ``app/sync/faults.FaultyTransport``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.clock import FixedClock
from app.facade import Vault
from app.sync.engine import SyncEngine
from app.sync.keys import DeviceSecret, EpochKey, issue_certificate, new_vault_id
from app.sync.merge import state_hash
from storage import sync_keys
from tests.app.conftest import PW, T0, share_embedder
from tests.inside import inside

NAMES = ("laptop", "desktop", "phone")


@dataclass
class Member:
    name: str
    vault: Vault
    folder: Path
    secret: DeviceSecret
    clock: FixedClock
    engine: SyncEngine | None = None

    def sync(self) -> SyncEngine:
        """This vault's engine (a new one after ``restart``)."""
        if self.engine is None:
            self.engine = SyncEngine(self.vault, self.folder)
        return self.engine

    def tick(self) -> Any:
        return self.sync().tick()

    def restart(self) -> None:
        """As after the app was killed: the engine's memory is gone, the vault stays."""
        self.engine = None

    def hash(self) -> str:
        return state_hash(self.sync().state())


@dataclass
class Fleet:
    members: list[Member] = field(default_factory=list)

    def close(self) -> None:
        for m in self.members:
            m.vault.lock()


def make_fleet(tmp: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any, n: int = 2,
               shared: bool = True, threaded: bool = False) -> Fleet:
    """``n`` vaults of one synced vault; ``shared``: one folder for all (a perfect sync tool),
    else a folder each; ``threaded``: each vault with its writer thread (an owner's jobs call
    it from theirs)."""
    from tests.conftest import new_vault
    share_embedder(monkeypatch, embedder)
    vault_id = new_vault_id()
    secrets = [DeviceSecret.generate() for _ in range(n)]
    founder = secrets[0]
    key = EpochKey.generate(1)
    certs = [issue_certificate(founder, vault_id, s.sign_public, s.box_public, NAMES[i],
                               1_764_150_000) for i, s in enumerate(secrets)]
    fleet = Fleet()
    for i, s in enumerate(secrets):
        clock = FixedClock(T0 + i * 0.25)
        v = new_vault(tmp / f"vault-{NAMES[i]}", PW, threaded=threaded, clock=clock,
                      use_chroma=False)
        folder = tmp / ("folder" if shared else f"folder-{NAMES[i]}")
        folder.mkdir(exist_ok=True)

        def setup(conn: Any, s: DeviceSecret = s, name: str = NAMES[i]) -> None:
            sync_keys.put_self(conn, vault_id, s.device_id, s.to_bytes(), name,
                               founder.sign_public, T0)
            for c in certs:
                sync_keys.put_device(conn, c.device_id, c.to_bytes(), T0)
            sync_keys.put_epoch_key(conn, key.epoch, key.key, T0)
        inside(v).db.write_sync(setup)
        fleet.members.append(Member(NAMES[i], v, folder, s, clock))
        fleet.members[-1].sync()  # on from the start: the journal records every act
    return fleet
