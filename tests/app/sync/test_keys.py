"""Device keys, certificates, revocations, sealed epoch keys (app/sync/keys.py) and where this
device keeps them: inside the real SQLCipher vault (storage/sync_keys.py, migration 0029)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.sync.keys import (
    Certificate,
    DeviceSecret,
    EpochKey,
    Revocation,
    Revocations,
    SealedKey,
    SyncRefused,
    Trust,
    device_id_of,
    issue_certificate,
    load_trust,
    new_vault_id,
    open_sealed,
    seal_epoch_key,
    sign_revocations,
)
from storage import sync_keys
from storage.db import Database
from tests.app.sync.devices import two_devices


def test_a_device_id_is_its_key_and_its_secret_round_trips() -> None:
    d = DeviceSecret.generate()
    again = DeviceSecret.from_bytes(d.to_bytes())
    assert again.device_id == d.device_id == device_id_of(d.sign_public)
    assert again.box_public == d.box_public
    assert DeviceSecret.generate().device_id != d.device_id
    with pytest.raises(SyncRefused):
        DeviceSecret.from_bytes(d.to_bytes()[:-1])
    assert repr(d.sign_seed) not in repr(d) and repr(d.box_private) not in repr(d)


def test_the_founder_certifies_a_device_and_nobody_else_can() -> None:
    dev = two_devices()
    trust = Trust(dev.vault_id, dev.founder.sign_public)
    cert = issue_certificate(dev.founder, dev.vault_id, dev.other.sign_public,
                             dev.other.box_public, "desktop", 100)
    assert trust.add_certificate(Certificate.from_bytes(cert.to_bytes())) == cert
    assert trust.certificate(dev.other.device_id).name == "desktop"

    stranger = DeviceSecret.generate()
    forged = issue_certificate(stranger, dev.vault_id, stranger.sign_public,
                               stranger.box_public, "intruder", 100)
    with pytest.raises(SyncRefused, match="not issued by the founder"):
        trust.add_certificate(forged)
    # The stranger claims to be the founder: the signature does not verify.
    with pytest.raises(SyncRefused, match="certificate signature"):
        trust.add_certificate(dataclasses.replace(forged, issuer=trust.founder_id))
    # A real certificate with a field changed after signing.
    for change in ({"name": "renamed"}, {"box_public": stranger.box_public},
                   {"issued_at": 101}):
        with pytest.raises(SyncRefused):
            trust.add_certificate(dataclasses.replace(cert, **change))  # type: ignore[arg-type]
    # Another key under the certified id.
    with pytest.raises(SyncRefused, match="does not match"):
        trust.add_certificate(dataclasses.replace(cert, sign_public=stranger.sign_public))
    with pytest.raises(SyncRefused, match="another vault"):
        Trust(new_vault_id(), dev.founder.sign_public).add_certificate(cert)
    with pytest.raises(SyncRefused, match="unknown device"):
        trust.certificate(stranger.device_id)


def test_revocations_only_move_forward_and_stop_the_device_past_its_last_sequence() -> None:
    dev = two_devices()
    trust = dev.trust()
    other = dev.other.device_id
    v1 = sign_revocations(dev.founder, dev.vault_id, 1, [Revocation(other, 200, 5)])
    assert trust.set_revocations(Revocations.from_bytes(v1.to_bytes()))
    assert trust.may_write(other, 5).device_id == other
    with pytest.raises(SyncRefused, match="revoked"):
        trust.may_write(other, 6)
    assert [c.device_id for c in trust.active()] == [dev.founder.device_id]
    # An older (empty) list replayed into the folder un-revokes nobody.
    v0 = sign_revocations(dev.founder, dev.vault_id, 1, [])
    assert not trust.set_revocations(v0)
    with pytest.raises(SyncRefused):
        trust.may_write(other, 6)
    # Only the founder signs the list.
    with pytest.raises(SyncRefused, match="signature"):
        trust.set_revocations(sign_revocations(dev.other, dev.vault_id, 9, []))


def test_an_epoch_key_opens_only_for_its_device_from_a_certified_sender() -> None:
    dev = two_devices()
    trust = dev.trust()
    key = EpochKey.generate(7)
    sealed = seal_epoch_key(dev.founder, dev.vault_id, key, trust.certificate(dev.other.device_id))
    assert key.key.hex() not in sealed.to_bytes().decode()
    opened = open_sealed(SealedKey.from_bytes(sealed.to_bytes()), dev.other, trust)
    assert opened == key
    with pytest.raises(SyncRefused, match="another device"):
        open_sealed(sealed, dev.founder, trust)
    # Readdressed to the founder after sealing: the sender's signature no longer holds.
    with pytest.raises(SyncRefused, match="signature"):
        open_sealed(dataclasses.replace(sealed, recipient=dev.founder.device_id), dev.founder,
                    trust)
    with pytest.raises(SyncRefused, match="signature"):
        open_sealed(dataclasses.replace(sealed, epoch=8), dev.other, trust)
    stranger = DeviceSecret.generate()
    with pytest.raises(SyncRefused, match="unknown device"):
        open_sealed(dataclasses.replace(sealed, sender=stranger.device_id), dev.other, trust)
    trust.set_revocations(sign_revocations(dev.founder, dev.vault_id, 1,
                                           [Revocation(dev.founder.device_id, 1, 0)]))
    with pytest.raises(SyncRefused, match="revoked"):
        open_sealed(sealed, dev.other, trust)


_DEV = two_devices()
_TRUST = _DEV.trust()
_KEY = EpochKey.generate(3)
_SEALED = seal_epoch_key(_DEV.founder, _DEV.vault_id, _KEY,
                         _TRUST.certificate(_DEV.other.device_id)).to_bytes()


@settings(max_examples=150, deadline=None)
@given(st.integers(0, len(_SEALED) - 1), st.integers(1, 255))
def test_a_changed_byte_of_a_sealed_key_never_gives_another_key(at: int, xor: int) -> None:
    raw = bytearray(_SEALED)
    raw[at] ^= xor
    try:
        opened = open_sealed(SealedKey.from_bytes(bytes(raw)), _DEV.other, _TRUST)
    except SyncRefused:
        return
    # Only a change the parser reads as the same value (a hex digit's case) may still open.
    assert opened == _KEY


def test_this_devices_keys_live_inside_the_vault_never_in_clear(tmp_path: Path) -> None:
    dev = two_devices()
    path = tmp_path / "vault.db"
    db = Database(path, os.urandom(32), create=True, threaded=False)
    secret = dev.other.to_bytes()
    cert = dev.trust().certificate(dev.other.device_id)
    v2 = sign_revocations(dev.founder, dev.vault_id, 2, [Revocation("cd" * 16, 1, 0)]).to_bytes()
    try:
        def setup(conn: object) -> None:
            sync_keys.put_self(conn, dev.vault_id, dev.other.device_id,  # type: ignore[arg-type]
                               secret, "desktop", dev.founder.sign_public, 1.0)
            sync_keys.put_device(conn, cert.device_id, cert.to_bytes(), 1.0)  # type: ignore[arg-type]
            for e in (1, 2, 3):
                sync_keys.put_epoch_key(conn, e, bytes([e]) * 32, 1.0)  # type: ignore[arg-type]
            sync_keys.put_epoch_key(conn, 1, dev.key.key, 1.0)  # type: ignore[arg-type]
            sync_keys.put_cursor(conn, "ab" * 16, 4, b"h" * 32, 1.0)  # type: ignore[arg-type]
            sync_keys.put_cursor(conn, "ab" * 16, 3, b"x" * 32, 2.0)  # type: ignore[arg-type]
            assert sync_keys.put_revocations(conn, 2, v2)  # type: ignore[arg-type]
            assert not sync_keys.put_revocations(conn, 1, b"v1")  # type: ignore[arg-type]
        db.write_sync(setup)
        got = db.read(sync_keys.get_self)
        assert got is not None and DeviceSecret.from_bytes(got[2]) == dev.other
        assert got[4] == dev.founder.sign_public
        assert Certificate.from_bytes(db.read(sync_keys.devices)[0][1]) == cert
        # A key is never replaced; a cursor never moves back; a list never gets older.
        assert db.read(sync_keys.epoch_keys) == {e: bytes([e]) * 32 for e in (1, 2, 3)}
        assert db.read(sync_keys.cursors) == {"ab" * 16: (4, b"h" * 32)}
        assert db.read(sync_keys.revocations) == v2
        trust = load_trust(got[0], got[4], [c for _d, c, _s in db.read(sync_keys.devices)],
                           db.read(sync_keys.revocations))
        assert trust.certificate(dev.other.device_id) == cert
        assert trust.revocations.of("cd" * 16) is not None
        with pytest.raises(SyncRefused):  # a stored row changed behind Kept's back
            load_trust(got[0], got[4], [cert.to_bytes().replace(b"desktop", b"dasktop")], None)
        with pytest.raises(Exception, match="UNIQUE"):
            db.write_sync(lambda c: sync_keys.put_self(c, dev.vault_id, "x", secret, "again",
                                                       b"", 2.0))
        assert db.write_sync(lambda c: sync_keys.destroy_epoch_keys(c, 3, 5.0)) == 2
        assert db.read(sync_keys.epoch_keys) == {3: bytes([3]) * 32}
        db.write_sync(lambda c: sync_keys.put_epoch_key(c, 1, b"\x01" * 32, 6.0))
        assert 1 not in db.read(sync_keys.epoch_keys)
        db.checkpoint()
    finally:
        db.close()
    on_disk = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert secret[:32] not in on_disk and secret[32:] not in on_disk
    assert secret.hex().encode() not in on_disk
    assert bytes([3]) * 32 not in on_disk
