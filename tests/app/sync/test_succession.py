"""A successor founder (app/sync/keys.py ``Successor``/``Takeover``, ``Trust.accept_takeover``;
docs/sync.md#a-successor-founder): a device accepts a founder change only when the founder it
trusts now signed the delegation. Real keys; every forgery a folder host, a device naming
itself or a lost founder could write is refused, and nothing of the trust changes."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from app.sync.keys import (
    Certificate,
    DeviceSecret,
    Revocation,
    Successor,
    SyncRefused,
    Takeover,
    Trust,
    issue_certificate,
    load_trust,
    name_successor,
    new_vault_id,
    sign_revocations,
    take_over_record,
)
from app.sync.keys import canonical as canon

NAMES = ("laptop", "desktop", "phone")


class Three:
    """Founder a, devices b and c, certified by a; ``trust()`` is what c holds."""

    def __init__(self) -> None:
        self.vault_id = new_vault_id()
        self.a, self.b, self.c = (DeviceSecret.generate() for _ in range(3))
        self.certs = [issue_certificate(self.a, self.vault_id, d.sign_public, d.box_public,
                                        n, 100) for d, n in zip((self.a, self.b, self.c), NAMES,
                                                                strict=True)]

    def trust(self) -> Trust:
        t = Trust(self.vault_id, self.a.sign_public)
        for c in self.certs:
            t.add_certificate(c)
        return t

    def named(self, who: DeviceSecret, by: DeviceSecret | None = None, version: int = 1,
              generation: int = 0) -> Successor:
        cert = next(c for c in self.certs if c.device_id == who.device_id)
        return name_successor(by or self.a, self.vault_id, generation, version, cert, 200)


def _fields(t: Trust) -> tuple[object, ...]:
    return (t.founder_id, t.generation, t.revocations.version, len(t.devices()))


def test_the_named_successor_takes_over_and_the_others_follow() -> None:
    x = Three()
    c_trust = x.trust()
    assert c_trust.set_successor(Successor.from_bytes(x.named(x.b).to_bytes()))
    b_trust = x.trust()
    b_trust.set_successor(x.named(x.b))
    rec = take_over_record(x.b, b_trust.successor, b_trust.devices(),  # type: ignore[arg-type]
                           b_trust.revocations, 7, 300)
    c_trust.accept_takeover(Takeover.from_bytes(rec.to_bytes()))
    assert c_trust.founder_id == x.b.device_id and c_trust.generation == 1
    assert c_trust.revocations.of(x.a.device_id) == Revocation(x.a.device_id, 300, 7)
    assert c_trust.may_write(x.a.device_id, 7) and c_trust.successor is None
    with pytest.raises(SyncRefused, match="revoked"):
        c_trust.may_write(x.a.device_id, 8)
    assert {d.device_id for d in c_trust.active()} == {x.b.device_id, x.c.device_id}
    # The new founder certifies; the lost one no longer can.
    d = DeviceSecret.generate()
    c_trust.add_certificate(issue_certificate(x.b, x.vault_id, d.sign_public, d.box_public,
                                              "tablet", 400))
    e = DeviceSecret.generate()
    with pytest.raises(SyncRefused, match="not issued by the founder"):
        c_trust.add_certificate(issue_certificate(x.a, x.vault_id, e.sign_public,
                                                  e.box_public, "intruder", 400))
    # Its lists and delegations are of a generation that is over.
    with pytest.raises(SyncRefused, match="revocations signature"):
        c_trust.set_revocations(sign_revocations(x.a, x.vault_id, 99, []))
    with pytest.raises(SyncRefused, match="current founder"):
        c_trust.set_successor(x.named(x.c, version=5))
    # From the vault again: the chain, a carried certificate and the new one.
    again = load_trust(x.vault_id, x.a.sign_public,
                       [c.to_bytes() for c in c_trust.devices()], c_trust.revocations.to_bytes(),
                       [rec.to_bytes()])
    assert _fields(again) == _fields(c_trust)
    # A certificate of the lost founder's that the takeover did not carry (stored before, or
    # slipped in): not trusted, not an error; a carried one changed in the vault: refused.
    stray = issue_certificate(x.a, x.vault_id, e.sign_public, e.box_public, "old", 50)
    kept = load_trust(x.vault_id, x.a.sign_public,
                      [*(c.to_bytes() for c in c_trust.devices()), stray.to_bytes()],
                      c_trust.revocations.to_bytes(), [rec.to_bytes()])
    assert e.device_id not in {c.device_id for c in kept.devices()}
    changed = x.certs[2].to_bytes().replace(b"phone", b"phono")
    with pytest.raises(SyncRefused):
        load_trust(x.vault_id, x.a.sign_public, [changed], None, [rec.to_bytes()])


def _forged(x: Three, c_trust: Trust, rec: Takeover, match: str) -> None:
    before = _fields(c_trust)
    with pytest.raises(SyncRefused, match=match):
        c_trust.accept_takeover(Takeover.from_bytes(rec.to_bytes()))
    assert _fields(c_trust) == before and c_trust.founder_id == x.a.device_id


def test_forged_takeovers_are_refused() -> None:
    x = Three()
    c_trust = x.trust()
    # b names itself (its own key signs the delegation): not the founder's signature.
    self_named = x.named(x.b, by=x.b)
    rec = take_over_record(x.b, self_named, x.certs, c_trust.revocations, 0, 300)
    _forged(x, c_trust, rec, "not delegated by the current founder")
    claimed = dataclasses.replace(self_named, founder=x.a.device_id)  # claims a's name
    claimed = dataclasses.replace(claimed, signature=x.b.sign(canon(claimed.body())))
    rec = take_over_record(x.b, claimed, x.certs, c_trust.revocations, 0, 300)
    _forged(x, c_trust, rec, "successor signature")
    # Signed by nobody: a real delegation, the takeover's signature zeroed.
    real = take_over_record(x.b, x.named(x.b), x.certs, c_trust.revocations, 0, 300)
    _forged(x, c_trust, dataclasses.replace(real, signature=bytes(64)), "takeover signature")
    # Signed by another device than the one named (c takes b's delegation).
    stolen = take_over_record(x.b, x.named(x.b), x.certs, c_trust.revocations, 0, 300)
    resigned = dataclasses.replace(stolen, signature=x.c.sign(canon(stolen.body())))
    _forged(x, c_trust, resigned, "takeover signature")
    # A delegation the founder replaced since (b named, then c): b cannot use the old one.
    c_trust.set_successor(x.named(x.b, version=1))
    c_trust.set_successor(x.named(x.c, version=2))
    _forged(x, c_trust, real, "replaced delegation")
    # A generation skipped, or a takeover that does not revoke the founder.
    skip = take_over_record(x.b, x.named(x.b, generation=1), x.certs, c_trust.revocations, 0,
                            300)
    _forged(x, c_trust, skip, "next generation")
    # A named successor revoked by the founder since.
    y = Three()
    y_trust = y.trust()
    y_trust.set_successor(y.named(y.b))
    y_trust.set_revocations(sign_revocations(y.a, y.vault_id, 1,
                                             [Revocation(y.b.device_id, 250, 0)]))
    late = take_over_record(y.b, y.named(y.b), y.certs, y_trust.revocations, 0, 300)
    _forged(y, y_trust, late, "revoked")


def test_after_the_takeover_the_lost_founder_cannot_take_it_back() -> None:
    x = Three()
    c_trust = x.trust()
    rec = take_over_record(x.b, x.named(x.b), x.certs, c_trust.revocations, 0, 300)
    c_trust.accept_takeover(rec)
    # The lost founder (its key in a thief's hands) names itself for the next generation.
    own = name_successor(x.a, x.vault_id, 1, 1, x.certs[0], 500)
    back = take_over_record(x.a, own, x.certs, c_trust.revocations, 0, 500)
    with pytest.raises(SyncRefused, match="current founder|revoked"):
        c_trust.accept_takeover(back)
    # A second takeover of generation 1 (a rival delegation by the old founder): refused too.
    rival = take_over_record(x.c, x.named(x.c, version=9), x.certs,
                             sign_revocations(x.a, x.vault_id, 0, []), 0, 500)
    with pytest.raises(SyncRefused, match="next generation"):
        c_trust.accept_takeover(rival)
    assert c_trust.founder_id == x.b.device_id


def test_records_parse_strictly() -> None:
    x = Three()
    rec = take_over_record(x.b, x.named(x.b), x.certs, Trust(x.vault_id, x.a.sign_public)
                           .revocations, 0, 300)
    raw = rec.to_bytes()
    for bad in (b"", b"[]", raw[:-3], raw.replace(b"kept-sync.takeover", b"kept-sync.other")):
        with pytest.raises(SyncRefused):
            Takeover.from_bytes(bad)
    with pytest.raises(SyncRefused):
        Successor.from_bytes(x.named(x.b).to_bytes().replace(b'"version":1', b'"version":"1"'))
    assert Certificate.from_bytes(x.certs[1].to_bytes()) == x.certs[1]


# --- three real vaults (tests/app/sync/fleet.py): the founder is lost --------------------------
def test_the_founder_is_lost_b_takes_over_forgets_rotate_and_d_pairs_through_b(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any) -> None:
    from app import policy
    from app.sync.folder import FORMAT, write_once
    from tests.app.conftest import remember
    from tests.app.sync.fleet import make_fleet
    from tests.app.sync.test_engine import texts
    from tests.app.sync.test_engine_epochs import WORDS, _held, rounds
    from tests.app.sync.test_epochs import _hits

    secret = "Ana's biopsy results came back on Tuesday"
    fleet = make_fleet(tmp_path, monkeypatch, embedder, 3)
    a, b, c = fleet.members
    try:
        for m in fleet.members:
            m.vault.set_setting("sync.folder", str(m.folder))
        folder = a.folder
        base = folder / FORMAT
        a.sync().writer.write_root(1_764_150_000)  # what set-up and pairing write (the
        for cert in a.sync().trust.devices():      # fleet puts them in the vaults only)
            a.sync().writer.publish_certificate(cert)
        root = (folder / "kept-sync-root.v1").read_bytes()
        # b forges its own takeover before anyone is named: c refuses it.
        forged = take_over_record(b.secret, Successor(
            c.sync().trust.vault_id, 0, 1, b.secret.device_id, b.secret.device_id,
            b.secret.sign_public, 1, b""), c.sync().trust.devices(), c.sync().trust.revocations,
            0, 1)
        forged = dataclasses.replace(forged, successor=dataclasses.replace(
            forged.successor, founder=a.secret.device_id,
            signature=b.secret.sign(canon(dataclasses.replace(
                forged.successor, founder=a.secret.device_id).body()))))
        forged = dataclasses.replace(forged, signature=b.secret.sign(canon(forged.body())))
        planted = base / "founders" / b.secret.device_id / "00000001"
        write_once(planted, forged.to_bytes())
        c.tick()
        assert c.sync().trust.founder_id == a.secret.device_id
        planted.rename(tmp_path / "removed")  # the person deletes it (it blocks b's name)
        # The founder names b; everyone learns it from the folder.
        a.sync().appoint(b.secret.device_id)
        remember(a.vault, "Sam moved to Lisbon in March")
        remember(c.vault, secret)
        remember(c.vault, "Sam likes green tea")
        rounds(fleet.members)
        assert c.sync().trust.successor.device_id == b.secret.device_id  # type: ignore[union-attr]
        assert secret in texts(b.vault)
        # a is lost: it never ticks again. b, as the person says so, takes over.
        rotation = b.sync().take_over()
        assert sorted(rotation.sealed_for) == sorted([b.secret.device_id, c.secret.device_id])
        assert (base / "founders" / b.secret.device_id / "00000001").is_file()
        assert (folder / "kept-sync-root.v1").read_bytes() == root  # never rewritten
        rounds([b, c], 2, advance=policy.SYNC_ACK_EVERY_S + 1)
        assert c.sync().trust.founder_id == b.secret.device_id
        assert c.sync().trust.successor.device_id == c.secret.device_id  # type: ignore[union-attr]
        assert a.secret.device_id in {r.device_id for r in c.sync().trust.revocations.revoked}
        assert max(_held(c)) == rotation.epoch
        # A forget on c, then a rotation without a: every key b and c hold opens nothing of it.
        (mid,) = [m.id for m in c.vault.recall("biopsy results") if m.text == secret]
        c.vault.forget(c.vault.forget_plan(ids=[mid]))
        rounds([b, c], 2, advance=policy.SYNC_ACK_EVERY_S + 1)
        assert secret not in texts(b.vault)
        every = {e: k for m in (b, c) for e, k in _held(m).items()}
        assert _hits(folder, b.sync().trust, every, WORDS) >= 1  # the check can fail
        for m in (b, c):
            m.clock.advance(policy.SYNC_ROTATION_SLOT_S)
        reports = rounds([b, c], 3, advance=policy.SYNC_ACK_EVERY_S + 1)
        assert [r.rotated for r in reports if r.rotated] == [rotation.epoch + 1]
        assert set(_held(b)) == set(_held(c)) == {rotation.epoch + 1}
        every = {e: k for m in (b, c) for e, k in _held(m).items()}
        assert _hits(folder, b.sync().trust, every, WORDS) == 0
        assert _hits(folder, b.sync().trust, every, "green tea") >= 1
        assert b.hash() == c.hash()
        # The lost device, its key stolen, after its revocation: a takeover of the next
        # generation, a certificate and a key of its own; c takes none of it.
        e = DeviceSecret.generate()
        grab = name_successor(a.secret, c.sync().trust.vault_id, 1, 1,
                              issue_certificate(a.secret, c.sync().trust.vault_id,
                                                e.sign_public, e.box_public, "x", 1), 1)
        back = take_over_record(e, grab, [], c.sync().trust.revocations, 0, 2)
        write_once(base / "founders" / e.device_id / "00000002", back.to_bytes())
        write_once(base / "certs" / a.secret.device_id / e.device_id, issue_certificate(
            a.secret, c.sync().trust.vault_id, e.sign_public, e.box_public, "x", 1).to_bytes())
        # ... and a record signed by nobody.
        write_once(base / "founders" / c.secret.device_id / "00000002",
                   dataclasses.replace(back, signature=bytes(64)).to_bytes())
        c.restart()
        c.tick()
        assert c.sync().trust.founder_id == b.secret.device_id
        assert e.device_id not in {d.device_id for d in c.sync().trust.devices()}
        # A new device pairs through b, the founder now.
        from app.clock import FixedClock
        from tests.app.conftest import PW
        from tests.conftest import new_vault
        d = new_vault(tmp_path / "vault-tablet", PW, threaded=False, use_chroma=False,
                      clock=FixedClock(b.clock.now() + 1))
        try:
            d.sync_join(folder, b.vault.sync_invite().value.code, "tablet")
            assert b.vault.sync_pair_step().value.state == "joined"
            assert d.sync_pair_step().value.state == "joined"
            from app.sync.engine import SyncEngine
            ed = SyncEngine(d, folder)
            for _ in range(3):
                b.tick()
                c.tick()
                ed.tick()
            assert "Sam likes green tea" in texts(d) and secret not in texts(d)
            assert ed.state_hash() == b.hash()
            status = d.sync_status()
            assert [x.name for x in status.devices if x.founder] == ["desktop"]
            assert {x.name for x in status.devices if x.revoked} == {"laptop"}
        finally:
            d.lock()
    finally:
        fleet.close()


def test_pairing_names_the_first_device_and_removing_it_names_the_next(tmp_path: Path) -> None:
    from tests.conftest import new_vault
    shared = tmp_path / "Sync"
    shared.mkdir()
    pw = "succession vaults password"
    a, b, c = (new_vault(tmp_path / n, pw, load_model=False, use_chroma=False)
               for n in "abc")
    try:
        a.sync_set_up(shared, "laptop")
        assert not any(d.successor for d in a.sync_status().devices)
        for v, name in ((b, "desktop"), (c, "phone")):
            v.sync_join(shared, a.sync_invite().value.code, name)
            assert a.sync_pair_step().value.state == "joined"
            assert v.sync_pair_step().value.state == "joined"
        heirs = [d.name for d in a.sync_status().devices if d.successor]
        assert heirs == ["desktop"]  # the first to join; the second changes nothing
        assert b.sync_status().successor and not c.sync_status().successor
        # c cannot name itself, nor take over: it is not named.
        from app.errors import AppError
        with pytest.raises(AppError, match="Only the founder"):
            c.sync_name_successor(c.sync_status().device_id)
        with pytest.raises(AppError, match="named as its successor"):
            c.sync_take_over()
        # The founder names phone; then removes it: desktop is named again (version 3).
        phone = c.sync_status().device_id
        assert [d.name for d in a.sync_name_successor(phone).value.devices
                if d.successor] == ["phone"]
        st = a.sync_revoke(phone).value
        assert [d.name for d in st.devices if d.successor] == ["desktop"]
        files = sorted(p.name for p in (shared / "v1" / "successor").rglob("*") if p.is_file())
        assert files == ["00000001", "00000002", "00000003"]
    finally:
        for v in (a, b, c):
            v.lock()
