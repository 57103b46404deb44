"""A scripted OpenAI-compatible server on 127.0.0.1 (http.server in a thread, port 0).

Each POST to ``/v1/chat/completions`` takes the next scripted reply; the parsed request bodies
and headers are recorded for the test to inspect.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.api import VaultAPI


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    delay: float = 0.0


def envelope(content: str) -> Reply:
    """An OpenAI chat completion whose message content is ``content``."""
    return Reply(body=json.dumps({
        "id": "chatcmpl-test", "object": "chat.completion", "model": "fake",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
    }).encode())


def facts_reply(facts: list[dict[str, Any]], deletes: list[dict[str, Any]] | None = None
                ) -> Reply:
    return envelope(json.dumps({"facts": facts, "deletes": deletes or []}))


def raw(body: str | bytes, status: int = 200) -> Reply:
    return Reply(status=status, body=body.encode() if isinstance(body, str) else body)


class FakeLlm:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.raw_requests: list[bytes] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def script(self, *replies: Reply) -> FakeLlm:
        self.replies.extend(replies)
        return self

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                fake.raw_requests.append(body)
                fake.headers.append(dict(self.headers))
                try:
                    fake.requests.append(json.loads(body))
                except ValueError:
                    fake.requests.append({})
                if self.path != "/v1/chat/completions":
                    reply = Reply(status=404, body=b'{"error": "not found"}')
                elif fake.replies:
                    reply = fake.replies.pop(0)
                else:
                    reply = Reply(status=500, body=b'{"error": "no scripted reply left"}')
                if reply.delay:
                    time.sleep(reply.delay)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    view = memoryview(reply.body)
                    for i in range(0, len(view), 1 << 20):
                        self.wfile.write(view[i:i + (1 << 20)])
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading (size cap): expected

        return Handler

    @contextmanager
    def running(self) -> Iterator[FakeLlm]:
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        server.daemon_threads = True
        server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        self._server = server
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                                  name="fake-llm", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
            thread.join(5)


def llm_vault(folder: Path, password: str, kdf: object, now: float, server: FakeLlm) -> VaultAPI:
    """A single-threaded vault (no model, no Chroma) whose clock stands at ``now`` and whose
    extraction goes to ``server``."""
    from app.clock import FixedClock
    from tests.conftest import new_vault
    v = new_vault(folder, password, threaded=False, clock=FixedClock(now), use_chroma=False,
                  load_model=False)  # kdf: the floor (fast_kdf), what the empty vault has
    v.set_setting("extraction.provider", "llm")
    v.set_setting("extraction.llm_base_url", server.base_url)
    v.set_setting("extraction.llm_model", "tiny-local")
    return v
