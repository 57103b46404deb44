"""Fixtures for the app-layer tests: a real vault (SQLCipher file, floor Argon2id parameters,
the ONNX embedder, exact vector search) on a fixed clock, locked at teardown."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.api import Turn
from app.clock import FixedClock, parse_iso
from app.domain.memory import Draft, MemoryId, Store
from app.facade import Vault
from tests.inside import inside

PW = "pw"
T0 = parse_iso("2026-06-01T12:00:00Z")  # a Monday
HOUR = 3600.0
DAY = 24 * HOUR


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(T0)


@pytest.fixture(scope="session")
def embedder() -> Any:
    """One real ONNX embedder for the session (loading it costs ~0.5 s a vault)."""
    from storage.embedder import Embedder, find_model_dir
    path = find_model_dir()
    if path is None:
        pytest.fail("the embedding model is required: set KEPT_MODEL_DIR (see README)")
    return Embedder(path)


@pytest.fixture
def vault(vault_dir: Path, clock: FixedClock, embedder: Any,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[Vault]:
    from tests.conftest import new_vault  # here: a child that imports this module must not
    share_embedder(monkeypatch, embedder)  # load the suite's guards (tests/app/test_network.py)
    v = new_vault(vault_dir, PW, threaded=False, clock=clock, use_chroma=False)
    assert v.semantic_search, "the real embedder must be loaded"
    try:
        yield v
    finally:
        v.lock()


def share_embedder(monkeypatch: pytest.MonkeyPatch, embedder: Any) -> None:
    """Vault.create / Vault.open compose as usual, except that the (real) model is loaded
    once per session."""
    from app import bootstrap
    monkeypatch.setattr(bootstrap, "load_embedder",
                        lambda load_model: (embedder, embedder.model_dir) if load_model
                        else (None, None))


def remember(vault: Vault, text: str, store: Store = Store.EPISODIC, **kw: Any) -> MemoryId:
    return vault.remember(Draft(text=text, store=store, **kw)).value


def neutral(**kw: Any) -> dict[str, Any]:
    """Draft keywords that pin every score input, so only what a test varies differs."""
    out: dict[str, Any] = {"importance": 0.5, "emotional": 0.0, "social": 0.0}
    out.update(kw)
    return out


def turn(session: str, speaker: str, text: str, at: float, ref: str,
         store: Store = Store.EPISODIC) -> Turn:
    return Turn(session=session, speaker=speaker, text=text, at=at, ref=ref, store=store)


def row(vault: Vault, sql: str, *params: Any) -> tuple[Any, ...]:
    r = inside(vault).db.read(lambda c: c.execute(sql, params).fetchone())
    assert r is not None, sql
    return tuple(r)


def ids(hits: list[Any]) -> list[int]:
    return [int(h.id) for h in hits]
