"""Consolidation and what it leaves for the person: ``kept consolidate``, ``contradictions``,
``resolve`` and ``undo``. Layer: app (headless front end). Runs on: the main thread.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING

from app import words
from app.cli.common import (
    Subcommands,
    id_arg,
    open_vault,
    print_json,
    progress,
    time_arg,
    when,
)
from app.errors import ValidationError

if TYPE_CHECKING:
    from app.api import ResolveChoice

EXIT_FAILED_BATCHES = 6  # consolidation ran; some batches failed and are retried next run


def add_parsers(sub: Subcommands) -> None:
    s = sub.add_parser("consolidate", help="run background consolidation once")
    s.add_argument("--now")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_consolidate)

    s = sub.add_parser("contradictions", help="facts that disagree, waiting for you")
    s.add_argument("--all", action="store_true", help="include resolved ones")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_contradictions)

    s = sub.add_parser("resolve", help="settle a contradiction or answer a review request")
    s.add_argument("id", type=id_arg)
    s.add_argument("--keep", choices=["a", "b", "both", "edit"], help="a contradiction")
    s.add_argument("--still-true", action="store_true",
                   help="a review request: the memory stays (confirmed by you)")
    s.add_argument("--edit", action="store_true",
                   help="a review request: replace the memory with --text")
    s.add_argument("--text", help="the corrected statement, with --keep edit or --edit")
    s.add_argument("--reopen", action="store_true", help="undo a resolution")
    s.set_defaults(fn=cmd_resolve)

    s = sub.add_parser("undo", help="revert a consolidation run")
    s.add_argument("run_id", type=id_arg)
    s.set_defaults(fn=cmd_undo)


def cmd_consolidate(args: argparse.Namespace) -> int:
    vault = open_vault(args, local="`kept consolidate` (while open, Kept consolidates on its "
                       "own schedule)")
    try:
        report = vault.consolidate(now=time_arg(args.now),
                                   progress=progress("Consolidating")).value
    finally:
        vault.lock()
    code = EXIT_FAILED_BATCHES if report.failed_batches else 0
    if args.json:
        print_json(asdict(report))
    else:
        print(f"Run {report.run_id}: {report.seconds:.2f} s")
        print(f"  What it changed: {words.run_counts(report.counts)}.")
        if report.llm_fallbacks:
            n = sum(report.llm_fallbacks.values())
            why = ", ".join(sorted(report.llm_fallbacks))
            print(f"  LLM extraction unavailable for {n} batch{'es' if n != 1 else ''} "
                  f"({why}): the offline rules were used. Check the endpoint in Settings.")
        print(f"Undo with: kept undo {report.run_id}")
    if code:
        # One line on stderr, with or without --json: what failed (error classes, no content).
        print(f"kept: run {report.run_id} finished with {report.failure_text}; they are "
              "retried on the next run (details in the log).", file=sys.stderr)
    return code


def cmd_contradictions(args: argparse.Namespace) -> int:
    vault = open_vault(args, load_model=False)
    try:
        items = vault.contradictions(status=None if args.all else "open")
    finally:
        vault.lock()
    if args.json:
        print_json([asdict(i) for i in items])
        return 0
    if not items:
        print("No contradictions or review requests waiting for you.")
    reviews = [i for i in items if i.kind == "review"]
    for i in items:
        if i.kind == "review":  # one memory, not two: an LLM asked to forget it
            print(f"#{i.id} (review request, {i.status}: {i.reason or 'asked to forget'})")
            print(f"  memory: [{i.a.id}] {when(i.a.occurred_at)}: {i.a.text}")
            continue
        print(f"#{i.id} ({i.status}, {i.reason})")
        for side, s in (("a", i.a), ("b", i.b)):
            print(f"  {side}: [{s.id}] {when(s.occurred_at)}: {s.text}")
        if i.kind == "change" and i.status == "open":  # an assistant's change (issue 26)
            print(f"  accept the change: kept resolve {i.id} --keep b (--keep a keeps yours)")
    if items and not args.all:
        if len(reviews) < len(items):
            print("Resolve a contradiction with: kept resolve ID --keep a|b|both|edit")
        if reviews:
            print("Answer a review request with: kept resolve ID --still-true, or "
                  "kept resolve ID --edit --text \"...\"; to forget the memory: "
                  "kept forget --id MEMORY")
    return 0


def cmd_resolve(args: argparse.Namespace) -> int:
    vault = open_vault(args)
    try:
        if args.reopen:
            vault.reopen(args.id)
            print(f"#{args.id} is open again (in the inbox).")
            return 0
        keep: ResolveChoice | None = (
            "still_true" if args.still_true else "edit" if args.edit else args.keep)
        if not keep or sum(map(bool, (args.keep, args.still_true, args.edit))) > 1:
            raise ValidationError("Choose one of --keep a|b|both|edit, --still-true, --edit "
                                  "or --reopen.")
        item = next(iter(vault.inbox_items([args.id])), None)
        if item is not None and item.kind == "review" and keep in ("a", "b", "both"):
            raise ValidationError(
                f"#{args.id} is a review request about one memory ({item.a.id}), not a "
                "contradiction: use --still-true or --edit --text \"...\", or forget it with "
                f"kept forget --id {item.a.id}.")
        new = vault.resolve(args.id, keep, args.text).value
    finally:
        vault.lock()
    if keep == "still_true":
        print(f"Review request {args.id}: the memory stays, confirmed by you.")
    elif item is not None and item.kind == "review":
        print(f"Review request {args.id}: replaced by your edit (new version {new}).")
    else:
        print(f"Resolved contradiction {args.id}: kept {keep}"
              + (f" (new version {new})" if new else ""))
    return 0


def cmd_undo(args: argparse.Namespace) -> int:
    vault = open_vault(args)
    try:
        undone = vault.undo_run(args.run_id).value
    finally:
        vault.lock()
    print(words.undo_text(args.run_id, undone.counts, done=True))
    return 0
