"""The vault itself: ``kept init``, ``passwd``, ``recovery-code``, ``rotate-key``, ``status``,
``self-check`` and ``demo``. Layer: app (headless front end). Runs on: the main thread.

New passwords and recovery codes come, like the password (``common.password``), from a file
option, then an environment variable (scripts), else a prompt.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from dataclasses import asdict

from app import words
from app.cli.common import (
    Subcommands,
    int_in,
    open_vault,
    password,
    print_json,
    read_secret_file,
    secret_env,
    vault_dir,
)
from app.errors import ValidationError


def add_parsers(sub: Subcommands) -> None:
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

    s = sub.add_parser("insights", help="how the memory is used: searches that found what "
                       "was used, reads by kind, promotions, archiving, strong memories")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_insights)

    s = sub.add_parser("self-check", help="check that SQLCipher, Argon2id, Chroma (in RAM), "
                       "the model and the keychain work on this machine; no vault needed")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_self_check)

    s = sub.add_parser("demo", help="create a demo vault, store and recall a few memories")
    s.add_argument("--reset", action="store_true",
                   help="delete the demo vault in --vault and create it afresh")
    s.set_defaults(fn=cmd_demo)


def _kdf_mib(text: str) -> int:
    from app import bootstrap
    (low, high), _t = bootstrap.kdf_limits()  # what unlock accepts
    return int_in(text, low, high, "--kdf-memory-mib")


def _kdf_time(text: str) -> int:
    from app import bootstrap
    _m, (low, high) = bootstrap.kdf_limits()
    return int_in(text, low, high, "--kdf-time")


def recovery_code(args: argparse.Namespace) -> str:
    """``--recovery-code-file FILE``, ``KEPT_RECOVERY_CODE`` (scripts), else a prompt."""
    if getattr(args, "recovery_code_file", None):
        return read_secret_file(args.recovery_code_file, "the recovery code file").strip()
    env = secret_env("KEPT_RECOVERY_CODE")
    if env is not None:
        return env
    if not sys.stdin.isatty():
        raise ValidationError(
            "No recovery code: use --recovery-code-file, KEPT_RECOVERY_CODE or a terminal.")
    return getpass.getpass("Recovery code: ")


def new_password(args: argparse.Namespace) -> str:
    if getattr(args, "new_password_file", None):
        return read_secret_file(args.new_password_file)
    env = secret_env("KEPT_NEW_PASSWORD")
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
    from app.errors import VaultLocked
    vault = open_vault(args)
    try:
        st = vault.status()
    except VaultLocked:  # `kept serve` locked when idle: it still answers, locked
        folder = vault_dir(args)
        if args.json:
            print_json({"path": str(folder), "locked": True})
        else:
            print(f"Locked     Kept serves {folder} but it is locked (idle): `kept unlock` "
                  "or the window opens it again.")
        return 0
    finally:
        vault.lock()
    if args.json:
        print_json(asdict(st))
        return 0
    print(f"Vault      {st.vault_id}")
    print(f"Path       {st.path}")
    print(f"Schema     {st.schema_version}")
    print(f"Key        Argon2id v{st.kdf.version:#x} m={st.kdf.m_kib} KiB t={st.kdf.t} "
          f"p={st.kdf.p}")
    print("Memories   " + _totals_in_words(st.totals))
    from app.model_words import model_line, vectors_line
    print(f"Model      {model_line(st)}" + (f" ({st.model_dir})" if st.model_dir else ""))
    if st.vector_models:
        print(f"Vectors    {vectors_line(st.vector_models)}")
    if st.vectors_pending:
        print(f"           {_pending_line(st.vectors_pending, st.vectors_per_s)}")
    if not st.semantic_search:
        print("           semantic search is off: lexical recall only (set KEPT_MODEL_DIR)")
    return 0


def _pending_line(n: int, per_s: float | None) -> str:
    """Memories whose vectors follow an import (issue 28), and how long they still take at the
    rate the follower measured (none measured in a one-shot command: the window, ``kept
    serve`` or ``kept import`` make them)."""
    from app.eta import duration_words
    text = f"{words.count(n, 'memory', 'memories')} still wait for their vectors (meaning " \
           "search finds them once made, words search already does)"
    if per_s:
        return f"{text}: {duration_words(n / per_s)} left at {per_s:,.0f}/s"
    return f"{text}: made while Kept is open (the window, `kept serve`, or `kept import`)"


def cmd_self_check(args: argparse.Namespace) -> int:
    from app import bootstrap
    check = bootstrap.self_check()
    if args.json:
        print_json({"ok": check.ok, "checks": list(check.checks)})
    else:
        print("\n".join(check.lines))
    return 0 if check.ok else 1


def cmd_demo(args: argparse.Namespace) -> int:
    from app.demo import run_demo
    return run_demo(vault_dir(args) if args.vault else None, reset=args.reset)


def cmd_insights(args: argparse.Namespace) -> int:
    """``kept insights [--json]``: the window's Insights numbers (issue 27 item 9), each with
    what it means."""
    vault = open_vault(args, load_model=False)
    try:
        ins = vault.insights()
    finally:
        vault.lock()
    if args.json:
        print_json(asdict(ins))
        return 0
    print(f"Over the last {ins.period_days} days:")
    for m in ins.metrics:
        print(f"  {m.label}: {m.text}")
        print(f"    {m.tip}")
    return 0


def _totals_in_words(totals: dict[str, int]) -> str:
    """``kept status``'s counts by the stores' names, as the window shows them: "Conversation
    15, Events 15, Facts 7, Habits 1, Patterns 5" (``--json`` keeps the stores' keys)."""
    from app import words
    return ", ".join(f"{words.store_name(k)} {v:,}" for k, v in totals.items())
