"""Forget outcomes and etiquette (issue 26, item 4): ``forget_status`` says pending, done,
declined or expired with dates; a request for memories the person declined to forget is
refused with the date; requests expire after ``forget.request_days``; ``kept forget
--pending`` shows the texts that would go. Real vault files (SQLCipher), a settable clock; the
MCP part through a real ``kept serve`` and the SDK client."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from app.agent_scope import AgentSession
from app.domain.memory import Draft, Store
from app.errors import NotFound, ValidationError
from app.facade import Vault
from tests.app.mcp.conftest import (
    Seeded,
    child_env,
    kept_argv,
    mcp_params,
    password_file,
    seed_vault,
    serving,
    structured,
    tool_error,
    with_mcp,
)
from tests.conftest import new_vault

PW = "correct horse battery"
DAY = 86400.0
T0 = 1_795_000_000.0  # 2026-11-18


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def now(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def vault(tmp_path: Path, fast_kdf: object, clock: Clock):
    v = new_vault(tmp_path / "v", PW, load_model=False, threaded=False, use_chroma=False,
                  clock=clock)
    yield v
    v.lock()


def test_status_done_declined_and_refusal_with_the_date(vault: Vault, clock: Clock) -> None:
    a, b = AgentSession(vault, "a"), AgentSession(vault, "b")
    tea = a.remember(Draft("The person drinks green tea", store=Store.SEMANTIC)).value
    gym = a.remember(Draft("The gym is on Friday", store=Store.SEMANTIC)).value
    r1 = a.request_forget(ids=[tea], reason="the person asked").value
    r2 = a.request_forget(ids=[gym], reason="the person asked").value
    [s1] = a.forget_status(r1.id)
    assert s1.status == "pending" and s1.created_at == T0 and s1.decided_at is None
    assert s1.expires_at == T0 + 30 * DAY
    clock.t = T0 + 2 * DAY  # 2026-11-20
    vault.close_pending_forget(r1.id, None)  # declined
    vault.close_pending_forget(r2.id, vault.pending_forget_plan(r2.id))  # done
    by_id = {r.id: r for r in a.forget_status()}
    assert by_id[r1.id].status == "declined" and by_id[r1.id].decided_at == T0 + 2 * DAY
    assert by_id[r2.id].status == "done" and by_id[r2.id].memory_ids == ()
    # Another assistant cannot read a's requests: the same answer as for no request.
    with pytest.raises(NotFound):
        b.forget_status(r1.id)
    assert b.forget_status() == []
    # Asking again for what the person kept is refused, with the day they said no.
    with pytest.raises(ValidationError) as e:
        a.request_forget(ids=[tea], reason="again")
    assert "declined forgetting these on 2026-11-20" in e.value.user_message
    assert "changed their mind" in e.value.user_message
    # ...also inside a bigger request or by query, naming which; nothing new is filed.
    other = a.remember(Draft("Mina likes sushi", store=Store.SEMANTIC)).value
    with pytest.raises(ValidationError) as e:
        a.request_forget(ids=[other, tea], reason="both")
    assert f"memory {tea} on 2026-11-20" in e.value.user_message
    with pytest.raises(ValidationError):
        a.request_forget(query="green tea", reason="by words")
    assert len(vault.pending_forgets(None)) == 2
    assert a.request_forget(ids=[other], reason="only this").value.status == "pending"


def test_requests_expire_after_the_setting(vault: Vault, clock: Clock) -> None:
    a = AgentSession(vault, "a")
    mid = a.remember(Draft("Old address is Rua Augusta 3", store=Store.SEMANTIC)).value
    req = a.request_forget(ids=[mid], reason="moved").value
    clock.t = T0 + 29 * DAY
    assert [r.id for r in vault.pending_forgets("pending")] == [req.id]
    clock.t = T0 + 30 * DAY + 1
    # Gone from the person's pending list (the window's Inbox reads this), reported expired.
    assert vault.pending_forgets("pending") == []
    [st] = a.forget_status(req.id)
    assert st.status == "expired" and st.decided_at == T0 + 30 * DAY
    assert [r.id for r in vault.pending_forgets("expired")] == [req.id]
    with pytest.raises(ValidationError, match="expired"):
        vault.pending_forget_plan(req.id)
    with pytest.raises(ValidationError):
        vault.close_pending_forget(req.id, None)
    assert vault.get(mid).text.startswith("Old address")  # nothing went
    # A longer setting brings it back while still unanswered; a request may be asked again.
    vault.set_setting("forget.request_days", 60)
    assert [r.id for r in vault.pending_forgets("pending")] == [req.id]
    vault.set_setting("forget.request_days", 10)
    assert a.request_forget(ids=[mid], reason="again").value.status == "pending"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    seeded = seed_vault(tmp_path_factory.mktemp("outcomes") / "v", ("a",), {
        "a": ("Kestrel offsite is in Porto", "The person's locker code is 4411"),
    })
    with serving(seeded.folder):
        yield seeded


def test_forget_status_tool_and_pending_texts(served: Seeded) -> None:
    offsite, locker = served.ids["a"]

    async def ask(s, tools):  # type: ignore[no-untyped-def]
        r1 = structured(tools, "request_forget", await s.call_tool("request_forget", {
            "memory_ids": [offsite], "reason": "the person asked"}))
        r2 = structured(tools, "request_forget", await s.call_tool("request_forget", {
            "memory_ids": [locker], "reason": "the person asked"}))
        st = structured(tools, "forget_status", await s.call_tool(
            "forget_status", {"request_id": r1["request_id"]}))
        [one] = st["requests"]
        assert one["status"] == "pending" and one["memory_ids"] == [offsite]
        assert one["asked"] and one["expires"] and one["decided"] is None
        assert "no forget request 9999" in tool_error(await s.call_tool(
            "forget_status", {"request_id": 9999})).lower()
        return r1["request_id"], r2["request_id"]

    p1, p2 = with_mcp(mcp_params(served.folder, "a", served.keys["a"]), ask)
    # The person's list shows what would go, in words (through the owner's socket).
    env = child_env()
    pwf = str(password_file(served.folder))
    listed = subprocess.run([*kept_argv(), "--vault", str(served.folder), "--password-file", pwf,
                             "forget", "--pending"], env=env, capture_output=True, text=True,
                            timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "Kestrel offsite is in Porto" in listed.stdout
    assert "locker code is 4411" in listed.stdout
    declined = subprocess.run([*kept_argv(), "--vault", str(served.folder), "--password-file",
                               pwf, "forget", "--decline", str(p1)], env=env,
                              capture_output=True, text=True, timeout=120)
    assert declined.returncode == 0, declined.stderr

    async def after(s, tools):  # type: ignore[no-untyped-def]
        st = structured(tools, "forget_status", await s.call_tool("forget_status", {}))
        by = {r["request_id"]: r for r in st["requests"]}
        assert by[p1]["status"] == "declined" and by[p1]["decided"]
        assert by[p2]["status"] == "pending"
        again = tool_error(await s.call_tool("request_forget", {
            "memory_ids": [offsite], "reason": "again"}))
        assert "declined forgetting these on" in again and "changed their mind" in again
    with_mcp(mcp_params(served.folder, "a", served.keys["a"]), after)
