"""``kept mcp --agent NAME --http PORT``: the same MCP server as over stdio, as Streamable HTTP
on 127.0.0.1 for clients that only speak HTTP (issue 26, item 8). Layer: app (front end).
Runs on: uvicorn's event loop; each tool's blocking call runs in a worker thread.

Who may call (docs/security.md#an-assistant), checked before the SDK sees a request:

- the socket is bound to 127.0.0.1 only: nothing off this machine connects;
- ``Authorization: Bearer <key>``, the key Kept issued to this assistant (``KEPT_AGENT_KEY``,
  the same one the stdio entry carries), compared in constant time: missing or wrong is 401
  and no tool runs; the owner checks the key again on every call (a revoked key opens
  nothing);
- ``Host`` must name this port on 127.0.0.1 or localhost (421 otherwise: DNS rebinding);
- ``Origin``, when a browser sends one, must be http(s) on localhost or 127.0.0.1 (403
  otherwise): a page from another site cannot drive the assistant's tools.

The SDK's own transport security (DNS-rebinding protection) is on with the same lists.
"""

from __future__ import annotations

import hmac
import json
import logging
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from app.errors import ValidationError

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
PATH = "/mcp"
LOCAL_NAMES = ("127.0.0.1", "localhost")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def local_origin(origin: str | None) -> bool:
    """No Origin (not a browser), or a page served from this machine's loopback names."""
    if origin is None:
        return True
    try:
        parts = urlsplit(origin)
        port = parts.port  # raises on a port that is not a number
    except ValueError:
        return False
    return (parts.scheme in ("http", "https") and parts.hostname in LOCAL_NAMES
            and parts.path == "" and not parts.query and not parts.username
            and (port is None or 0 < port < 65536))


class Guard:
    """ASGI middleware: Host, Origin and the bearer key, before anything else runs."""

    def __init__(self, app: ASGIApp, key: str, port: int) -> None:
        self.app = app
        self.key = key.encode()
        self.hosts = {f"{name}:{port}".encode() for name in LOCAL_NAMES}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan: the SDK's session manager starts and stops
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = {}
        for name, value in scope.get("headers", ()):
            headers.setdefault(bytes(name).lower(), bytes(value))
        if headers.get(b"host") not in self.hosts:
            await _refuse(send, 421, "This server answers only at 127.0.0.1 or localhost.")
            return
        origin = headers.get(b"origin")
        if not local_origin(None if origin is None else origin.decode("latin-1")):
            await _refuse(send, 403, "Requests from web pages of other sites are refused.")
            return
        auth = headers.get(b"authorization", b"")
        scheme, _, token = auth.partition(b" ")
        if scheme.lower() != b"bearer" or not hmac.compare_digest(token.strip(), self.key):
            await _refuse(send, 401, "Send the assistant's Kept key: Authorization: Bearer "
                                     "<key>.",
                          {b"www-authenticate": b'Bearer realm="kept"'})
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, message: str,
                  extra: dict[bytes, bytes] | None = None) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(body)).encode()), *(extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def bind(port: int) -> socket.socket:
    """The listening socket on 127.0.0.1 (``port`` 0: any free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return sock


def app_for(agent: str, folder: Path | None, key: str, port: int) -> ASGIApp:
    """The guarded ASGI app serving ``agent``'s tools at ``/mcp``."""
    from mcp.server.transport_security import TransportSecuritySettings

    from app import mcp_server
    mcp_server._skip_sdk_logging_setup()
    server = mcp_server.build_server(mcp_server.Connection(agent, folder, key))
    origins = [f"{scheme}://{name}{suffix}" for scheme in ("http", "https")
               for name in LOCAL_NAMES for suffix in ("", ":*")]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:{port}" for name in LOCAL_NAMES], allowed_origins=origins)
    inner = server.streamable_http_app(streamable_http_path=PATH, json_response=True,
                                       transport_security=security, host=HOST)
    return Guard(inner, key, port)


def serve_http(agent: str, folder: Path | None, key: str | None, port: int) -> int:
    """Serve until interrupted. Says the URL on stderr (with the port when ``port`` is 0)."""
    if not key:
        raise ValidationError(
            "kept mcp --http needs the assistant's key in KEPT_AGENT_KEY: clients send it as "
            "their bearer token.",
            hint=f"Pair it with `kept agents pair {agent}`; the client's entry is "
                 "{\"type\": \"http\", \"url\": ..., \"headers\": {\"Authorization\": "
                 "\"Bearer <key>\"}} (README, Assistants).")
    import anyio
    import uvicorn

    sock = bind(port)
    port = sock.getsockname()[1]
    app = app_for(agent, folder, key, port)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                            timeout_graceful_shutdown=5)
    print(f"Kept MCP for {agent} at http://{HOST}:{port}{PATH} (Ctrl-C stops it)",
          file=sys.stderr, flush=True)
    try:
        anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))
    finally:
        sock.close()
    return 0
