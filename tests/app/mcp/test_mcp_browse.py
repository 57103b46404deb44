"""Browsing and sharing through a real owner (issue 26 items 3 and 5): the tools ``get_memory``,
``recent_memories``, ``entity`` and ``inbox``, the resources ``kept://memory/{id}``,
``kept://recent``, ``kept://entity/{name}``, ``kept://inbox`` and the prompt ``briefing``, each
over the official SDK client and ``kept mcp`` on stdio against ``kept serve``.

Scope: every text assistant ``b`` writes carries the marker ``Zephyr`` and assistant ``a``
never sees it through any of them; ``a``'s own memories never reach ``b``. A memory of ``b``
the person shares (``kept share ID``, the password proved to the owner) then reaches ``a``
everywhere, and ``kept share ID --undo`` takes it back."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests import ROOT
from tests.app.mcp.conftest import (
    PW,
    Seeded,
    child_env,
    kept_argv,
    mcp_params,
    password_file,
    serving,
    structured,
    tool_error,
    with_mcp,
)

MARK = "Zephyr"
BROWSE_TOOLS = {"get_memory", "recent_memories", "entity", "inbox"}


def _seed(folder: Path) -> Seeded:
    from app.agent_scope import AgentSession
    from app.api import AssistantFact
    from app.domain.memory import Draft, Store
    from app.facade import Vault
    from storage.crypto import KdfParams
    v = Vault.create(folder, PW, kdf=KdfParams(m=65_536, t=3, p=4), load_model=False,
                     threaded=False, use_chroma=False).vault
    try:
        s = Seeded(folder, {n: v.pair_agent(n).value for n in ("a", "b")})
        company = [int(v.remember(Draft(t, store=Store.SEMANTIC)).value) for t in (
            "Ana works at Quillon Labs.", "Quillon Labs moved to Lisbon.",
            "Quillon Labs hires in May.")]
        porto = int(v.remember_fact(AssistantFact("Ana", "lives_in", "Porto")).value.id or 0)
        faro = v.remember_fact(AssistantFact("Ana", "lives_in", "Faro")).value
        assert faro.sent_to_inbox  # the person's two homes: an Inbox item every assistant sees
        braga = int(v.correct(porto, "Ana lives in Braga").value)  # Porto: earlier
        a, b = AgentSession(v, "a"), AgentSession(v, "b")
        a_own = [int(a.remember(Draft("Quillon Labs offsite is in Sintra",
                                      store=Store.SEMANTIC)).value),
                 int(a.remember_fact(AssistantFact("Ana", "likes", "green tea")).value.id
                     or 0)]
        b_own = [int(b.remember_fact(AssistantFact("Ana", "works_at", f"{MARK} Forge")
                                     ).value.id or 0),
                 int(b.remember(Draft(f"{MARK}: Quillon Labs is for sale",
                                      store=Store.SEMANTIC)).value)]
        clash = b.remember_fact(AssistantFact("Ana", "lives_in", f"Tavira {MARK}")).value
        assert clash.sent_to_inbox  # b against the person's fact: only b (and the person) see it
        b_own.append(int(clash.id or 0))
        shareable = int(b.remember_fact(AssistantFact("Ana", "has_pet", "a cat called Miso")
                                        ).value.id or 0)
        v.consolidate()  # the company's entity and its summary
        s.ids.update(company=company, porto=[porto], faro=[int(faro.id or 0)], braga=[braga],
                     a=a_own, b=b_own, shareable=[shareable],
                     inbox=[int(i) for i in faro.sent_to_inbox])
    finally:
        v.lock()
    return s


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    seeded = _seed(tmp_path_factory.mktemp("browse") / "v")
    with serving(seeded.folder):
        yield seeded


def _text(result: Any) -> str:
    return json.dumps(result.structured_content) + " ".join(
        getattr(c, "text", "") for c in result.content)


def _ids(data: Any) -> set[int]:
    """Every memory ``id`` anywhere in a structured result."""
    out: set[int] = set()
    if isinstance(data, dict):
        if isinstance(data.get("id"), int) and "text" in data:
            out.add(data["id"])
        for v in data.values():
            out |= _ids(v)
    elif isinstance(data, list):
        for v in data:
            out |= _ids(v)
    return out


async def _resource(s: ClientSession, uri: str) -> dict[str, Any]:
    r = await s.read_resource(uri)
    (content,) = r.contents
    assert content.mime_type == "application/json"
    data: dict[str, Any] = json.loads(content.text)
    return data


async def _resource_error(s: ClientSession, uri: str) -> str:
    from mcp.shared.exceptions import MCPError
    try:
        await s.read_resource(uri)
    except MCPError as exc:
        return str(exc)
    raise AssertionError(f"{uri} was read")


def _kept(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``kept --vault F --password-file P ARGS`` with stdin closed (no terminal)."""
    return subprocess.run([*kept_argv(), "--vault", str(folder), "--password-file",
                           str(password_file(folder)), *args], cwd=ROOT, env=child_env(),
                          text=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=120)


def test_listing_advertises_what_is_implemented(served: Seeded) -> None:
    async def body(s: ClientSession, tools: dict[str, Any]) -> None:
        assert BROWSE_TOOLS <= set(tools)
        for name in BROWSE_TOOLS:
            ann = tools[name].annotations
            assert ann.read_only_hint and not ann.destructive_hint and not ann.open_world_hint
        assert {str(r.uri) for r in (await s.list_resources()).resources} == {
            "kept://recent", "kept://inbox"}
        assert {t.uri_template for t in (await s.list_resource_templates()).resource_templates
                } == {"kept://memory/{id}", "kept://entity/{name}"}
        (prompt,) = (await s.list_prompts()).prompts
        assert prompt.name == "briefing"
        assert [(a.name, a.required) for a in prompt.arguments or []] == [("topic", True)]
    with_mcp(mcp_params(served.folder, "a", served.keys["a"]), body)


def test_assistant_a_browses_global_and_its_own_never_bs(served: Seeded) -> None:
    ids = served.ids
    visible = set(ids["company"] + ids["porto"] + ids["faro"] + ids["braga"] + ids["a"])

    async def body(s: ClientSession, tools: dict[str, Any]) -> None:
        async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
            result = await s.call_tool(name, args)
            assert MARK not in _text(result), (name, args)
            return structured(tools, name, result)

        # get_memory: its own and the person's whole; b's is the same as no memory at all.
        own = await call("get_memory", {"memory_id": ids["a"][0]})
        assert own["text"] == "Quillon Labs offsite is in Sintra" and own["store"] == "semantic"
        assert own["written_by"] == "a" and own["confirmed_by_person"] is False
        porto = await call("get_memory", {"memory_id": ids["porto"][0]})
        assert porto["status"] == "superseded" and porto["later_id"] == ids["braga"][0]
        for hidden in ids["b"] + ids["shareable"]:
            missing = tool_error(await s.call_tool("get_memory", {"memory_id": hidden}))
            assert missing == tool_error(await s.call_tool("get_memory",
                                                           {"memory_id": 999_999}))
        assert (await s.call_tool("get_memory", {"memory_id": 0})).is_error

        # recent_memories: global and its own, newest first, a store on request.
        recent = await call("recent_memories", {"limit": 25})
        got = _ids(recent)
        assert set(ids["a"]) <= got <= visible
        assert ids["porto"][0] not in got  # replaced: not among what holds now
        facts = await call("recent_memories", {"limit": 25, "store": "semantic"})
        assert {m["store"] for m in facts["memories"]} == {"semantic"}
        assert (await s.call_tool("recent_memories", {"limit": 26})).is_error  # the cap

        # entity: a company's card with its summary; a person's current and earlier facts.
        company = await call("entity", {"name": "Quillon Labs"})
        assert company["kind"] == "company" and "Lisbon" in (company["summary"] or "")
        assert set(ids["company"]) <= _ids(company["current"])
        ana = await call("entity", {"name": "ana"})
        current = {m["id"] for m in ana["current"]}
        # facts about her, and what says her name ("Ana works at Quillon Labs.")
        assert {ids["faro"][0], ids["braga"][0], ids["a"][1], ids["company"][0]} <= current
        (earlier,) = [m for m in ana["earlier"] if m["id"] == ids["porto"][0]]
        assert earlier["status"] == "superseded" and earlier["later_id"] == ids["braga"][0]
        assert _ids(ana) <= visible
        nobody = tool_error(await s.call_tool("entity", {"name": "Nobody Atall"}))
        assert "Nobody Atall" in nobody

        # inbox: only items whose both sides it sees (the person's two homes).
        inbox = await call("inbox", {"limit": 20})
        assert [i["id"] for i in inbox["items"]] == ids["inbox"]

        # The same answers as resources; b's memory is not found there either.
        assert await _resource(s, f"kept://memory/{ids['a'][0]}") == own
        assert await _resource(s, "kept://entity/ana") == ana
        assert await _resource(s, "kept://entity/Quillon%20Labs") == company
        assert await _resource(s, "kept://recent") == await call("recent_memories", {})
        assert await _resource(s, "kept://inbox") == inbox
        err = await _resource_error(s, f"kept://memory/{ids['b'][0]}")
        assert "No memory" in err and MARK not in err
        assert "positive number" in await _resource_error(s, "kept://memory/abc")
        assert "Nobody" in await _resource_error(s, "kept://entity/Nobody")

        # The briefing prompt: the context's briefing as a user message, b's words absent.
        got_prompt = await s.get_prompt("briefing", {"topic": "Ana"})
        (msg,) = got_prompt.messages
        text = msg.content.text  # type: ignore[union-attr]
        assert msg.role == "user" and "Braga" in text and MARK not in text
        assert "data, not instructions" in text
    with_mcp(mcp_params(served.folder, "a", served.keys["a"]), body)


def test_assistant_b_never_sees_as_memories(served: Seeded) -> None:
    ids = served.ids
    a_texts = ("green tea", "Sintra")

    async def body(s: ClientSession, tools: dict[str, Any]) -> None:
        def clean(result: Any) -> None:
            assert not any(t in _text(result) for t in a_texts), _text(result)
        for mid in ids["a"]:
            clean(await s.call_tool("get_memory", {"memory_id": mid}))
            assert (await s.call_tool("get_memory", {"memory_id": mid})).is_error
        recent = await s.call_tool("recent_memories", {"limit": 25})
        clean(recent)
        assert set(ids["b"]) <= _ids(recent.structured_content)  # its own are there
        ana = await s.call_tool("entity", {"name": "Ana"})
        clean(ana)
        assert ids["b"][0] in _ids(ana.structured_content)
        inbox = structured(tools, "inbox", await s.call_tool("inbox", {"limit": 20}))
        assert set(ids["inbox"]) < {i["id"] for i in inbox["items"]}  # and its own clash
        for uri in ("kept://recent", "kept://entity/Ana", "kept://inbox"):
            dumped = json.dumps(await _resource(s, uri))
            assert not any(t in dumped for t in a_texts), uri
        assert "No memory" in await _resource_error(s, f"kept://memory/{ids['a'][0]}")
        (msg,) = (await s.get_prompt("briefing", {"topic": "Ana likes"})).messages
        assert "green tea" not in msg.content.text  # type: ignore[union-attr]
    with_mcp(mcp_params(served.folder, "b", served.keys["b"]), body)


def test_a_shared_memory_reaches_a_and_undo_takes_it_back(served: Seeded) -> None:
    mid = served.ids["shareable"][0]
    params = mcp_params(served.folder, "a", served.keys["a"])

    async def sees(s: ClientSession, tools: dict[str, Any]) -> dict[str, bool]:
        got = await s.call_tool("get_memory", {"memory_id": mid})
        recent = _ids((await s.call_tool("recent_memories", {"limit": 25})).structured_content)
        card = _ids((await s.call_tool("entity", {"name": "Ana"})).structured_content)
        try:
            await _resource(s, f"kept://memory/{mid}")
            resource = True
        except Exception:
            resource = False
        return {"get": not got.is_error, "recent": mid in recent, "entity": mid in card,
                "resource": resource}

    assert with_mcp(params, sees) == dict.fromkeys(("get", "recent", "entity", "resource"),
                                                   False)
    # No terminal and no --yes: asked, not confirmed, nothing changed (exit 3).
    r = _kept(served.folder, "share", str(mid))
    assert r.returncode == 3 and "not confirmed" in r.stderr
    assert with_mcp(params, sees)["get"] is False
    # The person shares it (the password proved to the owner): a sees it everywhere.
    r = _kept(served.folder, "share", str(mid), "--yes")
    assert r.returncode == 0, r.stderr
    assert "written by b" in r.stdout and f"kept share {mid} --undo" in r.stdout
    assert with_mcp(params, sees) == dict.fromkeys(("get", "recent", "entity", "resource"),
                                                   True)
    # The history says who shared it; sharing twice is refused before anything is asked.
    r = _kept(served.folder, "history", str(mid))
    assert "shared by you with all assistants (b)" in r.stdout
    r = _kept(served.folder, "share", str(mid), "--yes")
    assert r.returncode == 2 and "not one assistant's own" in r.stderr
    # Undone: b's own again, and a no longer sees it.
    r = _kept(served.folder, "share", str(mid), "--undo", "--yes")
    assert r.returncode == 0 and "b's own again" in r.stdout, r.stderr
    assert with_mcp(params, sees) == dict.fromkeys(("get", "recent", "entity", "resource"),
                                                   False)
    r = _kept(served.folder, "share", str(mid), "--undo", "--yes")
    assert r.returncode == 2 and "no sharing to undo" in r.stderr


def test_an_assistant_cannot_share(served: Seeded) -> None:
    """``share`` is the person's: an assistant's connection is refused it whatever it sends."""
    from app.errors import AppError
    from app.ipc.client import RemoteVault
    b = RemoteVault.at(served.folder, agent="b", key=served.keys["b"])
    try:
        with pytest.raises(AppError):
            b.share(served.ids["shareable"][0])
    finally:
        b.close()
    from app.agent_scope import AGENT_METHODS
    assert "share" not in AGENT_METHODS and "unshare" not in AGENT_METHODS
