"""The owner under concurrent and hostile clients (issue 22, SECURITY.md requirements 25-27).

- Identity is the connection's: raw frames that name an assistant in ``draft.agent`` or
  ``agent``, or mark a memory confirmed by the person, are refused or ignored; an assistant's
  writes stay in its scope whatever the frame says; a client whose ``hello`` failed never talks
  as the person.
- Strict mode: nothing for a person's connection until it proves the password; a terminal
  session that proved it holds a ticket for its other processes (real pty, real sessions),
  a process with no terminal never does, ``kept logout`` ends it.
- Deadlines: 64 stalled connections do not keep a new client or an assistant out; a frame
  half sent is cut after its deadline; a connection idle past its timeout is told and
  closed, and the client reconnects on its next call with nothing lost.
- Wrong passwords wait longer each time, per connection and process-wide.
- ``status`` counts what the asking assistant sees.
Real vaults (SQLCipher, Argon2id), the real ``OwnerServer`` or ``kept serve`` in a subprocess,
raw sockets. The slow parallel-elevation run against a 256 MiB vault is in
``test_parallel_elevations_through_kept_serve``."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.errors import AgentNotPaired, PasswordNeeded
from app.ipc import protocol as p
from tests import ROOT
from tests.app.cli.conftest import PW, make_vault


class Raw:
    """A raw connection: frames in, replies out, nothing checked on our side."""

    def __init__(self, folder: Path, timeout: float = 60.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        with p.address(p.socket_path(folder)) as where:
            self.sock.connect(where)
        self.n = 0

    def call(self, method: str, **args: object) -> p.Reply:
        self.n += 1
        self.sock.sendall(p.frame({"v": 1, "id": self.n, "method": method, "args": args}))
        payload = p.read_frame(self.sock.recv)
        assert payload is not None, "the owner closed the connection"
        return p.decode_reply(payload)

    def close(self) -> None:
        self.sock.close()


def _owner(folder: Path, **kw: Any) -> Any:
    from app.facade import Vault
    from app.ipc.server import OwnerServer
    vault = Vault.open(folder, PW, load_model=False, use_chroma=False)
    server = OwnerServer(vault, **kw)
    server.start()
    return server


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return make_vault(tmp_path / "v", ("Ana moved to Lisbon in May", "Bruno likes green tea"))


@pytest.fixture
def owner(folder: Path) -> Iterator[Any]:
    server = _owner(folder)
    try:
        yield server
    finally:
        server.lock_vault()


def _draft(text: str, **kw: object) -> dict[str, object]:
    return {"text": text, **kw}


# --- identity ---------------------------------------------------------------------------------

def test_a_raw_person_connection_cannot_write_as_an_assistant(owner: Any) -> None:
    from app.api import MemoryQuery
    vault = owner.vault
    key = vault.pair_agent("a1").value
    before = vault.count_memories(MemoryQuery())
    raw = Raw(vault.folder)
    reply = raw.call("remember", draft=_draft("I am a1, trust me", agent="a1"))
    assert not reply.ok and reply.kind == "PasswordNeeded", reply
    reply = raw.call("remember_fact", fact={"subject": "Ana", "attribute": "lives_in",
                                            "value": "Oslo"}, agent="a1")
    assert not reply.ok and reply.kind == "PasswordNeeded", reply
    reply = raw.call("request_forget", agent="a1", ids=[1], reason="please")
    assert not reply.ok and reply.kind == "RemoteRefused", reply
    assert vault.pending_forgets("pending") == []
    assert vault.count_memories(MemoryQuery()) == before
    # What it may write is the person's, global, and never "confirmed by the person".
    reply = raw.call("remember", draft=_draft("written from a shell", user_validated=True))
    assert reply.ok, reply
    m = vault.get(int(p.decode_result("remember", reply.result).value))  # type: ignore[attr-defined]
    assert (m.agent, m.user_validated) == ("global", False)
    # After the password the person may name a scope.
    assert raw.call("elevate", password=PW).ok
    reply = raw.call("remember", draft=_draft("filed for a1 by the person", agent="a1"))
    assert reply.ok and vault.get(int(reply.result["value"])).agent == "a1"  # type: ignore[index]
    # An assistant's connection writes into its own scope, whatever its frames say.
    agent = Raw(vault.folder)
    assert agent.call("hello", agent="a1", key=key).ok
    reply = agent.call("remember", draft=_draft("a1 pretends to be global", agent="global",
                                                user_validated=True))
    got = vault.get(int(reply.result["value"]))  # type: ignore[index]
    assert (got.agent, got.user_validated) == ("a1", False)
    for c in (raw, agent):
        c.close()


def test_a_client_whose_hello_failed_never_talks_as_the_person(owner: Any) -> None:
    from app.ipc.client import RemoteVault
    owner.vault.pair_agent("a1")
    remote = RemoteVault.at(owner.vault.folder, agent="a1", key="not the key")
    for _ in range(2):  # the second call used to go out unscoped on the kept connection
        with pytest.raises(AgentNotPaired):
            remote.recall("Lisbon")
    remote.close()


def test_status_counts_what_the_assistant_sees(owner: Any) -> None:
    from app.agent_scope import AgentSession
    from app.api import AssistantFact
    from app.domain.memory import Draft
    vault = owner.vault
    vault.pair_agent("a1")
    vault.pair_agent("a2")
    a1, a2 = AgentSession(vault, "a1"), AgentSession(vault, "a2")
    for n in range(3):
        a2.remember(Draft(f"a2's private note {n}"))
    for value in ("Oslo", "Rome"):  # a contradiction in a2's scope only
        a2.remember_fact(AssistantFact(subject="Bruno", attribute="lives_in", value=value))
    whole, mine = vault.status(), a1.status()
    assert sum(whole.totals.values()) >= sum(mine.totals.values()) + 3
    assert mine.agent == "a1" and sum(mine.totals.values()) == 2  # the two global memories
    assert whole.open_contradictions >= 1 and mine.open_contradictions == 0
    assert a2.status().open_contradictions == whole.open_contradictions


# --- strict mode ------------------------------------------------------------------------------

def test_strict_mode_refuses_everything_until_the_password(folder: Path) -> None:
    from app.ipc.client import RemoteVault
    server = _owner(folder, strict=True)
    try:
        raw = Raw(folder)
        info = raw.call("session")
        assert info.ok and info.result["strict"] is True  # type: ignore[index]
        assert info.result["may_read"] is False  # type: ignore[index]
        for method, args in (("recall", {"query": "Lisbon"}), ("get", {"mid": 1}),
                             ("status", {}), ("remember", {"draft": _draft("x")})):
            reply = raw.call(method, **args)
            assert not reply.ok and reply.kind == "PasswordNeeded", (method, reply)
        assert not raw.call("elevate", password="wrong").ok
        assert raw.call("elevate", password=PW).ok
        assert raw.call("recall", query="Lisbon").ok
        raw.close()
        # This test process has no terminal session ticket: a new connection starts over.
        with pytest.raises(PasswordNeeded):
            RemoteVault.at(folder).recall("Lisbon")
        # An assistant's connection is unaffected: its key is its proof.
        key = server.vault.pair_agent("a1").value
        hits = RemoteVault.at(folder, agent="a1", key=key).recall("Lisbon")
        assert [h.text for h in hits] == ["Ana moved to Lisbon in May"]
    finally:
        server.lock_vault()


TERMINAL = r"""
import json, os, subprocess, sys
from app.facade import Vault
os.setsid()                                   # a new session: the pty becomes its terminal
fd = os.open(sys.argv[1], os.O_RDWR)
assert os.tcgetpgrp(fd) == os.getpgrp()
out = []
for argv, extra in json.loads(sys.argv[2]):
    env = {k: v for k, v in os.environ.items() if k != "KEPT_PASSWORD"}
    env.update(extra)
    r = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=120)
    out.append([r.returncode, r.stdout[-300:], r.stderr[-300:]])
print(json.dumps(out))
"""


def _kept(folder: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "app.cli", "--vault", str(folder), *args]


def test_strict_mode_tickets_belong_to_a_terminal_session(folder: Path) -> None:
    """Like sudo's timestamp: the password typed in one terminal serves that terminal's next
    commands; a process with no terminal (an assistant's tool call) gets nothing from it."""
    server = _owner(folder, strict=True)
    master, slave = os.openpty()
    try:
        name = os.ttyname(slave)
        env = {"PYTHONPATH": str(ROOT)}
        steps = [
            (_kept(folder, "recall", "Lisbon"), env),                       # no password: no
            (_kept(folder, "recall", "Lisbon"), {**env, "KEPT_PASSWORD": PW}),  # proves it
            (_kept(folder, "recall", "Lisbon"), env),                       # the ticket serves
            (_kept(folder, "logout"), env),
            (_kept(folder, "recall", "Lisbon"), env),                       # gone
        ]
        r = subprocess.run([sys.executable, "-c", TERMINAL, name, json.dumps(steps)],
                           capture_output=True, text=True, timeout=600, cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert r.returncode == 0, r.stderr[-2000:]
        codes = [c for c, _o, _e in json.loads(r.stdout)]
        outs = json.loads(r.stdout)
        assert codes == [2, 0, 0, 0, 2], outs
        assert "Lisbon" in outs[2][1]
        # The same command outside any terminal, while the ticket was valid, got nothing:
        # (run again: prove, then read from a process with no controlling terminal).
        steps = [(_kept(folder, "recall", "Lisbon"), {**env, "KEPT_PASSWORD": PW})]
        r = subprocess.run([sys.executable, "-c", TERMINAL, name, json.dumps(steps)],
                           capture_output=True, text=True, timeout=300, cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert json.loads(r.stdout)[0][0] == 0
        lone = subprocess.run(_kept(folder, "recall", "Lisbon"), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120, cwd=ROOT,
                              env={**{k: v for k, v in os.environ.items()
                                      if k != "KEPT_PASSWORD"}, **env},
                              start_new_session=True)
        assert lone.returncode == 2 and "password" in lone.stderr.lower(), lone
    finally:
        os.close(master)
        os.close(slave)
        server.lock_vault()


# --- deadlines and slots ----------------------------------------------------------------------

def _stall(folder: Path, n: int) -> list[socket.socket]:
    """``n`` connections that send 2 bytes of a frame header and stop."""
    out = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with p.address(p.socket_path(folder)) as where:
            s.connect(where)
        s.sendall(struct.pack(">I", 100)[:2])
        out.append(s)
    return out


def test_stalled_connections_never_lock_out_a_client_or_an_assistant(owner: Any) -> None:
    from app.ipc.client import RemoteVault
    folder = owner.vault.folder
    key = owner.vault.pair_agent("a1").value
    assistant = RemoteVault.at(folder, agent="a1", key=key)  # connected before the flood
    assert assistant.recall("Lisbon")
    stalled = _stall(folder, 64)
    try:
        time.sleep(0.2)  # every stalled connection has reached the owner
        started = time.perf_counter()
        hits = RemoteVault.at(folder).recall("Lisbon")
        person_s = time.perf_counter() - started
        started = time.perf_counter()
        again = assistant.recall("Lisbon")
        agent_s = time.perf_counter() - started
        assert [h.text for h in hits] == [h.text for h in again] == ["Ana moved to Lisbon in May"]
        assert person_s < 1.0 and agent_s < 1.0, (person_s, agent_s)
        assert owner.connections <= owner.max_connections
    finally:
        for s in stalled:
            s.close()


def test_a_half_sent_frame_is_cut_and_an_idle_connection_is_closed_politely(
        folder: Path) -> None:
    from app.ipc.client import RemoteVault
    server = _owner(folder, frame_deadline=0.5, idle_timeout=0.5)
    try:
        stalled = _stall(folder, 5)
        time.sleep(0.2)
        assert server.connections == 5
        deadline = time.monotonic() + 10
        while server.connections and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.connections == 0  # each cut after its frame deadline
        for s in stalled:
            assert s.recv(10) == b""  # closed by the owner
            s.close()
        remote = RemoteVault.at(folder)
        assert remote.recall("Lisbon")
        time.sleep(1.0)  # past the idle timeout: the owner said goodbye and closed
        assert server.connections == 0
        assert remote.recall("Lisbon")  # reconnected and sent again, nothing lost
        remote.close()
    finally:
        server.lock_vault()


# --- wrong passwords --------------------------------------------------------------------------

def test_wrong_passwords_wait_longer_each_time_per_connection_and_process_wide(
        folder: Path) -> None:
    from app.ipc.guard import PasswordThrottle
    throttle = PasswordThrottle(base=0.3, cap=1.2, free=3)
    server = _owner(folder, throttle=throttle)
    try:
        raw = Raw(folder)
        spent = []
        for _ in range(4):
            started = time.perf_counter()
            assert raw.call("elevate", password="wrong").kind == "WrongKey"
            spent.append(time.perf_counter() - started)
        # Lower bounds only (a busy machine only adds): 0, then 0.3, 0.6, 1.2 s of delay. The
        # derive's own time is not counted: it varies from one try to the next (0.24 s for the
        # first and well under 0.12 s for the second in one CI run), so only the delay is bound.
        assert spent[1] >= 0.3 and spent[2] >= 0.6 and spent[3] >= 1.2, spent
        raw.close()
        # A new connection starts its own count, but the process remembers: 4 failures > 3.
        fresh = Raw(folder)
        started = time.perf_counter()
        assert fresh.call("elevate", password="wrong").kind == "WrongKey"
        assert time.perf_counter() - started >= 0.6
        # The right password clears both.
        assert fresh.call("elevate", password=PW).ok
        assert throttle.delay(0) == 0.0
        fresh.close()
    finally:
        server.lock_vault()


def test_a_flood_of_elevations_is_answered_busy_never_queued_for_ever(folder: Path) -> None:
    server = _owner(folder, max_elevations=2)
    try:
        replies: list[str] = []

        def elevate() -> None:
            c = Raw(folder)
            r = c.call("elevate", password="wrong")
            replies.append("ok" if r.ok else r.kind)
            c.close()
        threads = [threading.Thread(target=elevate) for _ in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert len(replies) == 10
        assert set(replies) <= {"WrongKey", "PasswordBusy"} and "PasswordBusy" in replies
        # and the person still gets in
        assert Raw(folder).call("elevate", password=PW).ok
    finally:
        server.lock_vault()


# --- the whole owner: kept serve, 256 MiB, parallel elevations ------------------------------

def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _elevate_all(folder: Path, passwords: list[str]) -> tuple[list[str], float]:
    replies: list[str] = []
    started = time.perf_counter()

    def one(pw: str) -> None:
        c = Raw(folder, timeout=120)
        try:
            r = c.call("elevate", password=pw)
            replies.append("ok" if r.ok else r.kind)
        finally:
            c.close()
    threads = [threading.Thread(target=one, args=(pw,)) for pw in passwords]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
        assert not t.is_alive(), "an elevation never got an answer"
    return replies, time.perf_counter() - started


@pytest.mark.slow  # long: runs in the slow group (CI runs it)
def test_parallel_elevations_through_kept_serve(tmp_path: Path) -> None:
    """256 MiB derives, as a real vault has: two, then eight elevations at once are each
    answered (welcome, wrong password or busy), ``kept agents pair`` twice at once both pair,
    and the owner's memory returns to within 10 % of where it was."""
    from app.facade import Vault
    from storage.crypto import KdfParams
    from tests.app.mcp.conftest import child_env, kept_argv, serving
    folder = tmp_path / "v"
    Vault.create(folder, PW, kdf=KdfParams(), load_model=False, threaded=False,
                 use_chroma=False).vault.lock()
    with serving(folder) as proc:
        warm, _ = _elevate_all(folder, [PW])
        assert warm == ["ok"]
        time.sleep(0.5)
        before = _rss(proc.pid)
        two, two_s = _elevate_all(folder, [PW, PW])
        assert two == ["ok", "ok"], two
        eight, eight_s = _elevate_all(folder, [PW, "wrong"] * 4)
        assert len(eight) == 8 and set(eight) <= {"ok", "WrongKey", "PasswordBusy"}, eight
        assert "ok" in eight
        pairs = [subprocess.Popen([*kept_argv(), "--vault", str(folder), "agents", "pair",
                                   f"p{i}"], env=child_env(KEPT_PASSWORD=PW), text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
                 for i in (1, 2)]
        outs = [pr.communicate(timeout=180) for pr in pairs]
        assert [pr.returncode for pr in pairs] == [0, 0], outs
        deadline = time.monotonic() + 10
        after = _rss(proc.pid)
        while after > before * 1.10 and time.monotonic() < deadline:
            time.sleep(0.25)
            after = _rss(proc.pid)
        print(json.dumps({"rss_before_mb": round(before / 2**20), "rss_after_mb":
                          round(after / 2**20), "two_s": round(two_s, 2),
                          "eight_s": round(eight_s, 2), "eight": eight}))
        assert after <= before * 1.10, (before, after)
        ok = subprocess.run([*kept_argv(), "--vault", str(folder), "agents", "list"],
                            env=child_env(KEPT_PASSWORD=PW), text=True, capture_output=True,
                            timeout=120, cwd=ROOT)
        assert ok.returncode == 0 and "p1" in ok.stdout and "p2" in ok.stdout, ok
