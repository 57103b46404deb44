"""Issue 11, items 4 and 5: what an independent audit broke with bad input.

Each case: exit 2 (or the documented code), one line on stderr, no traceback, and the vault
unchanged. Most run ``kept`` in-process (tests/app/cli/conftest.py); the non-UTF-8 bytes and the
closed pipe need a real process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import ROOT
from tests.app.cli.conftest import PW, hashes, make_vault, run_cli

TIME = "2026-01-01T00:00:00Z"
# The audit's times: valid ISO 8601 whose UTC value is in year 10000 or year 0.
FAR_FUTURE = "9999-12-31T23:59:59-14:00"
FAR_PAST = "0001-01-01T00:00:00+14:00"
LONG_TEXT = "x" * 100_001


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_vault(tmp_path_factory.mktemp("bad") / "vault",
                      ("the spare key is under the flowerpot", "Ana's birthday is July 3"))


def one_line_error(r: object, code: int = 2) -> str:
    assert r.code == code, (r.code, r.err)  # type: ignore[attr-defined]
    lines = r.err_lines  # type: ignore[attr-defined]
    assert len(lines) == 1 and lines[0].startswith("kept: "), lines
    assert "Traceback" not in r.err  # type: ignore[attr-defined]
    return str(lines[0])


def totals(vault: Path) -> dict[str, int]:
    r = run_cli("--vault", str(vault), "status", "--json")
    assert r.code == 0, r.err
    return dict(json.loads(r.out)["totals"])


# --- item 5: ids, times, files, arguments -------------------------------------------------

@pytest.mark.parametrize("value", [str(2**63), str(2**64), "1" + "0" * 30, "-1", "0"])
@pytest.mark.parametrize("command", [
    ("explain", "{}"), ("history", "{}"), ("archive", "{}"), ("restore", "{}"),
    ("correct", "{}", "new text"), ("forget", "--id", "{}", "--yes"),
    ("resolve", "{}", "--keep", "a"), ("undo", "{}")])
def test_ids_out_of_range_exit_2(vault: Path, password_env: None, command: tuple[str, ...],
                                 value: str) -> None:
    before = hashes(vault)
    argv = [a.format(value) for a in command]
    line = one_line_error(run_cli("--vault", str(vault), *argv))
    assert "id" in line
    assert hashes(vault) == before


def test_largest_sqlite_id_is_simply_not_found(vault: Path, password_env: None) -> None:
    r = run_cli("--vault", str(vault), "explain", str(2**63 - 1))
    assert "No memory" in one_line_error(r, code=4)


@pytest.mark.parametrize("when", [FAR_FUTURE, FAR_PAST, "10000-01-01T00:00:00Z", "nonsense"])
@pytest.mark.parametrize("command", [
    ("recall", "key", "--now", "{}"), ("recall", "key", "--as-of", "{}"),
    ("context", "key", "--now", "{}"), ("explain", "1", "--now", "{}"),
    ("consolidate", "--now", "{}"), ("remember", "a note", "--at", "{}")])
def test_times_outside_years_1_to_9999_exit_2(vault: Path, password_env: None,
                                              command: tuple[str, ...], when: str) -> None:
    before = hashes(vault)
    line = one_line_error(run_cli("--vault", str(vault), *[a.format(when) for a in command]))
    assert "time" in line.lower() and "Unknown store" not in line
    assert hashes(vault) == before


@pytest.mark.parametrize("query", ["yesterday", "last year", "3000 years ago", "in December",
                                   "today", "last month", "last week", "6 years ago"])
@pytest.mark.parametrize("now", ["0001-01-01T00:00:00Z", "2026-06-01T00:00:00Z",
                                 "9999-12-31T23:59:59.999Z"])
def test_time_ranges_at_the_edges_of_time(query: str, now: str) -> None:
    """A period the query names but the calendar cannot hold is no period (it raised
    OverflowError from recall: "3000 years ago" at any time)."""
    from app.clock import parse_iso
    from app.services.recall import parse_time_range
    got = parse_time_range(query, parse_iso(now))
    assert got is None or got[0] < got[1]


def test_recall_at_the_edges_of_time_works(vault: Path, password_env: None) -> None:
    for query, now in (("yesterday", "0001-01-01T00:00:00Z"),
                       ("in December", "9999-12-31T23:59:59Z")):
        r = run_cli("--vault", str(vault), "recall", query, "--now", now, "--json")
        assert r.code == 0, r.err


def test_remember_far_future_names_the_time_not_the_store(vault: Path,
                                                          password_env: None) -> None:
    line = one_line_error(run_cli("--vault", str(vault), "remember", "x", "--at", FAR_FUTURE))
    assert "--at" in line and "Unknown store" not in line
    line = one_line_error(run_cli("--vault", str(vault), "remember", "x", "--store", "nowhere"))
    assert "Unknown store 'nowhere'" in line


def test_recall_batch_unreadable_or_malformed(vault: Path, password_env: None,
                                              tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    assert "Cannot read" in one_line_error(
        run_cli("--vault", str(vault), "recall", "--batch", str(missing)))
    assert "Cannot read" in one_line_error(
        run_cli("--vault", str(vault), "recall", "--batch", str(tmp_path)))
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes(b'{"query": "caf\xe9"}\n')
    assert "line 1" in one_line_error(
        run_cli("--vault", str(vault), "recall", "--batch", str(latin1)))
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([
        json.dumps({"query": "ok"}),
        json.dumps({"query": "x", "now": 5}),
        json.dumps({"query": "x", "now": FAR_FUTURE}),
        '{"query": "lone \\ud800 surrogate"}',
        json.dumps({"query": "   "}),
        json.dumps({"query": "x", "qid": {"a": 1}}),
    ]) + "\n")
    line = one_line_error(run_cli("--vault", str(vault), "recall", "--batch", str(bad)))
    assert all(f"line {n}" in line for n in (2, 3, 4, 5, 6)) and "line 1:" not in line


def test_vault_naming_a_file(password_env: None, tmp_path: Path) -> None:
    f = tmp_path / "a-file"
    f.write_text("not a vault")
    for argv in (["init", "--kdf-memory-mib", "64"], ["status"], ["remember", "x"],
                 ["recall", "x"]):
        for folder in (f, f / "below"):
            line = one_line_error(run_cli("--vault", str(folder), *argv))
            assert str(f) in line
    assert f.read_text() == "not a vault"


def test_control_characters_in_a_message_are_escaped(password_env: None,
                                                     tmp_path: Path) -> None:
    """A message quoting a path stays one line and cannot colour the terminal."""
    folder = tmp_path / "a\nb\x1e\x1b[31mred"
    line = one_line_error(run_cli("--vault", str(folder), "status"))
    assert "\\n" in line and "\\x1e" in line and "\\x1b[31m" in line and "\x1b" not in line


def test_unreadable_password_file(vault: Path, tmp_path: Path) -> None:
    pw = tmp_path / "pw"
    pw.write_bytes(PW.encode() + b"\xff\n")
    assert "password file" in one_line_error(
        run_cli("--vault", str(vault), "--password-file", str(pw), "status"))
    assert "password file" in one_line_error(
        run_cli("--vault", str(vault), "--password-file", str(tmp_path), "status"))


@pytest.mark.parametrize("argv", [
    ["init", "--kdf-memory-mib", str(2**40)], ["init", "--kdf-memory-mib", "-1"],
    ["init", "--kdf-time", "0"], ["init", "--kdf-memory-mib", "64", "--kdf-time", str(2**63)]])
def test_kdf_numbers_out_of_range_exit_2(password_env: None, tmp_path: Path,
                                         argv: list[str]) -> None:
    assert "--kdf-" in one_line_error(run_cli("--vault", str(tmp_path / "v"), *argv))
    assert not (tmp_path / "v").exists()


@pytest.mark.parametrize("argv", [
    ["recall", "x", "--k", "0"], ["recall", "x", "--k", str(2**63)],
    ["context", "x", "--budget", "-5"], ["context", "x", "--budget", str(2**63)]])
def test_counts_out_of_range_exit_2(vault: Path, password_env: None, argv: list[str]) -> None:
    assert argv[2] in one_line_error(run_cli("--vault", str(vault), *argv))


def test_usage_errors_are_one_line(vault: Path, password_env: None) -> None:
    for argv in ([], ["nosuchcommand"], ["recall", "--k", "ten", "x"], ["explain"],
                 ["resolve", "1", "--keep", "c"]):
        line = one_line_error(run_cli("--vault", str(vault), *argv))
        assert "kept" in line and "--help" in line


@pytest.mark.parametrize("argv", [
    ["remember", "caf\udce9"], ["remember", "ok", "--agent", "\udcff"],
    ["remember", "ok", "--context", "a\udc80b"], ["recall", "caf\udce9"],
    ["forget", "caf\udce9", "--yes"], ["correct", "1", "caf\udce9"]])
def test_non_utf8_arguments_in_process(vault: Path, password_env: None,
                                       argv: list[str]) -> None:
    """What Python makes of non-UTF-8 bytes in argv (PEP 383 surrogate escapes)."""
    before = hashes(vault)
    assert "UTF-8" in one_line_error(run_cli("--vault", str(vault), *argv))
    assert hashes(vault) == before


def _kept_bytes(vault: Path, *args: bytes, **kw: object) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, KEPT_PASSWORD=PW)
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kw}
    return subprocess.run([sys.executable.encode(), b"-m", b"app.cli", b"--vault",
                           os.fsencode(vault), *args], cwd=ROOT, env=env, timeout=120,
                          **streams)  # type: ignore[call-overload]


def test_non_utf8_argument_bytes(vault: Path) -> None:
    before = hashes(vault)
    r = _kept_bytes(vault, b"remember", b"caf\xe9 latin-1")
    assert r.returncode == 2, r.stderr
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1 and "UTF-8" in lines[0]
    assert hashes(vault) == before


def test_output_to_a_closed_pipe_exits_141_quietly(vault: Path) -> None:
    """``kept ... | head -0``: the reader went away. Like a Unix tool killed by SIGPIPE: exit
    141, nothing on stderr."""
    for argv in ([b"recall", b"key", b"--json"], [b"status"]):
        r, w = os.pipe()
        os.close(r)  # the reader is gone before kept writes anything
        try:
            p = _kept_bytes(vault, *argv, stdout=w, stderr=subprocess.PIPE)
        finally:
            os.close(w)
        assert p.returncode == 141, p.stderr
        assert p.stderr == b""


# --- item 4: validated completely before the first write -----------------------------------

def _good(i: int) -> str:
    return json.dumps({"session": "s", "speaker": "Sam", "text": f"good line {i}",
                       "at": "2026-03-01T10:00:00Z", "ref": f"g{i}"})


def _bad(**fields: str) -> str:
    """A turn with some fields replaced; json.dumps writes a lone surrogate as "\\ud800"."""
    return json.dumps({"session": "s", "speaker": "Sam", "text": "t", "at": TIME, "ref": "b",
                       **fields})


BAD_LINES = {
    "surrogate in text": _bad(text="bad \ud800"),
    "surrogate in speaker": _bad(speaker="S\udfffam"),
    "surrogate in session": _bad(session="\udc00"),
    "surrogate in ref": _bad(ref="\ud83d"),
    "far future": _bad(at=FAR_FUTURE),
    "far past": _bad(at=FAR_PAST),
    "overlong text": _bad(text=LONG_TEXT),
    "overlong speaker": _bad(speaker="S" * 1001),
}


@pytest.mark.parametrize("kind", sorted(BAD_LINES))
def test_300_good_lines_and_one_bad_import_nothing(vault: Path, password_env: None,
                                                   tmp_path: Path, kind: str) -> None:
    f = tmp_path / "turns.jsonl"
    f.write_text("\n".join([_good(i) for i in range(300)] + [BAD_LINES[kind]]) + "\n")
    before = hashes(vault)
    line = one_line_error(run_cli("--vault", str(vault), "import", str(f)))
    assert "Nothing was imported" in line and "line 301" in line and "line 300" not in line
    assert hashes(vault) == before


def test_non_utf8_line_is_named_and_nothing_imported(vault: Path, password_env: None,
                                                     tmp_path: Path) -> None:
    f = tmp_path / "turns.jsonl"
    f.write_bytes(("\n".join(_good(i) for i in range(3)) + "\n").encode()
                  + b'{"session":"s","speaker":"Sam","text":"caf\xe9","at":"2026-01-01","ref":"x"}'
                  + b"\n" + _good(9).encode() + b"\n")
    before = hashes(vault)
    line = one_line_error(run_cli("--vault", str(vault), "import", str(f)))
    assert "line 4" in line and "UTF-8" in line
    assert hashes(vault) == before


def test_the_300_good_lines_alone_import_whole(password_env: None, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the good lines are good. Lexical only, to stay fast (embedding 300 turns
    takes seconds); the bad-line cases above never get as far as a model."""
    monkeypatch.setenv("KEPT_MODEL_DIR", str(tmp_path / "no-model"))
    folder = make_vault(tmp_path / "vault")
    f = tmp_path / "turns.jsonl"
    f.write_text("\n".join(_good(i) for i in range(300)) + "\n")
    r = run_cli("--vault", str(folder), "import", str(f))
    assert r.code == 0, r.err
    assert totals(folder)["short_term"] == 300


@pytest.mark.parametrize("argv", [
    ["remember", LONG_TEXT], ["correct", "1", LONG_TEXT], ["remember", "ok", "--agent", "a" * 1001],
    ["remember", "ok", "--ref", "r" * 1001], ["remember", "ok", "--context", "c" * 1001]])
def test_remember_and_correct_cap_every_field(vault: Path, password_env: None,
                                              argv: list[str]) -> None:
    before = hashes(vault)
    assert "longer than" in one_line_error(run_cli("--vault", str(vault), *argv))
    assert hashes(vault) == before


def test_facade_refuses_bad_turns_before_any_write(tmp_path: Path) -> None:
    """A caller that skips ``parse_import`` (the demo, the window, future IPC) still cannot
    write part of a batch: ``import_turns`` validates every turn first."""
    from app.api import Turn
    from app.errors import ValidationError
    from app.facade import Vault
    folder = make_vault(tmp_path / "vault")
    vault = Vault.open(folder, PW, load_model=False, threaded=False, use_chroma=False)
    try:
        good = [Turn("s", "Sam", f"turn {i}", 1.7e9, f"r{i}") for i in range(300)]
        for bad in (Turn("s", "Sam", "bad \ud800", 1.7e9, "x", line=301),
                    Turn("s", "Sam", "t", 253402300800.0, "x", line=301),
                    Turn("s", "Sam", "t", float("nan"), "x", line=301),
                    Turn("s", "\udc80", "t", 1.7e9, "x", line=301),
                    Turn("s", "Sam", LONG_TEXT, 1.7e9, "x", line=301)):
            with pytest.raises(ValidationError, match="line 301"):
                vault.import_turns([*good, bad], batch=256)
            assert vault.status().totals["short_term"] == 0
    finally:
        vault.lock()
