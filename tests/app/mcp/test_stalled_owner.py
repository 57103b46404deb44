"""An MCP call answers while 64 stalled connections sit on the owner (issue 22 item 3): a real
``kept serve``, a real ``kept mcp`` spawned by the official SDK client, raw sockets that send
two bytes of a frame and stop. Measured from the test: the tool call's round trip, and a
person's ``recall`` on a fresh connection, each under 1 s."""

from __future__ import annotations

import socket
import struct
import time
from pathlib import Path

from app.ipc import protocol as p
from tests.app.mcp.conftest import mcp_params, mcp_session, seed_vault, serving, structured


def test_an_mcp_call_and_a_cli_read_answer_past_64_stalled_connections(tmp_path: Path) -> None:
    import anyio

    from app.ipc.client import RemoteVault
    seeded = seed_vault(tmp_path / "v", texts={"global": ("Ana moved to Lisbon in May",)})
    times: dict[str, float] = {}

    async def main() -> None:
        async with mcp_session(mcp_params(seeded.folder, "a", seeded.keys["a"])) as (s, tools):
            structured(tools, "status", await s.call_tool("status", {}))  # connected
            stalled = []
            for _ in range(64):
                c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                with p.address(p.socket_path(seeded.folder)) as where:
                    c.connect(where)
                c.sendall(struct.pack(">I", 100)[:2])
                stalled.append(c)
            try:
                await anyio.sleep(0.3)
                started = time.perf_counter()
                got = structured(tools, "recall", await s.call_tool("recall",
                                                                    {"query": "Lisbon"}))
                times["mcp_recall_s"] = time.perf_counter() - started
                assert [h["text"] for h in got["memories"]] == ["Ana moved to Lisbon in May"]
                started = time.perf_counter()
                hits = await anyio.to_thread.run_sync(
                    lambda: RemoteVault.at(seeded.folder).recall("Lisbon"))
                times["person_recall_s"] = time.perf_counter() - started
                assert [h.text for h in hits] == ["Ana moved to Lisbon in May"]
            finally:
                for c in stalled:
                    c.close()

    with serving(seeded.folder):
        anyio.run(main)
    print(times)
    assert times["mcp_recall_s"] < 1.0 and times["person_recall_s"] < 1.0, times
