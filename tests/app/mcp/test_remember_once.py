"""``remember`` is idempotent on (session, ref) for one assistant and says ``already_saved``;
``recall``'s ``min_score`` takes the scale scores have (issue 26, item 7). A real ``kept
serve`` and the SDK client; the scopes on a real vault file."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agent_scope import AgentSession
from app.domain.memory import Draft
from app.facade import Vault
from tests.app.mcp.conftest import (
    Seeded,
    mcp_params,
    seed_vault,
    serving,
    structured,
    with_mcp,
)

PW = "correct horse battery"


def test_same_ref_same_agent_is_saved_once(tmp_path: Path, fast_kdf: object) -> None:
    v = Vault.create(tmp_path / "v", PW, kdf=fast_kdf, load_model=False, threaded=False,
                     use_chroma=False).vault
    try:
        a, b = AgentSession(v, "a"), AgentSession(v, "b")
        turn = Draft("We fixed the offsite for Porto", session="s1", ref="t7")
        first = a.remember(turn)
        again = a.remember(Draft("We fixed the offsite for Porto!", session="s1", ref="t7"))
        assert again.value == first.value and first.changes.memories
        assert not again.changes.memories  # nothing saved, nothing to refresh
        assert v.get(first.value).text == "We fixed the offsite for Porto"
        # Another session, another assistant, or no ref: separate memories.
        assert a.remember(Draft("We fixed the offsite for Porto", session="s2",
                                ref="t7")).value != first.value
        theirs = b.remember(turn).value
        assert theirs != first.value and v.get(theirs).agent == "b"
        assert a.remember(Draft("note", session="s1")).value != \
            a.remember(Draft("note", session="s1")).value
    finally:
        v.lock()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    seeded = seed_vault(tmp_path_factory.mktemp("once") / "v", ("a",), {
        "global": ("Ana lives in Lisbon", "Ana's birthday is July 3",
                   "The person drinks green tea every morning"),
    })
    with serving(seeded.folder):
        yield seeded


def test_remember_says_already_saved_and_min_score_fits_the_scale(served: Seeded) -> None:
    async def body(s, tools):  # type: ignore[no-untyped-def]
        call = {"text": "Kestrel review moved to Thursday", "session": "chat-9", "ref": "m12"}
        one = structured(tools, "remember", await s.call_tool("remember", call))
        two = structured(tools, "remember", await s.call_tool("remember", call))
        assert one["status"] == "saved" and one["saved"] is True
        assert two == {"id": one["id"], "saved": False, "status": "already_saved"}
        hits = structured(tools, "recall", await s.call_tool(
            "recall", {"query": "Ana lives in Lisbon", "k": 10}))["memories"]
        scores = [h["score"] for h in hits]
        top = max(scores)
        # A threshold above 1 is accepted and filters on the same scale as the scores.
        cut = structured(tools, "recall", await s.call_tool(
            "recall", {"query": "Ana lives in Lisbon", "k": 10, "min_score": top}))["memories"]
        assert cut and all(h["score"] >= top for h in cut) and len(cut) < len(hits)
        assert not (await s.call_tool("recall", {"query": "Ana", "min_score": 2.5})).is_error
        assert tools["recall"].input_schema["properties"]["min_score"]["maximum"] > 2.5
        return top
    top = with_mcp(mcp_params(served.folder, "a", served.keys["a"]), body)
    assert top > 0
