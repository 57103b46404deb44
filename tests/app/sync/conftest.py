"""Fixtures of the sync tests: two real vaults that sync through one folder (``fleet.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.app.sync.fleet import Fleet, make_fleet


@pytest.fixture
def two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any) -> Iterator[Fleet]:
    fleet = make_fleet(tmp_path, monkeypatch, embedder, 2)
    try:
        yield fleet
    finally:
        fleet.close()
