"""Key scheme of docs/security.md#the-key-scheme. Layer: storage. Runs on: any worker thread.

master password -> Argon2id -> KEK (never stored)
DEK = 32 random bytes, wrapped with AES-256-GCM under the KEK; the AAD binds the vault id and
the KDF parameters, so weakening them in the key file makes unwrap fail instead of deriving a
weaker key. SQLCipher gets HKDF(DEK, "kept/v1 sqlcipher") as a raw key; files get
HKDF(DEK, "kept/v1 file-aead").

The key file (``vault.key.json``) holds no secret. It is written atomically (temp file, fsync,
``os.replace``, fsync of the folder) and the previous version is kept as ``.bak`` until the next
successful unlock.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from app.errors import KeyUnavailable, StorageFull, ValidationError, VaultCorrupt, WrongKey
from app.kdf import KDF_GATE

if TYPE_CHECKING:
    from keyring.backend import KeyringBackend

log = logging.getLogger(__name__)

KEY_FILE = "vault.key.json"
FORMAT = 1
ARGON2_VERSION = 0x13

# docs/security.md#argon2id-parameters: default 256 MiB / t=3 / p=4; floor 64 MiB / 3 / 4
# (Bitwarden).
DEFAULT_M_KIB = 262_144
DEFAULT_T = 3
LANES = 4
FLOOR_M_KIB = 65_536
FLOOR_T = 3
# Calibrate t so one derive takes at least 0.5 s (KeePassXC's approach; each step aims just
# past it, so a derive ends up at about 0.5-1.0 s); m comes from installed RAM.
TARGET_MIN_S = 0.5
MAX_T = 12
# The default memory needs this much installed RAM (1/16 of it); below, 1/16 of RAM, never
# below the floor.
RAM_PER_M = 16
# Upper bounds on what a key file may ask for, checked before any derive: a file edited to
# t = 1000000 made every unlock spin for hours, m = 4 GiB took a minute and 4 GiB, p = 65536
# 45 s. Kept writes at most 256 MiB, t = 12, p = 4; the bounds leave room for a later default
# and cap the worst derive at the cost of 256 MiB x 12 passes (4x the default).
MAX_M_KIB = 2 * DEFAULT_M_KIB
MAX_P = 4 * LANES
MAX_COST = DEFAULT_M_KIB * MAX_T

INFO_DB = b"kept/v1 sqlcipher"
INFO_FILES = b"kept/v1 file-aead"
AAD_DEK = b"kept/v1|dek|"
AAD_RECOVERY = b"kept/v1|dek-recovery|"
AAD_DEVICE = b"kept/v1|dek-device|"
AAD_PENDING = b"kept/v1|dek-pending|"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


@dataclass(frozen=True, slots=True)
class KdfParams:
    m: int = DEFAULT_M_KIB
    t: int = DEFAULT_T
    p: int = LANES
    salt: bytes = field(default_factory=lambda: os.urandom(16))
    alg: str = "argon2id"
    v: int = ARGON2_VERSION

    def to_json(self) -> dict[str, Any]:
        return {"alg": self.alg, "v": self.v, "m": self.m, "t": self.t, "p": self.p,
                "salt": _b64(self.salt)}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> KdfParams:
        """Strict: integers must be JSON integers (not 65536.5, "65536" or true) and every
        value within bounds, else ``WrongKey`` (the tampered-file message), before any
        derive."""
        if not isinstance(obj, dict):
            raise WrongKey()
        ints = [obj.get(k) for k in ("m", "t", "p", "v")]
        if any(type(x) is not int for x in ints) or not isinstance(obj.get("salt"), str) \
                or not isinstance(obj.get("alg"), str):
            raise WrongKey()
        params = cls(m=obj["m"], t=obj["t"], p=obj["p"], salt=_unb64(obj["salt"]),
                     alg=obj["alg"], v=obj["v"])
        if not params.within_bounds:
            raise WrongKey()
        return params

    def canonical(self) -> bytes:
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":")).encode()

    def weaker_than(self, policy: KdfParams) -> bool:
        """Less memory or fewer passes than ``policy`` (or other lanes): upgrade at unlock."""
        return self.m < policy.m or self.t < policy.t or self.p != LANES

    @property
    def below_floor(self) -> bool:
        return self.m < FLOOR_M_KIB or self.t < FLOOR_T or self.p != LANES

    @property
    def within_bounds(self) -> bool:
        """What the key scheme records and a derive may cost (see MAX_M_KIB). The lower
        bounds are Argon2id's own: weaker values are caught by the GCM tag, cheaply."""
        if any(type(x) is not int for x in (self.m, self.t, self.p, self.v)):
            return False
        return (self.alg == "argon2id" and self.v == ARGON2_VERSION and len(self.salt) == 16
                and 1 <= self.p <= MAX_P and 1 <= self.t <= MAX_T
                and 8 * self.p <= self.m <= MAX_M_KIB and self.m * self.t <= MAX_COST)




def derive_kek(password: str, params: KdfParams) -> bytearray:
    """Argon2id v1.3. Refuses anything that is not what the key scheme records, or that would
    cost more than the bounds allow, before deriving. One derive at a time per process
    (``KDF_GATE``)."""
    if not params.within_bounds:
        raise WrongKey()
    with KDF_GATE.turn():
        kdf = Argon2id(salt=params.salt, length=32, iterations=params.t, lanes=params.p,
                       memory_cost=params.m)
        kek = bytearray(32)
        kdf.derive_into(password.encode("utf-8"), kek)  # into our buffer: no immutable copy
    return kek


def hkdf(dek: bytes | bytearray, info: bytes) -> bytearray:
    out = bytearray(32)
    HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive_into(dek, out)
    return out


def random_key() -> bytearray:
    """32 random bytes read straight into a bytearray (``os.urandom`` would leave an
    immutable copy of the key behind); ``os.urandom`` where ``os.readv`` is missing."""
    buf = bytearray(32)
    if hasattr(os, "readv"):
        fd = os.open("/dev/urandom", os.O_RDONLY)
        try:
            if os.readv(fd, [buf]) == 32:
                return buf
        finally:
            os.close(fd)
    buf[:] = os.urandom(32)
    return buf


def wipe(buf: bytearray | None) -> None:
    """Best effort: overwrite a key buffer in place (Python cannot wipe immutable copies)."""
    if buf is not None:
        for i in range(len(buf)):
            buf[i] = 0


def installed_ram_bytes() -> int:
    try:
        import psutil
        return int(psutil.virtual_memory().total)
    except Exception:  # psutil missing or unsupported OS: assume plenty
        return 1 << 40


# A machine short of RAM (or a test suite, which unlocks hundreds of vaults) may ask for less
# memory than the default, never less than the floor: KEPT_KDF_MEMORY_KIB=65536.
MEMORY_ENV = "KEPT_KDF_MEMORY_KIB"


def memory_for_ram(total: int) -> int:
    """Argon2id memory (KiB) for a machine with ``total`` bytes installed: the default 256 MiB
    from 4 GiB up, else 1/16 of RAM in whole MiB, never below the 64 MiB floor; lowered (not
    below the floor) by ``KEPT_KDF_MEMORY_KIB``."""
    m = max(FLOOR_M_KIB, min(DEFAULT_M_KIB, total // RAM_PER_M // 1024**2 * 1024))
    cap = os.environ.get(MEMORY_ENV, "")
    if cap.isdigit():
        m = max(FLOOR_M_KIB, min(m, int(cap)))
    return m


@dataclass(frozen=True, slots=True)
class Calibration:
    params: KdfParams
    seconds: float
    warning: str | None = None


def calibrate(clock: Callable[[], float] = time.perf_counter,
              derive: Callable[[str, KdfParams], bytearray] = derive_kek) -> Calibration:
    """Memory from installed RAM (``memory_for_ram``), never from a timing: on a busy machine
    the old "halve m until fast" picked the 64 MiB floor with a 5-7 s derive. Timing sets t
    only, raised from 3 until one derive takes 0.5-1.0 s, never lowered."""
    total = installed_ram_bytes()
    m, t = memory_for_ram(total), DEFAULT_T
    warning = None
    if m < DEFAULT_M_KIB:
        warning = (f"This computer has {total / 1024**3:.1f} GiB of memory, so the password "
                   f"protection uses {m // 1024} MiB instead of the usual "
                   f"{DEFAULT_M_KIB // 1024} MiB.")

    def measure(m: int, t: int) -> float:
        start = clock()
        wipe(derive("calibration", KdfParams(m=m, t=t)))
        return clock() - start

    elapsed = measure(m, t)
    while elapsed < TARGET_MIN_S and t < MAX_T:
        t_new = min(MAX_T, max(t + 1, int(t * TARGET_MIN_S / max(elapsed, 1e-3)) + 1))
        elapsed = elapsed * t_new / t
        t = t_new
    if t != DEFAULT_T:
        elapsed = measure(m, t)
    return Calibration(KdfParams(m=m, t=t), elapsed, warning)


def policy_params() -> KdfParams:
    """What weaker stored parameters are raised to after unlock (and a password change asking
    for less gets): the default for this machine's RAM, t = 3, p = 4; not the floor. A vault
    that a busy machine's old calibration left at 64 MiB is upgraded to 256 MiB."""
    return KdfParams(m=memory_for_ram(installed_ram_bytes()), t=DEFAULT_T, p=LANES)


def _seal(key: bytes | bytearray, plaintext: bytes | bytearray, aad: bytes) -> dict[str, str]:
    nonce = os.urandom(12)
    ct = AESGCM(key).encrypt(nonce, plaintext, aad)  # buffers as they are: no key copies
    return {"alg": "A256GCM", "nonce": _b64(nonce), "ct": _b64(ct)}


def _open(key: bytes | bytearray, box: dict[str, Any], aad: bytes) -> bytearray:
    try:
        if box.get("alg") != "A256GCM":
            raise WrongKey()
        ct = _unb64(box["ct"])
        if len(ct) < 16:
            raise WrongKey()
        out = bytearray(len(ct) - 16)
        AESGCM(key).decrypt_into(_unb64(box["nonce"]), ct, aad, out)  # no immutable copy
        return out
    except (InvalidTag, KeyError, ValueError, TypeError) as exc:
        raise WrongKey() from exc


def new_recovery_code() -> str:
    """About 128 random bits as 8 groups of 4 base32 characters, easy to print and type."""
    raw = base64.b32encode(secrets.token_bytes(20)).decode("ascii")[:32]
    return "-".join(raw[i:i + 4] for i in range(0, 32, 4))


def normalise_recovery_code(code: str) -> str:
    """The code as made by ``new_recovery_code``, however it was typed: any case, dashes,
    spaces or none, a zero for the letter O (base32 has no 0). Anything that cannot be a
    code is refused before any key is derived, with a message that says what a code is."""
    normal = "".join(code.split()).replace("-", "").upper().replace("0", "O")
    if len(normal) != 32 or not set(normal) <= _B32:
        raise ValidationError("That is not a recovery code: it is 8 groups of 4 letters and "
                              "digits (2-7), like ABCD-EFGH-... Nothing was changed.")
    return normal


_B32 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")


def _recovery_key(code: str, vault_id: str) -> bytearray:
    # The code carries ~160 bits of entropy, so a fast KDF is enough; HKDF binds it to the vault.
    normal = normalise_recovery_code(code).encode("ascii")
    return bytearray(HKDF(algorithm=hashes.SHA256(), length=32, salt=vault_id.encode(),
                          info=b"kept/v1 recovery").derive(normal))


def _box(value: Any) -> Any:
    """A wrap as the key file must hold it ({alg: A256GCM, nonce, ct} as base64 text), or
    None when absent; anything else is ``WrongKey`` (tampered) at read time, before a derive.
    Whether a wrap is authentic only its GCM tag can tell: see ``check_pending``."""
    if value is None:
        return None
    if (not isinstance(value, dict) or value.get("alg") != "A256GCM"
            or not all(isinstance(value.get(k), str) for k in ("nonce", "ct"))):
        raise WrongKey()
    return dict(value)


@dataclass(frozen=True, slots=True)
class KeyFile:
    vault_id: str
    kdf: KdfParams
    wrap: dict[str, str]
    wrap_recovery: dict[str, str] | None = None
    wrap_device: dict[str, str] | None = None
    # A rotated DEK, written before the database is rekeyed, so a crash mid-rotation loses nothing.
    wrap_pending: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        obj: dict[str, Any] = {"format": FORMAT, "vault_id": self.vault_id,
                               "kdf": self.kdf.to_json(), "wrap": self.wrap}
        for name in ("wrap_recovery", "wrap_device", "wrap_pending"):
            if getattr(self, name) is not None:
                obj[name] = getattr(self, name)
        return obj

    @classmethod
    def from_json(cls, obj: Any) -> KeyFile:
        if not isinstance(obj, dict) or obj.get("format") != FORMAT:
            raise VaultCorrupt("The key file is not one this version of Kept understands.")
        try:
            if not isinstance(obj["vault_id"], str):
                raise WrongKey()
            return cls(vault_id=obj["vault_id"], kdf=KdfParams.from_json(obj["kdf"]),
                       wrap=_box(obj["wrap"]), wrap_recovery=_box(obj.get("wrap_recovery")),
                       wrap_device=_box(obj.get("wrap_device")),
                       wrap_pending=_box(obj.get("wrap_pending")))
        except (KeyError, TypeError, ValueError) as exc:
            raise WrongKey() from exc

    def aad(self) -> bytes:
        return AAD_DEK + self.vault_id.encode() + self.kdf.canonical()


def fsync_dir(path: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Temp file in the same folder, fsync, ``os.replace``, fsync the folder."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        raise
    try:
        fsync_dir(path.parent)
    except OSError:
        # The new file is in place (its bytes were fsynced); only the rename's durability is
        # unsure. Raising now would tell the caller "not changed" about a change that took
        # effect; after a power loss either version is there, and each one opens.
        log.warning("could not fsync the folder after replacing %s", path.name)


def read_key_file(folder: Path) -> KeyFile:
    """The key file, or its ``.bak`` when the main copy is unreadable (torn by a crash)."""
    main = folder / KEY_FILE
    bak = folder / (KEY_FILE + ".bak")
    for candidate in (main, bak):
        try:
            return KeyFile.from_json(json.loads(candidate.read_text("utf-8")))
        except FileNotFoundError:
            continue
        except (ValueError, UnicodeDecodeError):
            log.warning("key file %s unreadable, trying backup", candidate.name)
            continue
    if not main.exists() and not bak.exists():
        raise VaultCorrupt("The vault's key file is missing; the vault cannot be opened.")
    raise VaultCorrupt("The vault's key file is damaged and has no usable backup.")


def write_key_file(folder: Path, kf: KeyFile) -> None:
    """Backup first, then the new copy, each atomically. A failure (disk full, I/O error)
    leaves the previous key file in place and raises ``StorageFull``."""
    main = folder / KEY_FILE
    data = json.dumps(kf.to_json(), indent=2, sort_keys=True).encode() + b"\n"
    try:
        if main.exists():
            atomic_write(folder / (KEY_FILE + ".bak"), main.read_bytes())
        atomic_write(main, data)
    except OSError as exc:
        log.warning("key file write failed: %s", type(exc).__name__)
        raise StorageFull("Could not write the vault's key file (the disk is full or "
                          "failing); the change was not made and the vault opens as before.",
                          hint="Free some space and try again.") from exc


def restore_main_key_file(folder: Path, kf: KeyFile) -> bool:
    """After an unlock that had to use the ``.bak`` copy, put ``kf`` back as the main key
    file, so that retiring the backup never leaves only the damaged copy. True if it had to."""
    main = folder / KEY_FILE
    try:
        if KeyFile.from_json(json.loads(main.read_text("utf-8"))) == kf:
            return False
    except (OSError, ValueError, UnicodeDecodeError, VaultCorrupt, WrongKey):
        pass
    log.warning("restoring the key file from its backup")
    atomic_write(main, json.dumps(kf.to_json(), indent=2, sort_keys=True).encode() + b"\n")
    return True


def drop_backup(folder: Path) -> None:
    try:
        (folder / (KEY_FILE + ".bak")).unlink()
    except FileNotFoundError:
        pass
    # Temp files of a key-file write cut short by a crash may hold an old wrap: they go too.
    for stale in folder.glob(f".{KEY_FILE}*.tmp"):
        try:
            stale.unlink()
        except FileNotFoundError:
            pass


@dataclass(slots=True)
class Keys:
    """The unwrapped data key and its sub-keys. Owner: the unlocked vault; wiped on lock."""

    dek: bytearray
    db_key: bytearray
    file_key: bytearray

    @classmethod
    def from_dek(cls, dek: bytearray) -> Keys:
        """Takes its own copy of ``dek``: wiping these keys never touches the caller's buffer."""
        return cls(dek=bytearray(dek), db_key=hkdf(dek, INFO_DB), file_key=hkdf(dek, INFO_FILES))

    def wipe(self) -> None:
        wipe(self.dek)
        wipe(self.db_key)
        wipe(self.file_key)


def check_new_params(params: KdfParams) -> None:
    """Never write what unlock would refuse (``ValidationError``, an input error)."""
    if not params.within_bounds:
        raise ValidationError(f"Argon2id parameters out of range (at most t={MAX_T}, "
                              f"m={MAX_M_KIB // 1024} MiB, p={MAX_P}); no vault was made.")


def new_key_file(password: str, params: KdfParams) -> tuple[KeyFile, bytearray]:
    check_new_params(params)
    vault_id = secrets.token_hex(16)
    dek = random_key()
    kek = derive_kek(password, params)
    try:
        kf = KeyFile(vault_id=vault_id, kdf=params, wrap={})
        kf = replace(kf, wrap=_seal(kek, dek, kf.aad()))
    finally:
        wipe(kek)
    return kf, dek


def unwrap(kf: KeyFile, password: str) -> bytearray:
    kek = derive_kek(password, kf.kdf)
    try:
        return _open(kek, kf.wrap, kf.aad())
    finally:
        wipe(kek)


def rewrap(kf: KeyFile, dek: bytearray, password: str, params: KdfParams) -> KeyFile:
    """Password change: a new salt and KEK around the same DEK. O(1); database untouched."""
    kek = derive_kek(password, params)
    try:
        new = replace(kf, kdf=params, wrap={})
        return replace(new, wrap=_seal(kek, dek, new.aad()))
    finally:
        wipe(kek)


def add_recovery(kf: KeyFile, dek: bytearray) -> tuple[KeyFile, str]:
    code = new_recovery_code()
    return seal_recovery(kf, dek, code), code


def seal_recovery(kf: KeyFile, dek: bytearray, code: str) -> KeyFile:
    """``kf`` with ``dek`` wrapped under an existing ``code`` (after a reset that finished an
    interrupted rotation, so the code on paper keeps opening the vault)."""
    rk = _recovery_key(code, kf.vault_id)
    try:
        return replace(kf, wrap_recovery=_seal(rk, dek, AAD_RECOVERY + kf.vault_id.encode()))
    finally:
        wipe(rk)


def unwrap_recovery(kf: KeyFile, code: str) -> bytearray:
    if kf.wrap_recovery is None:
        raise WrongKey("This vault has no recovery code. Nothing was changed.")
    rk = _recovery_key(code, kf.vault_id)
    try:
        return _open(rk, kf.wrap_recovery, AAD_RECOVERY + kf.vault_id.encode())
    except WrongKey as exc:
        raise WrongKey("Wrong recovery code, or the key file was tampered with. Nothing was "
                       "changed.") from exc
    finally:
        wipe(rk)


def seal_pending(kf: KeyFile, old_dek: bytearray, new_dek: bytearray) -> KeyFile:
    """Record the next DEK, wrapped under the current one, before rekeying the database."""
    key = hkdf(old_dek, b"kept/v1 pending")
    try:
        return replace(kf, wrap_pending=_seal(key, new_dek, AAD_PENDING + kf.vault_id.encode()))
    finally:
        wipe(key)


def check_pending(kf: KeyFile, dek: bytearray) -> None:
    """A ``wrap_pending`` must open under the DEK it was sealed with (the one the password,
    recovery code or device key just gave), or the key file was tampered with: ``WrongKey``.
    Never "repaired" by dropping it; an authentic one finishes an interrupted rotation."""
    wipe(open_pending(kf, dek))


def open_pending(kf: KeyFile, old_dek: bytearray) -> bytearray | None:
    if kf.wrap_pending is None:
        return None
    key = hkdf(old_dek, b"kept/v1 pending")
    try:
        return _open(key, kf.wrap_pending, AAD_PENDING + kf.vault_id.encode())
    finally:
        wipe(key)


# --- "Remember on this device" (optional, off by default) ------------------------------------

KEYRING_SERVICE = "app.kept.vault"
ALLOWED_BACKENDS = frozenset({
    "keyring.backends.macOS.Keyring",
    "keyring.backends.Windows.WinVaultKeyring",
    "keyring.backends.SecretService.Keyring",
    "keyring.backends.kwallet.DBusKeyring",
})


# This platform's OS keychains, in order. ``keyring``'s own detection imports every backend it
# knows, and its macOS backend calls ``ctypes.util.find_library`` at import, which on Linux
# runs ``ldconfig`` and ``gcc`` (measured: three of each, with temp files, on every start of
# the window). Kept names its candidates instead.
PLATFORM_BACKENDS: dict[str, tuple[tuple[str, str], ...]] = {
    "darwin": (("keyring.backends.macOS", "Keyring"),),
    "win32": (("keyring.backends.Windows", "WinVaultKeyring"),),
    "linux": (("keyring.backends.SecretService", "Keyring"),
              ("keyring.backends.kwallet", "DBusKeyring")),
}


def _backend_name(kr: object) -> str:
    cls = type(kr)
    return f"{cls.__module__}.{cls.__qualname__}"


def keychain() -> KeyringBackend:
    """The keyring backend Kept uses, chosen once: one already set in this process (the tests'
    in-memory backend), else ``PYTHON_KEYRING_BACKEND``, else the first of this platform's
    keychains that says it works (``priority`` > 0), else ``keyring``'s fail backend. Never
    ``keyring``'s import-everything detection."""
    import importlib
    import sys

    import keyring
    import keyring.core
    from keyring.backends import fail
    current: KeyringBackend | None = getattr(keyring.core, "_keyring_backend", None)
    if current is not None:
        return current
    chosen: KeyringBackend | None = keyring.core.load_env()
    if chosen is None:
        platform = "linux" if sys.platform.startswith(("linux", "freebsd")) else sys.platform
        for module, cls_name in PLATFORM_BACKENDS.get(platform, ()):
            try:
                cls = getattr(importlib.import_module(module), cls_name)
                if cls.priority > 0:
                    chosen = cls()
                    break
            except Exception:  # not installed, no D-Bus, no daemon: try the next one
                log.info("keychain %s.%s unavailable", module, cls_name)
    if chosen is None:
        chosen = fail.Keyring()  # type: ignore[no-untyped-call]
    keyring.set_keyring(chosen)
    return chosen


def keyring_available() -> bool:
    """True only for an allowlisted, real OS keychain (never keyrings.alt, never the fail
    backend)."""
    try:
        from keyring.backends import fail
        kr = keychain()
        if isinstance(kr, fail.Keyring) or getattr(kr, "priority", 0) <= 0:
            return False
        if _backend_name(kr) in ALLOWED_BACKENDS:
            return True
        # A chainer wrapping exactly one allowlisted backend is acceptable.
        backends = getattr(kr, "backends", None) or []
        return bool(backends) and all(_backend_name(b) in ALLOWED_BACKENDS for b in backends)
    except Exception:  # any keyring failure means "not available", never a crash
        log.exception("keyring probe failed")
        return False


def _device_user(vault_id: str) -> str:
    return f"device-key-v1:{vault_id}"


def remember_device(kf: KeyFile, dek: bytearray) -> KeyFile:
    """Store a random device key in the OS keychain and a second wrap of the DEK under it."""
    from keyring.errors import KeyringError
    if not keyring_available():
        raise KeyUnavailable()
    device_key = random_key()
    try:
        keychain().set_password(KEYRING_SERVICE, _device_user(kf.vault_id), _b64(bytes(device_key)))
        return replace(kf, wrap_device=_seal(device_key, dek, AAD_DEVICE + kf.vault_id.encode()))
    except KeyringError as exc:
        raise KeyUnavailable() from exc
    finally:
        wipe(device_key)


def unwrap_device(kf: KeyFile) -> bytearray | None:
    """The DEK from the device key, or None whenever anything is missing or changed."""
    if kf.wrap_device is None or not keyring_available():
        return None
    try:
        secret = keychain().get_password(KEYRING_SERVICE, _device_user(kf.vault_id))
        if not secret:
            return None
        key = bytearray(_unb64(secret))
        try:
            return _open(key, kf.wrap_device, AAD_DEVICE + kf.vault_id.encode())
        finally:
            wipe(key)
    except Exception:  # a changed or missing item falls back to the password, never blocks
        log.warning("device key unusable; falling back to the password")
        return None


def forget_device(kf: KeyFile) -> KeyFile:
    try:
        keychain().delete_password(KEYRING_SERVICE, _device_user(kf.vault_id))
    except Exception:
        log.info("no device key to delete from the keychain")
    return replace(kf, wrap_device=None)


# --- AES-GCM files (exports, snapshots) -------------------------------------------------------

CHUNK = 64 * 1024
FILE_MAGIC = b"KEPTAEAD1"


def encrypt_file_bytes(file_key: bytes | bytearray, data: bytes, file_id: bytes | None = None
                       ) -> bytes:
    """64 KiB chunks; file id, chunk index and last-chunk flag in the AAD (no
    truncation/reorder)."""
    file_id = file_id or os.urandom(16)
    aes = AESGCM(file_key)
    out = [FILE_MAGIC, file_id]
    chunks = [data[i:i + CHUNK] for i in range(0, len(data), CHUNK)] or [b""]
    for idx, chunk in enumerate(chunks):
        last = idx == len(chunks) - 1
        nonce = os.urandom(12)
        aad = file_id + idx.to_bytes(8, "big") + (b"\x01" if last else b"\x00")
        ct = aes.encrypt(nonce, chunk, aad)
        out += [nonce, len(ct).to_bytes(4, "big"), ct]
    return b"".join(out)


def decrypt_file_bytes(file_key: bytes | bytearray, blob: bytes) -> bytes:
    if not blob.startswith(FILE_MAGIC):
        raise WrongKey("Not a Kept encrypted file.")
    aes = AESGCM(file_key)
    pos = len(FILE_MAGIC)
    file_id = blob[pos:pos + 16]
    pos += 16
    parts: list[bytes] = []
    idx = 0
    try:
        while pos < len(blob):
            nonce = blob[pos:pos + 12]
            size = int.from_bytes(blob[pos + 12:pos + 16], "big")
            ct = blob[pos + 16:pos + 16 + size]
            pos += 16 + size
            last = pos >= len(blob)
            aad = file_id + idx.to_bytes(8, "big") + (b"\x01" if last else b"\x00")
            parts.append(aes.decrypt(nonce, ct, aad))
            idx += 1
    except (InvalidTag, ValueError) as exc:  # ValueError: a nonce cut short by truncation
        raise WrongKey("The file is damaged, truncated or was made with another key.") from exc
    if idx == 0:
        raise WrongKey("The file is empty or truncated.")
    return b"".join(parts)
