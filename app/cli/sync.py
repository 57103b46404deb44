"""``kept sync status|pair|syncthing|revoke|successor|take-over`` (issue 29, item 6): this vault's devices from a terminal.
``status`` also says what the running owner's sync job did (``Vault.sync_activity``: when it
last synced, its problem, what waits to be sent, recent forgets' progress).
Layer: app (headless front end). Runs on: the main thread.

``syncthing`` shares the sync folder with another device in the person's Syncthing, through
its REST API on this computer (``app/sync/syncthing.py``), when the person gives the API key.

``pair`` on the device that set sync up (or, with ``--folder``, sets it up first) shows a
12-digit code (and a QR code at a terminal) and waits for the new device; ``pair --join`` on the
new device asks for that code and waits for the answer. Both go through the owner when Kept runs
(the pairing then lives in the owner), else through the vault unlocked here.
``successor`` (on the founder) names the device that may take over if the founder is lost;
``take-over`` (on that device, confirmed) makes it the founder and removes the lost one
(docs/sync.md#a-successor-founder).
Exit codes: 0 joined / done, 2 bad input, a wrong code or a closed pairing, 3 a removal not
confirmed, 130 interrupted (the pairing is cancelled).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict
from pathlib import Path

from app.api import SyncDeviceRow, SyncStatus
from app.cli.common import Subcommands, open_vault, print_json, printable, when
from app.errors import ValidationError

POLL_S = 0.5  # how often a waiting pair command looks at the folder (a few small reads)


def add_parsers(sub: Subcommands) -> None:
    s = sub.add_parser("sync", help="this vault on your other devices, through a synced folder")
    a = s.add_subparsers(dest="sync_command", required=True)
    p = a.add_parser("status", help="this device, the others, when each last wrote, what waits")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.set_defaults(fn=cmd_sync_status)
    p = a.add_parser("pair", help="show a code for a new device (on the device that set sync "
                     "up), or --join with that code on the new device")
    p.add_argument("--folder", help="the folder your sync tool shares (to set sync up, or to "
                   "join)")
    p.add_argument("--name", default="", help="this device's name as others see it, e.g. "
                   "'laptop' (the folder host can read it: pick one that says nothing)")
    p.add_argument("--join", action="store_true", help="this is the new device")
    p.add_argument("--code", help="with --join: the 12-digit code (else it is asked for)")
    p.set_defaults(fn=cmd_sync_pair)
    p = a.add_parser("syncthing", help="share the sync folder with another device in "
                     "Syncthing, through its REST API on this computer (optional)")
    p.add_argument("--device", required=True, help="the other device's Syncthing ID "
                   "(Actions > Show ID there)")
    p.add_argument("--address", default="127.0.0.1:8384", help="Syncthing's GUI address on "
                   "this computer (Actions > Settings > GUI)")
    p.add_argument("--api-key", help="Syncthing's API key (Actions > Settings > GUI); else "
                   "$KEPT_SYNCTHING_API_KEY, else it is asked for")
    p.add_argument("--folder", help="the folder to share (default: this vault's sync folder)")
    p.set_defaults(fn=cmd_sync_syncthing)
    p = a.add_parser("revoke", help="remove a lost or old device")
    p.add_argument("device", help="its name, or its id (or the id's first 8 characters)")
    p.add_argument("--yes", action="store_true", help="do not ask")
    p.set_defaults(fn=cmd_sync_revoke)
    p = a.add_parser("successor", help="on the founder: name the device that may take over "
                     "if this one is lost")
    p.add_argument("device", help="its name, or its id (or the id's first 8 characters)")
    p.set_defaults(fn=cmd_sync_successor)
    p = a.add_parser("take-over", help="on the named successor: become the founder because "
                     "the founder is lost for good (it is removed)")
    p.add_argument("--yes", action="store_true", help="do not ask")
    p.set_defaults(fn=cmd_sync_take_over)


def cmd_sync_status(args: argparse.Namespace) -> int:
    from app.sync import device_words
    vault = open_vault(args, load_model=False)
    try:
        st = vault.sync_status()
        act = vault.sync_activity()  # the running owner's job; nothing when opened here
    finally:
        vault.lock()
    if args.json:
        print_json({**asdict(st), "activity": asdict(act)})
        return 0
    if not st.set_up:
        print("This device does not sync. Set it up: kept sync pair --folder FOLDER "
              "(the folder your sync tool shares), or join: kept sync pair --join --folder "
              "FOLDER.")
        return 0
    print(printable(f"Folder: {st.folder}" + ("" if st.folder_found else
                                              " (missing, or not this vault's)")))
    for line in device_words.activity_lines(act):
        print(printable(line))
    for row in st.devices:
        acks = device_words.waiting_acks(row.name, act)
        print(printable("  " + device_words.line(row) + (f"; {acks}" if acks else "")))
    print(printable(device_words.founder_line(st)))
    if st.pairing:
        print(st.pairing)
    return 0


def cmd_sync_pair(args: argparse.Namespace) -> int:
    if args.join and not args.folder:
        raise ValidationError("--join needs --folder: the folder your sync tool shares with "
                              "the device that set sync up.")
    if args.code is not None and not args.join:
        raise ValidationError("--code is for the new device: add --join.")
    if args.name:
        from app.sync.devices import check_device_name
        check_device_name(args.name)
    if args.join:
        from app.sync.pairing import Code
        code = args.code if args.code is not None else input("Code shown on the other "
                                                              "device: ")
        Code.parse(code)  # bad input said before the vault is opened
    vault = open_vault(args, load_model=False)
    try:
        if args.join:
            step = vault.sync_join(Path(args.folder), code, args.name).value
        else:
            if not vault.sync_status().set_up:
                if not args.folder:
                    raise ValidationError("This device does not sync yet: add --folder "
                                          "FOLDER (the folder your sync tool shares).")
                vault.sync_set_up(Path(args.folder), args.name)
                print(printable(f"Sync set up in {args.folder}."))
            invite = vault.sync_invite().value
            print(f"On the new device, type this code: {invite.code}")
            print(f"(kept sync pair --join --folder FOLDER there; it expires {when(invite.expires_at)})")
            if sys.stdout.isatty():
                import segno
                segno.make(invite.qr_text, error="m").terminal(out=sys.stdout, compact=True)
            sys.stdout.flush()
            step = vault.sync_pair_step().value
        try:
            while step.state == "waiting":
                time.sleep(POLL_S)
                step = vault.sync_pair_step().value
        except KeyboardInterrupt:
            vault.sync_pair_cancel()
            raise
    finally:
        vault.lock()
    print(printable(step.message), file=sys.stdout if step.state == "joined" else sys.stderr)
    return 0 if step.state == "joined" else 2


def cmd_sync_syncthing(args: argparse.Namespace) -> int:
    import os

    from app.sync.syncthing import SyncthingApi, set_up_folder
    key = args.api_key or os.environ.get("KEPT_SYNCTHING_API_KEY", "")
    if not key:
        if not sys.stdin.isatty():
            raise ValidationError("No API key: add --api-key KEY (Syncthing's Actions > "
                                  "Settings > GUI > API Key).")
        import getpass
        key = getpass.getpass("Syncthing's API key (Actions > Settings > GUI): ")
    api = SyncthingApi(args.address, key)  # a bad address is said before the vault opens
    folder = args.folder
    if not folder:
        vault = open_vault(args, load_model=False)
        try:
            st = vault.sync_status()
        finally:
            vault.lock()
        if not st.set_up or not st.folder:
            raise ValidationError("This device does not sync yet: set it up first (kept sync "
                                  "pair --folder FOLDER), or give --folder.")
        folder = st.folder
    report = set_up_folder(api, Path(folder), args.device)
    for line in report.lines:
        print(printable(line))
    return 0


def _one_device(st: SyncStatus, want: str) -> SyncDeviceRow:
    want = want.strip()
    found = [d for d in st.devices if d.name == want or d.device_id == want
             or (len(want) >= 8 and d.device_id.startswith(want.lower()))]
    if len(found) != 1:
        names = ", ".join(d.name for d in st.devices if not d.this_device) or "none"
        raise ValidationError(("Two devices match" if found else "No device matches")
                              + f" {want!r}. The others: {names} (use the id from "
                              "kept sync status --json).")
    return found[0]


def cmd_sync_successor(args: argparse.Namespace) -> int:
    from app.sync import device_words
    vault = open_vault(args, load_model=False)
    try:
        row = _one_device(vault.sync_status(), args.device)
        st = vault.sync_name_successor(row.device_id).value
    finally:
        vault.lock()
    print(printable(device_words.founder_line(st)))
    return 0


def cmd_sync_take_over(args: argparse.Namespace) -> int:
    from app.sync import device_words
    vault = open_vault(args, load_model=False)
    try:
        st = vault.sync_status()
        if not st.set_up:
            raise ValidationError("This device does not sync yet.")
        if st.founder:
            raise ValidationError("This device is the founder already.")
        if not st.successor:
            from app.sync.devices import NotSuccessor
            raise NotSuccessor()
        print(printable(device_words.take_over_consequence(st)))
        if not args.yes:
            if not sys.stdin.isatty():
                print("kept: not confirmed (no terminal): nothing was changed. Run again with "
                      "--yes to take over.", file=sys.stderr)
                return 3
            if input("Type 'take over' to become the founder: ").strip().lower() != \
                    "take over":
                print("Cancelled; nothing was changed.")
                return 3
        st = vault.sync_take_over().value
    finally:
        vault.lock()
    print(printable("This device is the founder now. " + device_words.founder_line(st)))
    return 0


def cmd_sync_revoke(args: argparse.Namespace) -> int:
    from app.sync import device_words
    vault = open_vault(args, load_model=False)
    try:
        st = vault.sync_status()
        row = _one_device(st, args.device)
        print(printable(device_words.revoke_consequence(row.name)))
        if not args.yes:
            if not sys.stdin.isatty():
                print("kept: not confirmed (no terminal): nothing was changed. Run again with "
                      "--yes to remove it.", file=sys.stderr)
                return 3
            if input(f"Type 'remove' to remove {row.name}: ").strip().lower() != "remove":
                print("Cancelled; nothing was changed.")
                return 3
        vault.sync_revoke(row.device_id)
    finally:
        vault.lock()
    print(printable(f"Removed {row.name}."))
    return 0
