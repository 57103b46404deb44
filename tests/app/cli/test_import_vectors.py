"""``kept import`` and ``kept status`` on the vectors that follow a file import (issue 28): the
import says when its turns are in, then makes their vectors in its own process with progress;
``kept status`` says how many still wait and, with a rate measured, how long. The real model
(KEPT_MODEL_DIR), a real SQLCipher vault, ``kept`` run in this process."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli.vault import _pending_line
from tests import ROOT
from tests.app.cli.conftest import PW, make_vault, run_cli

CHATGPT = ROOT / "tests" / "data" / "import" / "chatgpt_conversations.json"


@pytest.fixture
def vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KEPT_PASSWORD", PW)
    return make_vault(tmp_path / "vault")


def _episodes_and_vectors(vault: Path) -> tuple[int, int, int]:
    from app.facade import Vault
    from tests.inside import inside
    v = Vault.open(vault, PW, threaded=False, use_chroma=False, load_model=False)
    try:
        row = inside(v).db.read(lambda c: c.execute(
            "SELECT (SELECT count(*) FROM memory WHERE store = 'episodic'), "
            "(SELECT count(*) FROM vector), (SELECT count(*) FROM vector_pending)").fetchone())
    finally:
        v.lock()
    return int(row[0]), int(row[1]), int(row[2])


def test_import_says_the_turns_are_in_then_makes_their_vectors(vault: Path) -> None:
    r = run_cli("--vault", str(vault), "import", str(CHATGPT))
    assert r.code == 0, r.err
    episodes, vectors, pending = _episodes_and_vectors(vault)
    assert episodes > 0 and vectors == episodes and pending == 0
    lines = r.out.splitlines()
    imported = next(i for i, x in enumerate(lines) if x.startswith("Imported 7 turns"))
    finding = next(i for i, x in enumerate(lines) if x.startswith("Finding meaning:"))
    assert imported < finding, "the turns are reported in before the vectors are made"
    assert f"{episodes} memories wait for their vectors" in lines[finding] or \
        (episodes == 1 and "1 memory waits" in lines[finding])
    assert lines[-1] == "Meaning search covers every imported turn."
    status = run_cli("--vault", str(vault), "status")
    assert status.code == 0 and "still wait for their vectors" not in status.out


def test_status_counts_the_memories_whose_vectors_are_still_to_be_made(
        vault: Path, tmp_path: Path) -> None:
    from app import policy, transfer
    from app.facade import Vault
    from tests.app.test_import_follow import _chat_file
    chat = _chat_file(tmp_path / "chat.jsonl", rounds=20)
    v = Vault.open(vault, PW, threaded=False, use_chroma=False)
    try:
        transfer.import_file(v, chat)  # one-shot vault: the vectors are left pending
    finally:
        v.lock()
    episodes, vectors, pending = _episodes_and_vectors(vault)
    # More than a one-shot unlock makes at once (a kill -9's few leftovers).
    assert pending == episodes > policy.FOLLOW_BATCH and vectors == 0
    r = run_cli("--vault", str(vault), "status")
    assert r.code == 0, r.err
    assert f"{pending} memories still wait for their vectors" in r.out
    assert "made while Kept is open" in r.out  # no rate measured in a one-shot command
    # The one-shot status command did not make them before answering.
    assert _episodes_and_vectors(vault)[2] == pending
    # Importing the same file again adds nothing and makes what was left.
    again = run_cli("--vault", str(vault), "import", str(chat))
    assert again.code == 0 and "Imported 0 turns" in again.out
    assert _episodes_and_vectors(vault) == (episodes, episodes, 0)


def test_the_status_line_with_a_measured_rate() -> None:
    assert _pending_line(9000, 40.0) == (
        "9,000 memories still wait for their vectors (meaning search finds them once made, "
        "words search already does): about 4 min left at 40/s")
