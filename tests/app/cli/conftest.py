"""In-process ``kept`` runs for the bad-input and fuzz tests: ``app.cli.main(argv)`` against a
real vault (real SQLCipher file, real Argon2id at the floor parameters). A subprocess costs
about a second; in-process a command that is refused before unlocking costs milliseconds."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PW = "correct horse battery"
# The exit codes README documents (6: consolidation batches failed); 141 only for a reader that
# went away (tested separately); 1 is a bug.
DOCUMENTED_EXIT_CODES = {0, 2, 3, 4, 5, 6}


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return [x for x in self.err.splitlines() if x.strip()]


def run_cli(*argv: str) -> Run:
    """``kept ARGV`` in this process; argparse's SystemExit becomes the exit code. Any other
    exception propagates (that is the traceback the tests look for)."""
    from app.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return Run(code, out.getvalue(), err.getvalue())


def kept_in_process(vault: Path, *args: str, password: str | None = PW,
                    env: dict[str, str] | None = None,
                    input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``kept --vault VAULT ARGS`` run as :func:`run_cli` runs it, with what a subprocess
    would get: ``KEPT_PASSWORD`` (or none), the extra environment ``env``, ``input`` on a
    stdin that is not a terminal. Returns what ``subprocess.run`` would (code, out, err)."""
    changes: dict[str, str | None] = {"KEPT_PASSWORD": password, **(env or {})}
    saved = {k: os.environ.get(k) for k in changes}
    stdin = sys.stdin
    try:
        for k, v in changes.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        sys.stdin = io.StringIO(input or "")
        r = run_cli("--vault", str(vault), *args)
    finally:
        sys.stdin = stdin
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return subprocess.CompletedProcess(["kept", *args], r.code, r.out, r.err)


def hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def make_vault(folder: Path, texts: tuple[str, ...] = ()) -> Path:
    from app.domain.memory import Draft
    from tests.conftest import new_vault
    vault = new_vault(folder, PW, load_model=False, threaded=False, use_chroma=False)
    try:
        for text in texts:
            vault.remember(Draft(text=text))
    finally:
        vault.lock()
    return folder


@pytest.fixture
def password_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("KEPT_PASSWORD", PW)
    monkeypatch.delenv("KEPT_NEW_PASSWORD", raising=False)
    yield
