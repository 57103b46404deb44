"""Data in and out: ``kept import`` (chats and notes), ``kept export`` (a plaintext copy, asked
first) and ``kept backup create|verify|restore|list`` (encrypted). Layer: app (headless front
end). Runs on: the main thread. Import and export go through ``app.transfer``, as the
window's do; backups through the vault and ``app.bootstrap``.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from app import words
from app.cli.common import (
    Subcommands,
    estimate_printer,
    estimated_progress,
    open_vault,
    password,
    print_json,
    printable,
    progress,
    read_secret_file,
    secret_env,
    vault_dir,
    when,
)
from app.errors import ValidationError

if TYPE_CHECKING:
    from app.api import VaultAPI


def add_parsers(sub: Subcommands) -> None:
    s = sub.add_parser("import", help="import chats: Kept JSON Lines, a ChatGPT or Claude "
                       "export (conversations.json), Markdown or text notes (detected)")
    s.add_argument("file", help="a file, or a folder of notes")
    s.set_defaults(fn=cmd_import)

    s = sub.add_parser("export", help="a plaintext copy you can read: Markdown notes (people, "
                       "projects, a file a day) or one JSON file of everything (asks first)")
    s.add_argument("target", help="markdown: a new or empty folder; json: a new file")
    s.add_argument("--format", choices=["markdown", "json"], required=True)
    s.add_argument("--yes", action="store_true", help="do not ask (scripts)")
    s.add_argument("--yes-cloud", action="store_true",
                   help="also when the target is inside a cloud-synced folder")
    s.set_defaults(fn=cmd_export)

    s = sub.add_parser("backup", help="encrypted backups: create, verify, restore, list")
    bsub = s.add_subparsers(dest="backup_command", required=True)
    b = bsub.add_parser("create", help="write one encrypted backup file (never overwrites)")
    b.add_argument("file")
    b.add_argument("--own-password", action="store_true",
                   help="protect it with a password of its own (asked twice, or "
                   "--backup-password-file / KEPT_BACKUP_PASSWORD)")
    b.add_argument("--backup-password-file", help="read the backup's own password from here")
    b = bsub.add_parser("verify", help="decrypt and check a backup file; writes no vault")
    b.add_argument("file")
    b = bsub.add_parser("restore", help="a new vault in a new or empty folder from a backup")
    b.add_argument("file")
    b.add_argument("new_folder")
    b = bsub.add_parser("list", help="the backups this vault made")
    b.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_backup)


def cmd_import(args: argparse.Namespace) -> int:
    from app.transfer import import_scanned, scan_file
    # First pass: the whole file checked (streamed, nothing kept), before the password.
    scan = scan_file(Path(args.file))
    if sys.stderr.isatty():  # as progress: a script's stderr holds only the one error line
        print(f"kept: reading {scan.format_name}: {scan.turns:,} turn(s) in "
              f"{scan.sessions:,} session(s)", file=sys.stderr)
    vault = open_vault(args)
    try:
        if not vault.semantic_search:
            print("kept: semantic search is off (no model); importing for lexical recall only",
                  file=sys.stderr)
        # Second pass: 1,024 turns a call (256 a transaction), never the whole file in RAM.
        # Turns done of all, the rate and the time left (one updating line on a terminal).
        # The vectors follow (issue 28): the turns are in, and searchable by their words,
        # at text speed.
        r = import_scanned(vault, scan, progress=estimated_progress("Importing", "turns"))
        print(f"Imported {words.count(r.added, 'turn', 'turns')} from "
              f"{words.count(r.sessions, 'conversation', 'conversations')}; "
              f"{r.skipped_duplicates:,} already present. (Read as {scan.format_name}.)",
              flush=True)
        for s in r.skipped:
            print(printable(f"  {s}."))
        if vault.semantic_search:
            try:
                _follow_vectors(vault)
            except KeyboardInterrupt:  # Ctrl-C: the turns are in, the vectors stay pending
                n = vault.status().vectors_pending
                print(f"\nStopped: {words.count(n, 'memory', 'memories')} still wait for "
                      "their vectors; they are made the next time Kept is open (the window, "
                      "`kept serve`, or `kept import` again).")
    finally:
        vault.lock()
    return 0


def _follow_vectors(vault: VaultAPI) -> None:
    """After the turns: the vectors meaning search needs. The owner (the window, ``kept
    serve``) makes them on its own thread: say how many and how long. In this process: make
    them now with progress; Ctrl-C (KeyboardInterrupt, the caller's) stops, and what is left
    is made at the next unlock."""
    from app.eta import duration_words
    from app.ipc.client import RemoteVault
    st = vault.status()
    if not st.vectors_pending:
        return
    if isinstance(vault, RemoteVault):
        left = f", {duration_words(st.vectors_pending / st.vectors_per_s)} left" \
            if st.vectors_per_s else ""
        print(f"Finding meaning: {words.count(st.vectors_pending, 'memory', 'memories')} "
              f"still wait for their vectors{left}; Kept (the window or `kept serve`) makes "
              "them in the background. Search finds them by their words meanwhile; "
              "`kept status` says how far it got.")
        return
    print(f"Finding meaning: {words.count(st.vectors_pending, 'memory', 'memories')} wait "
          "for their vectors; search finds them by their words meanwhile. Ctrl-C stops "
          "(the rest is made the next time Kept is open).", flush=True)
    vault.make_vectors(progress=estimate_printer("Finding meaning:", "vectors"))
    print("Meaning search covers every imported turn.")


def _confirm_export(args: argparse.Namespace, where: Path, cloud: str | None) -> bool:
    """The person's explicit yes to a plaintext copy (and a second one for a cloud folder);
    False (exit 3, nothing written) without a terminal and without ``--yes``/``--yes-cloud``."""
    what = "folder" if args.format == "markdown" else "file"
    print(f"kept: this writes everything Kept holds about you, UNENCRYPTED, to the {what} "
          f"{where} (readable by your user account only, and by anything that reads or backs "
          "up your files).", file=sys.stderr)
    if cloud:
        print(f"kept: WARNING: {where} is inside a {cloud} folder: the export will be uploaded "
              f"to {cloud} and stored there in plaintext.", file=sys.stderr)
    steps = []
    if not args.yes:
        steps.append(("export", "Type 'export' to write it: ", "--yes"))
    if cloud and not args.yes_cloud:
        steps.append(("cloud", f"Type 'cloud' to write it into the {cloud} folder anyway: ",
                      "--yes-cloud"))
    for word, prompt, _flag in steps:
        if not sys.stdin.isatty():
            print(f"kept: not confirmed (no terminal): nothing was written. Run again with "
                  f"{' and '.join(f for _w, _p, f in steps)} to export.", file=sys.stderr)
            return False
        if input(prompt).strip().lower() != word:
            print("Cancelled; nothing was written.")
            return False
    return True


def cmd_export(args: argparse.Namespace) -> int:
    """``kept export --format markdown DIR`` / ``--format json FILE`` (issue 16)."""
    import time

    from app.transfer import cloud_service, export, export_target
    target = export_target(Path(args.target), args.format, vault_dir(args))
    if not _confirm_export(args, target, cloud_service(target)):
        return 3
    vault = open_vault(args, load_model=False)
    try:
        memories, files, path = export(vault, args.format, target, now=time.time(),
                                       progress=progress("Exporting"))
    finally:
        vault.lock()
    in_files = f"{files} files in " if args.format == "markdown" else ""
    print(f"Exported {memories} memories to {in_files}{path} (plaintext; files "
          "0600, folders 0700).")
    return 0


def _backup_password(args: argparse.Namespace) -> str:
    """A backup's own password (``--own-password``): ``--backup-password-file``,
    ``KEPT_BACKUP_PASSWORD``, else asked twice on a terminal."""
    if args.backup_password_file:
        pw = read_secret_file(args.backup_password_file, "the backup password file")
    elif (env := secret_env("KEPT_BACKUP_PASSWORD")) is not None:
        pw = env
    elif not sys.stdin.isatty():
        raise ValidationError("No backup password: use --backup-password-file, "
                              "KEPT_BACKUP_PASSWORD or a terminal.")
    else:
        pw = getpass.getpass("Backup password: ")
        if pw != getpass.getpass("Repeat backup password: "):
            raise ValidationError("The two passwords differ; nothing was written.")
    if not pw:
        raise ValidationError("The backup password is empty; nothing was written.")
    return pw


def _backup_file(text: str, *, new: bool) -> Path:
    path = Path(text).expanduser().absolute()
    if new:
        if os.path.lexists(path):
            raise ValidationError(f"{path} already exists; Kept does not overwrite a file with "
                                  "a backup. Choose a new name.")
        if not path.parent.is_dir():
            raise ValidationError(f"The folder {path.parent} does not exist.")
    elif not path.is_file():
        raise ValidationError(f"No backup file at {path}.")
    return path


def cmd_backup(args: argparse.Namespace) -> int:
    """``kept backup create|verify|restore|list`` (issue 16)."""
    if args.backup_command == "create":
        return _backup_create(args)
    if args.backup_command == "list":
        return _backup_list(args)
    from app import bootstrap
    path = _backup_file(args.file, new=False)
    if args.backup_command == "verify":
        chk = bootstrap.verify_backup(path, password(args, "Backup password: "))
        print(f"Backup OK: made {when(chk.created_at)}, {_held(chk.memories)}, "
              f"{words.count(chk.links, 'link', 'links')}, "
              f"{words.count(chk.history, 'history entry', 'history entries')} and the search "
              "index; every part decrypted and checked.")
        return 0
    from app.errors import VaultExists
    folder = Path(args.new_folder).expanduser().absolute()
    if bootstrap.vault_exists(folder):  # said before the password is asked
        raise VaultExists("A vault already exists there; restoring never overwrites one. "
                          "Name a new or empty folder.")
    bootstrap.check_new_vault_folder(folder)
    chk = bootstrap.restore_backup(path, password(args, "Backup password: "), folder)
    print(f"Restored {_held(chk.memories)} (made {when(chk.created_at)}) into {folder}; "
          "the database passed its integrity check.")
    print(f"It opens with the backup's password: kept --vault '{folder}' status. It has no "
          "recovery code; make one with `kept recovery-code`.")
    return 0


def _backup_create(args: argparse.Namespace) -> int:
    target = _backup_file(args.file, new=True)
    own = _backup_password(args) if args.own_password or args.backup_password_file else None
    vault = open_vault(args, load_model=False)
    try:
        rec = vault.backup(target, own, progress=progress("Backing up")).value
    finally:
        vault.lock()
    print(f"Backed up {_held(rec.memories)}, {words.count(rec.links, 'link', 'links')}, "
          f"{words.count(rec.history, 'history entry', 'history entries')} and the search "
          f"index to {rec.path} ({rec.bytes / 1e6:.1f} MB, encrypted; read back and checked).")
    print("It opens with " + ("its own password." if own else
                              "the vault's password as it is now (a later password "
                              "change does not change it)."))
    return 0


def _held(n: int) -> str:
    """A backup's memories: every one the vault holds, not only the active ones the window
    counts (issue 25: "Backed up 42" beside 41 memories)."""
    return words.count(n, "memory", "memories") + " (every version, the Archive too)"


def _backup_list(args: argparse.Namespace) -> int:
    vault = open_vault(args, load_model=False)
    try:
        recs = vault.backups()
    finally:
        vault.lock()
    if args.json:
        print_json([asdict(r) for r in recs])
        return 0
    if not recs:
        print("This vault has made no backups.")
    for r in recs:
        state = "" if r.exists else "  (gone or replaced)"
        print(f"{when(r.created_at):<26}  {r.memories:>7,} memories  {r.path}{state}")
    return 0
