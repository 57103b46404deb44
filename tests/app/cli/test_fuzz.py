"""Property-based tests of bad input (issue 11, items 4 and 5), with Hypothesis.

1. ``kept import``: for any file of good and bad lines, either the whole file imports or
   nothing does (row counts unchanged), and the error names exactly the bad lines.
2. ``kept`` argument lists: whatever the arguments, no traceback, only a documented exit code,
   and a refusal is one line on stderr starting with ``kept:``.

Default suite: derandomised and short (in-process, a real vault and the real model for the
import; the argument lists run lexical-only, where most examples stop before the password).
``-m slow``: 2,000 examples each.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.app.cli.conftest import DOCUMENTED_EXIT_CODES, PW, make_vault, run_cli

SHORT = settings(max_examples=100, derandomize=True, deadline=None, database=None,
                 suppress_health_check=list(HealthCheck))
LONG = settings(max_examples=2_000, derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))

FAR_FUTURE = "9999-12-31T23:59:59-14:00"
FAR_PAST = "0001-01-01T00:00:00+14:00"

# --- strategies shared by both properties ------------------------------------------------

# Any code point, lone surrogates included (Hypothesis leaves them out unless asked).
ANY_CHAR = st.characters(codec=None, exclude_categories=())
SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
# Text Kept must accept: no lone surrogates, something left after strip().
GOOD_TEXT = st.text(min_size=1, max_size=60).filter(lambda t: bool(t.strip()))


@st.composite
def with_surrogate(draw: st.DrawFn) -> str:
    base = draw(st.text(max_size=10))
    at = draw(st.integers(0, len(base)))
    return base[:at] + draw(SURROGATE) + base[at:]


@st.composite
def good_time(draw: st.DrawFn) -> str:
    """ISO 8601 whose UTC value is in the years 1 to 9999 (the edges included)."""
    edge = draw(st.sampled_from([None, None, None, "0001-01-01T00:00:00Z",
                                 "9999-12-31T23:59:59Z", "0001-01-01T14:00:00+14:00",
                                 "9999-12-31T10:00:00-13:59", "2026-06-01"]))
    if edge:
        return edge
    from datetime import datetime, timedelta, timezone
    dt = draw(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)))
    minutes = draw(st.integers(-14 * 60, 14 * 60))
    return dt.replace(tzinfo=timezone(timedelta(minutes=minutes))).isoformat()


BAD_TIME = st.sampled_from([
    FAR_FUTURE, FAR_PAST, "10000-01-01T00:00:00Z", "0000-12-31T23:00:00Z", "2026-13-01",
    "2026-06-01T25:00:00Z", "yesterday", "", " ", "\udcff", "1" * 12, "+002026-06-01",
    "9999-12-31T23:59:59.9999999-00:01", "0001-01-01T00:00:00.000001+00:01"])


# --- 1. the import: all or nothing -----------------------------------------------------------

_EXAMPLE = itertools.count()


@dataclass(frozen=True)
class Line:
    raw: bytes
    bad: bool
    key: tuple[str, str] | None = None  # (session, ref) of a good turn


def _turn(session: str, ref: str, **fields: Any) -> dict[str, Any]:
    return {"session": session, "speaker": "Sam", "text": "a turn", "at": "2026-06-01T10:00:00Z",
            "ref": ref, **fields}


@st.composite
def good_line(draw: st.DrawFn, prefix: str) -> Line:
    session = draw(st.sampled_from(["s1", "s2"]))
    ref = f"{prefix}-{draw(st.integers(0, 6))}"  # repeats: the second is a duplicate
    obj = _turn(session, ref, speaker=draw(st.sampled_from(["Sam", "Ana", " Ana ", "😀"])),
                text=draw(GOOD_TEXT), at=draw(good_time()))
    if draw(st.booleans()):
        obj["store"] = draw(st.sampled_from(["episodic", "semantic", "procedural",
                                             "short_term", "fact", "Short-Term"]))
    return Line(json.dumps(obj, ensure_ascii=draw(st.booleans())).encode(), False,
                (session, ref))


BAD_JSON = st.sampled_from([
    b"{not json", b"[1, 2]", b'"text"', b"null", b"{}", b'{"session": "s"}',
    b"[" * 50_000 + b"]" * 50_000, b'{"session": "s", "speaker": "Sam", "text": NaN}',
    b'{"session": "s", "speaker": "Sam", "text": "t", "at": Infinity, "ref": "r"}',
])


@st.composite
def bad_line(draw: st.DrawFn, prefix: str) -> Line:
    ref = f"{prefix}-bad"
    kind = draw(st.sampled_from([
        "text", "speaker", "session", "ref", "at", "long", "blank", "type", "store", "bytes",
        "json"]))
    if kind == "json":
        return Line(draw(BAD_JSON), True)
    if kind == "bytes":  # a Latin-1 byte inside an otherwise good line
        raw = json.dumps(_turn("s1", ref, text="caf_")).encode()
        return Line(raw.replace(b"caf_", b"caf\xe9"), True)
    obj: dict[str, Any] = _turn("s1", ref)
    if kind in ("text", "speaker", "session", "ref"):
        obj[kind] = draw(with_surrogate())
    elif kind == "at":
        obj["at"] = draw(BAD_TIME)
    elif kind == "long":
        field = draw(st.sampled_from(["text", "speaker", "session", "ref"]))
        obj[field] = "x" * (100_001 if field == "text" else 1_001)
    elif kind == "blank":
        obj[draw(st.sampled_from(["text", "speaker"]))] = draw(st.sampled_from(
            ["", " ", "\n\t", "\u2003"]))
    elif kind == "type":
        obj[draw(st.sampled_from(["text", "speaker", "at", "ref"]))] = draw(st.sampled_from(
            [True, None, [], {}, 1.5]))
    else:
        obj["store"] = draw(st.sampled_from(["working", "nowhere", 7, "\udc80"]))
    return Line(json.dumps(obj).encode(), True)


@st.composite
def import_file(draw: st.DrawFn) -> list[Line]:
    prefix = f"e{next(_EXAMPLE)}"
    bad_share = draw(st.sampled_from([0.0, 0.0, 0.1, 0.5]))
    n = draw(st.integers(1, 8))
    lines = []
    for _ in range(n):
        if draw(st.integers(0, 19)) == 0:
            lines.append(Line(b"   ", False))  # blank lines are skipped
        elif draw(st.floats(0, 1)) < bad_share:
            lines.append(draw(bad_line(prefix)))
        else:
            lines.append(draw(good_line(prefix)))
    return lines


@pytest.fixture(scope="module")
def open_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from app.facade import Vault
    folder = make_vault(tmp_path_factory.mktemp("fuzz-import") / "vault")
    vault = Vault.open(folder, PW, threaded=False, use_chroma=False)  # the real model
    assert vault.semantic_search
    yield vault
    vault.lock()


def check_import(vault: Any, folder: Path, lines: list[Line]) -> None:
    from app.services.import_formats import read_import
    from app.services.importer import ImportInvalid
    f = folder / "turns.jsonl"
    f.write_bytes(b"\n".join(x.raw for x in lines) + b"\n")
    before = vault.status().totals
    bad = {n for n, x in enumerate(lines, 1) if x.bad}
    try:
        report = vault.import_turns(read_import(f), batch=3).value  # several batches
    except ImportInvalid as exc:
        assert bad, exc.user_message
        assert {e.line for e in exc.errors} == bad
        assert all(f"line {n}:" in exc.user_message for n in sorted(bad)[:10])
        assert vault.status().totals == before
        return
    assert not bad, f"lines {sorted(bad)} were accepted"
    keys = {x.key for x in lines if x.key is not None}
    after = vault.status().totals
    assert report.added == len(keys) == after["short_term"] - before["short_term"]


@SHORT
@given(lines=import_file())
def test_import_is_all_or_nothing(open_vault: Any, tmp_path_factory: pytest.TempPathFactory,
                                  lines: list[Line]) -> None:
    check_import(open_vault, tmp_path_factory.getbasetemp(), lines)


@pytest.mark.slow
@LONG
@given(lines=import_file())
def test_import_is_all_or_nothing_long(open_vault: Any,
                                       tmp_path_factory: pytest.TempPathFactory,
                                       lines: list[Line]) -> None:
    check_import(open_vault, tmp_path_factory.getbasetemp(), lines)


# --- 2. argument lists: no traceback, documented exit codes ----------------------------------

@dataclass(frozen=True)
class Places:
    """Paths the argument lists can name."""

    vault: Path       # a real vault, with memories 1 to 3
    missing: Path
    afile: Path       # a plain file
    below: Path       # a path below that file
    latin1: Path      # a file that is not UTF-8
    turns: Path       # a good import file
    batch: Path       # a good recall batch
    pwfile: Path


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> Places:
    root = tmp_path_factory.mktemp("fuzz-cli")
    vault = make_vault(root / "vault", ("I live in Lisbon", "Ana's birthday is July 3",
                                        "the spare key is under the flowerpot"))
    afile = root / "a-file"
    afile.write_text("not a vault")
    latin1 = root / "latin1"
    latin1.write_bytes(b'{"query": "caf\xe9"}\n')
    turns = root / "turns.jsonl"
    turns.write_text(json.dumps(_turn("s", "r1")) + "\n")
    batch = root / "batch.jsonl"
    batch.write_text(json.dumps({"qid": 1, "query": "birthday"}) + "\n")
    pwfile = root / "pw"
    pwfile.write_text(PW + "\n")
    return Places(vault, root / "missing", afile, afile / "below", latin1, turns, batch, pwfile)


# Hypothesis leans towards the first items: usable values first, so that lists get past the
# argument checks often enough to exercise the commands behind them.
ODD_INTS = ["1", "2", "3", "0", "-1", str(2**31), str(2**63 - 1), str(2**63), str(2**64),
            "1" * 30, "1" * 5000, "1e3", "0x10", " 7 ", "٣", "", "nan", "--1", "9" * 19]
ODD_WORDS = ["birthday", "", " ", "\x00", "a\x00b", "é", "😀", "\u202e", "-", "--", "-x", "--help",
             "yesterday", "3000 years ago", "in December", "last year", "x" * 100_001,
             "%s%n", "{}", "\\", "'", '"', "\n"]
# Weighted so that lone surrogates (which stop a list before anything else) are not in every
# list: about one list in six gets as far as unlocking the vault, the rest are refused before.
WORD = st.one_of(st.sampled_from(ODD_WORDS), st.sampled_from(ODD_WORDS), st.text(max_size=12),
                 st.text(ANY_CHAR, max_size=12), with_surrogate())
INT = st.one_of(st.sampled_from(ODD_INTS), st.integers().map(str))
TIME = st.one_of(BAD_TIME, good_time())


@st.composite
def path(draw: st.DrawFn, p: Places) -> str:
    return str(draw(st.sampled_from([p.vault, p.missing, p.afile, p.below, p.latin1, p.turns,
                                     p.batch, p.pwfile, Path("/dev/null"), Path("/")])))


def options(draw: st.DrawFn, spec: dict[str, Any]) -> list[str]:
    """Some of ``spec``'s options, in any order; a value strategy or None for a flag."""
    out: list[str] = []
    for name in draw(st.lists(st.sampled_from(sorted(spec)), max_size=4)):
        out.append(name)
        if spec[name] is not None:
            out.append(draw(spec[name]))
    return out


@st.composite
def argv(draw: st.DrawFn, p: Places) -> list[str]:
    where = draw(st.sampled_from(["vault"] * 6 + ["missing", "afile", "below", "odd"]))
    head = ["--vault", str(p.vault) if where == "vault" else draw(path(p)) if where != "odd"
            else draw(WORD)]
    if draw(st.integers(0, 9)) == 0:
        head += ["--password-file", draw(path(p))]
    if draw(st.integers(0, 9)) == 0:
        head.append("--debug")
    times = {"--now": TIME, "--as-of": TIME, "--known-at": TIME}
    commands: dict[str, Any] = {
        "status": lambda: options(draw, {"--json": None}),
        "remember": lambda: [draw(WORD)] + options(draw, {
            "--store": st.sampled_from(["episodic", "semantic", "working", "nowhere", "", "\udcff"]),
            "--at": TIME, "--agent": WORD, "--context": WORD, "--ref": WORD}),
        "import": lambda: [draw(path(p))],
        "recall": lambda: ([draw(WORD)] if draw(st.booleans()) else []) + options(draw, {
            "--k": INT, **times, "--agent": WORD, "--archived": None, "--json": None,
            "--batch": path(p)}),
        "context": lambda: [draw(WORD)] + options(draw, {"--budget": INT, **times,
                                                        "--json": None}),
        "explain": lambda: [draw(INT)] + options(draw, {"--query": WORD, "--now": TIME,
                                                       "--json": None}),
        "forget": lambda: (["--id", *draw(st.lists(INT, min_size=1, max_size=3)), "--yes"]
                           if draw(st.booleans()) else [draw(WORD)]) + options(
            draw, {"--entity": WORD, "--keep-sources": None, "--json": None}),
        "correct": lambda: [draw(INT), draw(WORD)],
        "history": lambda: [draw(INT)] + options(draw, {"--json": None}),
        "archive": lambda: [draw(INT)],
        "restore": lambda: [draw(INT)],
        "consolidate": lambda: options(draw, {"--now": TIME, "--json": None}),
        "contradictions": lambda: options(draw, {"--all": None, "--json": None}),
        "resolve": lambda: [draw(INT)] + options(draw, {
            "--keep": st.sampled_from(["a", "b", "both", "edit", "c"]), "--text": WORD,
            "--still-true": None, "--edit": None, "--reopen": None}),
        "undo": lambda: [draw(INT)],
        # init never makes a vault here (that would calibrate Argon2 for seconds): it is
        # given the existing vault, a file, or numbers out of range.
        "init": lambda: (["--kdf-memory-mib", draw(st.sampled_from(ODD_INTS))]
                         + options(draw, {"--kdf-time": INT, "--allow-weak": None})),
        # passwd may only "change" the password to itself (a file holding the same one).
        "passwd": lambda: options(draw, {"--new-password-file": st.sampled_from(
            [str(p.pwfile), str(p.missing), str(p.latin1), str(p.vault), str(p.below)])}),
        "bogus": lambda: [draw(WORD)],
    }
    name = draw(st.sampled_from(sorted(commands)))
    if name == "init" and head[1] not in (str(p.vault), str(p.afile), str(p.below)):
        head[1] = str(p.vault)
    rest = commands[name]()
    if draw(st.integers(0, 7)) == 0:  # a stray token anywhere
        rest.insert(draw(st.integers(0, len(rest))), draw(st.one_of(WORD, INT, TIME)))
    return head + [name, *rest]


def check_argv(args: list[str]) -> None:
    r = run_cli(*args)
    assert "Traceback" not in r.err, r.err
    assert r.code in DOCUMENTED_EXIT_CODES, (r.code, r.err)
    if r.code != 0 and r.code != 3:
        assert r.err_lines and all(x.startswith("kept: ") for x in r.err_lines), r.err
    if r.code == 2:
        assert len(r.err_lines) == 1, r.err


@pytest.fixture
def cli_env(places: Places) -> Iterator[None]:
    """Lexical only, so that an argument list that reaches the vault costs the unlock and
    not the model; the password from the environment; no new password anywhere."""
    saved = {k: os.environ.get(k) for k in ("KEPT_MODEL_DIR", "KEPT_PASSWORD",
                                            "KEPT_NEW_PASSWORD")}
    os.environ["KEPT_MODEL_DIR"] = str(places.missing)
    os.environ["KEPT_PASSWORD"] = PW
    os.environ.pop("KEPT_NEW_PASSWORD", None)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@SHORT
@given(data=st.data())
def test_odd_argument_lists_never_crash(places: Places, cli_env: None,
                                        data: st.DataObject) -> None:
    check_argv(data.draw(argv(places)))


@pytest.mark.slow
@LONG
@given(data=st.data())
def test_odd_argument_lists_never_crash_long(places: Places, cli_env: None,
                                             data: st.DataObject) -> None:
    check_argv(data.draw(argv(places)))
