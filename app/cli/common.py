"""What the command groups of ``kept`` share: the password and recovery-code sources, the vault
folder and how a command opens it (the owner's socket, else unlocked here), the progress bar,
times, JSON output, the argument types every group uses and the parser class. Layer: app
(headless front end). Runs on: the main thread.

Group modules import only this module (never each other), and import everything heavy lazily,
inside their functions: ``kept mcp`` starts without the model, SQLCipher or the facade.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO, TypeAlias

from app.errors import ValidationError

if TYPE_CHECKING:
    from app.api import VaultAPI
    from app.eta import Estimate
    from app.ipc.client import RemoteVault

# What ``build_parser`` hands each group's ``add_parsers``: ``add_subparsers()`` of ``kept``.
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


# --- secrets ---------------------------------------------------------------------------------

def read_secret_file(path: str, what: str = "the password file") -> str:
    try:
        text = Path(path).read_text("utf-8")
    except OSError as exc:
        raise ValidationError(f"Cannot read {what}: {exc.strerror}.") from exc
    except UnicodeDecodeError as exc:
        raise ValidationError(f"Cannot read {what}: it is not UTF-8 text.") from exc
    return text.rstrip("\r\n")


def secret_env(name: str) -> str | None:
    """An environment variable holding a secret; non-UTF-8 bytes arrive as lone surrogates."""
    value = os.environ.get(name)
    if value is not None:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValidationError(f"{name} is not valid UTF-8 text.") from exc
    return value


def password(args: argparse.Namespace, prompt: str | None = None) -> str:
    """The vault's password (or, with ``prompt``, another one: "Backup password: "), from
    --password-file, KEPT_PASSWORD or the terminal; a terminal is told which password."""
    if getattr(args, "password_file", None):
        return read_secret_file(args.password_file)
    env = secret_env("KEPT_PASSWORD")
    if env is not None:
        return env
    if not sys.stdin.isatty():
        raise ValidationError("No password: use --password-file, KEPT_PASSWORD or a terminal.")
    return getpass.getpass(prompt or vault_prompt(args))


def vault_prompt(args: argparse.Namespace) -> str:
    """"Password for vault “/home/sam/.local/share/kept/vault”: " (issue 26: which one)."""
    try:
        folder: Path | str = vault_dir(args) if hasattr(args, "vault") else "?"
    except ValidationError:
        folder = str(getattr(args, "vault", "") or "?")
    return printable(f"Password for vault “{folder}”: ")


# --- the vault -------------------------------------------------------------------------------

def vault_dir(args: argparse.Namespace) -> Path:
    from app import bootstrap
    folder = Path(args.vault).expanduser() if args.vault else bootstrap.default_vault_dir()
    # ``--vault`` naming a file, or a path below one, is bad input, said before anything else
    # (it used to end in NotADirectoryError from deep inside).
    for p in (folder, *folder.parents):
        if os.path.lexists(p):
            if not p.is_dir():
                raise ValidationError(f"{p} is a file, not a folder: --vault names a folder.")
            break
    return folder


def open_vault(args: argparse.Namespace, *, load_model: bool = True,
               local: str | None = None) -> VaultAPI:
    """The vault's owner (the window or ``kept serve``) when one answers on its socket: no
    password, no unlock, no model load, and ``vault.lock()`` only closes the connection. The
    person's decisions (the operations marked person on ``VaultAPI``: forget, correct,
    resolve, pairing...), and every call in strict mode, prove the password to the owner
    first: the client asks for it the first time the owner needs it. Otherwise the vault,
    unlocked in this process. ``local`` names a command that only runs on an unlocked vault in
    this process (key changes): refused while an owner runs."""
    from app import bootstrap
    from app.errors import VaultBusy, VaultNotFound
    from app.facade import Vault
    folder = vault_dir(args)
    remote = owner(folder, lambda: password(args))
    if remote is not None:
        if local is not None:
            remote.lock()
            raise VaultBusy(f"Kept is open for this vault (the window or `kept serve`): "
                            f"{local} needs it closed.",
                            hint="Do it in the window, or stop `kept serve` first.")
        return remote
    if not bootstrap.vault_exists(folder):  # say so before asking for a password
        raise VaultNotFound(f"No vault at {folder}. Create one with `kept init`, or name "
                            "another folder with --vault.")
    return Vault.open(folder, password(args), load_model=load_model, threaded=False,
                      use_chroma=False)


def owner(folder: Path, ask: Callable[[], str] | None = None) -> RemoteVault | None:
    """A client of the process serving ``folder``, if one answers (issue 14)."""
    from app.ipc.protocol import socket_path
    if not socket_path(folder).exists():
        return None
    from app.errors import OwnerNotRunning
    from app.ipc.client import RemoteVault
    remote = RemoteVault.at(folder, password=ask)
    try:
        remote.ping()
    except OwnerNotRunning:
        return None
    return remote


# --- output ----------------------------------------------------------------------------------

def progress(label: str) -> Callable[[int, int], None] | None:
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        width = 30
        filled = int(width * done / max(total, 1))
        sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()
    return show


PLAIN_EVERY_S = 10.0  # without a terminal: one progress line at most this often


def estimated_progress(label: str, unit: str, *, stream: TextIO | None = None,
                       clock: Callable[[], float] | None = None) -> Callable[[int, int], None]:
    """Progress with the rate and the time left (``app.eta``, issue 28), on ``stream``
    (stderr): on a terminal one line that updates in place; otherwise a plain line at most
    every ``PLAIN_EVERY_S`` seconds (a log stays readable, and a short import's stderr holds
    nothing but a possible error line) and one at the end."""
    import time

    from app.eta import Rate
    tick = clock if clock is not None else time.monotonic
    rate = Rate(tick)
    show = estimate_printer(label, unit, stream=stream, clock=tick, started=rate.started)
    return lambda done, total: show(rate.update(done, total))


def estimate_printer(label: str, unit: str, *, stream: TextIO | None = None,
                     clock: Callable[[], float] | None = None,
                     started: float | None = None) -> Callable[[Estimate], None]:
    """Prints ``Estimate``s as ``estimated_progress`` does: for work that measures its own
    rate (the vectors that follow an import: ``Vault.make_vectors``)."""
    import time

    from app.eta import progress_words
    out = stream if stream is not None else sys.stderr
    tick = clock if clock is not None else time.monotonic
    tty = out.isatty()
    first = tick() if started is None else started
    last: list[float | None] = [None]  # when the last plain line was written

    def show(e: Estimate) -> None:
        line = f"{label} {progress_words(e, unit)}"
        finished = e.done >= e.total
        if tty:
            out.write(f"\r\x1b[K{line}" + ("\n" if finished else ""))
        else:
            now, before = tick(), last[0]
            due = now - (before if before is not None else first) >= PLAIN_EVERY_S
            if not (due or (finished and before is not None)):
                return
            out.write(line + "\n")
            last[0] = now
        out.flush()
    return show


def print_json(obj: object) -> None:
    print(json.dumps(obj, ensure_ascii=False, default=str))


def printable(text: str) -> str:
    """Messages quote what they were given (a path, a time): control and format characters
    are shown escaped, so a message stays one line and cannot drive the terminal (a newline or
    an ANSI escape in a --vault value, say)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


# --- times -----------------------------------------------------------------------------------

def time_arg(text: object, what: str = "The time") -> float | None:
    """ISO 8601 to epoch seconds; only times in the years 1 to 9999 UTC (``parse_time``)."""
    if text is None:
        return None
    from app.validation import parse_time
    return parse_time(text, what)


def when(ts: float | None) -> str:
    """A time in a text listing, local and as people write it ("today 09:14", "15 June 2026,
    20:00"); ``-`` for none. JSON output keeps epoch seconds and ISO times."""
    from app import words
    return words.when(ts, never="-")


# --- the parser ------------------------------------------------------------------------------

class Parser(argparse.ArgumentParser):
    """A usage error is bad input like any other: exit 2 and one line on stderr (argparse's
    default prints the whole usage first). Subparsers are made with this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"kept: {printable(message)} (see `{self.prog} --help`)\n")


_MAX_ID = 2**63 - 1  # SQLite's INTEGER: a larger id raised OverflowError from the driver


def int_in(text: str, low: int, high: int, what: str) -> int:
    """An argument type: a whole number from ``low`` to ``high``, else a usage error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be a whole number, not {text[:40]!r}"
                                         ) from None
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"{what} must be from {low:,} to {high:,}")
    return value


def id_arg(text: str) -> int:
    """An argument type: the id of a memory, a request or a run."""
    return int_in(text, 1, _MAX_ID, "an id")
