"""The ``kept`` command. Layer: app (headless composition root). Runs on: the main thread.

Password sources, in order: ``--password-file FILE``, the ``KEPT_PASSWORD`` environment variable
(for scripts; visible to other processes of the same user on some systems), else a prompt.
Exit codes: 0 ok, 1 unexpected error, 2 wrong password / bad vault / bad input, 3 a forget plan
or an export was not confirmed, 4 not found, 5 the disk is full or failing (what was saved before
stays saved), 6 ``kept consolidate`` finished but some batches failed (kept for the next run),
141 the reader of stdout went away (``| head``; as a tool killed by SIGPIPE).
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
from typing import TYPE_CHECKING, Any, NoReturn

from app import __version__
from app.errors import AppError, ValidationError

if TYPE_CHECKING:
    from app.api import BackupRemade, Filters, ForgetPlan, Hit, ResolveChoice, VaultAPI
    from app.ipc.client import RemoteVault

log = logging.getLogger(__name__)
EXIT_FAILED_BATCHES = 6  # consolidation ran; some batches failed and are retried next run


def _read_secret_file(path: str, what: str = "the password file") -> str:
    try:
        text = Path(path).read_text("utf-8")
    except OSError as exc:
        raise ValidationError(f"Cannot read {what}: {exc.strerror}.") from exc
    except UnicodeDecodeError as exc:
        raise ValidationError(f"Cannot read {what}: it is not UTF-8 text.") from exc
    return text.rstrip("\r\n")


def _secret_env(name: str) -> str | None:
    """An environment variable holding a secret; non-UTF-8 bytes arrive as lone surrogates."""
    value = os.environ.get(name)
    if value is not None:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValidationError(f"{name} is not valid UTF-8 text.") from exc
    return value


def password(args: argparse.Namespace, prompt: str = "Password: ") -> str:
    if getattr(args, "password_file", None):
        return _read_secret_file(args.password_file)
    env = _secret_env("KEPT_PASSWORD")
    if env is not None:
        return env
    if not sys.stdin.isatty():
        raise ValidationError("No password: use --password-file, KEPT_PASSWORD or a terminal.")
    return getpass.getpass(prompt)


def recovery_code(args: argparse.Namespace) -> str:
    """``--recovery-code-file FILE``, ``KEPT_RECOVERY_CODE`` (scripts), else a prompt."""
    if getattr(args, "recovery_code_file", None):
        return _read_secret_file(args.recovery_code_file, "the recovery code file").strip()
    env = _secret_env("KEPT_RECOVERY_CODE")
    if env is not None:
        return env
    if not sys.stdin.isatty():
        raise ValidationError(
            "No recovery code: use --recovery-code-file, KEPT_RECOVERY_CODE or a terminal.")
    return getpass.getpass("Recovery code: ")


def new_password(args: argparse.Namespace) -> str:
    if getattr(args, "new_password_file", None):
        return _read_secret_file(args.new_password_file)
    env = _secret_env("KEPT_NEW_PASSWORD")
    if env is not None:
        return env
    if not sys.stdin.isatty():
        raise ValidationError(
            "No new password: use --new-password-file, KEPT_NEW_PASSWORD or a terminal.")
    first = getpass.getpass("New password: ")
    if first != getpass.getpass("Repeat new password: "):
        raise ValidationError("The two passwords differ; nothing was changed.")
    return first


def refuse_weak_password(pw: str, args: argparse.Namespace) -> None:
    """The length rule of app.validation, unless --allow-weak."""
    from app.validation import MIN_PASSWORD_LENGTH, password_too_short
    if password_too_short(pw) and not args.allow_weak:
        raise ValidationError(f"Choose a password of at least {MIN_PASSWORD_LENGTH} characters "
                              "(or --allow-weak).")


def vault_dir(args: argparse.Namespace) -> Path:
    from app import bootstrap
    folder = Path(args.vault).expanduser() if args.vault else bootstrap.default_vault_dir()
    # ``--vault`` naming a file, or a path below one, is bad input, said before anything else
    # (it used to end in NotADirectoryError from deep inside).
    for p in (folder, *folder.parents):
        if os.path.lexists(p):
            if not p.is_dir():
                raise ValidationError(f"{p} is a file, not a folder: --vault names a folder.")
            break
    return folder


def open_vault(args: argparse.Namespace, *, load_model: bool = True,
               local: str | None = None) -> VaultAPI:
    """The vault's owner (the window or ``kept serve``) when one answers on its socket: no
    password, no unlock, no model load, and ``vault.lock()`` only closes the connection. The
    person's decisions (the operations marked person on ``VaultAPI``: forget, correct,
    resolve, pairing...), and every call in strict mode, prove the password to the owner
    first: the client asks for it the first time the owner needs it. Otherwise the vault,
    unlocked in this process. ``local`` names a command that only runs on an unlocked vault in
    this process (key changes): refused while an owner runs."""
    from app import bootstrap
    from app.errors import VaultBusy, VaultNotFound
    from app.facade import Vault
    folder = vault_dir(args)
    owner = _owner(folder, lambda: password(args, f"Password of the Kept vault in {folder}: "))
    if owner is not None:
        if local is not None:
            owner.lock()
            raise VaultBusy(f"Kept is open for this vault (the window or `kept serve`): "
                            f"{local} needs it closed.",
                            hint="Do it in the window, or stop `kept serve` first.")
        return owner
    if not bootstrap.vault_exists(folder):  # say so before asking for a password
        raise VaultNotFound(f"No vault at {folder}. Create one with `kept init`, or name "
                            "another folder with --vault.")
    return Vault.open(folder, password(args), load_model=load_model, threaded=False,
                      use_chroma=False)


def _owner(folder: Path, ask: Callable[[], str] | None = None) -> RemoteVault | None:
    """A client of the process serving ``folder``, if one answers (issue 14)."""
    from app.ipc.protocol import socket_path
    if not socket_path(folder).exists():
        return None
    from app.errors import OwnerNotRunning
    from app.ipc.client import RemoteVault
    remote = RemoteVault.at(folder, password=ask)
    try:
        remote.ping()
    except OwnerNotRunning:
        return None
    return remote


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


def _ts(text: object, what: str = "The time") -> float | None:
    """ISO 8601 to epoch seconds; only times in the years 1 to 9999 UTC (``parse_time``)."""
    if text is None:
        return None
    from app.validation import parse_time
    return parse_time(text, what)


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, ensure_ascii=False, default=str))


# --- commands --------------------------------------------------------------------------------

def cmd_init(args: argparse.Namespace) -> int:
    from app import bootstrap
    from app.errors import VaultExists
    from app.facade import Vault
    folder = vault_dir(args)
    if bootstrap.vault_exists(folder):  # both said before any password prompt; create rechecks
        raise VaultExists()
    bootstrap.check_new_vault_folder(folder)
    pw = new_password(args) if not (args.password_file or "KEPT_PASSWORD" in os.environ) \
        else password(args)
    refuse_weak_password(pw, args)
    kdf = None
    if args.kdf_memory_mib:
        kdf = bootstrap.kdf_params(args.kdf_memory_mib * 1024, args.kdf_time or 3)
    res = Vault.create(folder, pw, kdf=kdf, recovery=args.recovery_code,
                       load_model=False, threaded=False)
    st = res.vault.status()
    res.vault.lock()
    print(f"Created vault {st.vault_id} at {folder}")
    print(f"Password protection: Argon2id {st.kdf.m_kib // 1024} MiB, t={st.kdf.t}, "
          f"p={st.kdf.p} ({res.kdf_seconds:.2f} s)")
    if res.recovery_code:
        print("Recovery code (shown once; print it and keep it safe):")
        print(f"    {res.recovery_code}")
    else:
        print("No recovery code: if you forget the password, the vault cannot be opened. "
              "Add one with `kept recovery-code`.")
    return 0


def cmd_passwd(args: argparse.Namespace) -> int:
    if args.recovery_code or args.recovery_code_file:
        return _passwd_with_recovery_code(args)
    vault = open_vault(args, load_model=False, local="changing the password")
    try:
        old = password(args)
        new = new_password(args)
        refuse_weak_password(new, args)
        vault.change_password(old, new)
    finally:
        vault.lock()
    print("Password changed. The database was not rewritten. Old copies of the key file still "
          "open with the old password; run `kept rotate-key` if it may be compromised.")
    return 0


def _passwd_with_recovery_code(args: argparse.Namespace) -> int:
    """Forgotten password: the recovery code, then a new password (twice at a prompt)."""
    from app import bootstrap
    from app.errors import VaultNotFound
    from app.facade import Vault
    folder = vault_dir(args)
    if not bootstrap.vault_exists(folder):
        raise VaultNotFound(f"No vault at {folder}. Create one with `kept init`, or name "
                            "another folder with --vault.")
    code = recovery_code(args)
    bootstrap.check_recovery_code(folder, code)  # said before the new password is asked
    new = new_password(args)
    refuse_weak_password(new, args)
    Vault.open(folder, recovery_code=code, new_password=new, load_model=False,
               threaded=False, use_chroma=False).lock()
    print("New password set with the recovery code; use it from now on. The recovery code "
          "still opens the vault: run `kept recovery-code` for a new one if anyone may have "
          "seen it.")
    return 0


def cmd_recovery_code(args: argparse.Namespace) -> int:
    vault = open_vault(args, load_model=False, local="a new recovery code")
    try:
        had = vault.status().recovery_code
        code = vault.add_recovery_code()
    finally:
        vault.lock()
    print("Recovery code (shown once; print it and keep it safe). With it, "
          "`kept passwd --recovery-code` sets a new password if you forget yours:")
    print(f"    {code}")
    if had:
        print("The previous recovery code no longer opens the vault.")
    return 0


def cmd_rotate_key(args: argparse.Namespace) -> int:
    vault = open_vault(args, load_model=False, local="rotating the key")
    try:
        code = vault.rotate_data_key(password(args)).value
    finally:
        vault.lock()
    print("Data key rotated: every page was rewritten under a new key. Any remembered device "
          "was removed; set it up again if you want it.")
    if code:
        print("Your old recovery code opens nothing now. New recovery code (shown once; print "
              "it and keep it safe):")
        print(f"    {code}")
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
    print(f"Key        Argon2id v{st.kdf.version:#x} m={st.kdf.m_kib} KiB t={st.kdf.t} "
          f"p={st.kdf.p}")
    print("Memories   " + ", ".join(f"{k} {v}" for k, v in st.totals.items()))
    print(f"Model      {f'found at {st.model_dir}' if st.model_found else 'not found'}")
    if not st.semantic_search:
        print("           semantic search is off: lexical recall only (set KEPT_MODEL_DIR)")
    return 0


def cmd_remember(args: argparse.Namespace) -> int:
    from app.domain.memory import Draft, Store
    from app.facade import Vault
    try:
        store = Store.parse(args.store)
    except ValueError as exc:  # only the store: a bad --at once said "Unknown store" too
        raise ValidationError(f"Unknown store {args.store!r}.") from exc
    d = Vault.validate_draft(Draft(text=args.text, store=store, occurred_at=_ts(args.at, "--at"),
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


def cmd_import(args: argparse.Namespace) -> int:
    from app.services.import_formats import FORMAT_NAMES, import_batches, scan
    # First pass: the whole file checked (streamed, nothing kept), before the password.
    plan = scan(Path(args.file))
    if sys.stderr.isatty():  # as progress: a script's stderr holds only the one error line
        print(f"kept: reading {FORMAT_NAMES[plan.format]}: {plan.turns:,} turn(s) in "
              f"{plan.sessions:,} session(s)", file=sys.stderr)
    vault = open_vault(args)
    try:
        if not vault.semantic_search:
            print("kept: semantic search is off (no model); importing for lexical recall only",
                  file=sys.stderr)
        # Second pass: 1,024 turns a call (256 a transaction), never the whole file in RAM.
        r = import_batches(plan, lambda turns: vault.import_turns(turns).value, batch=1024,
                           progress=_progress("Importing"))
    finally:
        vault.lock()
    print(f"Imported {r.added} turn(s) from {r.sessions} session(s); "
          f"{r.skipped_duplicates} already present. (Read as {FORMAT_NAMES[plan.format]}.)")
    for s in r.skipped:
        print(_printable(f"  {s}."))
    return 0


def _hit_json(h: Hit) -> dict[str, object]:
    from app.services.currency import to_json
    return {"id": h.id, "store": h.store, "text": h.text, "score": h.score, "refs": list(h.refs),
            "currency": to_json(h.currency)}


def _day_end(text: str | None) -> float | None:
    """A time-travel point: ISO 8601; a date alone means the end of that day."""
    ts = _ts(text)
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
        hits = vault.recall(args.query, k=args.k, now=_ts(args.now), filters=_filters(args))
    finally:
        vault.lock()
    if args.json:
        _print_json({"query": args.query, "hits": [_hit_json(h) for h in hits]})
        return 0
    if not hits:
        print("No memories match.")
    from app.services.currency import note
    for n, h in enumerate(hits, 1):
        refs = f"  refs: {', '.join(h.refs)}" if h.refs else ""
        aside = f" {note(h.currency)}" if note(h.currency) else ""
        print(f"{n:>2}. [{h.id}] ({h.store}, {h.score:.3f}) {h.text}{aside}{refs}")
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
                            _ts(obj.get("now"), "'now'")))
        except (ValueError, RecursionError, ValidationError) as exc:
            errors.append(f"line {n}: {exc if str(exc) else type(exc).__name__}")
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
        ctx = vault.context(args.query, budget=args.budget, now=_ts(args.now),
                            filters=_filters(args))
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
        print(f"  source [{s.id}] {s.store} {s.occurred_at} ref={s.ref}: {s.text}")
    for link in ex.links:
        print(f"  link {link.src} -{link.kind}-> {link.dst}")
    return 0


def cmd_self_check(args: argparse.Namespace) -> int:
    from app import bootstrap
    check = bootstrap.self_check()
    if args.json:
        _print_json({"ok": check.ok, "checks": list(check.checks)})
    else:
        print("\n".join(check.lines))
    return 0 if check.ok else 1


def cmd_demo(args: argparse.Namespace) -> int:
    from app.demo import run_demo
    return run_demo(vault_dir(args) if args.vault else None, reset=args.reset)


def _plan_json(plan: ForgetPlan) -> dict[str, object]:
    return {"items": [asdict(i) for i in plan.items], "groups": plan.groups(),
            "rows": plan.rows, "total_rows": plan.total_rows,
            "memories": len(plan.items), "include_sources": plan.include_sources,
            "staying": [asdict(i) for i in plan.staying], "irreversible": True,
            "backups": [asdict(b) for b in plan.backups]}


def _print_plan(plan: ForgetPlan) -> None:
    print(f"Forget plan: {len(plan.items)} memories, {plan.total_rows} rows in all.")
    for kind, n in plan.groups().items():
        print(f"  {n:>6}  {kind}")
    print("Memories that will go:")
    for item in plan.items:
        text = item.text if len(item.text) <= 70 else item.text[:67] + "..."
        where = f"  ({item.why})" if item.why else ""
        print(f"  [{item.id}] {item.role:<8} {item.store:<10} {text}{where}")
    if plan.staying:
        print("Linked memories that stay:")
        for item in plan.staying:
            text = item.text if len(item.text) <= 50 else item.text[:47] + "..."
            print(f"  [{item.id}] {item.store:<10} {text}: {item.why}")
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
        from app.cli_agents import pending_forgets
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
            _print_json({"plan": _plan_json(plan)})
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
        _print_json(out)
    else:
        print(f"Forgot {report.memories} memories ({report.total_rows} rows). {report.note}")
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
                                progress=_progress("Re-making backups")).value


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

    from app.services import export
    target = export.check_target(Path(args.target), args.format, vault_dir(args))
    if not _confirm_export(args, target, export.cloud_service(target)):
        return 3
    vault = open_vault(args, load_model=False)
    try:
        write = export.write_markdown if args.format == "markdown" else export.write_json
        report = write(vault, target, now=time.time(), progress=_progress("Exporting"))
    finally:
        vault.lock()
    files = f"{report.files} files in " if args.format == "markdown" else ""
    print(f"Exported {report.memories} memories to {files}{report.path} (plaintext; files "
          "0600, folders 0700).")
    return 0


def _backup_password(args: argparse.Namespace) -> str:
    """A backup's own password (``--own-password``): ``--backup-password-file``,
    ``KEPT_BACKUP_PASSWORD``, else asked twice on a terminal."""
    if args.backup_password_file:
        pw = _read_secret_file(args.backup_password_file, "the backup password file")
    elif (env := _secret_env("KEPT_BACKUP_PASSWORD")) is not None:
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
    from app import bootstrap
    from app.clock import to_iso
    if args.backup_command == "create":
        target = _backup_file(args.file, new=True)
        own = _backup_password(args) if args.own_password or args.backup_password_file else None
        vault = open_vault(args, load_model=False)
        try:
            rec = vault.backup(target, own, progress=_progress("Backing up")).value
        finally:
            vault.lock()
        print(f"Backed up {rec.memories} memories, {rec.links} links, {rec.history} history "
              f"entries and {rec.vectors} vectors to {rec.path} ({rec.bytes / 1e6:.1f} MB, "
              "encrypted; read back and checked).")
        print("It opens with " + ("its own password." if own else
                                  "the vault's password as it is now (a later password "
                                  "change does not change it)."))
        return 0
    if args.backup_command == "list":
        vault = open_vault(args, load_model=False)
        try:
            recs = vault.backups()
        finally:
            vault.lock()
        if args.json:
            _print_json([asdict(r) for r in recs])
            return 0
        if not recs:
            print("This vault has made no backups.")
        for r in recs:
            state = "" if r.exists else "  (gone or replaced)"
            print(f"{to_iso(r.created_at)}  {r.memories:>7} memories  {r.path}{state}")
        return 0
    path = _backup_file(args.file, new=False)
    if args.backup_command == "verify":
        chk = bootstrap.verify_backup(path, password(args, "Backup password: "))
        print(f"Backup OK: made {to_iso(chk.created_at)}, {chk.memories} memories, "
              f"{chk.links} links, {chk.history} history entries, {chk.vectors} vectors; "
              "every part decrypted and checked.")
        return 0
    from app.errors import VaultExists
    folder = Path(args.new_folder).expanduser().absolute()
    if bootstrap.vault_exists(folder):  # said before the password is asked
        raise VaultExists("A vault already exists there; restoring never overwrites one. "
                          "Name a new or empty folder.")
    bootstrap.check_new_vault_folder(folder)
    chk = bootstrap.restore_backup(path, password(args, "Backup password: "), folder)
    print(f"Restored {chk.memories} memories (made {to_iso(chk.created_at)}) into {folder}; "
          "the database passed its integrity check.")
    print(f"It opens with the backup's password: kept --vault '{folder}' status. It has no "
          "recovery code; make one with `kept recovery-code`.")
    return 0


def cmd_consolidate(args: argparse.Namespace) -> int:
    vault = open_vault(args, local="`kept consolidate` (while open, Kept consolidates on its "
                       "own schedule)")
    try:
        report = vault.consolidate(now=_ts(args.now), progress=_progress("Consolidating")).value
    finally:
        vault.lock()
    code = EXIT_FAILED_BATCHES if report.failed_batches else 0
    if args.json:
        _print_json(asdict(report))
    else:
        print(f"Run {report.run_id}: {report.seconds:.2f} s")
        for k, v in sorted(report.counts.items()):
            print(f"  {k.replace('_', ' ')}: {v}")
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
        print("No contradictions or review requests waiting for you.")
    reviews = [i for i in items if i.kind == "review"]
    for i in items:
        if i.kind == "review":  # one memory, not two: an LLM asked to forget it
            print(f"#{i.id} (review request, {i.status}: {i.reason or 'asked to forget'})")
            print(f"  memory: [{i.a.id}] {to_iso(i.a.occurred_at)} {i.a.text}")
            continue
        print(f"#{i.id} ({i.status}, {i.reason})")
        for side, s in (("a", i.a), ("b", i.b)):
            print(f"  {side}: [{s.id}] {to_iso(s.occurred_at)} {s.text}")
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
    print(f"Undid run {args.run_id}: " + (", ".join(f"{k} {v}" for k, v in sorted(
        undone.counts.items())) or "nothing to revert"))
    return 0


def cmd_logout(args: argparse.Namespace) -> int:
    """Drop this terminal session's ticket (strict mode), as ``sudo -k`` does."""
    from app.errors import OwnerNotRunning
    owner = _owner(vault_dir(args))
    if owner is None:
        raise OwnerNotRunning()
    try:
        owner.logout()
    finally:
        owner.close()
    print("This terminal no longer holds your password for Kept.")
    return 0


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
    if _owner(folder) is not None:
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


# --- parser ----------------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    """A usage error is bad input like any other: exit 2 and one line on stderr (argparse's
    default prints the whole usage first). Subparsers are made with this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"kept: {_printable(message)} (see `{self.prog} --help`)\n")


def _printable(text: str) -> str:
    """Messages quote what they were given (a path, a time): control and format characters
    are shown escaped, so a message stays one line and cannot drive the terminal (a newline or
    an ANSI escape in a --vault value, say)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


_MAX_ID = 2**63 - 1  # SQLite's INTEGER: a larger id raised OverflowError from the driver


def _int_in(text: str, low: int, high: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be a whole number, not {text[:40]!r}"
                                         ) from None
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"{what} must be from {low:,} to {high:,}")
    return value


def _id(text: str) -> int:
    return _int_in(text, 1, _MAX_ID, "an id")


def _k(text: str) -> int:
    return _int_in(text, 1, 10_000, "--k")


def _budget(text: str) -> int:
    return _int_in(text, 1, 10_000_000, "--budget")


def _kdf_mib(text: str) -> int:
    from app import bootstrap
    (low, high), _t = bootstrap.kdf_limits()  # what unlock accepts
    return _int_in(text, low, high, "--kdf-memory-mib")


def _kdf_time(text: str) -> int:
    from app import bootstrap
    _m, (low, high) = bootstrap.kdf_limits()
    return _int_in(text, low, high, "--kdf-time")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kept", description="Kept: your assistant's memory, "
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
    s.add_argument("--kdf-memory-mib", type=_kdf_mib, help=argparse.SUPPRESS)
    s.add_argument("--kdf-time", type=_kdf_time, help=argparse.SUPPRESS)
    s.set_defaults(fn=cmd_init)

    s = sub.add_parser("passwd", help="change the password (rewraps the key; O(1))")
    s.add_argument("--new-password-file")
    s.add_argument("--recovery-code", action="store_true",
                   help="forgot the password: set a new one with the recovery code")
    s.add_argument("--recovery-code-file", help="read the recovery code from this file")
    s.add_argument("--allow-weak", action="store_true", help=argparse.SUPPRESS)
    s.set_defaults(fn=cmd_passwd)

    s = sub.add_parser("recovery-code", help="make a recovery code (replaces any previous one)")
    s.set_defaults(fn=cmd_recovery_code)

    s = sub.add_parser("rotate-key", help="re-encrypt everything under a new data key")
    s.set_defaults(fn=cmd_rotate_key)

    s = sub.add_parser("status", help="vault id, key parameters, counts, model")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_status)

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

    s = sub.add_parser("remember", help="store one memory; prints its id")
    s.add_argument("text")
    s.add_argument("--store", default="episodic")
    s.add_argument("--at", help="when it happened (ISO 8601)")
    s.add_argument("--agent", default="global")
    s.add_argument("--context")
    s.add_argument("--ref")
    s.set_defaults(fn=cmd_remember)

    s = sub.add_parser("import", help="import chats: Kept JSON Lines, a ChatGPT or Claude "
                       "export (conversations.json), Markdown or text notes (detected)")
    s.add_argument("file", help="a file, or a folder of notes")
    s.set_defaults(fn=cmd_import)

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
    s.add_argument("id", type=_id)
    s.add_argument("--query")
    s.add_argument("--now")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_explain)

    s = sub.add_parser("forget", help="forget memories for good (shows the plan first)")
    s.add_argument("query", nargs="?", help="forget every memory containing this text")
    s.add_argument("--id", type=_id, nargs="+")
    s.add_argument("--entity", help="a person, project or place, and everything about them")
    s.add_argument("--keep-sources", action="store_true",
                   help="keep the source turns and episodes the memories came from")
    s.add_argument("--pending", nargs="?", const=0, type=_id, metavar="REQUEST",
                   help="assistants' forget requests: list them, or confirm REQUEST (its plan "
                   "is shown first)")
    s.add_argument("--decline", type=_id, metavar="REQUEST",
                   help="decline an assistant's forget request (nothing is forgotten)")
    s.add_argument("--yes", action="store_true", help="do not ask")
    s.add_argument("--remake-backups", action="store_true",
                   help="after the forget, make the backups that held it again without it")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_forget)

    s = sub.add_parser("correct", help="replace a memory with a corrected version")
    s.add_argument("id", type=_id)
    s.add_argument("text")
    s.set_defaults(fn=cmd_correct)

    s = sub.add_parser("history", help="versions and history of a memory")
    s.add_argument("id", type=_id)
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_history)

    s = sub.add_parser("archive", help="archive a memory (out of default recall)")
    s.add_argument("id", type=_id)
    s.set_defaults(fn=cmd_archive, restore=False)

    s = sub.add_parser("restore", help="bring an archived memory back")
    s.add_argument("id", type=_id)
    s.set_defaults(fn=cmd_archive, restore=True)

    s = sub.add_parser("consolidate", help="run background consolidation once")
    s.add_argument("--now")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_consolidate)

    s = sub.add_parser("contradictions", help="facts that disagree, waiting for you")
    s.add_argument("--all", action="store_true", help="include resolved ones")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_contradictions)

    s = sub.add_parser("resolve", help="settle a contradiction or answer a review request")
    s.add_argument("id", type=_id)
    s.add_argument("--keep", choices=["a", "b", "both", "edit"], help="a contradiction")
    s.add_argument("--still-true", action="store_true",
                   help="a review request: the memory stays (confirmed by you)")
    s.add_argument("--edit", action="store_true",
                   help="a review request: replace the memory with --text")
    s.add_argument("--text", help="the corrected statement, with --keep edit or --edit")
    s.add_argument("--reopen", action="store_true", help="undo a resolution")
    s.set_defaults(fn=cmd_resolve)

    s = sub.add_parser("undo", help="revert a consolidation run")
    s.add_argument("run_id", type=_id)
    s.set_defaults(fn=cmd_undo)

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

    from app.cli_agents import add_parsers as add_agent_parsers
    add_agent_parsers(sub)  # kept mcp, kept agents, kept pending-forgets (issue 14)

    s = sub.add_parser("self-check", help="check that SQLCipher, Argon2id, Chroma (in RAM), "
                       "the model and the keychain work on this machine; no vault needed")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_self_check)

    s = sub.add_parser("demo", help="create a demo vault, store and recall a few memories")
    s.add_argument("--reset", action="store_true",
                   help="delete the demo vault in --vault and create it afresh")
    s.set_defaults(fn=cmd_demo)
    return p


def _not_utf8(argv: Sequence[str]) -> int | None:
    """The position of the first argument that was not UTF-8 (Python hands such bytes over
    as lone surrogates, PEP 383; they crashed the tokenizer, SQLite or print)."""
    for n, arg in enumerate(argv, start=1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return n
    return None


def _check_args(args: argparse.Namespace) -> None:
    """What every command would refuse later, refused before any password or file."""
    from app.validation import MAX_TEXT, check_string, check_text
    for name in ("at", "now", "as_of", "known_at"):
        _ts(getattr(args, name, None), "--" + name.replace("_", "-"))
    if getattr(args, "text", None) is not None:  # remember, correct, resolve --text
        check_text(args.text)
    for name in ("agent", "context", "ref", "entity"):
        if getattr(args, name, None) is not None:
            check_string(getattr(args, name), f"--{name}")
    if getattr(args, "query", None) is not None:
        check_string(args.query, "The query", limit=MAX_TEXT)
        if not args.query.strip() and args.command in ("recall", "context", "explain"):
            raise ValidationError("The query is empty.")


def main(argv: Sequence[str] | None = None) -> int:
    """Exit codes as in the module docstring. Bad input is exit 2 with one line on stderr,
    never a traceback (issue 11, item 5); 1 only for a bug (a one-line report; ``--debug``
    shows the traceback)."""
    from app import bootstrap
    bootstrap.private_umask()
    argv = list(sys.argv[1:] if argv is None else argv)
    bad = _not_utf8(argv)
    if bad is not None:
        print(f"kept: argument {bad} is not valid UTF-8 text; Kept takes UTF-8 arguments "
              "(file and folder names included). Nothing was changed.", file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                        format="%(levelname)s %(threadName)s %(name)s: %(message)s")
    for noisy in ("chromadb", "apscheduler", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        _check_args(args)
        code = int(args.fn(args))
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except AppError as exc:
        print(f"kept: {_printable(exc.user_message)}", file=sys.stderr)
        if exc.hint:
            print(f"kept: {_printable(exc.hint)}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, as a Unix tool killed by SIGPIPE
        # does, with its exit code. Whatever the command had done stays done. stdout goes to
        # /dev/null so the interpreter's last flush cannot raise again.
        # See https://docs.python.org/3/library/signal.html#note-on-sigpipe
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is not a file (tests capture it)
            pass
        return 141
    except OSError as exc:  # a path Kept was given cannot be used (permissions, a device...)
        import errno
        where = f": {exc.filename}" if exc.filename else ""
        print(_printable(f"kept: {exc.strerror or type(exc).__name__}{where}. Nothing more was "
                         "changed."), file=sys.stderr)
        return 5 if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO) else 2
    except KeyboardInterrupt:
        print("kept: interrupted; nothing half-written was kept.", file=sys.stderr)
        return 130
    except Exception as exc:  # the boundary: a bug, not bad input
        # The traceback only with --debug: exception messages can quote memory text.
        if args.debug:
            log.exception("unexpected error")
        print(f"kept: unexpected error ({type(exc).__name__}); please report it. Run again "
              "with --debug to see where.", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
