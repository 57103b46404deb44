"""``kept mcp --agent NAME`` over stdio, fast (issue 26, item 9): the handshake answered from a
table while the SDK imports. Layer: app (front end). Runs on: the main thread (the launcher),
one background thread (the SDK import and ``build_server``), then the SDK's event loop.

Importing the MCP SDK takes 0.7-2 s on a loaded machine, and a client waits for
``initialize`` and ``tools/list`` before it shows any tool. So this module imports nothing
heavy: it starts the import of ``app.mcp_server`` on a thread and answers, from
``mcp_table.json``, the first messages every client sends:

- legacy era: ``initialize`` (for each protocol version the SDK negotiates),
  ``notifications/initialized`` and ``tools/list``;
- 2026-07-28 era: ``server/discover`` and ``tools/list`` (stateless requests).

The table holds the real SDK server's own replies to exactly those messages (``record``
drives ``app.mcp_server.build_server`` through the SDK's stdio transport), and
tests/app/mcp/test_mcp_launch.py fails when it differs from what the SDK answers now: it
cannot drift unnoticed (regenerate: ``python -m app.mcp_launch --write-table``). At run time
the table is used only when its fingerprint (the sources that shape the tool list) matches.

The first message the table does not cover (a tool call, a resource, a malformed line...)
hands the stream to the SDK server: everything answered so far is replayed into it first
under private ids (so it holds the same session state, and its replies to them are
swallowed and compared with what the table said: a difference is logged), then the
messages not yet answered, then the rest of stdin. What the assistant sees is the SDK
server's behaviour, answered sooner.

Like the SDK's stdio transport, fd 0 and 1 are moved aside while serving (fd 1 to stderr,
fd 0 to the null device): stray output cannot corrupt the protocol. POSIX only: on Windows
``kept mcp`` runs the SDK's own stdio server (``app.mcp_server.serve``), as before.
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from app.mcp_fast import FastCalls

log = logging.getLogger(__name__)

TABLE = Path(__file__).with_name("mcp_table.json")
# The sources whose change can change the table (tools, schemas, descriptions, caps,
# instructions, version). Missing files (a frozen build) count as empty.
SHAPED_BY = ("mcp_server.py", "api.py", "operations.py", "agent_scope.py", "__init__.py")
VERSION_META = "io.modelcontextprotocol/protocolVersion"
MODERN_META = frozenset({VERSION_META, "io.modelcontextprotocol/clientInfo",
                         "io.modelcontextprotocol/clientCapabilities"})
REPLAY_ID = "kept-replay-"


def fingerprint() -> str:
    h = hashlib.sha256()
    here = Path(__file__).parent
    for name in SHAPED_BY:
        try:
            h.update((here / name).read_bytes())
        except OSError:
            h.update(b"-")
        h.update(b"\0")
    return h.hexdigest()[:16]


def load_table() -> dict[str, Any] | None:
    """The recorded replies, or None when missing or made from other sources."""
    try:
        table: dict[str, Any] = json.loads(TABLE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        log.info("no MCP start-up table: the SDK answers the handshake")
        return None
    # A frozen build has no sources to hash; it ships the table made (and tested) with them.
    if not getattr(sys, "frozen", False) and table.get("fingerprint") != fingerprint():
        log.info("the MCP start-up table is stale: the SDK answers the handshake")
        return None
    return table


# --- answering from the table -----------------------------------------------------------------

class Launcher:
    """Answers what the table covers; says which messages the SDK must see first."""

    def __init__(self, table: dict[str, Any] | None) -> None:
        self.table = table
        self.era: str | None = None       # "legacy" | "modern", from the first message
        self.version: str | None = None   # legacy: negotiated at initialize
        self.replay: list[dict[str, Any]] = []   # answered (or noted) messages, for the SDK
        self.said: dict[str, Any] = {}           # replay id -> the result we sent

    def answer(self, line: bytes) -> dict[str, Any] | None:
        """The reply to send for ``line``, ``{}`` for a notification taken, or None: hand
        over (``line`` not yet answered)."""
        if self.table is None:
            return None
        try:
            msg = json.loads(line)
        except ValueError:
            return None
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            return None
        method, params, mid = msg.get("method"), msg.get("params"), msg.get("id")
        if not isinstance(method, str) or (params is not None and not isinstance(params, dict)):
            return None
        if "id" not in msg:  # a notification
            if (method == "notifications/initialized" and self.era == "legacy"
                    and self.version is not None and params in (None, {})):
                self.replay.append(msg)
                return {}
            return None
        if not isinstance(mid, (int, str)) or isinstance(mid, bool):
            return None
        result = self._result(method, params or {})
        if result is None:
            return None
        rid = f"{REPLAY_ID}{len(self.replay)}"
        self.replay.append({**msg, "id": rid})
        self.said[rid] = result
        return {"jsonrpc": "2.0", "id": mid, "result": result}

    def fast(self, server: MCPServer) -> FastCalls | None:
        """Read tools' calls answered beside the SDK (``app.mcp_fast``), once this launcher
        answered the handshake: the era and the protocol version are then settled."""
        if self.table is None:
            return None
        if self.era == "legacy" and self.version is not None and any(
                m.get("method") == "notifications/initialized" for m in self.replay):
            versions = [self.table["legacy"][self.version]["initialize"]["protocolVersion"]]
        elif self.era == "modern":  # each request names its version
            versions = list(self.table["modern"])
        else:
            return None
        from app.mcp_fast import FastCalls
        fast = FastCalls(server, self.era, versions)
        return fast if fast.enabled else None

    def _result(self, method: str, params: dict[str, Any]) -> Any:
        assert self.table is not None
        meta = params.get("_meta")
        if isinstance(meta, dict) and VERSION_META in meta:  # the 2026-07-28 era
            if self.era == "legacy" or set(meta) - MODERN_META or set(params) != {"_meta"}:
                return None
            replies = self.table["modern"].get(meta[VERSION_META])
            if replies is None or method not in replies:
                return None
            self.era = "modern"
            return replies[method]
        if self.era == "modern":
            return None
        if method == "initialize":
            if self.era is not None or not _good_initialize(params):
                return None
            replies = self.table["legacy"].get(params["protocolVersion"])
            if replies is None:
                return None
            self.era, self.version = "legacy", params["protocolVersion"]
            return replies["initialize"]
        if method == "tools/list" and self.era == "legacy" and not params:
            if not any(m.get("method") == "notifications/initialized" for m in self.replay):
                return None
            assert self.version is not None
            return self.table["legacy"][self.version]["tools/list"]
        return None


def _good_initialize(params: dict[str, Any]) -> bool:
    """The shape the SDK accepts without question; anything else it judges itself."""
    info = params.get("clientInfo")
    return (set(params) <= {"protocolVersion", "capabilities", "clientInfo"}
            and isinstance(params.get("protocolVersion"), str)
            and isinstance(params.get("capabilities"), dict)
            and isinstance(info, dict) and isinstance(info.get("name"), str)
            and isinstance(info.get("version"), str))


# --- the wire ---------------------------------------------------------------------------------

class Wire:
    """The protocol's private copies of fd 0 and 1 (the real ones moved aside). Lines are
    read with plain ``os.read``: blocking while the launcher answers, then, once the SDK
    runs, when the event loop says the pipe is readable (no reader thread to wake)."""

    def __init__(self, rfd: int, wfd: int) -> None:
        self.rfd, self.wfd = rfd, wfd
        self.buffer = b""
        self.eof = False
        self.lock = threading.Lock()

    @classmethod
    def claim(cls) -> Wire:
        """Like the SDK's stdio transport: fd 0 reads the null device, fd 1 writes to
        stderr, and the protocol has private duplicates of both."""
        import fcntl
        rfd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
        wfd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
        sys.stdout.flush()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        return cls(rfd, wfd)

    def next_line(self) -> bytes | None:
        """A whole line from the buffer, or None (the last, unterminated, one at EOF)."""
        end = self.buffer.find(b"\n")
        if end >= 0:
            line, self.buffer = self.buffer[:end + 1], self.buffer[end + 1:]
            return line
        if self.eof and self.buffer:
            line, self.buffer = self.buffer, b""
            return line
        return None

    def fill(self) -> bool:
        """Read what the pipe has (blocking unless set otherwise); False at EOF."""
        try:
            data = os.read(self.rfd, 65536)
        except BlockingIOError:
            return True
        if not data:
            self.eof = True
        self.buffer += data
        return bool(data)

    def readline(self) -> bytes:
        """The next line, blocking; b"" at EOF."""
        while True:
            line = self.next_line()
            if line is not None:
                return line
            if self.eof or not self.fill() and not self.buffer:
                return b""

    async def areadline(self) -> bytes:
        """The next line, waiting on the event loop; b"" at EOF."""
        import anyio
        while True:
            line = self.next_line()
            if line is not None:
                return line
            if self.eof:
                return b""
            await anyio.wait_readable(self.rfd)
            self.fill()

    def write(self, data: bytes) -> None:
        with self.lock:
            view = memoryview(data)
            while view:
                view = view[os.write(self.wfd, view):]

    def send(self, msg: dict[str, Any]) -> None:
        self.write(json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")


# --- the SDK, built in the background ---------------------------------------------------------

class Background:
    """``build()`` on a daemon thread; ``result()`` waits for it."""

    def __init__(self, build: Callable[[], MCPServer]) -> None:
        self._build = build
        self._done = threading.Event()
        self._server: MCPServer | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="mcp-import", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._server = self._build()
        except BaseException as exc:  # re-raised on the main thread by result()
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> MCPServer:
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._server is not None
        return self._server


def serve_sdk(server: MCPServer, wire: Wire, first: list[bytes],
              said: dict[str, Any], *, then: list[bytes] | None = None,
              fast: FastCalls | None = None) -> None:
    """Run the SDK server on ``wire``: ``first`` lines before the client's ``then`` lines and
    the rest of stdin; the replies to the ids in ``said`` are swallowed (and compared with what
    was said). With ``fast``, a read tool's call from the client is answered beside the SDK
    (``app.mcp_fast``)."""
    import anyio
    from mcp.server.stdio import stdio_server

    pending = dict(said)
    queued = list(then or [])
    os.set_blocking(wire.rfd, False)

    class In:
        def __aiter__(self) -> In:
            return self

        async def __anext__(self) -> str:
            if first:
                return first.pop(0).decode("utf-8", "replace")
            while True:
                line = queued.pop(0) if queued else await wire.areadline()
                if not line:
                    raise StopAsyncIteration
                if fast is None:
                    return line.decode("utf-8", "replace")
                reply, msg = await fast.answer(line)
                if reply is None:
                    fast.handed(msg)
                    return line.decode("utf-8", "replace")
                wire.write(reply)

    class Out:
        async def write(self, text: str) -> None:
            if pending and _swallowed(text, pending):
                return
            if fast is not None:
                fast.replied(text)
            wire.write(text.encode("utf-8"))

        async def flush(self) -> None:
            return None

    # Everything imported and built so far lives as long as the process: out of the
    # collector's sight, a full collection no longer walks the SDK's and pydantic's objects
    # in the middle of a reply (the calls' slow tail; bench/mcp_latency.py).
    gc.freeze()

    async def main() -> None:
        low = server._lowlevel_server  # what MCPServer.run_stdio_async runs, on our streams
        async with stdio_server(stdin=In(), stdout=Out()) as (read, write):  # type: ignore[arg-type]
            await low.run(read, write, low.create_initialization_options())
    anyio.run(main)


def _swallowed(text: str, pending: dict[str, Any]) -> bool:
    try:
        msg = json.loads(text)
    except ValueError:
        return False
    mid = msg.get("id") if isinstance(msg, dict) else None
    if not isinstance(mid, str) or mid not in pending:
        return False
    said = pending.pop(mid)
    if msg.get("result") != said:
        log.warning("the MCP start-up table differs from the SDK's reply to %s: regenerate it "
                    "(python -m app.mcp_launch --write-table)", mid)
    return True


def run(agent: str, folder: Path | None) -> int:
    """``kept mcp --agent NAME`` (stdio) until the client closes stdin."""
    from app.agent_scope import check_agent_name
    from app.validation import check_string
    check_string(agent, "--agent")
    check_agent_name(agent)
    if sys.platform == "win32":  # no fd juggling or pipe readiness there: the SDK's stdio
        from app.mcp_server import serve
        return serve(agent, folder)
    key = os.environ.get("KEPT_AGENT_KEY")

    def build() -> MCPServer:
        from app import mcp_server
        mcp_server._skip_sdk_logging_setup()
        return mcp_server.build_server(mcp_server.Connection(agent, folder, key))

    background = Background(build)
    wire = Wire.claim()
    launcher = Launcher(load_table())
    first: list[bytes] = []
    while True:
        line = wire.readline()
        if not line:
            return 0  # the client went away before asking for anything more
        if not line.strip():
            continue
        reply = launcher.answer(line)
        if reply is None:
            first.append(line)
            break
        if reply:
            wire.send(reply)
    replay = [json.dumps(m).encode() + b"\n" for m in launcher.replay]
    server = background.result()
    serve_sdk(server, wire, replay, launcher.said, then=first, fast=launcher.fast(server))
    return 0


# --- recording the table ----------------------------------------------------------------------

def record() -> dict[str, Any]:
    """The real SDK server's replies to the messages the launcher answers, per protocol
    version, driven through the SDK's own stdio transport."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    from app import mcp_server

    client = {"name": "kept-table", "version": "1"}

    def legacy(v: str) -> list[dict[str, Any]]:
        return [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": v, "capabilities": {}, "clientInfo": client}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]

    def modern(v: str) -> list[dict[str, Any]]:
        meta = {"_meta": {VERSION_META: v, "io.modelcontextprotocol/clientInfo": client,
                          "io.modelcontextprotocol/clientCapabilities": {}}}
        return [{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": meta},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": meta}]

    async def drive(messages: list[dict[str, Any]]) -> dict[str, Any]:
        server = mcp_server.build_server(mcp_server.Connection("table", None, None))
        replies: dict[Any, Any] = {}
        answered = anyio.Event()
        want = sum(1 for m in messages if "id" in m)

        class In:
            def __init__(self) -> None:
                self.todo = list(messages)

            def __aiter__(self) -> In:
                return self

            async def __anext__(self) -> str:
                if self.todo:
                    return json.dumps(self.todo.pop(0)) + "\n"
                await answered.wait()
                raise StopAsyncIteration

        class Out:
            async def write(self, text: str) -> None:
                msg = json.loads(text)
                replies[msg["id"]] = msg
                if len(replies) == want:
                    answered.set()

            async def flush(self) -> None:
                return None

        low = server._lowlevel_server
        async with stdio_server(stdin=In(), stdout=Out()) as (read, write):  # type: ignore[arg-type]
            await low.run(read, write, low.create_initialization_options())
        out: dict[str, Any] = {}
        for m in messages:
            if "id" in m:
                reply = replies[m["id"]]
                if "result" not in reply:
                    raise RuntimeError(f"the SDK refused {m['method']}: {reply}")
                out[m["method"]] = reply["result"]
        return out

    mcp_server._skip_sdk_logging_setup()
    return {"fingerprint": fingerprint(),
            "legacy": {v: anyio.run(drive, legacy(v)) for v in HANDSHAKE_PROTOCOL_VERSIONS},
            "modern": {v: anyio.run(drive, modern(v)) for v in MODERN_PROTOCOL_VERSIONS}}


def write_table() -> Path:
    TABLE.write_text(json.dumps(record(), indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                     encoding="utf-8")
    return TABLE


if __name__ == "__main__":
    if sys.argv[1:] != ["--write-table"]:
        raise SystemExit("usage: python -m app.mcp_launch --write-table")
    print(write_table())
