"""The ``kept`` command. Layer: app (headless composition root). Runs on: the main thread.

One module per command group, each with its parsers (``add_parsers``) beside its handlers:
``vault`` (init, passwd, recovery-code, rotate-key, status, self-check, demo), ``serve``
(serve, logout), ``memories`` (remember, recall, context, explain, correct, history, archive,
restore), ``share`` (share), ``forget`` (forget, pending-forgets), ``consolidation`` (consolidate,
contradictions, resolve, undo), ``transfer`` (import, export, backup), ``agents`` (mcp,
agents) and ``sync`` (sync status, pair, revoke). What they share is in ``common``; a group never imports another group.

Password sources, in order: ``--password-file FILE``, the ``KEPT_PASSWORD`` environment variable
(for scripts; visible to other processes of the same user on some systems), else a prompt.
Exit codes: 0 ok, 1 unexpected error, 2 wrong password / bad vault / bad input, 3 a forget plan
or an export was not confirmed, 4 not found, 5 the disk is full or failing (what was saved before
stays saved), 6 ``kept consolidate`` finished but some batches failed (kept for the next run),
141 the reader of stdout went away (``| head``; as a tool killed by SIGPIPE).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from app import __version__
from app.cli import agents, consolidation, forget, memories, serve, share, sync, transfer, vault
from app.cli.common import Parser, printable, time_arg
from app.errors import AppError, ValidationError

log = logging.getLogger(__name__)
GROUPS = (vault, serve, memories, share, forget, consolidation, transfer, agents, sync)  # as `--help` lists


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="kept", description="Kept: your assistant's memory, "
                                        "encrypted on your machine.")
    p.add_argument("--version", action="version", version=f"kept {__version__}")
    p.add_argument("--vault", help="vault folder (default: the user data dir)")
    p.add_argument("--password-file", help="read the password from this file")
    p.add_argument("--debug", action="store_true", help="log ids, counts and timings to stderr")
    sub = p.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.add_parsers(sub)
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
        time_arg(getattr(args, name, None), "--" + name.replace("_", "-"))
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
        print(f"kept: {printable(exc.user_message)}", file=sys.stderr)
        if exc.hint:
            print(f"kept: {printable(exc.hint)}", file=sys.stderr)
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
        print(printable(f"kept: {exc.strerror or type(exc).__name__}{where}. Nothing more was "
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
