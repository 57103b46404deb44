"""An assistant's workspace (issue 27 item 10): what it holds in its own scope, listed apart
from the person's memories and from every other assistant's, paged, and exported as
``agents/NAME.md`` beside the person's PARA tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agent_scope import AgentSession
from app.domain.memory import Draft, Store
from app.errors import ValidationError
from app.facade import Vault
from app.services.export import write_markdown
from tests.app.conftest import DAY, T0


def _fill(vault: Vault) -> dict[str, list[int]]:
    for name in ("claude", "cursor"):
        vault.pair_agent(name)
    said = {"claude": [("Sam prefers answers in bullet points.", Store.SEMANTIC, 2),
                       ("Helped Sam draft the landlord email.", Store.EPISODIC, 1),
                       ("Sam reviews the budget on Sunday evenings.", Store.PROCEDURAL, 1)],
            "cursor": [("The repo uses tabs, not spaces.", Store.SEMANTIC, 0)]}
    ids: dict[str, list[int]] = {"claude": [], "cursor": [], "global": []}
    for name, items in said.items():
        session = AgentSession(vault, name)
        for text, store, days_ago in items:
            ids[name].append(int(session.remember(Draft(
                text=text, store=store, occurred_at=T0 - days_ago * DAY)).value))
    ids["global"].append(int(vault.remember(Draft(text="Sam's sister is called Ines.",
                                                  store=Store.SEMANTIC)).value))
    return ids


def test_each_assistant_sees_its_own_workspace_paged(vault: Vault) -> None:
    ids = _fill(vault)
    page = vault.agent_memories("claude")
    assert sorted(int(r.id) for r in page.rows) == sorted(ids["claude"])
    assert [r.occurred_at for r in page.rows] == sorted((r.occurred_at for r in page.rows),
                                                        reverse=True)
    assert {r.agent for r in page.rows} == {"claude"} and page.next is None
    first = vault.agent_memories("claude", limit=2)
    rest = vault.agent_memories("claude", after=first.next, limit=2)
    assert [r.id for r in first.rows + rest.rows] == [r.id for r in page.rows]
    assert [r.text for r in vault.agent_memories("cursor").rows] == [
        "The repo uses tabs, not spaces."]
    assert vault.agent_memories("nobody").rows == ()
    with pytest.raises(ValidationError):
        vault.agent_memories("global")  # the person's memories are not a workspace


def test_the_markdown_export_has_a_workspace_per_assistant(vault: Vault, tmp_path: Path
                                                           ) -> None:
    _fill(vault)
    out = tmp_path / "notes"
    write_markdown(vault, out, now=T0)
    claude = (out / "agents" / "claude.md").read_text()
    assert "Sam prefers answers in bullet points." in claude
    assert "Helped Sam draft the landlord email." in claude and "habit: Sam reviews" in claude
    assert "tabs, not spaces" not in claude and "Ines" not in claude
    cursor = (out / "agents" / "cursor.md").read_text()
    assert "The repo uses tabs, not spaces." in cursor and "bullet points" not in cursor
    # Days newest first, each once.
    days = [line for line in claude.splitlines() if line.startswith("## ")]
    assert len(days) == 2 and days == sorted(days, reverse=True)  # two days ago, yesterday
    index = (out / "index.md").read_text()
    assert "[[agents/claude|claude]]" in index and "[[agents/cursor|cursor]]" in index
