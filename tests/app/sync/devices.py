"""Devices of one synced vault for the sync tests: real keys, certificates from the founder."""

from __future__ import annotations

from dataclasses import dataclass

from app.sync.keys import DeviceSecret, EpochKey, Trust, issue_certificate, new_vault_id


@dataclass
class Devices:
    vault_id: str
    founder: DeviceSecret
    other: DeviceSecret
    key: EpochKey

    def trust(self) -> Trust:
        """A fresh ``Trust`` holding both devices' certificates (each test its own)."""
        trust = Trust(self.vault_id, self.founder.sign_public)
        for device, name in ((self.founder, "laptop"), (self.other, "desktop")):
            trust.add_certificate(issue_certificate(self.founder, self.vault_id,
                                                    device.sign_public, device.box_public,
                                                    name, 1_764_150_000))
        return trust

    @property
    def keys(self) -> dict[int, bytes]:
        return {self.key.epoch: self.key.key}


def two_devices() -> Devices:
    return Devices(new_vault_id(), DeviceSecret.generate(), DeviceSecret.generate(),
                   EpochKey.generate(1))


def memory_op(text: str = "Sam moved to Lisbon", gid: str = "7" * 32) -> dict[str, object]:
    """One small memory operation, the shape the merge layer writes (issue 29's example)."""
    return {"kind": "memory.create", "gid": gid, "text": text, "at": "2026-11-26T10:00:00Z"}
