"""``kept mcp --agent NAME --http PORT`` (issue 26, item 8): Streamable HTTP on 127.0.0.1, the
assistant's key as bearer token, Host and Origin checked; driven by the SDK's own Streamable
HTTP client against a real ``kept serve`` owner."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import psutil
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from app.mcp_http import local_origin
from tests.app.mcp.conftest import (
    TOOLS,
    Seeded,
    child_env,
    kept_argv,
    seed_vault,
    serving,
    structured,
)

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def test_local_origin() -> None:
    for ok in (None, "http://localhost", "http://localhost:6274", "https://127.0.0.1:8443",
               "http://127.0.0.1"):
        assert local_origin(ok), ok
    for bad in ("http://evil.example", "http://localhost.evil.example", "null",
                "http://localhost:1.evil.example", "http://127.0.0.1.nip.io:80",
                "file://localhost", "http://user@localhost", "http://localhost/path",
                "http://[::1]:80", "http://10.0.0.1", ""):
        assert not local_origin(bad), bad


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Seeded, str, int]]:
    seeded = seed_vault(tmp_path_factory.mktemp("http") / "v",
                        texts={"global": ("Ana moved to Lisbon in May",),
                               "b": ("b's secret: the gym on Tuesdays",)})
    with serving(seeded.folder):
        proc = subprocess.Popen([*kept_argv(), "--vault", str(seeded.folder), "mcp", "--agent",
                                 "a", "--http", "0"], env=child_env(KEPT_AGENT_KEY=seeded.keys["a"]),
                                stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stderr is not None
            said = []
            found = None
            while found is None and len(said) < 50:  # warnings may come first
                said.append(proc.stderr.readline())
                found = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", said[-1])
                assert said[-1], said  # it exited
            assert found, said
            yield seeded, found.group(1), proc.pid
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def _session(url: str, headers: dict[str, str], body: Any) -> Any:
    async def main() -> Any:
        async with httpx2.AsyncClient(headers=headers) as hc, \
                streamable_http_client(url, http_client=hc) as (r, w), \
                ClientSession(r, w) as s:
            await s.initialize()
            tools = {t.name: t for t in (await s.list_tools()).tools}
            return await body(s, tools)
    return anyio.run(main)


def test_sdk_http_client_with_the_key(served: tuple[Seeded, str, int]) -> None:
    seeded, url, pid = served

    async def body(s: ClientSession, tools: dict[str, Any]) -> list[str]:
        assert set(tools) == TOOLS
        res = await s.call_tool("remember", {"text": "a heard: Ana likes figs"})
        assert not res.is_error, res.content
        res = await s.call_tool("recall", {"query": "Ana Lisbon figs gym"})
        return [m["text"] for m in structured(tools, "recall", res)["memories"]]
    texts = _session(url, {"Authorization": f"Bearer {seeded.keys['a']}"}, body)
    assert "Ana moved to Lisbon in May" in texts and "a heard: Ana likes figs" in texts
    assert not any("gym" in t for t in texts)  # b's memory stays b's
    listening = [c.laddr for c in psutil.Process(pid).net_connections("inet")
                 if c.status == psutil.CONN_LISTEN]
    assert listening and all(a.ip == "127.0.0.1" for a in listening)


def _post(url: str, headers: dict[str, str], payload: dict[str, Any]) -> httpx2.Response:
    with httpx2.Client() as c:
        return c.post(url, json=payload, headers={**ACCEPT, **headers})


def test_no_key_or_a_wrong_one_is_401_and_runs_nothing(
        served: tuple[Seeded, str, int]) -> None:
    seeded, url, _ = served
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "remember", "arguments": {"text": "planted by a stranger"}}}
    for headers in ({}, {"Authorization": "Bearer kept_wrong"},
                    {"Authorization": f"Bearer {seeded.keys['b']}"},  # another assistant's
                    {"Authorization": seeded.keys["a"]},                # no scheme
                    {"Authorization": f"Basic {seeded.keys['a']}"}):
        for payload in (INIT, call):
            r = _post(url, headers, payload)
            assert r.status_code == 401, (headers, r.status_code, r.text)
            assert r.headers["www-authenticate"].startswith("Bearer")
            assert "Bearer <key>" in r.json()["error"]

    async def body(s: ClientSession, tools: dict[str, Any]) -> list[str]:
        res = await s.call_tool("recall", {"query": "planted by a stranger", "k": 20})
        return [m["text"] for m in structured(tools, "recall", res)["memories"]]
    assert "planted by a stranger" not in _session(
        url, {"Authorization": f"Bearer {seeded.keys['a']}"}, body)


def test_other_origins_and_hosts_are_refused(served: tuple[Seeded, str, int]) -> None:
    seeded, url, _ = served
    auth = {"Authorization": f"Bearer {seeded.keys['a']}"}
    r = _post(url, {**auth, "Origin": "http://evil.example"}, INIT)
    assert r.status_code == 403 and "other sites" in r.json()["error"]
    port = url.split(":")[2].split("/")[0]
    r = _post(url, {**auth, "Host": f"evil.example:{port}"}, INIT)  # DNS rebinding
    assert r.status_code == 421
    r = _post(url, {**auth, "Origin": "http://localhost:6274"}, INIT)  # the Inspector's page
    assert r.status_code == 200, r.text
    assert r.json()["result"]["serverInfo"]["name"] == "kept"


def test_http_needs_the_key_in_the_environment(tmp_path: Any) -> None:
    out = subprocess.run([*kept_argv(), "--vault", str(tmp_path), "mcp", "--agent", "a",
                          "--http", "0"], env=child_env(), capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2
    assert "KEPT_AGENT_KEY" in out.stderr and "Traceback" not in out.stderr


def test_sdk_client_2026_era_over_http(served: tuple[Seeded, str, int]) -> None:
    seeded, url, _ = served

    async def main() -> tuple[str, set[str], Any]:
        async with httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {seeded.keys['a']}"}) as hc, \
                Client(streamable_http_client(url, http_client=hc)) as c:
            tools = {t.name for t in (await c.list_tools()).tools}
            res = await c.call_tool("recall", {"query": "Lisbon"})
            return str(c.protocol_version), tools, res
    version, tools, res = anyio.run(main)
    assert version == "2026-07-28" and tools == TOOLS
    assert not res.is_error
    assert res.structured_content["memories"][0]["text"] == "Ana moved to Lisbon in May"
