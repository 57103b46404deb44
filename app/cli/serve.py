"""The owner in a terminal: ``kept serve`` (unlock once, serve the vault on its socket) and
``kept logout`` (strict mode: this terminal forgets the password it proved). Layer: app
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
                       "assistants until Ctrl-C or auto-lock")
    s.add_argument("--device", action="store_true",
                   help="unlock with the key remembered on this device")
    s.add_argument("--no-schedule", action="store_true",
                   help="do not run consolidation on its schedule while serving")
    s.add_argument("--strict", action="store_true",
                   help="strict mode: a program reads nothing until you type the password in "
                        "its terminal (whatever the owner.strict setting says)")
    s.set_defaults(fn=cmd_serve)

    s = sub.add_parser("logout", help="strict mode: this terminal forgets the password it "
                       "proved (like sudo -k)")
    s.set_defaults(fn=cmd_logout)


def cmd_serve(args: argparse.Namespace) -> int:
    """Unlock once and serve the vault on its socket until Ctrl-C, SIGTERM or auto-lock (no
    request for the idle time), running the same consolidation schedule as the window: the
    window's ``OwnerSession`` (app/owner.py), in a terminal."""
    import signal
    import threading

    from app import bootstrap
    from app.errors import VaultNotFound
    from app.owner import OwnerSession, idle_minutes
    folder = vault_dir(args)
    if not bootstrap.vault_exists(folder):
        raise VaultNotFound(f"No vault at {folder}. Create one with `kept init`, or name "
                            "another folder with --vault.")
    if owner(folder) is not None:
        raise ValidationError(f"Kept already serves {folder}.")
    session = OwnerSession.open(folder, None if args.device else password(args),
                                device=args.device, strict=True if args.strict else None,
                                schedule=not args.no_schedule)
    stop = threading.Event()
    try:
        idle_s = 60.0 * idle_minutes(session.vault)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        session.start()
        if session.server is None:  # serving is the point of `kept serve`
            raise AppError(f"Kept cannot serve {folder}: its socket could not be made "
                           f"({session.serve_error}); the vault is locked again.")
        mode = (" in strict mode: every program asks for the password"
                if session.server.strict else "")
        print(f"Serving {folder} on {session.server.path}{mode} (locks after {idle_s / 60:g} "
              "idle minutes; Ctrl-C to stop).", flush=True)
        if session.serve_until(stop, idle_s) == "idle":
            print(f"kept: idle for {idle_s / 60:g} minutes: the vault is locked and no "
                  "longer served.", file=sys.stderr, flush=True)
    finally:
        session.lock()  # the socket goes first, then the jobs, then the keys
    print("Stopped serving; the vault is locked.", flush=True)
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
