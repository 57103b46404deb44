"""HTTP to the LLM endpoint. Layer: app. Runs on: a worker thread (blocking).

HTTP is plain ``http.client`` on purpose: no proxies from the environment (a proxy would turn
a loopback request into a remote one), no redirects followed, no ``file://`` URLs. A reply is
read up to ``MAX_REPLY_BYTES`` and the timeout bounds the whole exchange. Callers check
consent (:func:`app.services.llm.consent.check_consent`) before calling the transport.
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from app.errors import AppError
from app.services.llm.parsing import MAX_REPLY_BYTES

# transport(url, body, headers, timeout) -> the reply body; raises LlmUnavailable.
Transport = Callable[[str, bytes, Mapping[str, str], float], bytes]


class LlmUnavailable(AppError):
    user_message = "The LLM endpoint could not be reached."
    hint = "Check that the server (Ollama, llama.cpp, LM Studio, ...) is running and the URL."

    def __init__(self, user_message: str | None = None, *, hint: str | None = None,
                 status: int | None = None) -> None:
        self.status = status          # the HTTP status when the server answered, else None
        super().__init__(user_message, hint=hint)


def http_post(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> bytes:
    """POST ``body``; return the response body (at most MAX_REPLY_BYTES + 1 bytes) of a 2xx
    reply. Anything else -- refused, timeout, TLS failure, non-2xx, a redirect -- raises
    LlmUnavailable. ``timeout`` bounds the whole exchange."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    deadline = time.monotonic() + timeout
    conn: http.client.HTTPConnection | None = None
    try:
        cls = (http.client.HTTPSConnection if parts.scheme == "https"
               else http.client.HTTPConnection)
        conn = cls(host, parts.port, timeout=timeout)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn.request("POST", path, body=body, headers=dict(headers))
        resp = conn.getresponse()
        if not 200 <= resp.status < 300:
            reason = " ".join(str(resp.reason or "")[:60].split())
            raise LlmUnavailable(f"The LLM endpoint at {host} answered HTTP {resp.status} "
                                 f"{reason}".rstrip() + ".", status=resp.status)
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_REPLY_BYTES:
            if time.monotonic() > deadline:
                raise TimeoutError("deadline passed while reading the reply")
            chunk = resp.read(min(65_536, MAX_REPLY_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except LlmUnavailable:
        raise
    except TimeoutError as exc:
        raise LlmUnavailable(f"The LLM endpoint at {host} did not answer within "
                             f"{timeout:g} s.") from exc
    except ConnectionRefusedError as exc:
        raise LlmUnavailable(f"The LLM endpoint at {host} refused the connection: is the "
                             f"server running?") from exc
    except (OSError, http.client.HTTPException, ValueError) as exc:
        raise LlmUnavailable(f"The LLM endpoint at {host} could not be reached "
                             f"({type(exc).__name__}).") from exc
    finally:
        if conn is not None:
            conn.close()
