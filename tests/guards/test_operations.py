"""Guard: each operation is declared once, on ``VaultAPI`` (``app/operations.py``), and the
socket, the assistants' scope, the client, the CLI's elevation and the MCP tool table follow.

The main test adds a throwaway operation of each kind to the contract in a fresh process (as a
contributor would: the mark on ``VaultAPI``, the implementation on ``Vault``, nothing else),
starts a real owner on a real vault, and calls it over the socket as the person, as a person
whose client may ask for the password, and as an assistant."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import ROOT

CHILD = r'''
import json, sys
from pathlib import Path
from app.api import VaultAPI
from app.changes import NO_CHANGES, Result
from app.operations import Access, op

mode, folder = sys.argv[1], Path(sys.argv[2])
sealed = []

# 1. The contract: three throwaway operations, one mark each.
def echo_words(self, text: str) -> str: ...
def seal_words(self, text: str) -> Result[None]: ...
def local_words(self) -> str: ...
VaultAPI.echo_words = op(Access.READ, agent=True,
                         tool="echo_words" if mode == "tool" else None)(echo_words)
VaultAPI.seal_words = op(Access.PERSON)(seal_words)
VaultAPI.local_words = op(Access.LOCAL, why="a throwaway that stays home")(local_words)

# 2. The implementation.
from app.facade import Vault
Vault.echo_words = lambda self, text: text.upper()
def _seal(self, text):
    sealed.append(text)
    return Result(None, NO_CHANGES)
Vault.seal_words = _seal
Vault.local_words = lambda self: "home"

from app.agent_scope import AgentSession
from app.errors import AppError
from app.ipc import protocol as p
from app.ipc.client import RemoteVault
from app.ipc.server import OwnerServer
from storage.crypto import KdfParams

out = {"methods": {n: [p.METHODS[n].write, p.METHODS[n].person]
                   for n in ("echo_words", "seal_words") if n in p.METHODS},
       "refused": p.REFUSED.get("local_words"), "agent": sorted(p.AGENT_METHODS)}

def attempt(fn):
    try:
        return ["ok", fn()]
    except AppError as exc:
        return [type(exc).__name__, exc.user_message]
    except TypeError as exc:
        return ["TypeError", str(exc)]

if mode == "tool":  # a tool declared on the contract and not written: the server says so
    from app.mcp_server import Connection, build_server
    out["build"] = attempt(lambda: build_server(Connection("a", folder, "k")) and "built")
    print(json.dumps(out)); sys.exit(0)

vault = Vault.create(folder, "pw-ops-guard", kdf=KdfParams(m=65536, t=3, p=4), load_model=False,
                     threaded=True, use_chroma=False).vault
if mode == "no-wrapper":  # an agent operation with no AgentSession wrapper: no owner starts
    out["serve"] = attempt(lambda: OwnerServer(vault) and "started")
    print(json.dumps(out)); vault.lock(); sys.exit(0)

def wrapped(self, text: str) -> str:
    return self._vault.echo_words(text) + " for " + self.agent
AgentSession.echo_words = wrapped
server = OwnerServer(vault)
server.start()
try:
    key = vault.pair_agent("guard").value
    person = RemoteVault.at(folder)
    out["person_echo"] = attempt(lambda: person.echo_words("hello"))
    out["person_seal"] = attempt(lambda: person.seal_words("no password").value)
    out["person_local"] = attempt(lambda: person.local_words())
    asked = []
    def ask():
        asked.append(1)
        return "pw-ops-guard"
    cli = RemoteVault.at(folder, password=ask)
    out["cli_seal"] = [attempt(lambda: cli.seal_words("first").value),
                       attempt(lambda: cli.seal_words("second").value)]
    out["cli_asked"] = len(asked)
    agent = RemoteVault.at(folder, agent="guard", key=key)
    out["agent_echo"] = attempt(lambda: agent.echo_words("hello"))
    out["agent_seal"] = attempt(lambda: agent.seal_words("from an assistant").value)
    out["sealed"] = sealed
    for c in (person, cli, agent):
        c.close()
finally:
    server.stop()
    vault.lock()
print(json.dumps(out))
'''


def _child(mode: str, tmp_path: Path) -> dict[str, object]:
    r = subprocess.run([sys.executable, "-c", CHILD, mode, str(tmp_path / "v")], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    result: dict[str, object] = json.loads(r.stdout.strip().splitlines()[-1])
    return result


def test_a_new_operation_is_served_refused_and_exposed_as_declared(tmp_path: Path) -> None:
    out = _child("serve", tmp_path)
    # The socket's tables follow the marks: a read, a person's write, a refusal with its reason.
    assert out["methods"] == {"echo_words": [False, False], "seal_words": [True, True]}
    assert out["refused"] == "a throwaway that stays home"
    assert "echo_words" in out["agent"] and "seal_words" not in out["agent"]  # type: ignore[operator]
    # The person: the read is served; the decision needs the password; the local one never goes.
    assert out["person_echo"] == ["ok", "HELLO"]
    assert out["person_seal"][0] == "PasswordNeeded"  # type: ignore[index]
    assert out["person_local"][0] == "RemoteRefused"  # type: ignore[index]
    assert "a throwaway that stays home" in out["person_local"][1]  # type: ignore[index]
    # The CLI's client: asked for the password once, on the first decision, then served.
    assert out["cli_seal"] == [["ok", None], ["ok", None]]
    assert out["cli_asked"] == 1
    # An assistant: its operation goes through its AgentSession wrapper; a decision is refused.
    assert out["agent_echo"] == ["ok", "HELLO for guard"]
    assert out["agent_seal"][0] == "RemoteRefused"  # type: ignore[index]
    assert out["sealed"] == ["first", "second"]


def test_an_agent_operation_without_its_wrapper_stops_the_owner(tmp_path: Path) -> None:
    out = _child("no-wrapper", tmp_path)
    assert out["serve"][0] == "TypeError"  # type: ignore[index]
    assert "echo_words" in out["serve"][1]  # type: ignore[index]


def test_a_tool_declared_and_not_written_stops_the_mcp_server(tmp_path: Path) -> None:
    out = _child("tool", tmp_path)
    assert out["build"][0] == "TypeError"  # type: ignore[index]
    assert "echo_words" in out["build"][1]  # type: ignore[index]


def test_every_member_of_the_contract_is_marked() -> None:
    from app.api import VaultAPI
    from app.operations import Access, op, operations

    class Unmarked(VaultAPI):
        def extra(self) -> int: ...
    with pytest.raises(TypeError, match="extra has no @op mark"):
        operations(Unmarked)
    ops = operations(VaultAPI)
    public = {n for n in vars(VaultAPI) if not n.startswith("_")}
    assert public == set(ops)
    with pytest.raises(TypeError):
        op(Access.PERSON, agent=True)   # an assistant never makes the person's decisions
    with pytest.raises(TypeError):
        op(Access.LOCAL)                # a local one says why


def test_the_mcp_tools_are_the_operations_marked_with_a_tool() -> None:
    import anyio

    from app.mcp_server import TOOLS, Connection, build_server
    server = build_server(Connection("a", None, "k"))
    tools = anyio.run(server.list_tools)
    by_name = {t.name: t for t in tools}
    assert set(by_name) == {str(o.tool) for o in TOOLS.values()}
    for o in TOOLS.values():
        assert o.agent
        hints = by_name[str(o.tool)].annotations
        assert hints is not None and hints.read_only_hint == (o.access.name == "READ")
