"""The owner in a terminal: ``kept serve`` (unlock once, serve the vault on its socket, lock
when idle and keep serving), ``kept unlock`` (open it again after an idle lock) and ``kept
logout`` (strict mode: this terminal forgets the password it proved). Layer: app
(headless front end). Runs on: the main thread; ``kept serve`` also starts the owner's socket
server and the consolidation scheduler, which run on their own threads.
"""

from __future__ import annotations

import argparse
import sys

from app.cli.common import Subcommands, owner, password, vault_dir
from app.errors import AppError, ValidationError


def add_parsers(sub: Subcommands) -> None:
    s = sub.add_parser("serve", help="unlock once and serve the vault to `kept` commands and "
                       "assistants until Ctrl-C; locks when idle and keeps serving")
    s.add_argument("--device", action="store_true",
                   help="unlock with the key remembered on this device")
    s.add_argument("--idle-lock", type=_idle_minutes, metavar="MINUTES",
                   help="lock after this many minutes without a request, and keep serving: "
                        "calls then answer \"locked\" until `kept unlock` (or the window, or "
                        "an assistant's call when you allowed keychain unlock on this device) "
                        "opens it again; 0 = never lock (default: KEPT_IDLE_MINUTES, else the "
                        "lock.idle_minutes setting, 5)")
    s.add_argument("--no-schedule", action="store_true",
                   help="do not run consolidation on its schedule while serving")
    s.add_argument("--strict", action="store_true",
                   help="strict mode: a program reads nothing until you type the password in "
                        "its terminal (whatever the owner.strict setting says)")
    s.set_defaults(fn=cmd_serve)

    s = sub.add_parser("unlock", help="unlock a `kept serve` that locked itself when idle "
                       "(asks for the vault's password)")
    s.set_defaults(fn=cmd_unlock)

    s = sub.add_parser("logout", help="strict mode: this terminal forgets the password it "
                       "proved (like sudo -k)")
    s.set_defaults(fn=cmd_logout)


def _idle_minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 7 * 24 * 60:
        raise argparse.ArgumentTypeError("give minutes from 0 (never lock) to 10080")
    return value


def cmd_serve(args: argparse.Namespace) -> int:
    """Unlock once and serve the vault on its socket until Ctrl-C or SIGTERM, running the same
    consolidation schedule as the window. After ``--idle-lock`` minutes without a request the
    vault locks (keys wiped) and stays served, answering "locked" until ``kept unlock``
    (``ServeSession``, app/standby.py)."""
    import signal
    import threading

    from app import bootstrap
    from app.errors import VaultNotFound
    from app.owner import idle_minutes
    from app.standby import ServeSession
    folder = vault_dir(args)
    if not bootstrap.vault_exists(folder):
        raise VaultNotFound(f"No vault at {folder}. Create one with `kept init`, or name "
                            "another folder with --vault.")
    if owner(folder) is not None:
        raise ValidationError(f"Kept already serves {folder}.")

    def say(text: str) -> None:
        print(f"kept: {text}", flush=True)
    secret = None if args.device else password(args)
    session = ServeSession.serve(folder, secret, device=args.device, idle_seconds=0,
                                 notify=say, strict=True if args.strict else None,
                                 schedule=not args.no_schedule)
    stop = threading.Event()
    try:
        minutes = args.idle_lock if args.idle_lock is not None else idle_minutes(session.vault)
        session.idle_seconds = 60.0 * max(0.0, minutes)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        session.start()
        if session.server is None:  # serving is the point of `kept serve`
            raise AppError(f"Kept cannot serve {folder}: its socket could not be made "
                           f"({session.serve_error}); the vault is locked again.")
        mode = (" in strict mode: every program asks for the password"
                if session.server.strict else "")
        idle = (f"locks after {minutes:g} idle minutes and keeps serving" if minutes > 0
                else "never locks when idle")
        print(f"Serving {folder} on {session.server.path}{mode} ({idle}; Ctrl-C to stop).",
              flush=True)
        if session.serve_until_stopped(stop) == "taken":
            print("kept: the window opened this vault and serves it now; this `kept serve` "
                  "stops.", file=sys.stderr, flush=True)
    finally:
        session.lock()  # the socket goes first, then the jobs, then the keys
    print("Stopped serving; the vault is locked.", flush=True)
    return 0


def cmd_unlock(args: argparse.Namespace) -> int:
    """Open a ``kept serve`` that locked itself when idle, with the password."""
    from app.errors import OwnerNotRunning, VaultLocked
    folder = vault_dir(args)
    remote = owner(folder)
    if remote is None:
        raise OwnerNotRunning(f"Kept is not running for {folder}: start it with `kept serve` "
                              "(or open the window).")
    try:
        try:
            remote.session()
            print(f"Kept is already unlocked for {folder}.")
            return 0
        except VaultLocked:
            pass
        remote.unlock_owner(password(args, f"Password of the Kept vault in {folder}: "))
    finally:
        remote.close()
    print(f"Unlocked: Kept serves {folder} again.")
    return 0


def cmd_logout(args: argparse.Namespace) -> int:
    """Drop this terminal session's ticket (strict mode), as ``sudo -k`` does."""
    from app.errors import OwnerNotRunning
    remote = owner(vault_dir(args))
    if remote is None:
        raise OwnerNotRunning()
    try:
        remote.logout()
    finally:
        remote.close()
    print("This terminal no longer holds your password for Kept.")
    return 0
