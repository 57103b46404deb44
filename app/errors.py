"""Errors the person can be shown. Layer: app. Runs on: any thread.

Storage translates driver and crypto exceptions into these at its boundary, by type,
never by scraping message text. Every subclass carries a ``user_message``.
"""

from __future__ import annotations


class AppError(Exception):
    """Base of every error that reaches the person. ``exit_code`` is what the CLI returns."""

    user_message = "Something went wrong."
    hint: str | None = None
    exit_code = 1

    def __init__(self, user_message: str | None = None, *, hint: str | None = None) -> None:
        if user_message is not None:
            self.user_message = user_message
        if hint is not None:
            self.hint = hint
        super().__init__(self.user_message)


class WrongKey(AppError):
    user_message = "Wrong password, or the key file was tampered with. Nothing was changed."
    exit_code = 2


class VaultNotFound(AppError):
    user_message = "No vault here. Create one with `kept init`."
    exit_code = 2


class VaultExists(AppError):
    user_message = "A vault already exists here; refusing to overwrite it."
    exit_code = 2


class VaultCorrupt(AppError):
    user_message = (
        "The vault could not be opened: a file is damaged or missing. "
        "Nothing was changed and no new vault was created."
    )
    hint = "Restore the vault folder from a backup, or keep it aside and contact support."
    exit_code = 2


class VaultLocked(AppError):
    user_message = "The vault is locked."
    exit_code = 2


class VaultBusy(AppError):
    user_message = "Another Kept process has this vault open."
    hint = "Close the other Kept window or command and try again."
    exit_code = 2


class InsecurePermissions(AppError):
    user_message = "The vault folder or its files can be read by other users; refusing to start."
    hint = "Run: chmod 700 on the folder and chmod 600 on its files."
    exit_code = 2


class KeyUnavailable(AppError):
    user_message = (
        "\"Remember on this device\" is not available: no secure system keychain was found. "
        "Nothing was stored; unlock with your password."
    )


class ValidationError(AppError):
    user_message = "That input is not valid."
    exit_code = 2


class NotFound(AppError):
    user_message = "No memory with that id."
    exit_code = 4


class StorageFull(AppError):
    user_message = ("The disk is full or failing; the last change was not saved (everything "
                    "saved before it is safe). Free some space and try again.")
    exit_code = 5


class ParseError(AppError):
    user_message = "A reply could not be understood; it was kept encrypted for a retry."


class AgentNotPaired(AppError):
    """An assistant (``kept mcp --agent NAME``) whose key Kept did not issue or revoked."""
    user_message = "This assistant is not paired with Kept, or its key was revoked."
    hint = "Pair it in Kept (Settings > Assistants, or `kept agents pair NAME`) and restart it."
    exit_code = 2


class OwnerNotRunning(AppError):
    """No process serves this vault (issue 14): nothing listens on its socket."""
    user_message = ("Kept is not running for this vault, or it is locked: open and unlock Kept, "
                    "or run `kept serve`.")
    exit_code = 2


class RemoteRefused(AppError):
    """A ``VaultAPI`` call that is never made over the owner's socket."""
    user_message = "Kept does not allow that over its local connection."
    exit_code = 2


class PasswordNeeded(AppError):
    """A decision of the person's (forget, resolve, pairing...) asked over the owner's socket
    on a connection that has not proved the password."""
    user_message = "This needs your password: Kept is open, so it asks before changing this."
    exit_code = 2


class PasswordBusy(AppError):
    """Too many password checks at once (each costs 256 MiB and about a second): this one was
    refused before it started, so it cost nothing."""
    user_message = "Kept is checking other passwords right now; try again in a moment."
    exit_code = 2
