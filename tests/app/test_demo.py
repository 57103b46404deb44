"""The demo vault is created once; "Reset demo" is explicit (issue 12, item 7).

Every start used to re-import the demo's turns, so a memory forgotten in the demo came back
after a restart: the first "forget for good" a new user tried failed. Real vault, real model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.demo import create_demo_vault, reset_demo_vault
from app.errors import AppError
from app.facade import Vault

# The real model, loaded once per session instead of once per vault (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("shared_model")

CAT = "allergic to cats"


def _cat_memories(vault: Any) -> list[int]:
    return list(vault.forget_plan(query=CAT).memory_ids)


def _totals(vault: Any) -> int:
    return sum(vault.status().totals.values())


def test_forgotten_demo_memory_stays_forgotten_until_reset(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    vault: Any = create_demo_vault(folder)  # the first start
    try:
        original = _totals(vault)
        plan = vault.forget_plan(query=CAT)
        assert plan.memory_ids
        vault.forget(plan)
        after_forget = _totals(vault)
    finally:
        vault.lock()
    vault = create_demo_vault(folder)  # the next start of the app
    try:
        assert _cat_memories(vault) == []
        assert _totals(vault) == after_forget
        assert all("cats" not in h.text for h in vault.recall("is Sam allergic to cats", k=10))
    finally:
        vault.lock()
    vault = reset_demo_vault(folder)  # "Reset demo"
    try:
        assert _totals(vault) == original
        assert _cat_memories(vault)
    finally:
        vault.lock()


def test_reset_refuses_a_vault_that_is_not_the_demo(tmp_path: Path, fast_kdf: Any) -> None:
    folder = tmp_path / "mine"
    Vault.create(folder, "my own password", kdf=fast_kdf, threaded=False,
                 load_model=False).vault.lock()
    before = sorted((p.name, p.read_bytes()) for p in folder.iterdir())
    with pytest.raises(AppError):
        reset_demo_vault(folder)
    assert sorted((p.name, p.read_bytes()) for p in folder.iterdir()) == before
    Vault.open(folder, "my own password", threaded=False, load_model=False).lock()
