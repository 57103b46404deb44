"""The ``kept`` command. Layer: app (headless composition root). Runs on: the main thread.

Password sources, in order: ``--password-file FILE``, the ``KEPT_PASSWORD`` environment variable
(for scripts; visible to other processes of the same user on some systems), else a prompt.
Exit codes: 0 ok, 1 unexpected error, 2 wrong password / bad vault / bad input, 3 a forget plan
was shown but not confirmed, 4 not found, 5 the disk is full or failing (what was saved before
stays saved).
"""

from __future__ import annotations

import argparse
import getpass
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from app import __version__
from app.errors import AppError, ValidationError

log = logging.getLogger("kept.cli")


def _read_secret_file(path: str) -> str:
    try:
        text = Path(path).read_text("utf-8")
    except OSError as exc:
        raise ValidationError(f"Cannot read the password file: {exc.strerror}.") from exc
    return text.rstrip("\r\n")


def password(args: argparse.Namespace, prompt: str = "Password: ") -> str:
    if getattr(args, "password_file", None):
        return _read_secret_file(args.password_file)
    env = os.environ.get("KEPT_PASSWORD")
    if env is not None:
        return env
    if not sys.stdin.isatty():
        raise ValidationError("No password: use --password-file, KEPT_PASSWORD or a terminal.")
    return getpass.getpass(prompt)


def new_password(args: argparse.Namespace) -> str:
    if getattr(args, "new_password_file", None):
        return _read_secret_file(args.new_password_file)
    env = os.environ.get("KEPT_NEW_PASSWORD")
    if env is not None:
        return env
    if not sys.stdin.isatty():
        raise ValidationError(
            "No new password: use --new-password-file, KEPT_NEW_PASSWORD or a terminal.")
    first = getpass.getpass("New password: ")
    if first != getpass.getpass("Repeat new password: "):
        raise ValidationError("The two passwords differ; nothing was changed.")
    return first


def vault_dir(args: argparse.Namespace) -> Path:
    from storage.paths import default_vault_dir
    return Path(args.vault).expanduser() if args.vault else default_vault_dir()


def open_vault(args: argparse.Namespace, *, load_model: bool = True) -> Any:
    from app.errors import VaultNotFound
    from app.facade import Vault
    from storage.unlock import vault_exists
    folder = vault_dir(args)
    if not vault_exists(folder):  # say so before asking for a password
        raise VaultNotFound(f"No vault at {folder}. Create one with `kept init`, or name "
                            "another folder with --vault.")
    return Vault.open(folder, password(args), load_model=load_model, threaded=False,
                      use_chroma=False)


def _progress(label: str) -> Callable[[int, int], None] | None:
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


def _ts(text: str | None) -> float | None:
    if text is None:
        return None
    from app.clock import parse_iso
    try:
        return parse_iso(text)
    except ValueError as exc:
        raise ValidationError(f"Not an ISO 8601 time: {text!r}") from exc


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, ensure_ascii=False, default=str))


# --- commands --------------------------------------------------------------------------------

def cmd_init(args: argparse.Namespace) -> int:
    from app.facade import Vault
    from storage.crypto import KdfParams
    folder = vault_dir(args)
    pw = new_password(args) if not (args.password_file or "KEPT_PASSWORD" in os.environ) \
        else password(args)
    if len(pw) < 8 and not args.allow_weak:
        raise ValidationError("Choose a password of at least 8 characters (or --allow-weak).")
    kdf = None
    if args.kdf_memory_mib:
        kdf = KdfParams(m=args.kdf_memory_mib * 1024, t=args.kdf_time or 3)
    res = Vault.create(folder, pw, kdf=kdf, recovery=args.recovery_code, load_model=False,
                       threaded=False)
    st = res.vault.status()
    res.vault.lock()
    print(f"Created vault {st.vault_id} at {folder}")
    print(f"Password protection: Argon2id {st.kdf['m_kib'] // 1024} MiB, t={st.kdf['t']}, "
          f"p={st.kdf['p']} ({res.kdf_seconds:.2f} s)")
    if res.recovery_code:
        print("Recovery code (shown once; print it and keep it safe):")
        print(f"    {res.recovery_code}")
    else:
        print("No recovery code: if you forget the password, the vault cannot be opened. "
              "Add one with `kept init --recovery-code` on a new vault.")
    return 0


def cmd_passwd(args: argparse.Namespace) -> int:
    vault = open_vault(args, load_model=False)
    try:
        old = password(args)
        new = new_password(args)
        if len(new) < 8 and not args.allow_weak:
            raise ValidationError("Choose a password of at least 8 characters (or --allow-weak).")
        vault.change_password(old, new)
    finally:
        vault.lock()
    print("Password changed. The database was not rewritten. Old copies of the key file still "
          "open with the old password; run `kept rotate-key` if it may be compromised.")
    return 0


def cmd_rotate_key(args: argparse.Namespace) -> int:
    vault = open_vault(args, load_model=False)
    try:
        vault.rotate_data_key(password(args))
    finally:
        vault.lock()
    print("Data key rotated: every page was rewritten under a new key. Any recovery code or "
          "remembered device was removed; set them up again if you want them.")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    vault = open_vault(args)
    try:
        st = vault.status()
    finally:
        vault.lock()
    if args.json:
        _print_json(asdict(st))
        return 0
    print(f"Vault      {st.vault_id}")
    print(f"Path       {st.path}")
    print(f"Schema     {st.schema_version}")
    print(f"Key        Argon2id v{st.kdf['version']:#x} m={st.kdf['m_kib']} KiB t={st.kdf['t']} "
          f"p={st.kdf['p']}")
    print("Memories   " + ", ".join(f"{k} {v}" for k, v in st.totals.items()))
    print(f"Model      {'found at ' + st.model_dir if st.model_found else 'not found'}")
    if not st.semantic_search:
        print("           semantic search is off: lexical recall only (set KEPT_MODEL_DIR)")
    return 0


def cmd_remember(args: argparse.Namespace) -> int:
    from app.domain.memory import Draft, Store
    vault = open_vault(args)
    try:
        d = Draft(text=args.text, store=Store.parse(args.store), occurred_at=_ts(args.at),
                  agent=args.agent, context=args.context, ref=args.ref)
        res = vault.remember(d)
    except ValueError as exc:
        raise ValidationError(f"Unknown store {args.store!r}.") from exc
    finally:
        vault.lock()
    print(res.value)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from app.services.importer import parse_import
    try:
        with open(args.file, encoding="utf-8") as fh:
            turns = parse_import(fh)
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"Cannot read {args.file}: {exc}") from exc
    vault = open_vault(args)
    try:
        if not vault.semantic_search:
            print("kept: semantic search is off (no model); importing for lexical recall only",
                  file=sys.stderr)
        res = vault.import_turns(turns, progress=_progress("Importing"))
    finally:
        vault.lock()
    r = res.value
    print(f"Imported {r.added} turn(s) from {r.sessions} session(s); "
          f"{r.skipped_duplicates} already present.")
    return 0


def _hit_json(h: Any) -> dict[str, Any]:
    return {"id": h.id, "store": h.store, "text": h.text, "score": h.score, "refs": list(h.refs)}


def _filters(args: argparse.Namespace) -> Any:
    from app.services.recall import Filters
    return Filters(as_of=_ts(args.as_of), agent=args.agent,
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
        hits = vault.recall(args.query, k=args.k, now=_ts(args.now), filters=_filters(args))
    finally:
        vault.lock()
    if args.json:
        _print_json({"query": args.query, "hits": [_hit_json(h) for h in hits]})
        return 0
    if not hits:
        print("No memories match.")
    for n, h in enumerate(hits, 1):
        refs = f"  refs: {', '.join(h.refs)}" if h.refs else ""
        print(f"{n:>2}. [{h.id}] ({h.store}, {h.score:.3f}) {h.text}{refs}")
    return 0


def _recall_batch(args: argparse.Namespace) -> int:
    queries: list[tuple[str, str, float | None]] = []
    errors = []
    with open(args.batch, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                if not isinstance(obj, dict) or not isinstance(obj.get("query"), str):
                    raise ValueError("needs a string 'query'")
                queries.append((str(obj.get("qid", n)), obj["query"], _ts(obj.get("now"))))
            except (ValueError, ValidationError) as exc:
                errors.append(f"line {n}: {exc}")
    if errors:
        raise ValidationError("Malformed batch file: " + "; ".join(errors[:10]))
    vault = open_vault(args)
    try:
        results = vault.recall_batch(queries, k=args.k, filters=_filters(args),
                                     progress=_progress("Recalling"))
    finally:
        vault.lock()
    for qid, hits in results:
        _print_json({"qid": qid, "hits": [_hit_json(h) for h in hits]})
    return 0


def cmd_context(args: argparse.Namespace) -> int:
    vault = open_vault(args)
    try:
        ctx = vault.context(args.query, budget=args.budget, now=_ts(args.now))
    finally:
        vault.lock()
    if args.json:
        _print_json(asdict(ctx))
    else:
        print(ctx.render())
        print(f"\n({ctx.used} of {ctx.budget} tokens, {len(ctx.items)} items)")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    vault = open_vault(args)
    try:
        ex = vault.explain(args.id, args.query, now=_ts(args.now))
    finally:
        vault.lock()
    if args.json:
        _print_json(asdict(ex))
        return 0
    print(f"[{ex.id}] {ex.store}, {ex.status}, tier {ex.tier}")
    print(f"  {ex.text}")
    print("  scores: " + ", ".join(f"{k} {v:.3f}" for k, v in ex.scores.items()))
    if ex.breakdown is not None:
        print("  for this query: " + ", ".join(f"{k} {v:.3f}" for k, v in ex.breakdown.items()))
    for s in ex.sources:
        print(f"  source [{s['id']}] {s['store']} {s['occurred_at']} ref={s['ref']}: {s['text']}")
    for link in ex.links:
        print(f"  link {link['src']} -{link['kind']}-> {link['dst']}")
    return 0


def cmd_self_check(args: argparse.Namespace) -> int:
    from storage.selfcheck import passed, report_lines, run_checks
    checks = run_checks()
    if args.json:
        _print_json({"ok": passed(checks), "checks": [asdict(c) for c in checks]})
    else:
        print("\n".join(report_lines(checks)))
    return 0 if passed(checks) else 1


def cmd_demo(args: argparse.Namespace) -> int:
    from app.demo import run_demo
    return run_demo(vault_dir(args) if args.vault else None)


def _plan_json(plan: Any) -> dict[str, Any]:
    return {"items": [asdict(i) for i in plan.items], "groups": plan.groups(),
            "rows": plan.rows, "total_rows": plan.total_rows,
            "memories": len(plan.items), "include_sources": plan.include_sources,
            "irreversible": True}


def _print_plan(plan: Any) -> None:
    print(f"Forget plan: {len(plan.items)} memories, {plan.total_rows} rows in all.")
    for kind, n in plan.groups().items():
        print(f"  {n:>6}  {kind}")
    print("Memories that will go:")
    for item in plan.items:
        text = item.text if len(item.text) <= 70 else item.text[:67] + "..."
        print(f"  [{item.id}] {item.role:<8} {item.store:<10} {text}")
    print("This cannot be undone: the memories and everything listed are removed physically.")


def cmd_forget(args: argparse.Namespace) -> int:
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
            _print_json({"plan": _plan_json(plan)})
        else:
            _print_plan(plan)
        if not args.yes:
            if not sys.stdin.isatty():
                print("kept: not confirmed (no terminal): nothing was changed. "
                      "Run again with --yes to forget.", file=sys.stderr)
                return 3
            answer = input("Type 'forget' to remove all of this for good: ")
            if answer.strip().lower() != "forget":
                print("Cancelled; nothing was changed.")
                return 3
        report = vault.forget(plan).value
    finally:
        vault.lock()
    if args.json:
        _print_json({"report": asdict(report)})
    else:
        print(f"Forgot {report.memories} memories ({report.total_rows} rows). {report.note}")
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
    from app.clock import to_iso
    vault = open_vault(args, load_model=False)
    try:
        h = vault.history(args.id)
    finally:
        vault.lock()
    if args.json:
        _print_json(asdict(h))
        return 0
    print(f"Versions of memory {args.id} (oldest first):")
    for v in h.versions:
        mark = " (confirmed)" if v.user_validated else ""
        print(f"  [{v.id}] {to_iso(v.created_at)} {v.status}{mark}: {v.text}")
    print("History:")
    for e in h.entries:
        detail = f" ({e.detail})" if e.detail else ""
        print(f"  {to_iso(e.at)} [{e.memory_id}] {e.action}{detail}")
    return 0


def cmd_archive(args: argparse.Namespace) -> int:
    vault = open_vault(args, load_model=False)
    try:
        (vault.restore if args.restore else vault.archive)(args.id)
    finally:
        vault.lock()
    print(f"{'Restored' if args.restore else 'Archived'} memory {args.id}.")
    return 0


def cmd_consolidate(args: argparse.Namespace) -> int:
    vault = open_vault(args)
    try:
        report = vault.consolidate(now=_ts(args.now), progress=_progress("Consolidating")).value
    finally:
        vault.lock()
    if args.json:
        _print_json(asdict(report))
        return 0
    print(f"Run {report.run_id}: {report.seconds:.2f} s"
          + (f", {report.failed_batches} failed batch(es) to retry" if report.failed_batches
             else ""))
    for k, v in sorted(report.counts.items()):
        print(f"  {k.replace('_', ' ')}: {v}")
    print(f"Undo with: kept undo {report.run_id}")
    return 0


def cmd_contradictions(args: argparse.Namespace) -> int:
    from app.clock import to_iso
    vault = open_vault(args, load_model=False)
    try:
        items = vault.contradictions(status=None if args.all else "open")
    finally:
        vault.lock()
    if args.json:
        _print_json([asdict(i) for i in items])
        return 0
    if not items:
        print("No contradictions waiting for you.")
    for i in items:
        print(f"#{i.id} ({i.status}, {i.reason})")
        for side, s in (("a", i.a), ("b", i.b)):
            print(f"  {side}: [{s['id']}] {to_iso(s['occurred_at'])} {s['text']}")
    if items and not args.all:
        print("Resolve with: kept resolve ID --keep a|b|both")
    return 0


def cmd_resolve(args: argparse.Namespace) -> int:
    vault = open_vault(args)
    try:
        if args.reopen:
            vault.reopen(args.id)
            print(f"Contradiction {args.id} is open again.")
            return 0
        if not args.keep:
            raise ValidationError("Choose --keep a, b, both or edit (or --reopen).")
        new = vault.resolve(args.id, args.keep, args.text).value
    finally:
        vault.lock()
    print(f"Resolved contradiction {args.id}: kept {args.keep}"
          + (f" (new version {new})" if new else ""))
    return 0


def cmd_undo(args: argparse.Namespace) -> int:
    vault = open_vault(args)
    try:
        counts = vault.undo_run(args.run_id).value
    finally:
        vault.lock()
    print(f"Undid run {args.run_id}: " + (", ".join(f"{k} {v}" for k, v in sorted(
        counts.items())) or "nothing to revert"))
    return 0


# --- parser ----------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kept", description="Kept: your assistant's memory, "
                                "encrypted on your machine.")
    p.add_argument("--version", action="version", version=f"kept {__version__}")
    p.add_argument("--vault", help="vault folder (default: the user data dir)")
    p.add_argument("--password-file", help="read the password from this file")
    p.add_argument("--debug", action="store_true", help="log ids, counts and timings to stderr")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("init", help="create a vault")
    s.add_argument("--new-password-file")
    s.add_argument("--recovery-code", action="store_true", help="also make a recovery code")
    s.add_argument("--allow-weak", action="store_true", help=argparse.SUPPRESS)
    s.add_argument("--kdf-memory-mib", type=int, help=argparse.SUPPRESS)
    s.add_argument("--kdf-time", type=int, help=argparse.SUPPRESS)
    s.set_defaults(fn=cmd_init)

    s = sub.add_parser("passwd", help="change the password (rewraps the key; O(1))")
    s.add_argument("--new-password-file")
    s.add_argument("--allow-weak", action="store_true", help=argparse.SUPPRESS)
    s.set_defaults(fn=cmd_passwd)

    s = sub.add_parser("rotate-key", help="re-encrypt everything under a new data key")
    s.set_defaults(fn=cmd_rotate_key)

    s = sub.add_parser("status", help="vault id, key parameters, counts, model")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_status)

    s = sub.add_parser("remember", help="store one memory; prints its id")
    s.add_argument("text")
    s.add_argument("--store", default="episodic")
    s.add_argument("--at", help="when it happened (ISO 8601)")
    s.add_argument("--agent", default="global")
    s.add_argument("--context")
    s.add_argument("--ref")
    s.set_defaults(fn=cmd_remember)

    s = sub.add_parser("import", help="import conversation turns (JSON lines)")
    s.add_argument("file")
    s.set_defaults(fn=cmd_import)

    s = sub.add_parser("recall", help="find memories")
    s.add_argument("query", nargs="?")
    s.add_argument("--k", type=int, default=10)
    s.add_argument("--now", help="treat this time as now (ISO 8601)")
    s.add_argument("--as-of", help="what was believed at this time (ISO 8601)")
    s.add_argument("--agent")
    s.add_argument("--archived", action="store_true", help="include archived memories")
    s.add_argument("--batch", help="JSON lines {qid, query, now?}")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_recall)

    s = sub.add_parser("context", help="assemble working-memory context for a query")
    s.add_argument("query")
    s.add_argument("--budget", type=int, default=4000)
    s.add_argument("--now")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_context)

    s = sub.add_parser("explain", help="score breakdown and sources of a memory")
    s.add_argument("id", type=int)
    s.add_argument("--query")
    s.add_argument("--now")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_explain)

    s = sub.add_parser("forget", help="forget memories for good (shows the plan first)")
    s.add_argument("query", nargs="?", help="forget every memory containing this text")
    s.add_argument("--id", type=int, nargs="+")
    s.add_argument("--entity", help="a person, project or place, and everything about them")
    s.add_argument("--keep-sources", action="store_true",
                   help="keep the source turns and episodes the memories came from")
    s.add_argument("--yes", action="store_true", help="do not ask")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_forget)

    s = sub.add_parser("correct", help="replace a memory with a corrected version")
    s.add_argument("id", type=int)
    s.add_argument("text")
    s.set_defaults(fn=cmd_correct)

    s = sub.add_parser("history", help="versions and history of a memory")
    s.add_argument("id", type=int)
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_history)

    s = sub.add_parser("archive", help="archive a memory (out of default recall)")
    s.add_argument("id", type=int)
    s.set_defaults(fn=cmd_archive, restore=False)

    s = sub.add_parser("restore", help="bring an archived memory back")
    s.add_argument("id", type=int)
    s.set_defaults(fn=cmd_archive, restore=True)

    s = sub.add_parser("consolidate", help="run background consolidation once")
    s.add_argument("--now")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_consolidate)

    s = sub.add_parser("contradictions", help="facts that disagree, waiting for you")
    s.add_argument("--all", action="store_true", help="include resolved ones")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_contradictions)

    s = sub.add_parser("resolve", help="settle a contradiction")
    s.add_argument("id", type=int)
    s.add_argument("--keep", choices=["a", "b", "both", "edit"])
    s.add_argument("--text", help="the corrected statement, with --keep edit")
    s.add_argument("--reopen", action="store_true", help="undo a resolution")
    s.set_defaults(fn=cmd_resolve)

    s = sub.add_parser("undo", help="revert a consolidation run")
    s.add_argument("run_id", type=int)
    s.set_defaults(fn=cmd_undo)

    s = sub.add_parser("self-check", help="check that SQLCipher, Argon2id, Chroma (in RAM), "
                       "the model and the keychain work on this machine; no vault needed")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_self_check)

    s = sub.add_parser("demo", help="create a demo vault, store and recall a few memories")
    s.set_defaults(fn=cmd_demo)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from storage.paths import private_umask
    private_umask()
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                        format="%(levelname)s %(threadName)s %(name)s: %(message)s")
    for noisy in ("chromadb", "apscheduler", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        return int(args.fn(args))
    except AppError as exc:
        print(f"kept: {exc.user_message}", file=sys.stderr)
        if exc.hint:
            print(f"kept: {exc.hint}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("kept: interrupted; nothing half-written was kept.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
