"""This device's half of "assistants may unlock from the keychain" (issue 26, item 6).
Layer: storage. Runs on: any worker thread (the keychain may block).

The opt-in holds only when BOTH halves say so (docs/security.md#assistant-unlock):

- the vault's own setting ``owner.assistant_unlock``, inside the encrypted database: someone
  holding only the vault files (a copy, a synced folder, a backup) cannot turn it on, since
  they cannot write that database without the key;
- a mark in THIS device's OS keychain, next to the device key that "Remember on this device"
  stored (``crypto.remember_device``): an HMAC of the vault id under that device key. A vault
  synced to another computer does not carry it (the choice is per device), a mark copied
  from elsewhere or left from an earlier device key proves nothing (forgetting or
  re-remembering the device, or rotating the data key, makes a new key), and the key file,
  which is plain JSON beside the database, holds nothing that could turn it on.

Neither half protects against a program running as this user while the keychain is open: that
is what the person accepts when opting in (such a program can read a paired assistant's key
from its client config and ask through it).
"""

from __future__ import annotations

import hashlib
import hmac
import logging

from app.errors import KeyUnavailable
from storage import crypto
from storage.crypto import KeyFile

log = logging.getLogger(__name__)

MARK_PREFIX = "assistant-unlock-v1:"


def _mark_user(vault_id: str) -> str:
    return f"{MARK_PREFIX}{vault_id}"


def _expected(kf: KeyFile) -> str | None:
    """The mark this vault's current device key makes, or None without a device key."""
    if kf.wrap_device is None or not crypto.keyring_available():
        return None
    secret = crypto.keychain().get_password(crypto.KEYRING_SERVICE,
                                            f"device-key-v1:{kf.vault_id}")
    if not secret:
        return None
    key = bytearray(secret.encode("ascii"))  # the device key as the keychain holds it
    try:
        return hmac.new(bytes(key), (MARK_PREFIX + kf.vault_id).encode(),
                        hashlib.sha256).hexdigest()
    finally:
        crypto.wipe(key)


def allow(kf: KeyFile) -> None:
    """Mark this device (needs "Remember on this device": ``KeyUnavailable`` without it)."""
    from keyring.errors import KeyringError
    expected = _expected(kf)
    if expected is None:
        raise KeyUnavailable("Turn on \"Remember on this device\" first: assistants can only "
                             "unlock with the key this device keeps in its keychain.")
    try:
        crypto.keychain().set_password(crypto.KEYRING_SERVICE, _mark_user(kf.vault_id),
                                       expected)
    except KeyringError as exc:
        raise KeyUnavailable() from exc


def deny(kf: KeyFile) -> None:
    """Remove this device's mark (nothing to remove is fine)."""
    try:
        crypto.keychain().delete_password(crypto.KEYRING_SERVICE, _mark_user(kf.vault_id))
    except Exception:  # no mark, or no keychain: either way nothing allows it here
        log.info("no assistant-unlock mark to delete")


def allowed(kf: KeyFile) -> bool:
    """This device's mark is there and made by its current device key. Never raises: a
    keychain that fails answers no."""
    try:
        expected = _expected(kf)
        if expected is None:
            return False
        mark = crypto.keychain().get_password(crypto.KEYRING_SERVICE, _mark_user(kf.vault_id))
        return mark is not None and hmac.compare_digest(mark, expected)
    except Exception:
        log.warning("keychain unreadable: assistants cannot unlock from it")
        return False
