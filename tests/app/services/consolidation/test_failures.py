"""Issue 12, item 1: a corrected fact no longer breaks consolidation, and a failed batch is
never silent. The contract: the run report lists each failed batch with its step and error
class (never content); ``kept consolidate`` exits 6 with one line on stderr; the window's
Consolidation page and status bar say so. LLM batches that fell back to the rules (item 11)
are listed the same way."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.api import Turn
from app.clock import FixedClock, parse_iso
from app.errors import ValidationError
from app.facade import Vault
from app.services.consolidation import BatchFailure
from tests.conftest import new_vault
from tests.inside import inside

NOW = parse_iso("2026-07-02T00:00:00Z")
PW = "pw-failures"


@pytest.fixture
def vault(vault_dir: Path, fast_kdf: object) -> Iterator[Vault]:
    v = new_vault(vault_dir, PW, threaded=False, clock=FixedClock(NOW), use_chroma=False,
                  load_model=False)
    yield v
    if not v.locked:
        v.lock()


def turn(text: str, at: str, ref: str) -> Turn:
    return Turn(ref, "Sam", text, parse_iso(at), ref)


def fact_id(v: Vault, text: str) -> int:
    return int(inside(v).db.read(lambda c: c.execute(
        "SELECT id FROM memory WHERE text = ? AND status = 'active'", (text,)).fetchone()[0]))


def failing_extract(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules raise with memory text in the message (which must go nowhere)."""
    import app.services.consolidation.extraction as cons

    def boom(ep: Any) -> Any:
        raise ValueError(f"cannot read {ep.text!r}")
    monkeypatch.setattr(cons, "extract", boom)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- the bug --------------------------------------------------------------------------------

def test_consolidation_keeps_working_after_a_correction(vault: Vault) -> None:
    vault.import_turns([turn("I live in Lisbon, near the river.", "2026-05-03T10:00:00Z", "a")])
    assert vault.consolidate().value.failed_batches == 0
    lisbon = fact_id(vault, "Sam lives in Lisbon")
    braga = int(vault.correct(lisbon, "Sam lives in Braga").value)
    vault.import_turns([turn("I live in Coimbra these days.", "2026-06-03T10:00:00Z", "b")])
    report = vault.consolidate().value
    assert report.failed_batches == 0 and report.failures == ()
    assert report.counts["facts_created"] == 1
    # The corrected fact is compared by the object read back from its sentence: a conflict,
    # settled by the policy (the person's correction wins), not a crash.
    assert report.counts["contradictions_found"] == 1
    [item] = vault.contradictions(status="auto")
    assert {item.a.text, item.b.text} == {"Sam lives in Braga", "Sam lives in Coimbra"}
    assert vault.get(braga).status.value == "active"
    # Restating the corrected fact is a duplicate of it, not a new conflict; later runs work.
    vault.import_turns([turn("I live in Braga.", "2026-06-20T10:00:00Z", "c")])
    again = vault.consolidate().value
    assert again.failed_batches == 0
    assert again.counts.get("facts_corroborated") == 1
    assert "contradictions_found" not in again.counts


def test_a_fact_reworded_beyond_the_templates_still_compares(vault: Vault) -> None:
    vault.import_turns([turn("I live in Lisbon, near the river.", "2026-05-03T10:00:00Z", "a")])
    vault.consolidate()
    old = fact_id(vault, "Sam lives in Lisbon")
    vault.correct(old, "Actually Sam has a flat by the sea in Cascais")
    vault.import_turns([turn("I live in Porto with two roommates.", "2026-06-03T10:00:00Z", "b")])
    report = vault.consolidate().value
    assert report.failed_batches == 0
    assert report.counts["facts_created"] == 1


# --- the failed-batch contract ----------------------------------------------------------------

def test_a_failed_batch_is_in_the_report_with_its_error_class_and_no_content(
        vault: Vault, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    vault.import_turns([turn("I live in Lisbon, near the river.", "2026-05-03T10:00:00Z", "a")])
    failing_extract(monkeypatch)
    report = vault.consolidate().value
    assert report.failures == (BatchFailure("extract", "ValueError", 1),)
    assert report.failed_batches == 1
    assert report.failure_text == "1 failed batch (extract: ValueError)"
    [run] = vault.runs(1)
    assert run.status == "partial" and run.report is not None
    assert run.report.failures == (BatchFailure("extract", "ValueError", 1),)
    stored = inside(vault).db.read(lambda c: c.execute("SELECT report FROM run").fetchone()[0])
    assert "Lisbon" not in stored and "Lisbon" not in caplog.text
    assert "ValueError" in caplog.text


def test_a_misspelt_step_is_an_error_not_a_skipped_batch(vault: Vault) -> None:
    with pytest.raises(ValidationError, match="extrakt"):
        vault.consolidate(steps=("extract", "extrakt"))
    assert vault.runs() == []


def test_scheduled_job_outcome_names_the_failure(vault: Vault,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from app.jobs import Jobs
    vault.import_turns([turn("I live in Lisbon.", "2026-05-03T10:00:00Z", "a")])
    failing_extract(monkeypatch)
    outcome = Jobs(vault, inside(vault).clock).heartbeat()
    assert not outcome.ok and outcome.error == "1 failed batch (extract: ValueError)"


def test_llm_fallbacks_are_reported(vault: Vault) -> None:
    vault.set_setting("extraction.provider", "llm")
    vault.set_setting("extraction.llm_base_url", f"http://127.0.0.1:{closed_port()}/v1")
    vault.set_setting("extraction.llm_model", "tiny")
    vault.import_turns([turn("I live in Lisbon.", "2026-05-03T10:00:00Z", "a")])
    report = vault.consolidate().value
    assert report.llm_fallbacks == {"LlmUnavailable": 1}
    assert report.failed_batches == 0 and report.counts["facts_created"] == 1  # the rules did it
    stored = vault.runs(1)[0].report
    assert stored is not None and stored.llm_fallbacks == {"LlmUnavailable": 1}


# --- the CLI ----------------------------------------------------------------------------------

def _cli(vault_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
         *args: str) -> tuple[int, str, str]:
    from app.cli import main
    monkeypatch.setenv("KEPT_PASSWORD", PW)
    code = main(["--vault", str(vault_dir), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_consolidate_exits_6_with_one_line_when_a_batch_failed(
        vault: Vault, vault_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    vault.import_turns([turn("I live in Lisbon, near the river.", "2026-05-03T10:00:00Z", "a")])
    vault.lock()
    failing_extract(monkeypatch)
    code, out, err = _cli(vault_dir, monkeypatch, capsys, "consolidate")
    assert code == 6
    assert err.splitlines() == [
        "kept: run 1 finished with 1 failed batch (extract: ValueError); they are retried on "
        "the next run (details in the log)."]
    assert "Lisbon" not in out + err
    code, out, err = _cli(vault_dir, monkeypatch, capsys, "consolidate", "--json")
    assert code == 6 and len(err.splitlines()) == 1
    assert json.loads(out)["failures"] == [{"step": "extract", "error": "ValueError",
                                            "items": 1}]
    monkeypatch.undo()
    code, out, err = _cli(vault_dir, monkeypatch, capsys, "consolidate")
    assert code == 0 and err == "" and "1 fact learned" in out and "facts_created" not in out


def test_cli_consolidate_says_when_the_llm_fell_back(
        vault: Vault, vault_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    vault.set_setting("extraction.provider", "llm")
    vault.set_setting("extraction.llm_base_url", f"http://127.0.0.1:{closed_port()}/v1")
    vault.set_setting("extraction.llm_model", "tiny")
    vault.import_turns([turn("I live in Lisbon.", "2026-05-03T10:00:00Z", "a")])
    vault.lock()
    code, out, _err = _cli(vault_dir, monkeypatch, capsys, "consolidate")
    assert code == 0
    assert "LLM extraction unavailable for 1 batch (LlmUnavailable)" in out
