"""Fixtures shared by the consolidation tests: a real local HTTP server standing in for an
OpenAI-compatible endpoint (``fake_llm.FakeLlm``), and Maya's vault on 2 July 2026 with
helpers to say things in it and read its tables."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.clock import FixedClock, parse_iso
from app.domain.memory import Draft, Store
from app.facade import Vault
from tests.app.services.consolidation.fake_llm import FakeLlm
from tests.conftest import new_vault
from tests.inside import inside

NOW = parse_iso("2026-07-02T00:00:00Z")  # ``maya_vault``'s clock


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    with FakeLlm().running() as server:
        yield server


@pytest.fixture
def maya_vault(vault_dir: Path, fast_kdf: object, shared_model: None) -> Iterator[Vault]:
    """A real vault (the session's model, not threaded, no Chroma) whose clock is ``NOW``."""
    v = new_vault(vault_dir, "pw-maya", threaded=False, clock=FixedClock(NOW), use_chroma=False)
    yield v
    if not v.locked:
        v.lock()


def said(v: Vault, text: str, at: str = "2026-06-30T10:00:00Z", *, agent: str = "global",
         speaker: str = "Maya", context: str | None = None) -> int:
    """Something said (an episode), by Maya unless ``speaker`` says otherwise."""
    return int(v.remember(Draft(text=text, store=Store.EPISODIC, occurred_at=parse_iso(at),
                                speaker=speaker, agent=agent, context=context)).value)


def rows(v: Vault, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in inside(v).db.read(lambda c: c.execute(sql, params).fetchall())]
