"""Composition (issue 13, item 2): app/bootstrap.py builds the services once per unlock and
hands them to the Vault; remember, import, correct and consolidation write memories through
one ingestion service (app/services/ingest.py)."""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.memory import Store
from app.errors import VaultLocked
from app.facade import Vault
from tests.inside import inside

from .conftest import DAY, T0, remember, turn


def test_services_are_built_once_and_refused_after_lock(vault: Vault) -> None:
    assert inside(vault).consolidation is inside(vault).consolidation
    assert inside(vault).recall is inside(vault).recall
    vault.lock()
    with pytest.raises(VaultLocked):
        _ = inside(vault).consolidation
    with pytest.raises(VaultLocked):
        _ = inside(vault).recall
    with pytest.raises(VaultLocked):
        vault.forget_plan(query="anything")


def test_remember_import_correct_and_consolidation_share_one_ingestion(
        vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.services import ingest
    scored: list[str] = []
    real = ingest.score

    def spy(d: Any, now: float, known: Any = None) -> Any:
        scored.append(d.store.value)
        return real(d, now, known)
    monkeypatch.setattr(ingest, "score", spy)

    mid = remember(vault, "I live in Lisbon, near the river.", speaker="Sam",
                   occurred_at=T0 - 3 * DAY)
    assert scored == ["episodic"]
    new = vault.correct(mid, "I live in Porto, near the river.").value
    assert scored == ["episodic"] * 2
    assert new in inside(vault).index  # embedded and indexed like a remembered memory
    vault.import_turns([turn("s1", "Sam", "My sister Ana visits on Sundays.", T0 - DAY, "r1")])
    assert scored[2:] == ["short_term", "episodic"]  # the turn, and the episode derived from it

    report = vault.consolidate(steps=("extract",)).value
    created = report.ids.get("created", [])
    assert report.counts["facts_created"] >= 1 and created
    assert len(scored[4:]) == len(created)  # every fact scored by the same ingestion code
    assert {s for s in scored[4:]} <= {Store.SEMANTIC.value, Store.PROCEDURAL.value}
    assert all(c in inside(vault).index for c in created)  # and its vector is in RAM


def test_lock_lets_go_of_the_model(vault: Vault) -> None:
    """The services outlive no unlock: after lock none of them holds the embedder."""
    ingest, recall = vault._ingest, inside(vault).recall
    assert ingest.embedder is not None and recall.embedder is not None
    vault.lock()
    assert inside(vault).embedder is None and ingest.embedder is None and recall.embedder is None
