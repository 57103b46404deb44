"""Forgetting for good: ``kept forget`` (the plan first, then the person's yes) and the
person's answer to an assistant's forget request, ``kept pending-forgets`` (also
``kept forget --pending [ID]`` / ``--decline ID``). Layer: app (headless front end). Runs on:
the main thread.
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
    printable,
    progress,
    when,
)
from app.errors import NotFound, ValidationError

if TYPE_CHECKING:
    from app.api import BackupRemade, ForgetPlan, VaultAPI


def add_parsers(sub: Subcommands) -> None:
    s = sub.add_parser("forget", help="forget memories for good (shows the plan first)")
    s.add_argument("query", nargs="?", help="forget every memory containing this text")
    s.add_argument("--id", type=id_arg, nargs="+")
    s.add_argument("--entity", help="a person, project or place, and everything about them")
    s.add_argument("--keep-sources", action="store_true",
                   help="keep the source turns and episodes the memories came from")
    s.add_argument("--pending", nargs="?", const=0, type=id_arg, metavar="REQUEST",
                   help="assistants' forget requests: list them, or confirm REQUEST (its plan "
                   "is shown first)")
    s.add_argument("--decline", type=id_arg, metavar="REQUEST",
                   help="decline an assistant's forget request (nothing is forgotten)")
    s.add_argument("--yes", action="store_true", help="do not ask")
    s.add_argument("--remake-backups", action="store_true",
                   help="after the forget, make the backups that held it again without it")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_forget)

    s = sub.add_parser("pending-forgets", help="forget requests from assistants, waiting for you")
    s.add_argument("--confirm", type=int, metavar="ID", help="show the plan, then forget it")
    s.add_argument("--decline", type=int, metavar="ID", help="decline the request")
    s.add_argument("--yes", action="store_true", help="with --confirm: do not ask")
    s.set_defaults(fn=cmd_pending_forgets)


def _plan_json(plan: ForgetPlan) -> dict[str, object]:
    return {"items": [asdict(i) for i in plan.items], "groups": plan.groups(),
            "rows": plan.rows, "total_rows": plan.total_rows,
            "memories": len(plan.items), "include_sources": plan.include_sources,
            "staying": [asdict(i) for i in plan.staying], "irreversible": True,
            "backups": [asdict(b) for b in plan.backups]}


def _groups(plan: ForgetPlan) -> list[tuple[str, int]]:
    """The plan's memories in the window's words ("the fact", "2 earlier versions")."""
    return words.forget_groups((i.role, i.store) for i in plan.items)


def _print_plan(plan: ForgetPlan) -> None:
    print(f"Forget plan: {words.forget_sentence(_groups(plan))}.")
    for label, n in _groups(plan):
        print(f"  {n:>6,}  {label}")
    for label, n in words.also_gone({**plan.rows, "summaries": plan.entity_summaries}):
        print(f"  {n:>6,}  {label}")
    print("Memories that will go:")
    for item in plan.items:
        text = item.text if len(item.text) <= 70 else item.text[:67] + "..."
        where = f"  ({item.why})" if item.why else ""
        print(f"  [{item.id}] {words.store_one(item.store):<12} {text}{where}")
    if plan.staying:
        print("Linked memories that stay:")
        for item in plan.staying:
            text = item.text if len(item.text) <= 50 else item.text[:47] + "..."
            print(f"  [{item.id}] {words.store_one(item.store):<12} {text}: {item.why}")
    if plan.backups:
        print(f"Backups made earlier that still hold some of it ({len(plan.backups)}):")
        for b in plan.backups:
            print(f"  {b.path}")
        print("  After the forget, Kept can make them again without it (--remake-backups).")
    print("This cannot be undone: the memories and everything listed are removed physically.")


def forget_confirmed(args: argparse.Namespace) -> bool:
    """``--yes``, or the person typed 'forget' at a terminal, after seeing the plan. No
    terminal and no ``--yes``: nothing happens (the caller exits 3)."""
    if args.yes:
        return True
    if not sys.stdin.isatty():
        print("kept: not confirmed (no terminal): nothing was changed. "
              "Run again with --yes to forget.", file=sys.stderr)
        return False
    if input("Type 'forget' to remove all of this for good: ").strip().lower() != "forget":
        print("Cancelled; nothing was changed.")
        return False
    return True


def cmd_forget(args: argparse.Namespace) -> int:
    if args.pending is not None or args.decline is not None:
        return pending_forgets(args, confirm=args.pending or None, decline=args.decline)
    if not (args.query or args.id or args.entity):
        raise ValidationError("Say what to forget: a QUERY, --id ID... or --entity NAME.")
    vault = open_vault(args)
    try:
        plan = vault.forget_plan(ids=args.id or (), query=args.query, entity=args.entity,
                                 include_sources=not args.keep_sources)
        if not plan.items and not plan.entity_ids:
            print("Nothing matches; nothing to forget.")
            return 0
        if args.json:
            print_json({"plan": _plan_json(plan)})
        else:
            _print_plan(plan)
        if not forget_confirmed(args):
            return 3
        report = vault.forget(plan).value
        remade = _remake_after_forget(args, vault, plan) if plan.backups else None
    finally:
        vault.lock()
    if args.json:
        out: dict[str, object] = {"report": asdict(report)}
        if remade is not None:
            out["backups"] = [asdict(r) for r in remade]
        print_json(out)
    else:
        groups = _groups(plan)
        if sum(n for _w, n in groups) != report.memories:  # forget deletes the plan or refuses
            groups = [(words.count(report.memories, "memory", "memories"), report.memories)]
        print(f"Forgot {words.forget_sentence(groups)}. {report.note}")
        if remade is not None:
            _print_remade(plan, remade)
    return 0


def _remake_after_forget(args: argparse.Namespace, vault: VaultAPI, plan: ForgetPlan
                         ) -> tuple[BackupRemade, ...]:
    """``--remake-backups``, or yes to the question on a terminal: the backups that held what
    was forgotten are made again without it (each replacing its old file). Empty: not asked
    for (the report then says which files still hold it)."""
    go = args.remake_backups
    if not go and not args.json and sys.stdin.isatty():
        n = len(plan.backups)
        answer = input(f"Make the {n} backup{'s' if n != 1 else ''} listed above again "
                       "without it (the old files are replaced)? [y/N] ")
        go = answer.strip().lower() in ("y", "yes")
    if not go:
        return ()
    return vault.remake_backups([b.id for b in plan.backups],
                                progress=progress("Re-making backups")).value


def _print_remade(plan: ForgetPlan, remade: tuple[BackupRemade, ...]) -> None:
    if not remade:
        print(f"{len(plan.backups)} backup file(s) made earlier still hold what was forgotten "
              "(not re-made): delete them, or run the forget again with --remake-backups "
              "next time:")
        for b in plan.backups:
            print(f"  {b.path}")
        return
    for r in remade:
        print(f"Backup {r.path}: {r.message}.")


def cmd_pending_forgets(args: argparse.Namespace) -> int:
    return pending_forgets(args, confirm=args.confirm, decline=args.decline)


def pending_forgets(args: argparse.Namespace, *, confirm: int | None,
                    decline: int | None) -> int:
    """List assistants' forget requests; or confirm one (its plan first, then a question);
    or decline one. ``kept forget --pending [ID]`` and ``kept pending-forgets`` call this."""
    vault = open_vault(args, load_model=False)
    try:
        if decline is not None:
            vault.close_pending_forget(decline, None)
            print(f"Declined request {decline}; nothing was forgotten.")
            return 0
        if confirm is not None:
            plan = vault.pending_forget_plan(confirm)
            _print_plan(plan)
            if not forget_confirmed(args):
                return 3
            report = vault.close_pending_forget(confirm, plan).value
            n = 0 if report is None else report.memories
            groups = _groups(plan)
            if sum(c for _w, c in groups) != n:  # the plan goes whole or not at all
                groups = [(words.count(n, "memory", "memories"), n)]
            print(f"Forgot {words.forget_sentence(groups)} for good (request {confirm}).")
            return 0
        requests = vault.pending_forgets("pending")
        texts = _texts(vault, [i for r in requests for i in r.memory_ids])
    finally:
        vault.lock()
    if not requests:
        print("No forget requests wait for you.")
    for r in requests:
        ids = ", ".join(str(i) for i in r.memory_ids)
        print(f"[{r.id}] {r.agent} asks to forget {ids} ({when(r.created_at)}): {r.reason}")
        for mid in r.memory_ids:  # what would go, in the person's words (issue 26)
            print(printable(f"    [{mid}] {texts.get(int(mid), '(already gone)')}"))
    if requests:
        print("Confirm with `kept forget --pending ID`, or `kept forget --decline ID`.")
    return 0


def _texts(vault: VaultAPI, ids: list[int]) -> dict[int, str]:
    """Each id's text, shortened to a line (the memories still there)."""
    out: dict[int, str] = {}
    for mid in dict.fromkeys(ids):
        try:
            out[mid] = words.short(vault.get(mid).text, 100)
        except NotFound:
            continue
    return out
