"""Unit tests of the key scheme (SECURITY.md "Recommended scheme") and of the AES-GCM file
format (requirement 9's "re-encrypt all AES-GCM files" relies on it).

Argon2id here is real; the tests that only need *a* KEK use tiny parameters through the
primitives directly, the vault-level tests live in the other modules.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
from dataclasses import replace
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

from app.errors import VaultCorrupt, WrongKey
from storage import crypto
from storage.crypto import (
    CHUNK,
    FILE_MAGIC,
    KdfParams,
    KeyFile,
    Keys,
    decrypt_file_bytes,
    encrypt_file_bytes,
)

# Tiny but valid Argon2id parameters (m >= 8*p) for tests of the wrapping logic only.
TINY = dict(m=64, t=1, p=4)


def tiny_params() -> KdfParams:
    return KdfParams(**TINY)


def _hkdf_sha256_reference(ikm: bytes, info: bytes, length: int = 32) -> bytes:
    """RFC 5869 with an empty salt, written against hmac only (independent of `cryptography`)."""
    prk = hmac.new(b"\x00" * 32, ikm, hashlib.sha256).digest()
    okm, block, counter = b"", b"", 1
    while len(okm) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        okm += block
        counter += 1
    return okm[:length]


# --- Argon2id ---------------------------------------------------------------------------------

def test_argon2id_primitive_matches_rfc9106_vector() -> None:
    """The library's Argon2id is v1.3 Argon2id (RFC 9106 section 5.3), not 2i/2d."""
    tag = Argon2id(salt=b"\x02" * 16, length=32, iterations=3, lanes=4, memory_cost=32,
                   ad=b"\x04" * 12, secret=b"\x03" * 8).derive(b"\x01" * 32)
    assert tag.hex() == "0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659"


def test_derive_kek_passes_parameters_through() -> None:
    params = KdfParams(m=256, t=2, p=4, salt=b"s" * 16)
    kek = crypto.derive_kek("pässword", params)
    expected = Argon2id(salt=b"s" * 16, length=32, iterations=2, lanes=4,
                        memory_cost=256).derive("pässword".encode())
    assert isinstance(kek, bytearray) and len(kek) == 32
    assert bytes(kek) == expected
    # Each parameter changes the result (none is silently ignored or swapped).
    variants = [replace(params, m=512), replace(params, t=3), replace(params, p=2),
                replace(params, salt=b"t" * 16)]
    outs = {bytes(crypto.derive_kek("pässword", v)) for v in variants}
    outs.add(bytes(crypto.derive_kek("password", params)))
    assert len(outs) == 5 and bytes(kek) not in outs


@pytest.mark.parametrize("bad", [
    dict(alg="argon2i"), dict(alg="pbkdf2"), dict(v=0x10), dict(salt=b"x" * 8),
    dict(salt=b"x" * 32), dict(m=31), dict(t=0), dict(p=0), dict(m=5 * 1024 * 1024),
    # Upper bounds (issue 11 item 3), refused before any derive:
    dict(t=13), dict(t=1_000_000), dict(p=17), dict(p=65_536, m=8 * 65_536),
    dict(m=524_288 + 1024), dict(m=4 * 1024 * 1024), dict(m=524_288, t=12),
    dict(t=True), dict(m=65_536.0),
])
def test_derive_kek_refuses_unexpected_parameters(bad: dict, monkeypatch: pytest.MonkeyPatch
                                                  ) -> None:
    """Refused before Argon2id runs: a t=1000000 derive would spin for hours."""
    def no_derive(**kwargs: object) -> None:
        raise AssertionError(f"Argon2id was started with {kwargs}")
    monkeypatch.setattr(crypto, "Argon2id", no_derive)
    with pytest.raises(WrongKey):
        crypto.derive_kek("pw", replace(KdfParams(**TINY), **bad))


@pytest.mark.parametrize("change", [
    dict(m="65536"), dict(m=65_536.0), dict(m=65_536.5), dict(t=3.0), dict(t=True),
    dict(p="4"), dict(v=19.0), dict(m=None), dict(salt=12), dict(alg=["argon2id"]),
    dict(t=1_000_000), dict(m=4 * 1024 * 1024), dict(p=65_536), dict(m=524_288, t=12),
])
def test_kdf_params_from_json_is_strict(change: dict) -> None:
    """Issue 11 item 3: integers must be JSON integers (a "65536" or 65536.0 used to be
    accepted as 65536) and within bounds, else the tampered-file error, at parse time."""
    obj = KdfParams(m=65_536).to_json() | change
    with pytest.raises(WrongKey) as info:
        KdfParams.from_json(json.loads(json.dumps(obj)))
    assert "tampered" in info.value.user_message
    assert KdfParams.from_json(KdfParams(m=65_536, t=12).to_json()).t == 12  # the maximum t


def test_kdf_params_defaults_and_json() -> None:
    a, b = KdfParams(), KdfParams()
    assert (a.m, a.t, a.p, a.alg, a.v) == (262_144, 3, 4, "argon2id", 0x13)
    assert len(a.salt) == 16 and a.salt != b.salt
    assert KdfParams.from_json(json.loads(json.dumps(a.to_json()))) == a
    canon = a.canonical()
    assert canon == json.dumps(json.loads(canon), sort_keys=True, separators=(",", ":")).encode()
    assert not KdfParams(m=65_536).below_floor
    assert KdfParams(m=65_535).below_floor
    assert KdfParams(t=2).below_floor
    assert KdfParams(p=2).below_floor


# --- HKDF sub-keys ----------------------------------------------------------------------------

def test_hkdf_subkeys_are_rfc5869_and_distinct() -> None:
    dek = bytearray(os.urandom(32))
    keys = Keys.from_dek(dek)
    assert bytes(keys.db_key) == _hkdf_sha256_reference(bytes(dek), b"kept/v1 sqlcipher")
    assert bytes(keys.file_key) == _hkdf_sha256_reference(bytes(dek), b"kept/v1 file-aead")
    assert len({bytes(keys.dek), bytes(keys.db_key), bytes(keys.file_key)}) == 3


def test_keys_wipe_zeroes_own_copies_only() -> None:
    dek = bytearray(os.urandom(32))
    original = bytes(dek)
    keys = Keys.from_dek(dek)
    keys.wipe()
    assert keys.dek == bytearray(32) and keys.db_key == bytearray(32)
    assert keys.file_key == bytearray(32)
    assert bytes(dek) == original
    crypto.wipe(dek)
    assert dek == bytearray(32)
    crypto.wipe(None)  # tolerated


# --- wrapping ---------------------------------------------------------------------------------

def test_new_key_file_wrap_format_and_aad() -> None:
    params = tiny_params()
    kf, dek = crypto.new_key_file("pw", params)
    assert len(dek) == 32
    assert re.fullmatch(r"[0-9a-f]{32}", kf.vault_id)
    assert kf.wrap["alg"] == "A256GCM"
    nonce, ct = base64.b64decode(kf.wrap["nonce"]), base64.b64decode(kf.wrap["ct"])
    assert len(nonce) == 12 and len(ct) == 32 + 16
    # Independently: the AAD is exactly b"kept/v1|dek|" + vault_id + canonical(kdf params).
    kek = crypto.derive_kek("pw", params)
    aad = b"kept/v1|dek|" + kf.vault_id.encode() + params.canonical()
    assert AESGCM(bytes(kek)).decrypt(nonce, ct, aad) == bytes(dek)
    assert bytes(crypto.unwrap(kf, "pw")) == bytes(dek)


def test_unwrap_wrong_password_and_tampering() -> None:
    kf, dek = crypto.new_key_file("pw", tiny_params())
    with pytest.raises(WrongKey):
        crypto.unwrap(kf, "pW")
    with pytest.raises(WrongKey):
        crypto.unwrap(replace(kf, vault_id="0" * 32), "pw")
    with pytest.raises(WrongKey):
        crypto.unwrap(replace(kf, wrap={**kf.wrap, "alg": "A128GCM"}), "pw")
    ct = bytearray(base64.b64decode(kf.wrap["ct"]))
    ct[0] ^= 1
    with pytest.raises(WrongKey):
        crypto.unwrap(replace(kf, wrap={**kf.wrap, "ct": base64.b64encode(ct).decode()}), "pw")
    with pytest.raises(WrongKey):
        crypto.unwrap(replace(kf, wrap={**kf.wrap, "nonce": "!!notbase64"}), "pw")
    with pytest.raises(WrongKey):
        crypto.unwrap(replace(kf, wrap={"alg": "A256GCM"}), "pw")
    # Parameters are bound: a different m with the same salt fails the tag.
    with pytest.raises(WrongKey):
        crypto.unwrap(replace(kf, kdf=replace(kf.kdf, m=128)), "pw")


def test_rewrap_keeps_dek_changes_salt_and_ciphertext() -> None:
    kf, dek = crypto.new_key_file("old", tiny_params())
    new_params = replace(tiny_params(), salt=os.urandom(16))
    kf2 = crypto.rewrap(kf, dek, "new", new_params)
    assert kf2.vault_id == kf.vault_id and kf2.kdf.salt != kf.kdf.salt
    assert kf2.wrap["ct"] != kf.wrap["ct"] and kf2.wrap["nonce"] != kf.wrap["nonce"]
    assert bytes(crypto.unwrap(kf2, "new")) == bytes(dek)
    with pytest.raises(WrongKey):
        crypto.unwrap(kf2, "old")


def test_recovery_code_wraps_same_dek() -> None:
    kf, dek = crypto.new_key_file("pw", tiny_params())
    kf2, code = crypto.add_recovery(kf, dek)
    assert re.fullmatch(r"([A-Z2-7]{4}-){7}[A-Z2-7]{4}", code)
    assert bytes(crypto.unwrap_recovery(kf2, code)) == bytes(dek)
    # Typing variations are accepted: lower case, no dashes, spaces.
    assert bytes(crypto.unwrap_recovery(kf2, code.lower().replace("-", " "))) == bytes(dek)
    other = crypto.new_recovery_code()
    assert other != code
    with pytest.raises(WrongKey):
        crypto.unwrap_recovery(kf2, other)
    with pytest.raises(WrongKey):
        crypto.unwrap_recovery(kf, code)  # no wrap_recovery at all
    # The recovery wrap is bound to the vault id.
    with pytest.raises(WrongKey):
        crypto.unwrap_recovery(replace(kf2, vault_id="f" * 32), code)


def test_pending_wrap_round_trip() -> None:
    kf, dek = crypto.new_key_file("pw", tiny_params())
    assert crypto.open_pending(kf, dek) is None
    new_dek = bytearray(os.urandom(32))
    kf2 = crypto.seal_pending(kf, dek, new_dek)
    assert bytes(crypto.open_pending(kf2, dek)) == bytes(new_dek)
    with pytest.raises(WrongKey):
        crypto.open_pending(kf2, new_dek)


def test_key_file_json_round_trip_and_rejections() -> None:
    kf, dek = crypto.new_key_file("pw", tiny_params())
    kf, _ = crypto.add_recovery(kf, dek)
    obj = json.loads(json.dumps(kf.to_json()))
    assert obj["format"] == 1 and "wrap_device" not in obj and "wrap_pending" not in obj
    assert set(obj["kdf"]) == {"alg", "v", "m", "t", "p", "salt"}
    assert KeyFile.from_json(obj) == kf
    with pytest.raises(VaultCorrupt):
        KeyFile.from_json({**obj, "format": 2})
    with pytest.raises(VaultCorrupt):
        KeyFile.from_json([1, 2])
    for missing in ("vault_id", "kdf", "wrap"):
        broken = {k: v for k, v in obj.items() if k != missing}
        with pytest.raises(WrongKey):
            KeyFile.from_json(broken)
    with pytest.raises(WrongKey):
        KeyFile.from_json({**obj, "kdf": {**obj["kdf"], "m": "lots"}})


# --- key file on disk -------------------------------------------------------------------------

def test_atomic_write_leaves_no_temp_and_is_private(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    crypto.atomic_write(target, b"one")
    crypto.atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]
    assert target.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_atomic_write_failure_keeps_old_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                failing: str) -> None:
    target = tmp_path / "f.json"
    crypto.atomic_write(target, b"old")

    def boom(*a: object, **k: object) -> None:
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(crypto.os, failing, boom)
    with pytest.raises(OSError):
        crypto.atomic_write(target, b"new")
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_write_key_file_keeps_previous_as_bak(tmp_path: Path) -> None:
    kf, dek = crypto.new_key_file("a", tiny_params())
    crypto.write_key_file(tmp_path, kf)
    assert not (tmp_path / "vault.key.json.bak").exists()
    first = (tmp_path / "vault.key.json").read_bytes()
    kf2 = crypto.rewrap(kf, dek, "b", replace(tiny_params(), salt=os.urandom(16)))
    crypto.write_key_file(tmp_path, kf2)
    assert (tmp_path / "vault.key.json.bak").read_bytes() == first
    assert crypto.read_key_file(tmp_path) == kf2
    # Leftovers of interrupted atomic writes (main and .bak) are retired with the backup.
    for name in (".vault.key.json.123.abcd.tmp", ".vault.key.json.bak.123.ef01.tmp"):
        (tmp_path / name).write_bytes(first)
    (tmp_path / "unrelated.tmp").write_bytes(b"keep")
    crypto.drop_backup(tmp_path)
    crypto.drop_backup(tmp_path)  # idempotent
    assert not (tmp_path / "vault.key.json.bak").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["unrelated.tmp", "vault.key.json"]


def test_read_key_file_falls_back_to_bak(tmp_path: Path) -> None:
    kf, dek = crypto.new_key_file("a", tiny_params())
    crypto.write_key_file(tmp_path, kf)
    kf2 = crypto.rewrap(kf, dek, "b", replace(tiny_params(), salt=os.urandom(16)))
    crypto.write_key_file(tmp_path, kf2)
    main = tmp_path / "vault.key.json"
    main.write_bytes(main.read_bytes()[:40])  # torn
    assert crypto.read_key_file(tmp_path) == kf
    main.write_bytes(b"\xff\xfe garbage")
    assert crypto.read_key_file(tmp_path) == kf
    main.unlink()
    assert crypto.read_key_file(tmp_path) == kf
    (tmp_path / "vault.key.json.bak").write_bytes(b"{")
    with pytest.raises(VaultCorrupt):
        crypto.read_key_file(tmp_path)
    (tmp_path / "vault.key.json.bak").unlink()
    with pytest.raises(VaultCorrupt):
        crypto.read_key_file(tmp_path)


# --- calibration (fake clock and derive) ------------------------------------------------------

class FakeMachine:
    """Argon2id cost proportional to m*t; ``base`` seconds at the default 256 MiB / t=3."""

    def __init__(self, base: float) -> None:
        self.base = base
        self.now = 0.0
        self.calls: list[KdfParams] = []

    def clock(self) -> float:
        return self.now

    def derive(self, password: str, params: KdfParams) -> bytearray:
        self.calls.append(params)
        self.now += self.base * (params.m / 262_144) * (params.t / 3)
        return bytearray(32)


def _calibrate(base: float, monkeypatch: pytest.MonkeyPatch, ram: int = 16 * 1024**3
               ) -> tuple[crypto.Calibration, FakeMachine]:
    """Calibration on a fake machine with ``ram`` bytes installed (all of it free)."""
    monkeypatch.delenv(crypto.MEMORY_ENV, raising=False)  # the suite's 64 MiB cap (conftest)
    monkeypatch.setattr(crypto, "installed_ram_bytes", lambda: ram, raising=False)
    monkeypatch.setattr(crypto, "free_ram_bytes", lambda: ram, raising=False)  # older code
    fake = FakeMachine(base)
    return crypto.calibrate(clock=fake.clock, derive=fake.derive), fake


@pytest.mark.parametrize("base", [0.05, 0.2, 0.3, 0.45, 0.6, 0.9, 1.0])
def test_calibrate_fast_machine_raises_t_keeps_m(base: float, monkeypatch: pytest.MonkeyPatch
                                                 ) -> None:
    cal, fake = _calibrate(base, monkeypatch)
    p = cal.params
    assert p.m == 262_144 and p.p == 4 and len(p.salt) == 16
    assert 3 <= p.t <= crypto.MAX_T
    assert cal.warning is None
    assert cal.seconds == pytest.approx(base * p.t / 3)
    if base * crypto.MAX_T / 3 >= 0.5:
        assert 0.5 <= cal.seconds <= 1.0 or (p.t == 3 and cal.seconds <= 1.0)
    else:
        assert p.t == crypto.MAX_T  # as strong as allowed, even if still fast
    assert all(c.p == 4 and c.m == 262_144 for c in fake.calls)


@pytest.mark.parametrize("base", [1.5, 2.0, 4.0, 7.0, 20.0])
def test_calibrate_slow_or_busy_machine_keeps_default_memory(base: float,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """Issue 11 item 10: under load (5-7 s for one derive) the old calibration halved m down
    to the 64 MiB floor. Timing now sets t only: m stays what the installed RAM allows."""
    cal, fake = _calibrate(base, monkeypatch)
    assert (cal.params.m, cal.params.t, cal.params.p) == (262_144, 3, 4)
    assert cal.warning is None
    assert {c.m for c in fake.calls} == {262_144}  # memory was never traded for time


@pytest.mark.parametrize("gib,expected_mib", [(64, 256), (16, 256), (4, 256), (3, 192), (2, 128),
                                              (1.5, 96), (1, 64), (0.5, 64)])
def test_calibrate_memory_comes_from_installed_ram(gib: float, expected_mib: int,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """256 MiB unless the machine is short: 1/16 of installed RAM below 4 GiB, never below
    the 64 MiB floor; the person is told when it is less than 256 MiB. The same on a fast
    and on a slow machine."""
    for base in (0.1, 9.0):
        cal, _ = _calibrate(base, monkeypatch, ram=int(gib * 1024**3))
        assert cal.params.m == expected_mib * 1024
        assert not cal.params.below_floor
        if expected_mib < 256:
            assert cal.warning and f"{expected_mib} MiB" in cal.warning
        else:
            assert cal.warning is None
    assert crypto.memory_for_ram(int(gib * 1024**3)) == expected_mib * 1024


def test_policy_params_are_the_default_not_the_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    """What weak parameters are upgraded to (issue 11 item 10: it used to be the floor)."""
    monkeypatch.delenv(crypto.MEMORY_ENV, raising=False)
    monkeypatch.setattr(crypto, "installed_ram_bytes", lambda: 16 * 1024**3, raising=False)
    p = crypto.policy_params()
    assert (p.m, p.t, p.p) == (262_144, 3, 4) and len(p.salt) == 16
    monkeypatch.setattr(crypto, "installed_ram_bytes", lambda: 2 * 1024**3)
    assert crypto.policy_params().m == 131_072


# --- AES-GCM files ----------------------------------------------------------------------------

def _chunks(blob: bytes) -> tuple[bytes, list[bytes]]:
    head = blob[:len(FILE_MAGIC) + 16]
    pos, out = len(head), []
    while pos < len(blob):
        size = int.from_bytes(blob[pos + 12:pos + 16], "big")
        out.append(blob[pos:pos + 16 + size])
        pos += 16 + size
    return head, out


@pytest.mark.parametrize("size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 17])
def test_file_aead_round_trip(size: int) -> None:
    key = os.urandom(32)
    data = os.urandom(size)
    blob = encrypt_file_bytes(key, data)
    assert blob.startswith(FILE_MAGIC)
    assert decrypt_file_bytes(key, blob) == data
    assert encrypt_file_bytes(key, data) != blob  # fresh file id and nonces
    _, chunks = _chunks(blob)
    assert len(chunks) == max(1, -(-size // CHUNK))
    if size >= 16:
        assert data[:16] not in blob


def test_file_aead_detects_truncation_reorder_and_wrong_key() -> None:
    key = os.urandom(32)
    data = os.urandom(3 * CHUNK + 100)
    blob = encrypt_file_bytes(key, data)
    head, chunks = _chunks(blob)
    assert len(chunks) == 4
    bad: list[bytes] = [
        head + b"".join(chunks[:3]),                                 # last chunk dropped
        head + b"".join(chunks[:1]),
        head,                                                        # no chunk at all
        head + chunks[0] + chunks[2] + chunks[1] + chunks[3],        # reordered
        head + chunks[1] + chunks[0] + chunks[2] + chunks[3],
        head + b"".join(chunks) + chunks[3],                         # last chunk repeated
        head + b"".join(chunks[:3]) + chunks[2],                     # duplicated in place of last
        FILE_MAGIC + os.urandom(16) + b"".join(chunks),              # other file id
        b"NOTKEPT!!" + blob[len(FILE_MAGIC):],                       # magic
    ]
    flipped = bytearray(blob)
    flipped[len(head) + 16 + 5] ^= 1
    bad.append(bytes(flipped))
    # Truncation at every byte around the chunk headers (nonce + length) and inside chunks.
    starts = [len(head) + sum(len(c) for c in chunks[:i]) for i in range(4)]
    cuts = {s + d for s in starts for d in range(0, 20)} | {len(blob) - 1, len(blob) - 16,
                                                              len(head) - 3, 5, 0}
    bad += [blob[:n] for n in sorted(cuts) if n < len(blob)]
    for b in bad:
        with pytest.raises(WrongKey):
            decrypt_file_bytes(key, b)
    with pytest.raises(WrongKey):
        decrypt_file_bytes(os.urandom(32), blob)
    # A chunk from another file under the same key does not fit either.
    _, other = _chunks(encrypt_file_bytes(key, os.urandom(3 * CHUNK + 100)))
    with pytest.raises(WrongKey):
        decrypt_file_bytes(key, head + chunks[0] + other[1] + chunks[2] + chunks[3])
