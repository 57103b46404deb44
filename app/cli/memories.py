"""Memories one at a time: ``kept remember``, ``recall`` (and ``recall --batch``), ``context``,
``explain``, ``correct``, ``history``, ``archive``, ``restore`` and ``rate``. Layer: app (headless front
end). Runs on: the main thread.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING

from app import words
from app.cli.common import (
    Subcommands,
    id_arg,
    int_in,
    open_vault,
    print_json,
    progress,
    time_arg,
    when,
)
from app.errors import ValidationError

if TYPE_CHECKING:
    from app.api import Filters, Hit


def add_parsers(sub: Subcommands) -> None:
    s = sub.add_parser("remember", help="store one memory; prints its id")
    s.add_argument("text")
    s.add_argument("--store", default="episodic")
    s.add_argument("--at", help="when it happened (ISO 8601)")
    s.add_argument("--agent", default="global")
    s.add_argument("--context")
    s.add_argument("--ref")
    s.set_defaults(fn=cmd_remember)

    s = sub.add_parser("recall", help="find memories")
    s.add_argument("query", nargs="?")
    s.add_argument("--k", type=_k, default=10)
    s.add_argument("--now", help="treat this time as now: nothing that happened later "
                   "(ISO 8601)")
    s.add_argument("--as-of", help="what was said and true then: happened by then, facts "
                   "as they stood (ISO 8601; a date alone: the end of that day)")
    s.add_argument("--known-at", help="what Kept had learned by then (ISO 8601; a date "
                   "alone: the end of that day)")
    s.add_argument("--agent")
    s.add_argument("--archived", action="store_true",
                   help="also what you archived (what decay archived is always searched, "
                   "ranked lower)")
    s.add_argument("--batch", help="JSON lines {qid, query, now?}")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_recall)

    s = sub.add_parser("context", help="assemble working-memory context for a query")
    s.add_argument("query")
    s.add_argument("--budget", type=_budget, help="tokens (default: the recall.context_budget "
                   "setting, 4000)")
    s.add_argument("--now", help="treat this time as now: nothing that happened later")
    s.add_argument("--as-of", help="what was said and true then (as for recall)")
    s.add_argument("--known-at", help="what Kept had learned by then (as for recall)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_context)

    s = sub.add_parser("explain", help="score breakdown and sources of a memory")
    s.add_argument("id", type=id_arg)
    s.add_argument("--query")
    s.add_argument("--now")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_explain)

    s = sub.add_parser("correct", help="replace a memory with a corrected version")
    s.add_argument("id", type=id_arg)
    s.add_argument("text")
    s.set_defaults(fn=cmd_correct)

    s = sub.add_parser("history", help="versions and history of a memory")
    s.add_argument("id", type=id_arg)
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_history)

    s = sub.add_parser("archive", help="archive a memory (out of default recall)")
    s.add_argument("id", type=id_arg)
    s.set_defaults(fn=cmd_archive, restore=False)

    s = sub.add_parser("restore", help="bring an archived memory back")
    s.add_argument("id", type=id_arg)
    s.set_defaults(fn=cmd_archive, restore=True)

    s = sub.add_parser("rate", help="say how an event went: well, mixed or badly (or clear)")
    s.add_argument("id", type=id_arg)
    s.add_argument("rating", choices=tuple(RATING_WORDS),
                   help="well (+1), mixed (0), badly (-1), or clear")
    s.add_argument("--outcome", default=None, help="what happened, in your words")
    s.set_defaults(fn=cmd_rate)


def _k(text: str) -> int:
    return int_in(text, 1, 10_000, "--k")


def _budget(text: str) -> int:
    return int_in(text, 1, 10_000_000, "--budget")


def cmd_remember(args: argparse.Namespace) -> int:
    from app.domain.memory import Draft, Store
    from app.facade import Vault
    try:
        store = Store.parse(args.store)
    except ValueError as exc:  # only the store: a bad --at once said "Unknown store" too
        raise ValidationError(f"Unknown store {args.store!r}.") from exc
    d = Vault.validate_draft(Draft(text=args.text, store=store,
                                   occurred_at=time_arg(args.at, "--at"),
                                   agent=args.agent, context=args.context, ref=args.ref))
    # Every field checked first: bad input never waits for a password. Kept open elsewhere
    # takes a memory in an assistant's scope only from a connection that proved the password.
    vault = open_vault(args)
    try:
        res = vault.remember(d)
    finally:
        vault.lock()
    print(res.value)
    return 0


def _hit_json(h: Hit) -> dict[str, object]:
    from app.services.currency import to_json
    return {"id": h.id, "store": h.store, "text": h.text, "score": h.score, "refs": list(h.refs),
            "currency": to_json(h.currency)}


def _day_end(text: str | None) -> float | None:
    """A time-travel point: ISO 8601; a date alone means the end of that day."""
    ts = time_arg(text)
    if ts is not None and text is not None and len(text.strip()) == 10:
        ts += 86_400 - 0.001
    return ts


def _filters(args: argparse.Namespace) -> Filters:
    from app.api import Filters
    return Filters(as_of=_day_end(args.as_of), known_at=_day_end(args.known_at),
                   agent=getattr(args, "agent", None),
                   include_archived=getattr(args, "archived", False))


def cmd_recall(args: argparse.Namespace) -> int:
    if args.batch:
        return _recall_batch(args)
    if not args.query:
        raise ValidationError("Give a query, or --batch FILE.")
    vault = open_vault(args)
    try:
        if not vault.semantic_search and not args.json:
            print("kept: semantic search is off (no model); lexical recall only", file=sys.stderr)
        hits = vault.recall(args.query, k=args.k, now=time_arg(args.now), filters=_filters(args))
    finally:
        vault.lock()
    if args.json:
        print_json({"query": args.query, "hits": [_hit_json(h) for h in hits]})
        return 0
    if not hits:
        print("No memories match.")
    from app.services.currency import note
    for n, h in enumerate(hits, 1):
        refs = f"  refs: {', '.join(h.refs)}" if h.refs else ""
        aside = f" {note(h.currency)}" if note(h.currency) else ""
        print(f"{n:>2}. [{h.id}] ({words.store_one(h.store)}, {h.score:.3f}) {h.text}{aside}"
              f"{refs}")
    return 0


def _recall_batch(args: argparse.Namespace) -> int:
    from app.validation import check_string, check_text
    queries: list[tuple[str, str, float | None]] = []
    errors = []
    try:
        # surrogateescape: a byte that is not UTF-8 is reported with its line number.
        with open(args.batch, encoding="utf-8", errors="surrogateescape") as fh:
            lines = list(fh)
    except OSError as exc:
        raise ValidationError(f"Cannot read {args.batch}: {exc.strerror or exc}.") from exc
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(check_string(line, "the line", limit=1_000_000))
            if not isinstance(obj, dict) or not isinstance(obj.get("query"), str):
                raise ValueError("needs a string 'query'")
            qid = obj.get("qid", n)
            if isinstance(qid, bool) or not isinstance(qid, (str, int)):
                raise ValueError("'qid' must be a string or a number")
            queries.append((check_string(str(qid), "'qid'"), check_text(obj["query"], "'query'"),
                            time_arg(obj.get("now"), "'now'")))
        except (ValueError, RecursionError, ValidationError) as exc:
            errors.append(f"line {n}: {exc if str(exc) else type(exc).__name__}")
    if errors:
        raise ValidationError("Malformed batch file: " + "; ".join(errors[:10]))
    vault = open_vault(args)
    try:
        results = vault.recall_batch(queries, k=args.k, filters=_filters(args),
                                     progress=progress("Recalling"))
    finally:
        vault.lock()
    for qid, hits in results:
        print_json({"qid": qid, "hits": [_hit_json(h) for h in hits]})
    return 0


def cmd_context(args: argparse.Namespace) -> int:
    vault = open_vault(args)
    try:
        ctx = vault.context(args.query, budget=args.budget, now=time_arg(args.now),
                            filters=_filters(args))
    finally:
        vault.lock()
    if args.json:
        print_json(asdict(ctx))
    else:
        print(ctx.render())
        print(f"\n({ctx.used} of {ctx.budget} tokens, {len(ctx.items)} items)")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    vault = open_vault(args)
    try:
        ex = vault.explain(args.id, args.query, now=time_arg(args.now))
    finally:
        vault.lock()
    if args.json:
        print_json(asdict(ex))
        return 0
    print(f"[{ex.id}] {words.store_one(ex.store)}, {ex.status}, "
          f"{words.tier_word(ex.tier).lower()} ({words.tier_tip(ex.tier).split(': ', 1)[-1]})")
    print(f"  {ex.text}")
    print(f"  strength {words.strength_word(ex.scores['composite'])}; scores: "
          + ", ".join(f"{k} {v:.3f}" for k, v in ex.scores.items()))
    if ex.breakdown is not None:
        print("  for this query: " + ", ".join(f"{k} {v:.3f}" for k, v in ex.breakdown.items()))
    for s in ex.sources:
        who = f"{s.speaker} said" if s.speaker else words.store_one(s.store)
        ref = f" (ref {s.ref})" if s.ref else ""
        print(f"  source [{s.id}] {words.when_iso(s.occurred_at)}{ref}, {who}: {s.text}")
    if ex.routing is not None:
        r = ex.routing
        print(f"  {words.routing_sentence(r.salience, r.stores, r.reason, r.by)}")
    for link in ex.links:
        outgoing = link.src == ex.id
        other = link.dst if outgoing else link.src
        print(f"  {words.link_sentence(link.kind, outgoing, f'memory [{other}]')}")
    return 0


def cmd_correct(args: argparse.Namespace) -> int:
    vault = open_vault(args)
    try:
        new = vault.correct(args.id, args.text).value
    finally:
        vault.lock()
    print(new)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    vault = open_vault(args, load_model=False)
    try:
        h = vault.history(args.id)
    finally:
        vault.lock()
    if args.json:
        print_json(asdict(h))
        return 0
    print(f"Versions of memory {args.id} (oldest first):")
    for v in h.versions:
        mark = " (confirmed)" if v.user_validated else ""
        print(f"  [{v.id}] {when(v.created_at)}, {v.status}{mark}: {v.text}")
    print("History:")
    for e in h.entries:
        detail = f" ({e.detail})" if e.detail else ""
        print(f"  [{e.memory_id}] {words.history_line(e.action, True, at=when(e.at))}"
              f"{detail}")
    return 0


def cmd_archive(args: argparse.Namespace) -> int:
    vault = open_vault(args, load_model=False)
    try:
        (vault.restore if args.restore else vault.archive)(args.id)
    finally:
        vault.lock()
    print(f"{'Restored' if args.restore else 'Archived'} memory {args.id}.")
    return 0


RATING_WORDS = {"well": 1, "mixed": 0, "badly": -1, "clear": None}


def cmd_rate(args: argparse.Namespace) -> int:
    """``kept rate ID well|mixed|badly|clear [--outcome WORDS]`` (issue 27 item 8)."""
    vault = open_vault(args, load_model=False)
    rating = RATING_WORDS[args.rating]
    try:
        vault.rate_episode(args.id, rating, args.outcome)
    finally:
        vault.lock()
    from app.services.outcomes import RATINGS
    said = RATINGS[rating] if rating is not None else (
        "outcome noted" if args.outcome else "rating cleared")
    print(f"Memory {args.id}: {said}.")
    return 0
