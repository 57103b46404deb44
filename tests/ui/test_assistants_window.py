"""Issue 14 in the window: the window serves the unlocked vault on its socket (and stops
before it locks), assistants' writes appear marked within a second, their reads show in the
detail pane, Settings > Assistants lists, pairs and blocks, and an assistant's forget request
is declined, cancelled and confirmed in the Inbox (with the forget tests' no-trace check).

Real components: the demo vault (SQLCipher, the real model), the real ``Controller`` and
``MainWindow`` offscreen, the real ``OwnerServer`` on a Unix socket and ``RemoteVault``
clients. Only the scheduler is left unstarted (STYLE B9), as in test_flows.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, Qt, QThreadPool
from PySide6.QtWidgets import QLabel

from tests.ui.conftest import answer_confirm

pytestmark = pytest.mark.gui

WAIT = 20_000
AGENT = "claude-desktop"
SHOTS = Path("/tmp/shots")


def drain() -> None:
    QThreadPool.globalInstance().waitForDone(WAIT)
    QCoreApplication.processEvents()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    QCoreApplication.processEvents()


@pytest.fixture
def make_owner(qtbot: Any, qapp: Any, demo_vault: Any,
               monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``make_owner()``: the real Controller showing the window for ``demo_vault`` (it starts
    the owner server); torn down whatever the test did (lock included)."""
    import app.jobs
    from ui.main import Controller
    real_build = app.jobs.build_scheduler

    def build_unstarted(*args: Any, **kwargs: Any) -> Any:
        sched = real_build(*args, **kwargs)
        sched.start = lambda *a, **k: None
        return sched
    monkeypatch.setattr(app.jobs, "build_scheduler", build_unstarted)
    monkeypatch.setattr(qapp, "quit", lambda: None)
    made: list[Any] = []

    def make() -> Any:
        controller = Controller(qapp, demo_vault.folder, demo=False)
        made.append(controller)
        controller.show_main(demo_vault)
        qtbot.waitExposed(controller.window)
        drain()  # the window's first loads
        return controller
    yield make
    for controller in made:
        if controller.dialog is not None:
            controller.dialog.close()
            controller.dialog.deleteLater()
        window = controller.window
        controller.shutdown()
        if window is not None:
            window.close()
            window.deleteLater()
    drain()


@pytest.fixture
def owner(make_owner: Any) -> Any:
    return make_owner()


def remote(folder: Path, agent: str | None = None, key: str | None = None) -> Any:
    from app.ipc.client import RemoteVault
    return RemoteVault.at(folder, timeout=10.0, agent=agent, key=key)


def paired(vault: Any, name: str = AGENT) -> Any:
    """A connected client of the assistant ``name``, paired here."""
    key = vault.pair_agent(name).value
    return remote(vault.folder, name, key)


def open_nav(qtbot: Any, window: Any, name: str) -> Any:
    nav = window.nav
    for i in range(nav.topLevelItemCount()):
        item = nav.topLevelItem(i)
        if item.data(0, Qt.ItemDataRole.UserRole) == ("page", name):
            nav.setCurrentItem(item)
            break
    page = window.page(name)
    assert window.stack.currentWidget() is page
    return page


def shot(widget: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    drain()  # widgets added to a shown layout are shown on the next turn
    assert widget.grab().save(str(SHOTS / f"{name}.png"))


# --- the window serves -------------------------------------------------------------------------

def test_window_serves_while_unlocked_and_stops_before_the_lock(
        qtbot: Any, owner: Any, demo_vault: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.errors import OwnerNotRunning, VaultLocked
    from app.ipc.protocol import socket_path
    sock = socket_path(demo_vault.folder)
    assert owner.session.server is not None and owner.session.server.serving and sock.is_socket()
    client = remote(demo_vault.folder)
    assert client.status().counts == demo_vault.status().counts
    # The socket goes before the vault locks: no request reaches a vault being locked.
    seen: list[bool] = []
    real_lock = demo_vault.lock

    def lock() -> Any:
        seen.append(sock.exists())
        return real_lock()
    monkeypatch.setattr(demo_vault, "lock", lock)
    owner.lock()  # the toolbar's Lock (auto-lock and the corrupt path call the same)
    assert seen == [False] and demo_vault.locked and owner.session is None
    assert not sock.exists()
    with pytest.raises((OwnerNotRunning, VaultLocked)) as err:
        client.status()  # the connection it had
    assert "unlock" in err.value.user_message.lower()
    with pytest.raises(OwnerNotRunning):
        remote(demo_vault.folder).status()  # a new one
    client.close()


def test_window_without_its_socket_says_so_once_and_works(
        qtbot: Any, make_owner: Any, demo_vault: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.ipc.server import OwnerServer

    def refuse(self: Any) -> None:
        raise OSError(36, "File name too long")
    monkeypatch.setattr(OwnerServer, "start", refuse)
    controller = make_owner()
    assert controller.session.server is None and controller.window.isVisible()
    assert "cannot connect" in controller.window.statusBar().currentMessage()
    qtbot.waitUntil(lambda: controller.window.browse.model.rowCount() > 0, timeout=WAIT)
    controller.lock()  # no server to stop: locks all the same
    assert demo_vault.locked


# --- what assistants write and read ---------------------------------------------------------

def test_an_assistants_write_shows_up_marked_within_a_second(qtbot: Any, owner: Any,
                                                             demo_vault: Any) -> None:
    from app.domain.memory import Draft
    from ui.models.memory_table import Column
    window = owner.window
    browse = window.browse
    qtbot.waitUntil(lambda: browse.model.rowCount() > 0, timeout=WAIT)
    drain()
    agent = paired(demo_vault)
    text = "Remind me to water the ficus on Thursdays"
    mid = int(agent.remember(Draft(text=text, speaker="user")).value)

    def shown() -> bool:
        return any(int(r.id) == mid for r in browse.model.rows)
    qtbot.waitUntil(shown, timeout=1000)
    row = next(n for n, r in enumerate(browse.model.rows) if int(r.id) == mid)
    cell = browse.model.data(browse.model.index(row, Column.TEXT))
    assert cell.startswith(f"from {AGENT} · ") and text in cell
    # The person's own memories carry no mark.
    others = [browse.model.data(browse.model.index(n, Column.TEXT))
              for n, r in enumerate(browse.model.rows) if r.agent == "global"]
    assert others and not any(c.startswith("from ") for c in others)
    browse.table.setCurrentIndex(browse.model.index(row, 0))
    qtbot.waitUntil(lambda: browse.detail.memory_id == mid, timeout=WAIT)
    assert browse.detail.origin.isVisibleTo(browse.detail)
    assert browse.detail.origin.text().startswith(f"from {AGENT}")
    # Search results carry the mark too.
    browse.search.setText("water the ficus")
    browse.search.returnPressed.emit()
    qtbot.waitUntil(lambda: any(int(r.id) == mid for r in browse.model.rows), timeout=WAIT)
    qtbot.waitUntil(lambda: browse.model.rows[0].agent == AGENT, timeout=WAIT)
    assert browse.model.data(browse.model.index(0, Column.TEXT)).startswith(f"from {AGENT} · ")
    agent.close()


def test_reads_by_assistants_appear_in_the_detail_pane(qtbot: Any, owner: Any,
                                                       demo_vault: Any) -> None:
    browse = owner.window.browse
    qtbot.waitUntil(lambda: browse.model.rowCount() > 0, timeout=WAIT)
    browse.table.setCurrentIndex(browse.model.index(0, 0))
    mid = int(browse.model.rows[0].id)
    qtbot.waitUntil(lambda: browse.detail.memory_id == mid, timeout=WAIT)
    reads = browse.detail.reads

    def lines() -> list[str]:
        return [reads.item(i).text() for i in range(reads.count())]
    assert lines() == ["Not read by an assistant"]
    agent = paired(demo_vault)
    assert int(agent.explain(mid).id) == mid
    qtbot.waitUntil(lambda: any(ln.endswith(f"{AGENT} to explain it") for ln in lines()),
                    timeout=WAIT)
    # ids and times only: no memory text in the section
    assert all(browse.model.rows[0].text[:20] not in ln for ln in lines())
    agent.close()


# --- Settings > Assistants ------------------------------------------------------------------

def test_settings_lists_pairs_and_blocks_assistants(qtbot: Any, owner: Any, demo_vault: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from app.errors import AgentNotPaired
    cursor_key = demo_vault.pair_agent("cursor").value
    settings = open_nav(qtbot, owner.window, "settings")
    panel = settings.assistants
    qtbot.waitUntil(lambda: "cursor" in panel.block_buttons, timeout=WAIT)
    texts = [w.text() for w in panel.table.findChildren(QLabel)]
    assert "cursor" in texts and "can connect" in texts

    # Pair one from the window: the key once, and the exact entry for the chosen client.
    panel.pair_btn.click()
    dlg = panel.pair_dialog
    qtbot.addWidget(dlg)
    dlg.name.setText("Not A Name")
    dlg.pair_btn.click()
    assert dlg.error.isVisibleTo(dlg) and not dlg.key
    dlg.name.setText(AGENT)
    dlg.pair_btn.click()
    qtbot.waitUntil(lambda: dlg.key_field.text().startswith("kept_"), timeout=WAIT)
    key = dlg.key_field.text()
    entry = dlg.snippet.toPlainText()
    assert key in entry and f'"{AGENT}"' in entry and str(demo_vault.folder) in entry
    assert '"mcpServers"' in entry  # Claude Desktop, the first client
    dlg.client.setCurrentIndex(dlg.client.findData("claude-code"))
    assert dlg.snippet.toPlainText().startswith("claude mcp add")
    dlg.copy_key_btn.click()
    from PySide6.QtWidgets import QApplication
    assert QApplication.clipboard().text() == key
    qtbot.waitUntil(lambda: AGENT in panel.block_buttons, timeout=WAIT)
    shot(settings.assistants, "settings-assistants")
    shot(dlg, "pair-dialog")
    dlg.close_btn.click()
    assert dlg.key_field.text() == "" and dlg.key == ""  # not kept once closed

    client = remote(demo_vault.folder, AGENT, key)
    assert client.status().counts == demo_vault.status().counts

    # Block: asked first, in words; Enter takes Cancel and changes nothing.
    qtbot.mouseClick(panel.block_buttons[AGENT], Qt.MouseButton.LeftButton)
    words = answer_confirm(qtbot, accept=False)
    assert f"Block {AGENT}?" in words and "What it wrote stays" in words
    drain()
    assert client.status() is not None
    assert all(a.revoked_at is None for a in demo_vault.agents())
    qtbot.mouseClick(panel.block_buttons[AGENT], Qt.MouseButton.LeftButton)
    answer_confirm(qtbot, accept=True)
    qtbot.waitUntil(lambda: AGENT not in panel.block_buttons, timeout=WAIT)
    assert [a.name for a in demo_vault.agents() if a.revoked_at is not None] == [AGENT]
    assert any(w.text().startswith("blocked ") for w in panel.table.findChildren(QLabel))
    with pytest.raises(AgentNotPaired):
        client.status()  # the connection it had: refused at its next call
    with pytest.raises(AgentNotPaired):
        remote(demo_vault.folder, AGENT, key).status()
    assert remote(demo_vault.folder, "cursor", cursor_key).status()  # only the one blocked
    client.close()


# --- an assistant's forget request in the Inbox ---------------------------------------------

def _request(qtbot: Any, owner: Any, demo_vault: Any, text: str, reason: str
             ) -> tuple[Any, int, int, Any]:
    """The assistant writes ``text`` and asks to forget it over the socket; the Inbox shows
    the request. Returns (inbox, memory id, request id, the assistant's client)."""
    from app.domain.memory import Draft
    agent = paired(demo_vault)
    mid = int(agent.remember(Draft(text=text, speaker="user")).value)
    req = agent.request_forget(agent="someone-else", ids=[mid], reason=reason).value
    assert req.agent == AGENT  # the scope is the connection's, never an argument
    inbox = open_nav(qtbot, owner.window, "inbox")
    qtbot.waitUntil(lambda: req.id in inbox.pending_cards, timeout=WAIT)
    label = inbox.pending_cards[req.id].label.text()
    assert f"<b>{AGENT}</b> asks to forget 1 memory: {reason}" in label
    qtbot.waitUntil(lambda: "1 forget request from assistants waits in the Inbox"
                    in owner.window.status_label.text(), timeout=WAIT)
    return inbox, mid, int(req.id), agent


def _dialog(qtbot: Any, inbox: Any, pid: int) -> Any:
    inbox.pending_cards[pid].review_btn.click()
    dlg = inbox.forget_dialog
    qtbot.waitUntil(lambda: dlg.plan is not None, timeout=WAIT)
    return dlg


def test_pending_forget_cancelled_then_confirmed_leaves_no_trace(
        qtbot: Any, owner: Any, demo_vault: Any) -> None:
    from app.errors import NotFound
    from tests.app.services.forget.pagescan import scan_decrypted, scan_raw
    canary = "zq" + secrets.token_hex(6)
    why = "wq" + secrets.token_hex(6)
    inbox, mid, pid, agent = _request(
        qtbot, owner, demo_vault, f"My locker code is {canary}", f"it quotes {why}")
    shot(owner.window, "inbox-forget-request")

    # Cancel: nothing changes, the request still waits.
    dlg = _dialog(qtbot, inbox, pid)
    assert [int(i.id) for i in dlg.plan.items if i.role == "matched"] == [mid]
    assert not dlg.keep_sources.isVisibleTo(dlg)
    dlg.cancel_btn.click()
    drain()
    assert [int(r.id) for r in demo_vault.pending_forgets("pending")] == [pid]
    assert demo_vault.get(mid).text.endswith(canary) and pid in inbox.pending_cards

    # Confirm: forgotten, the request closed, its card and the status note gone.
    dlg = _dialog(qtbot, inbox, pid)
    dlg.confirm.setChecked(True)
    assert dlg.forget_btn.isEnabled()
    dlg.forget_btn.click()
    qtbot.waitUntil(lambda: dlg.report is not None, timeout=WAIT)
    assert dlg.report.memories == 1
    qtbot.waitUntil(lambda: pid not in inbox.pending_cards, timeout=WAIT)
    assert demo_vault.pending_forgets("pending") == []
    assert [r.status for r in demo_vault.pending_forgets("done")] == ["done"]
    with pytest.raises(NotFound):
        demo_vault.get(mid)
    qtbot.waitUntil(lambda: "forget request" not in owner.window.status_label.text(),
                    timeout=WAIT)
    assert f"as {AGENT} asked" in inbox.message.text()
    agent.close()

    # No trace (the forget tests' check): neither the memory nor the request's reason is in
    # any decrypted page of the database or its WAL, nor in any file's raw bytes.
    key = bytes(demo_vault._opened.keys.db_key)
    owner.lock()
    assert demo_vault.locked
    folder = demo_vault.folder
    for needle in (canary, why):
        assert scan_decrypted(folder, key, needle) == []
        assert scan_raw([folder], needle) == []


def test_pending_forget_declined_keeps_the_memories(qtbot: Any, owner: Any,
                                                    demo_vault: Any) -> None:
    inbox, mid, pid, agent = _request(qtbot, owner, demo_vault,
                                      "The boat is moored at pier 7", "no longer true")
    inbox.pending_cards[pid].decline_btn.click()
    qtbot.waitUntil(lambda: pid not in inbox.pending_cards, timeout=WAIT)
    assert [r.id for r in demo_vault.pending_forgets("declined")] == [pid]
    assert demo_vault.get(mid).status == "active"
    assert "nothing was forgotten" in inbox.message.text()
    qtbot.waitUntil(lambda: "forget request" not in owner.window.status_label.text(),
                    timeout=WAIT)
    agent.close()


def test_changes_from_other_threads_are_merged_before_the_window_reloads(qtbot: Any) -> None:
    """Each call of an assistant over the socket sends a change from a server thread; a burst
    of them reaches the pages as one broadcast (with every flag), not one reload each."""
    import threading

    from app.changes import Changes
    from ui.bridge import CoreBridge
    bridge = CoreBridge()
    got: list[Any] = []
    bridge.changes_applied.connect(lambda changes, _init: got.append(changes))
    burst = [Changes(memories=True)] * 49 + [Changes(agents=True)]
    worker = threading.Thread(target=lambda: [bridge.listener(c) for c in burst])
    worker.start()
    worker.join()
    qtbot.waitUntil(lambda: bool(got), timeout=WAIT)
    drain()
    assert len(got) == 1 and got[0].memories and got[0].agents


# --- the lead's asks: the official MCP client and concurrent writers, the window as owner ----

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"remember", "remember_fact", "correct", "recall", "context", "explain",
         "list_contradictions", "status", "request_forget", "forget_status", "get_memory",
         "recent_memories", "entity", "inbox"}


def _child_env(key: str | None = None) -> dict[str, str]:
    import os
    env = {k: os.environ[k] for k in ("HOME", "PATH", "KEPT_MODEL_DIR", "KEPT_KDF_MEMORY_KIB",
                                      "TMPDIR") if k in os.environ}
    env["PYTHONPATH"] = str(ROOT)
    if key is not None:
        env["KEPT_AGENT_KEY"] = key
    return env


def _in_thread(qtbot: Any, fn: Any, timeout: int = 60_000) -> Any:
    """Run ``fn`` on a plain thread while the GUI thread keeps spinning (the window serves)."""
    import threading
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised on the test's thread
            box["error"] = exc
    worker = threading.Thread(target=run)
    worker.start()
    qtbot.waitUntil(lambda: not worker.is_alive(), timeout=timeout)
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_official_mcp_client_calls_every_tool_through_the_window(
        qtbot: Any, owner: Any, demo_vault: Any) -> None:
    import sys

    import anyio
    import jsonschema
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    key = demo_vault.pair_agent(AGENT).value
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "app.cli", "--vault", str(demo_vault.folder), "mcp",
                                      "--agent", AGENT], env=_child_env(key), cwd=str(ROOT))

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert set(tools) == TOOLS

            async def call(name: str, args: dict[str, Any]) -> Any:
                result = await s.call_tool(name, args)
                assert not result.is_error, result.content
                jsonschema.validate(result.structured_content, tools[name].output_schema)
                return result.structured_content
            assert (await call("status", {}))["agent"] == AGENT
            mine = (await call("remember", {"text": "The ficus needs water on Thursdays",
                                            "speaker": "user"}))["id"]
            await call("remember_fact", {"subject": "Ana", "attribute": "lives_in",
                                         "value": "Porto", "source_ids": [mine]})
            hits = (await call("recall", {"query": "ficus water", "k": 10}))["memories"]
            assert mine in {m["id"] for m in hits}
            await call("context", {"query": "ficus", "budget": 2000})
            assert (await call("explain", {"memory_id": mine}))["id"] == mine
            await call("list_contradictions", {})
            fern = (await call("remember", {"text": "The fern sits by the window"}))["id"]
            fixed = await call("correct", {"memory_id": fern,
                                           "text": "The fern sits by the door"})
            assert fixed["replaced_id"] == fern and fixed["id"] != fern
            req = await call("request_forget", {"memory_ids": [mine], "reason": "asked to"})
            assert req["status"] == "waiting_for_person"
            out["mine"] = mine
        return out
    out = _in_thread(qtbot, lambda: anyio.run(session))
    mine = int(out["mine"])
    # The window saw it all: the memory marked, its reads, the request in the Inbox.
    assert demo_vault.get(mine).agent == AGENT
    browse = owner.window.browse
    qtbot.waitUntil(lambda: any(int(r.id) == mine and r.agent == AGENT
                                for r in browse.model.rows), timeout=WAIT)
    qtbot.waitUntil(lambda: {r.via for r in demo_vault.memory_reads(mine)}
                    >= {"recall", "explain"}, timeout=WAIT)  # written within a second
    inbox = open_nav(qtbot, owner.window, "inbox")
    qtbot.waitUntil(lambda: len(inbox.pending_cards) == 1, timeout=WAIT)


def test_concurrent_writers_through_the_window_lose_nothing(qtbot: Any, owner: Any,
                                                            demo_vault: Any) -> None:
    """Two assistants (threads, one connection each) and the CLI (`kept remember`
    subprocesses through the owner) write at once while the window serves: every
    acknowledged id is in the vault and the window's list shows the new count."""
    import subprocess
    import sys
    import threading

    from app.api import ALL_MEMORIES  # what the list counts: one row per thing said
    from app.domain.memory import Draft
    before = demo_vault.count_memories(ALL_MEMORIES)
    keys = {name: demo_vault.pair_agent(name).value for name in ("agent-a", "agent-b")}
    acked: list[int] = []
    errors: list[BaseException] = []
    guard = threading.Lock()
    n = 15

    def assistant(name: str) -> None:
        try:
            with remote(demo_vault.folder, name, keys[name]) as client:
                for i in range(n):
                    mid = int(client.remember(Draft(text=f"{name} note {i} about the garden",
                                                    speaker="assistant")).value)
                    with guard:
                        acked.append(mid)
        except BaseException as exc:
            errors.append(exc)

    def cli() -> None:
        for i in range(3):
            r = subprocess.run(
                [sys.executable, "-m", "app.cli", "--vault", str(demo_vault.folder),
                 "remember", f"cli note {i} about the garden"],
                env=_child_env(), cwd=str(ROOT), capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                errors.append(AssertionError(r.stderr))
                return
            with guard:
                acked.append(int(r.stdout.strip()))

    def all_writers() -> None:
        workers = [threading.Thread(target=assistant, args=(a,)) for a in keys]
        workers.append(threading.Thread(target=cli))
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    _in_thread(qtbot, all_writers, timeout=120_000)
    assert errors == []
    assert len(acked) == len(set(acked)) == 2 * n + 3
    assert all(demo_vault.get(mid).status == "active" for mid in acked)
    after = demo_vault.count_memories(ALL_MEMORIES)
    assert after == before + len(acked)
    browse = owner.window.browse
    qtbot.waitUntil(lambda: f"{after:,} memories" in browse.title.text(), timeout=WAIT)


def test_strict_mode_from_settings_takes_effect_on_the_socket(qtbot: Any, owner: Any,
                                                               demo_vault: Any) -> None:
    """Settings > Assistants > Strict mode, ticked with the keyboard: a program's connection
    then reads nothing until it proves the password; an assistant's key still works."""
    from app.errors import PasswordNeeded
    key = demo_vault.pair_agent("cursor").value
    settings = open_nav(qtbot, owner.window, "settings")
    panel = settings.assistants
    assert remote(demo_vault.folder).recall("Porto")  # default mode: a program reads
    qtbot.waitUntil(lambda: panel.strict.isEnabled() and not panel.strict.isChecked(),
                    timeout=WAIT)
    panel.strict.setFocus()
    qtbot.keyClick(panel.strict, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: demo_vault.setting("owner.strict") is True, timeout=WAIT)
    qtbot.waitUntil(lambda: "Strict mode is on" in panel.message.text(), timeout=WAIT)

    def refused() -> bool:
        try:
            remote(demo_vault.folder).recall("Porto")
        except PasswordNeeded:
            return True
        return False
    qtbot.waitUntil(refused, timeout=5_000)  # the owner reads the setting within a second
    assert remote(demo_vault.folder, "cursor", key).recall("Porto") is not None
    qtbot.keyClick(panel.strict, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: demo_vault.setting("owner.strict") is False, timeout=WAIT)
    qtbot.waitUntil(lambda: not refused(), timeout=5_000)
