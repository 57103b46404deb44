"""Pairing a device through the sync folder (issue 29, item 5), and revoking one: two real
SQLCipher vaults over one temp folder, the real SPAKE2 (``spake2``), the real files."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.errors import ValidationError
from app.sync.devices import NotFounder, SyncNotSetUp
from app.sync.folder import FORMAT, FolderReader
from app.sync.keys import DeviceSecret, Revocations, Trust, issue_certificate, new_vault_id
from app.sync.pairing import Code, Inviter, Joiner, PairingFailed, WrongCode, session_dir
from app.sync.segments import Cursor
from storage import sync_keys
from tests.conftest import new_vault
from tests.inside import inside

PW = "pair test password"


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[Any, Any, Path]]:
    """A founder vault that set sync up in a shared folder, and a fresh vault beside it."""
    shared = tmp_path / "Sync"
    shared.mkdir()
    a = new_vault(tmp_path / "a", PW, load_model=False, threaded=False, use_chroma=False)
    b = new_vault(tmp_path / "b", PW, load_model=False, threaded=False, use_chroma=False)
    a.sync_set_up(shared, "laptop")
    yield a, b, shared
    a.lock()
    b.lock()


def _wrong(code: str) -> str:
    digits = code.replace("-", "")
    return digits[:4] + "".join(str((int(c) + 1) % 10) for c in digits[4:])


def _keys(vault: Any) -> dict[int, bytes]:
    return inside(vault).db.read(sync_keys.epoch_keys)  # type: ignore[no-any-return]


def test_the_right_code_joins_a_device_with_the_same_vault_id_trust_and_keys(two: Any) -> None:
    a, b, shared = two
    invite = a.sync_invite().value
    assert invite.qr_text.endswith(invite.code) and a.sync_status().pairing
    step = b.sync_join(shared, invite.code, "desktop").value
    assert step.state == "waiting" and not b.sync_status().set_up  # nothing kept before the answer
    assert a.sync_pair_step().value.state == "joined"
    done = b.sync_pair_step()
    assert done.value.state == "joined" and done.changes.settings
    sa, sb = a.sync_status(), b.sync_status()
    assert sa.vault_id == sb.vault_id and sa.founder and not sb.founder
    assert {(d.device_id, d.name, d.founder) for d in sa.devices} == \
        {(d.device_id, d.name, d.founder) for d in sb.devices}
    assert [d.name for d in sa.devices] == ["laptop", "desktop"]  # this device first
    assert [d.name for d in sb.devices if d.this_device] == ["desktop"]
    assert _keys(b) == _keys(a) and len(_keys(a)) == 1  # the sealed epoch key opened on b
    assert sb.folder == str(shared.resolve()) and sb.folder_found
    assert a.sync_pair_step().value.state == "closed"  # the session is over


def test_a_wrong_code_is_refused_cleanly_and_the_tries_run_out(two: Any) -> None:
    a, b, shared = two
    code = a.sync_invite().value.code
    devices_before = a.sync_status().devices
    for left in (2, 1):
        assert b.sync_join(shared, _wrong(code), "desktop").value.state == "waiting"
        founder = a.sync_pair_step().value
        assert (founder.state, founder.tries_left) == ("refused", left)
        joiner = b.sync_pair_step().value
        assert joiner.state == "refused" and f"{left} more" in joiner.message
        assert not b.sync_status().set_up and a.sync_status().devices == devices_before
    b.sync_join(shared, _wrong(code), "desktop")
    assert a.sync_pair_step().value.state == "closed"
    assert b.sync_pair_step().value.state == "closed"
    with pytest.raises(PairingFailed, match="closed"):  # even the right code, now
        b.sync_join(shared, code, "desktop")
    assert not b.sync_status().set_up and a.sync_status().devices == devices_before


def test_a_replayed_join_from_an_earlier_session_costs_a_try_and_admits_nobody(two: Any) -> None:
    a, b, shared = two
    first = a.sync_invite().value.code
    b.sync_join(shared, first, "desktop")
    assert a.sync_pair_step().value.state == "joined"
    founder = a.sync_status()
    old = session_dir(shared, founder.device_id, first[:4])
    second = a.sync_invite().value.code
    new = session_dir(shared, founder.device_id, second[:4])
    shutil.copy(old / "join-1", new / "join-1")  # the folder host replays a good answer
    step = a.sync_pair_step().value
    assert step.state == "refused" and a.sync_status().devices == founder.devices
    assert (new / "refused-1").exists() and (new / "offer-2").exists()


def test_a_replayed_welcome_is_not_trusted(tmp_path: Path) -> None:
    founder, vault_id = DeviceSecret.generate(), new_vault_id()
    from app.sync.folder import FolderWriter
    FolderWriter(tmp_path, founder, vault_id, Cursor(founder.device_id)).write_root(1)

    def admit(sign: bytes, box: bytes, name: str) -> Any:
        return issue_certificate(founder, vault_id, sign, box, name, 1)
    one = Inviter(tmp_path, founder, vault_id, 0.0)
    Joiner(tmp_path, one.code, "desktop", 0.0)
    assert one.poll(1.0, admit) is not None
    two = Inviter(tmp_path, founder, vault_id, 0.0)
    joiner = Joiner(tmp_path, two.code, "phone", 0.0)
    shutil.copy(one.dir / "welcome-1", two.dir / "welcome-1")
    with pytest.raises(PairingFailed, match="does not open"):
        joiner.poll()


def test_an_expired_offer_is_refused_on_both_sides(tmp_path: Path) -> None:
    founder, vault_id = DeviceSecret.generate(), new_vault_id()
    from app.sync.folder import FolderWriter
    FolderWriter(tmp_path, founder, vault_id, Cursor(founder.device_id)).write_root(1)
    inv = Inviter(tmp_path, founder, vault_id, 0.0, minutes=1)
    with pytest.raises(PairingFailed, match="expired"):
        Joiner(tmp_path, inv.code, "phone", 61.0)
    with pytest.raises(PairingFailed, match="expired"):
        inv.poll(61.0, lambda *a: pytest.fail("admitted"))


def test_codes_parse_as_typed_and_refuse_anything_else() -> None:
    assert Code.parse(" 1234 5678-9012 ") == Code("1234", "56789012")
    assert Code.parse("kept-pair:v1:" + "ab" * 16 + ":1234-5678-9012").shown() == "1234-5678-9012"
    for bad in ("1234-5678", "1234-5678-901x", "١٢٣٤٥٦٧٨٩٠١٢", ""):
        with pytest.raises(ValidationError, match="12 digits"):
            Code.parse(bad)
    with pytest.raises(WrongCode) as e:
        raise WrongCode(0)
    assert "No tries are left" in e.value.user_message


def test_revoke_publishes_a_new_list_and_only_the_founder_may(two: Any) -> None:
    a, b, shared = two
    b.sync_join(shared, a.sync_invite().value.code, "desktop")
    a.sync_pair_step()
    b.sync_pair_step()
    other = next(d for d in a.sync_status().devices if not d.this_device)
    with pytest.raises(NotFounder):
        b.sync_revoke(a.sync_status().device_id)
    with pytest.raises(ValidationError, match="cannot remove itself"):
        a.sync_revoke(a.sync_status().device_id)
    with pytest.raises(ValidationError, match="No device"):
        a.sync_revoke("0" * 32)
    status = a.sync_revoke(other.device_id).value
    assert [d.revoked for d in status.devices] == [False, True]
    with pytest.raises(ValidationError, match="already removed"):
        a.sync_revoke(other.device_id)
    # What the folder now says, read as any device reads it: the founder's signed list.
    trust = Trust(status.vault_id, bytes.fromhex(_founder_key(a)))
    FolderReader(shared, "x" * 32, trust, {}, {}).load_trust()
    assert trust.revocations.version == 1 and trust.revocations.of(other.device_id) is not None
    raw = inside(a).db.read(sync_keys.revocations)
    assert Revocations.from_bytes(raw).of(other.device_id) is not None
    with pytest.raises(NotFounder):  # a device that did not set sync up cannot pair either
        b.sync_invite()


def _founder_key(vault: Any) -> str:
    me = inside(vault).db.read(sync_keys.get_self)
    return str(me[4].hex())


def test_set_up_refuses_twice_a_taken_folder_and_no_folder(two: Any, tmp_path: Path) -> None:
    a, b, shared = two
    with pytest.raises(ValidationError, match="already syncs"):
        a.sync_set_up(shared, "again")
    with pytest.raises(ValidationError, match="another device"):
        b.sync_set_up(shared, "desktop")
    with pytest.raises(ValidationError, match="No folder"):
        b.sync_set_up(tmp_path / "nowhere", "desktop")
    assert not b.sync_status().set_up
    with pytest.raises(SyncNotSetUp):
        b.sync_invite()
    assert sorted(p.name for p in (shared / FORMAT).iterdir()) == ["certs"]


def test_a_joiner_stops_waiting_once_the_offer_expired_unanswered(tmp_path: Path) -> None:
    founder, vault_id = DeviceSecret.generate(), new_vault_id()
    from app.sync.folder import FolderWriter
    FolderWriter(tmp_path, founder, vault_id, Cursor(founder.device_id)).write_root(1)
    inv = Inviter(tmp_path, founder, vault_id, 0.0, minutes=1)
    joiner = Joiner(tmp_path, inv.code, "phone", 10.0)
    assert joiner.poll(30.0) is None  # the founder has not looked yet
    with pytest.raises(PairingFailed, match="No answer came"):
        joiner.poll(60.0 + 61.0)
