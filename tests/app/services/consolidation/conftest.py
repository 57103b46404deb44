"""Fixtures shared by the consolidation tests: a real local HTTP server standing in for an
OpenAI-compatible endpoint (``fake_llm.FakeLlm``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.app.services.consolidation.fake_llm import FakeLlm


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    with FakeLlm().running() as server:
        yield server
