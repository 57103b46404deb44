"""Sharing an assistant's memory with every assistant: ``kept share ID`` (and ``--undo``).
Layer: app (headless front end). Runs on: the main thread.

A memory one assistant wrote is in its scope only; sharing makes it global (what the person
knows, seen by every assistant). It is the person's decision (``VaultAPI.share`` is marked
person: with Kept open, the password first) and asks before it does it, like ``forget``;
``--undo`` gives it back to the assistant that wrote it.
"""

from __future__ import annotations

import argparse
import sys

from app import words
from app.cli.common import Subcommands, id_arg, open_vault
from app.errors import ValidationError


def add_parsers(sub: Subcommands) -> None:
    s = sub.add_parser("share", help="share an assistant's memory with all assistants (asks "
                       "first; --undo gives it back)")
    s.add_argument("id", type=id_arg)
    s.add_argument("--undo", action="store_true",
                   help="undo a sharing: the memory is the assistant's own again")
    s.add_argument("--yes", action="store_true", help="do not ask")
    s.set_defaults(fn=cmd_share)


def _confirmed(args: argparse.Namespace, question: str) -> bool:
    """``--yes``, or y at a terminal. No terminal and no ``--yes``: nothing happens (exit 3)."""
    if args.yes:
        return True
    if not sys.stdin.isatty():
        print("kept: not confirmed (no terminal): nothing was changed. Run again with --yes.",
              file=sys.stderr)
        return False
    if input(f"{question} [y/N] ").strip().lower() not in ("y", "yes"):
        print("Cancelled; nothing was changed.")
        return False
    return True


def cmd_share(args: argparse.Namespace) -> int:
    vault = open_vault(args, load_model=False)
    try:
        m = vault.get(args.id)
        text = m.text if len(m.text) <= 70 else m.text[:67] + "..."
        print(f"[{m.id}] {words.store_one(m.store)}: {text}")
        if args.undo:
            if m.agent != "global":
                raise ValidationError(f"Memory {m.id} is {m.agent}'s own, not shared: there is "
                                      "no sharing to undo.")
            if not _confirmed(args, "Stop sharing it (only the assistant that wrote it will "
                                    "see it again)?"):
                return 3
            back = vault.unshare(args.id).value
            print(f"Memory {args.id} is {back}'s own again; other assistants no longer see it.")
            return 0
        if m.agent == "global":  # said before asking (the vault refuses it too)
            from app.facade import not_an_assistants
            raise ValidationError(not_an_assistants(m.id))
        print(f"Written by the assistant {m.agent}; only it sees it now.")
        if not _confirmed(args, "Share it with all assistants (it becomes yours: every "
                                "assistant sees it)?"):
            return 3
        writer = vault.share(args.id).value
    finally:
        vault.lock()
    print(f"Shared memory {args.id} (written by {writer}) with all assistants. "
          f"Undo: kept share {args.id} --undo")
    return 0
