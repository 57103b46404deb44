"""``kept mcp``: an assistant's read-only tool calls answered beside the SDK's dispatcher (issue
26, item 9: recall's added latency at p95 <= 3 ms). Layer: app (front end). Runs on: the SDK's
event loop, in the launcher's stdin reader (``app.mcp_launch.serve_sdk``).

Profiled under ``bench/mcp_latency.py`` (py-spy and cProfile of ``kept mcp``), about 40% of
the process's time on a recall went to the SDK's plumbing around the tool, not to the tool:
the JSON-RPC union validation of every line, the memory streams between reader, dispatcher and
writer, a task per request, the runner's context, middleware (OpenTelemetry spans, the request
state boundary), the request validated twice more, the reply wrapped in models and dumped.

So a ``tools/call`` for a tool that only reads is answered here: the SDK's own ``Tool`` (the
same argument model validates the arguments and says the same thing when they are wrong; the
same function calls the owner; the same ``convert_result`` builds ``content`` and
``structuredContent``), and the SDK's own steps after it (a failure becomes an ``isError``
result with the exception's text, as ``MCPServer._handle_call_tool`` makes it; the result is
dumped, sieved by the protocol version's surface, stamped in the 2026 era, and written as the
stdio transport writes a ``JSONRPCResponse``). tests/app/mcp/test_mcp_fast.py records the SDK
dispatcher's replies to successes, bad arguments, an owner gone and a locked vault, and fails
when the replies from here differ by one byte.

What is not answered here goes to the SDK unchanged: anything but a plain ``tools/call`` (a
``_meta`` with a progress token, a request state, an unknown tool, a write), any call before
the handshake the launcher answered, and any call while a request handed to the SDK is still
unanswered (a read is never answered before a write the client sent first: the SDK's order).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server import MCPServer
    from mcp.server.mcpserver.tools import Tool

log = logging.getLogger(__name__)

CALL = "tools/call"
MAX_ID = 2 ** 53  # ids a JSON number carries exactly; others go to the SDK


def read_tools(server: MCPServer) -> dict[str, Tool]:
    """The tools that serve a READ operation of ``VaultAPI`` and take only their arguments (no
    context, nothing resolved): the ones answered here."""
    from app.mcp_server import TOOLS
    from app.operations import Access
    reads = {o.tool for o in TOOLS.values() if o.access is Access.READ}
    out: dict[str, Tool] = {}
    for name in sorted(str(n) for n in reads):
        tool = server._tool_manager.get_tool(name)
        if tool is not None and tool.context_kwarg is None and not tool.resolved_params:
            out[name] = tool
    return out


class FastCalls:
    """Answers a read tool's call in the era and protocol version the launcher negotiated.

    ``answer(line)`` returns the reply line, or None: the line goes to the SDK, which is
    told so through ``handed`` (and ``replied`` for what it wrote), so that a call waits for
    the SDK's requests in flight. ``versions``: the legacy session's negotiated version, or
    the 2026-era versions a request may name in its ``_meta``."""

    def __init__(self, server: MCPServer, era: str, versions: list[str]) -> None:
        self.server = server
        self.era = era            # "legacy" | "modern"
        self.versions = frozenset(versions)
        self.legacy_version = versions[0] if era == "legacy" and len(versions) == 1 else None
        self.tools = read_tools(server)
        self.inflight: dict[str, int] = {}   # request ids handed to the SDK, not yet answered
        low = server._lowlevel_server
        # A cache hint or an extension would change a tools/call reply: then none is taken.
        self.enabled = bool(self.tools) and CALL not in low.cache_hints \
            and not getattr(server, "_extensions", None)

    # --- what the SDK has in hand ---------------------------------------------------------------

    def handed(self, msg: Any) -> None:
        """``msg`` (parsed, or None) goes to the SDK."""
        if not isinstance(msg, dict):
            return
        if "id" in msg and "method" in msg:
            key = _key(msg["id"])
            self.inflight[key] = self.inflight.get(key, 0) + 1
        elif msg.get("method") == "notifications/cancelled":
            params = msg.get("params")
            if isinstance(params, dict) and "requestId" in params:
                self._settle(params["requestId"])  # a cancelled request is never answered

    def replied(self, text: str) -> None:
        """The SDK wrote ``text``: a reply settles its request."""
        if not self.inflight:
            return
        try:
            msg = json.loads(text)
        except ValueError:
            return
        if isinstance(msg, dict) and "id" in msg and ("result" in msg or "error" in msg):
            self._settle(msg["id"])

    def _settle(self, mid: Any) -> None:
        key = _key(mid)
        n = self.inflight.get(key, 0)
        if n > 1:
            self.inflight[key] = n - 1
        else:
            self.inflight.pop(key, None)

    # --- the fast path ----------------------------------------------------------------------------

    def take(self, msg: Any) -> tuple[Tool, Any, dict[str, Any], str] | None:
        """(tool, id, arguments, protocol version) when ``msg`` is a call answered here."""
        if not self.enabled or self.inflight or not isinstance(msg, dict):
            return None
        if msg.get("method") != CALL or msg.get("jsonrpc") != "2.0" or \
                not set(msg) <= {"jsonrpc", "id", "method", "params"}:
            return None
        mid = msg.get("id")
        if isinstance(mid, bool) or not (isinstance(mid, str) or
                                         isinstance(mid, int) and abs(mid) < MAX_ID):
            return None
        params = msg.get("params")
        if not isinstance(params, dict):
            return None
        if self.era == "modern":
            version = _modern_version(params.get("_meta"), self.versions)
            allowed = {"name", "arguments", "_meta"}
        else:
            version, allowed = self.legacy_version, {"name", "arguments"}
        if version is None or not set(params) <= allowed:
            return None
        tool = self.tools.get(params.get("name"))  # type: ignore[arg-type]
        arguments = params.get("arguments", {})
        if tool is None or not isinstance(arguments, dict):
            return None
        return tool, mid, arguments, version

    async def answer(self, line: bytes) -> tuple[bytes | None, Any]:
        """(the reply line, the parsed message): the reply is None when the SDK answers."""
        try:
            msg = json.loads(line)
        except ValueError:
            return None, None
        taken = self.take(msg)
        if taken is None:
            return None, msg
        return await self.call(*taken), msg

    async def call(self, tool: Tool, mid: Any, arguments: dict[str, Any], version: str
                   ) -> bytes:
        """What the SDK's dispatcher writes for this call, from the same steps."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CallToolResult, JSONRPCError, JSONRPCResponse, TextContent
        try:
            result = await tool.run(arguments, None, convert_result=True)  # type: ignore[arg-type]
        except MCPError as exc:  # a protocol error, as the dispatcher answers one
            err = JSONRPCError(jsonrpc="2.0", id=mid, error=exc.error)
            return err.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
        except Exception as exc:  # as MCPServer._handle_call_tool: the text, isError
            log.info("tool %r failed: %s", tool.name, type(exc.__cause__ or exc).__name__)
            result = CallToolResult(content=[TextContent(type="text", text=str(exc))],
                                    is_error=True)
        reply = JSONRPCResponse(jsonrpc="2.0", id=mid, result=self.wire_result(result, version))
        return reply.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"

    def wire_result(self, result: Any, version: str) -> dict[str, Any]:
        """``ServerRunner._serialize`` for a tools/call result (no cache hint: checked)."""
        from mcp_types.methods import serialize_server_result
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS
        dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        dumped = serialize_server_result(CALL, version, dumped)
        if version in MODERN_PROTOCOL_VERSIONS:
            from mcp_types._types import SERVER_INFO_META_KEY
            if dumped.get("resultType") is None:
                dumped["resultType"] = "complete"
            meta = dumped.get("_meta")
            stamp = self.server._lowlevel_server.server_info_stamp
            if meta is None:
                dumped["_meta"] = {SERVER_INFO_META_KEY: stamp}
            elif isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None:
                dumped["_meta"] = {**meta, SERVER_INFO_META_KEY: stamp}
        return dumped


def _modern_version(meta: Any, versions: frozenset[str]) -> str | None:
    """The version a 2026-era request's ``_meta`` names, when it is a plain envelope."""
    from app.mcp_launch import MODERN_META, VERSION_META
    if not isinstance(meta, dict) or not set(meta) <= MODERN_META:
        return None
    version = meta.get(VERSION_META)
    return version if isinstance(version, str) and version in versions else None


def _key(mid: Any) -> str:
    """Ids as the SDK correlates them ("7" and 7 are one)."""
    if isinstance(mid, str):
        try:
            return str(int(mid))
        except ValueError:
            return mid
    return str(mid)
