"""The owner in a terminal: ``kept serve`` (unlock once, serve the vault on its socket) and
``kept logout`` (strict mode: this terminal forgets the password it proved). Layer: app
(headless front end). Runs on: the main thread; ``kept serve`` also starts the owner's socket
server and the consolidation scheduler, which run on their own threads.
"""

from __future__ import annotations

import argparse
import os
import sys

from app.cli.common import Subcommands, owner, password, vault_dir
from app.errors import ValidationError


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
    request for the idle time), running the same consolidation schedule as the window."""
    import signal
    import threading
    import time

    from app import bootstrap
    from app.clock import SystemClock
    from app.errors import VaultNotFound
    from app.facade import Vault
    from app.ipc.server import OwnerServer
    from app.jobs import Jobs, build_scheduler, shutdown
    folder = vault_dir(args)
    if not bootstrap.vault_exists(folder):
        raise VaultNotFound(f"No vault at {folder}. Create one with `kept init`, or name "
                            "another folder with --vault.")
    if owner(folder) is not None:
        raise ValidationError(f"Kept already serves {folder}.")
    if args.device:
        vault = Vault.open(folder, use_device=True)
    else:
        vault = Vault.open(folder, password(args))
    stop = threading.Event()
    server = OwnerServer(vault, strict=True if args.strict else None)
    jobs = Jobs(vault, SystemClock())
    scheduler = build_scheduler(jobs, vault.setting)
    try:
        idle_env = os.environ.get("KEPT_IDLE_MINUTES")
        idle_s = 60.0 * float(idle_env if idle_env else vault.setting("lock.idle_minutes") or 5)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        server.start()
        if not args.no_schedule:
            scheduler.start()
        mode = " in strict mode: every program asks for the password" if server.strict else ""
        print(f"Serving {folder} on {server.path}{mode} (locks after {idle_s / 60:g} idle "
              "minutes; Ctrl-C to stop).", flush=True)
        while not stop.wait(min(1.0, idle_s / 4)):
            if time.monotonic() - server.last_request >= idle_s:
                print(f"kept: idle for {idle_s / 60:g} minutes: the vault is locked and no "
                      "longer served.", file=sys.stderr, flush=True)
                break
    finally:
        server.stop()  # the socket goes first, then the jobs, then the keys
        shutdown(scheduler, jobs)
        vault.lock()
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
