"""The CLI prints the facade's typed results (app/api.py) as it printed the dicts they
replaced: `kept contradictions` (both sides of a card, text and --json) and `kept undo`
(UndoReport), in-process against a real vault."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app import words
from app.api import ContradictionItem, Turn
from app.clock import parse_iso
from app.facade import Vault
from tests.app.cli.conftest import PW, run_cli
from tests.conftest import new_vault


def turn(text: str, at: str, ref: str) -> Turn:
    return Turn(ref, "Sam", text, parse_iso(at), ref)


@pytest.fixture
def folder(tmp_path: Path, password_env: None) -> Path:
    """A vault with one two-sided contradiction (settled by the policy: "auto")."""
    folder = tmp_path / "vault"
    v = new_vault(folder, PW, load_model=False, threaded=False, use_chroma=False)
    try:
        v.import_turns([turn("I live in Lisbon, near the river.", "2026-05-03T10:00:00Z", "a")])
        v.consolidate()
        lisbon = next(h.id for h in v.recall("Sam lives in Lisbon", touch=False)
                      if h.text == "Sam lives in Lisbon")
        v.correct(lisbon, "Sam lives in Braga")
        v.import_turns([turn("I live in Coimbra these days.", "2026-06-03T10:00:00Z", "b")])
        v.consolidate()
    finally:
        v.lock()
    return folder


def _items(folder: Path) -> list[ContradictionItem]:
    v = Vault.open(folder, PW, load_model=False, threaded=False, use_chroma=False)
    try:
        return list(v.contradictions(None))
    finally:
        v.lock()


def test_contradictions_print_both_sides_as_before(folder: Path) -> None:
    [item] = _items(folder)
    r = run_cli("--vault", str(folder), "contradictions", "--all", "--json")
    assert r.code == 0, r.err
    [out] = json.loads(r.out)
    # The JSON of a side is what storage/inbox.py's dict was (issue 12), key for key.
    assert list(out["a"]) == ["id", "text", "status", "occurred_at", "confidence", "refs",
                              "sources"]
    assert {out["a"]["text"], out["b"]["text"]} == {"Sam lives in Braga",
                                                    "Sam lives in Coimbra"}
    assert out["a"]["id"] == item.a.id and out["b"]["refs"] == list(item.b.refs)
    assert out["status"] == "auto" and out["kind"] == "contradiction"
    r = run_cli("--vault", str(folder), "contradictions", "--all")
    assert r.code == 0, r.err
    for side, s in (("a", item.a), ("b", item.b)):
        # Local time as people write it (issue 25); the JSON above keeps the machine form.
        assert f"  {side}: [{s.id}] {words.when(s.occurred_at)}: {s.text}\n" in r.out


def test_undo_prints_what_the_report_counts(folder: Path) -> None:
    r = run_cli("--vault", str(folder), "undo", "2")
    assert r.code == 0, r.err
    # In the window's words (issue 25): "Run 2 undone: removed 3 memories it made, ...".
    assert r.out.startswith("Run 2 undone: removed ") and "it made" in r.out
    assert "nothing you can see" not in r.out and "_" not in r.out
