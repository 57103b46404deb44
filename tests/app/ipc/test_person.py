"""The person's decisions through the owner (issue 14): a connection proves the password
before it may forget, resolve or pair; an assistant's connection never can; the CLI asks for
the password and goes through the owner, and refuses key changes while an owner runs; what
an assistant reads is logged by id and time and goes with the memory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.errors import AgentNotPaired, PasswordNeeded, RemoteRefused, WrongKey
from app.facade import Vault
from tests.app.cli.conftest import PW, kept_in_process, make_vault
from tests.inside import inside


@pytest.fixture
def owner(tmp_path: Path) -> Iterator[object]:
    from app.ipc.server import OwnerServer
    folder = make_vault(tmp_path / "v", ("Ana moved to Lisbon", "Bruno likes green tea"))
    vault = Vault.open(folder, PW, load_model=False, use_chroma=False)
    server = OwnerServer(vault)
    server.start()
    try:
        yield server
    finally:
        server.lock_vault()


def _server(owner: object):  # type: ignore[no-untyped-def]
    from app.ipc.server import OwnerServer
    assert isinstance(owner, OwnerServer)
    return owner


def test_decisions_need_the_password_on_that_connection(owner: object) -> None:
    from app.ipc.client import RemoteVault
    server = _server(owner)
    folder = server.vault.folder
    remote = RemoteVault.at(folder)
    plan = remote.forget_plan(query="Lisbon")
    assert [i.text for i in plan.items if i.role == "matched"] == ["Ana moved to Lisbon"]
    with pytest.raises(PasswordNeeded):
        remote.forget(plan)
    with pytest.raises(WrongKey):
        remote.verify_password("not the password")
    with pytest.raises(PasswordNeeded):
        remote.pair_agent("claude")
    assert server.vault.count_memories(_all()) == 2  # nothing changed
    remote.verify_password(PW)
    assert remote.forget(plan).value.memories == 1
    # Another connection has proved nothing.
    with pytest.raises(PasswordNeeded):
        RemoteVault.at(folder).revoke_agent("claude")
    assert server.vault.count_memories(_all()) == 1


def _all():  # type: ignore[no-untyped-def]
    from app.api import MemoryQuery
    return MemoryQuery()


def test_an_assistant_cannot_prove_a_password_or_decide(owner: object) -> None:
    from app.api import Filters
    from app.ipc.client import RemoteVault
    server = _server(owner)
    key = server.vault.pair_agent("claude").value
    agent = RemoteVault.at(server.vault.folder, agent="claude", key=key)
    for call in (lambda: agent.verify_password(PW),
                 lambda: agent.forget_plan(query="Lisbon"),
                 lambda: agent.pair_agent("other"),
                 lambda: agent.close_pending_forget(1, None)):
        with pytest.raises(RemoteRefused):
            call()
    # A filter naming another scope is overwritten by the owner.
    assert agent.recall("tea", k=5, filters=Filters(agent="someone-else"))
    # Revoked while connected: the next call fails.
    server.vault.revoke_agent("claude")
    with pytest.raises(AgentNotPaired):
        agent.recall("tea")


def test_reads_are_logged_by_id_and_time_and_go_with_the_memory(owner: object) -> None:
    from app.ipc.client import RemoteVault
    server = _server(owner)
    vault = server.vault
    key = vault.pair_agent("claude").value
    agent = RemoteVault.at(vault.folder, agent="claude", key=key)
    hit = agent.recall("green tea", k=1)[0]
    agent.explain(hit.id)
    import time
    end = time.monotonic() + 10
    while len(vault.memory_reads(hit.id)) < 2 and time.monotonic() < end:
        time.sleep(0.02)  # note_reads writes in the background
    reads = vault.memory_reads(hit.id)
    assert [(r.agent, r.via) for r in reads] == [("claude", "explain"), ("claude", "recall")]
    assert RemoteVault.at(vault.folder).memory_reads(hit.id) == reads  # the person's view
    # What one assistant read, newest first, with the memory (issue 24's operation, added by
    # its mark on VaultAPI, its implementation and its command only).
    by_claude = RemoteVault.at(vault.folder).agent_reads("claude")
    assert [(r.memory_id, r.via, r.text) for r in by_claude] == [
        (hit.id, "explain", "Bruno likes green tea"), (hit.id, "recall", "Bruno likes green tea")]
    assert by_claude == vault.agent_reads("claude") and vault.agent_reads("nobody") == []
    with pytest.raises(RemoteRefused):  # an assistant does not see another's, nor its own log
        agent.agent_reads("claude")
    vault.forget(vault.forget_plan(ids=[hit.id]))
    rows = inside(vault).db.read(
        lambda c: c.execute("SELECT count(*) FROM memory_read").fetchone()[0])
    assert rows == 0 and vault.agent_reads("claude") == []


def test_cli_through_the_owner_confirms_an_assistants_forget(owner: object) -> None:
    from app.ipc.client import RemoteVault
    server = _server(owner)
    vault = server.vault
    folder = vault.folder
    key = vault.pair_agent("claude").value
    agent = RemoteVault.at(folder, agent="claude", key=key)
    req = agent.request_forget(agent="claude", query="Bruno", reason="forget my tea habit").value
    listed = kept_in_process(folder, "forget", "--pending", password=None)
    assert listed.returncode == 0 and f"[{req.id}] claude asks to forget" in listed.stdout
    # No password in the environment and no terminal: refused, nothing forgotten.
    refused = kept_in_process(folder, "forget", "--pending", str(req.id), "--yes", password=None)
    assert refused.returncode == 2 and "password" in refused.stderr.lower()
    assert vault.pending_forgets("pending")[0].id == req.id
    done = kept_in_process(folder, "forget", "--pending", str(req.id), "--yes")
    assert done.returncode == 0, done.stderr
    assert "Forgot the event (1 memory) for good" in done.stdout
    assert vault.pending_forgets("pending") == []
    closed = vault.pending_forgets("done")[0]
    assert closed.reason == "" and closed.query is None  # the request's words went too
    assert [m.text for m in vault.page_memories(_all()).rows] == ["Ana moved to Lisbon"]


def test_cli_refuses_key_changes_while_an_owner_serves(owner: object) -> None:
    folder = _server(owner).vault.folder
    r = kept_in_process(folder, "passwd", env={"KEPT_NEW_PASSWORD": "another long password"})
    assert r.returncode == 2
    assert "Kept is open for this vault" in r.stderr and "kept serve" in r.stderr
    status = kept_in_process(folder, "status", password=None)  # reads need no password
    assert status.returncode == 0 and "Events 2" in status.stdout  # the stores by their names


def test_a_vault_deeper_than_a_socket_address_is_served(tmp_path: Path) -> None:
    from app.ipc.client import RemoteVault
    from app.ipc.server import OwnerServer
    deep = tmp_path / ("a-long-folder-name-" * 4) / ("another-long-folder-name-" * 3) / "v"
    assert len(str(deep / "kept.sock").encode()) > 108  # too long for sockaddr_un
    folder = make_vault(deep, ("Ana moved to Lisbon",))
    vault = Vault.open(folder, PW, load_model=False, use_chroma=False)
    server = OwnerServer(vault)
    server.start()
    try:
        assert (folder / "kept.sock").is_socket()
        assert RemoteVault.at(folder).recall("Lisbon", k=1)[0].text == "Ana moved to Lisbon"
    finally:
        server.lock_vault()
    assert not (folder / "kept.sock").exists()
