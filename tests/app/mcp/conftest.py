"""A real owner for the MCP and concurrency tests: ``kept serve`` in a subprocess on a real vault
(real SQLCipher, the real model), unlocked with ``--password-file`` as a person would script
it, and ``kept mcp --agent NAME`` spawned by the official SDK client against it.

The agents' keys come from ``vault.pair_agent(NAME).value`` in this process before
``kept serve`` starts (pairing over the socket needs the password; that path has its own
tests in tests/app/ipc/test_person.py)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests import ROOT

PW = "correct horse battery"
TOOLS = {"remember", "remember_fact", "correct", "recall", "context", "explain",
         "list_contradictions", "status", "request_forget", "forget_status", "get_memory",
         "recent_memories", "entity", "inbox"}
T = TypeVar("T")


def kept_argv() -> list[str]:
    """The installed ``kept`` next to this interpreter (what a client config names), else the
    module."""
    exe = Path(sys.executable).parent / "kept"
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "app.cli"]


def child_env(**extra: str) -> dict[str, str]:
    """This environment without any password: a child that needs one gets it explicitly."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("KEPT_PASSWORD", "KEPT_AGENT_KEY")}
    env.update(PYTHONPATH=str(ROOT), **extra)
    return env


@dataclass
class Seeded:
    """A vault with paired agents and memories in three scopes."""
    folder: Path
    keys: dict[str, str]
    ids: dict[str, list[int]] = field(default_factory=dict)  # scope -> ids made at seeding


def seed_vault(folder: Path, agents: tuple[str, ...] = ("a", "b"),
               texts: dict[str, tuple[str, ...]] | None = None) -> Seeded:
    """Create a vault, pair ``agents`` and write ``texts`` per scope ("global" or an agent)."""
    from app.agent_scope import AgentSession
    from app.domain.memory import Draft, Store
    from tests.conftest import new_vault
    v = new_vault(folder, PW, load_model=False, threaded=False, use_chroma=False)
    try:
        seeded = Seeded(folder, {n: v.pair_agent(n).value for n in agents})
        for scope, items in (texts or {}).items():
            target: Any = v if scope == "global" else AgentSession(v, scope)
            seeded.ids[scope] = [int(target.remember(Draft(t, store=Store.SEMANTIC)).value)
                                 for t in items]
    finally:
        v.lock()
    return seeded


def password_file(folder: Path) -> Path:
    path = folder.parent / f"{folder.name}.pw"
    path.write_text(PW + "\n")
    path.chmod(0o600)
    return path


def wait_served(folder: Path, proc: subprocess.Popen[str], timeout: float = 90.0) -> None:
    from app.ipc.client import owner_running
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError("kept serve exited: "
                                 f"{proc.stderr.read() if proc.stderr else ''}")
        if owner_running(folder):
            return
        time.sleep(0.05)
    raise AssertionError("kept serve did not start serving")


def start_serve(folder: Path, **env: str) -> subprocess.Popen[str]:
    """``kept --vault F --password-file P serve --no-schedule``, serving when this returns."""
    proc = subprocess.Popen([*kept_argv(), "--vault", str(folder), "--password-file",
                             str(password_file(folder)), "serve", "--no-schedule"],
                            cwd=ROOT, env=child_env(**env), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_served(folder, proc)
    except BaseException:
        stop_serve(proc)
        raise
    return proc


def stop_serve(proc: subprocess.Popen[str]) -> str:
    """SIGTERM (what Ctrl-C does) and wait; its stderr."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    return proc.stderr.read() if proc.stderr else ""


@contextlib.contextmanager
def serving(folder: Path, **env: str) -> Iterator[subprocess.Popen[str]]:
    proc = start_serve(folder, **env)
    try:
        yield proc
    finally:
        err = stop_serve(proc)
    assert proc.returncode == 0, err


def mcp_params(folder: Path, agent: str, key: str | None) -> StdioServerParameters:
    """``kept --vault F mcp --agent NAME`` with the key only: no password, no in-process
    backend (it must reach the owner)."""
    env = child_env(**({"KEPT_AGENT_KEY": key} if key is not None else {}))
    argv = kept_argv()
    return StdioServerParameters(command=argv[0], args=[*argv[1:], "--vault", str(folder),
                                                        "mcp", "--agent", agent],
                                 env=env, cwd=str(ROOT))


@contextlib.asynccontextmanager
async def mcp_session(params: StdioServerParameters
                      ) -> AsyncIterator[tuple[ClientSession, dict[str, Any]]]:
    """Spawn ``kept mcp``, handshake, list the tools: (session, tools by name)."""
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            listed = await s.list_tools()
            yield s, {t.name: t for t in listed.tools}


def with_mcp(params: StdioServerParameters,
             body: Callable[[ClientSession, dict[str, Any]], Awaitable[T]]) -> T:
    """``body(session, tools)`` in one ``kept mcp`` session, on a fresh event loop."""
    async def main() -> T:
        async with mcp_session(params) as (s, tools):
            return await body(s, tools)
    return anyio.run(main)


def structured(tools: dict[str, Any], name: str, result: Any) -> dict[str, Any]:
    """A successful result's structuredContent, validated against the tool's outputSchema."""
    assert not result.is_error, (name, result.content)
    data = result.structured_content
    assert isinstance(data, dict), (name, result)
    jsonschema.validate(data, tools[name].output_schema)
    return data


def tool_error(result: Any) -> str:
    """The readable text of a failed tool call."""
    assert result.is_error, result
    return " ".join(c.text for c in result.content if getattr(c, "text", None))
