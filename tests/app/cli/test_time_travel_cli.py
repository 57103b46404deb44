"""`kept recall` / `kept context` time travel on imported history (issue 12): ``--as-of`` is
what was said and true then, ``--known-at`` what Kept had learned by then, ``--now`` never
returns what happened later. In-process CLI against a real vault (lexical recall)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.app.cli import conftest
from tests.conftest import new_vault

PW = "time travel pw"


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``kept ARGV`` in this process: (exit code, stdout, stderr)."""
    r = conftest.run_cli(*argv)
    return r.code, r.out, r.err


@pytest.fixture
def password_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("KEPT_PASSWORD", PW)
    yield


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """Imported today (the real clock), said in January and in March 2026."""
    from app.clock import parse_iso
    from app.domain.memory import Draft, Store
    folder = tmp_path / "vault"
    v = new_vault(folder, PW, load_model=False, threaded=False, use_chroma=False)
    jan, mar = parse_iso("2026-01-10T10:00:00Z"), parse_iso("2026-03-10T10:00:00Z")
    try:
        v.remember(Draft(text="Maya lives in Lisbon", store=Store.SEMANTIC, occurred_at=jan,
                         valid_until=mar))
        v.remember(Draft(text="Maya lives in Porto", store=Store.SEMANTIC, occurred_at=mar,
                         valid_from=mar))
        v.remember(Draft(text="Maya said the move to Porto went well", occurred_at=mar))
    finally:
        v.lock()
    return folder


def texts(*argv: str) -> list[str]:
    code, out, err = run_cli(*argv, "--json")
    assert code == 0, err
    return [h["text"] for h in json.loads(out)["hits"]]


def test_as_of_known_at_and_now(vault: Path, password_env: None) -> None:
    base = ("--vault", str(vault), "recall", "where does Maya live")
    assert set(texts(*base)) >= {"Maya lives in Lisbon", "Maya lives in Porto"}
    # A date alone is the end of that day.
    assert texts(*base, "--as-of", "2026-02-15") == ["Maya lives in Lisbon"]
    assert set(texts(*base, "--as-of", "2026-03-10")) == {
        "Maya lives in Porto", "Maya said the move to Porto went well"}
    # Kept learned all of it today: in February it knew nothing.
    assert texts(*base, "--known-at", "2026-02-15") == []
    assert "Maya lives in Porto" in texts(*base, "--known-at", "2099-01-01")
    # --now in February: nothing from March.
    feb = texts(*base, "--now", "2026-02-15T00:00:00Z")
    assert feb and all("Porto" not in t for t in feb)


def test_context_as_of(vault: Path, password_env: None) -> None:
    code, out, err = run_cli("--vault", str(vault), "context", "where does Maya live",
                             "--as-of", "2026-02-15", "--json")
    assert code == 0, err
    got = [i["text"] for i in json.loads(out)["items"]]
    assert "Maya lives in Lisbon" in got and not any("Porto" in t for t in got)


def test_bad_time_travel_dates_change_nothing(vault: Path, password_env: None) -> None:
    for flag in ("--as-of", "--known-at"):
        code, _out, err = run_cli("--vault", str(vault), "recall", "Maya", flag, "February")
        assert code == 2 and "time" in err.lower()
