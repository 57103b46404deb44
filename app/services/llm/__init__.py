"""Optional LLM fact extraction through an OpenAI-compatible endpoint
(docs/memory-model.md#extraction). Layer: app. Runs on: a worker thread (blocking HTTP); no Qt.

docs/security.md#privacy:

* An endpoint outside loopback needs the person's recorded consent for exactly that endpoint;
  :func:`check_consent` runs before any socket is opened (and before any DNS lookup).
* Names, emails and phone numbers are replaced by placeholders before sending when
  ``redact`` is on, and restored in the parsed facts. Embeddings are never sent.
* :func:`parse_reply` accepts any text and either returns valid objects or raises
  :class:`~app.errors.ParseError` -- nothing else, for any input.
* An LLM "delete" only ever becomes a :class:`DeleteRequest`: this module has no access to
  storage, so it cannot remove anything. Consolidation files it as a review request of that
  one memory (inbox kind ``review``: still true, edit, or forget through the forget plan and
  its confirmation), never as a contradiction of the memory with itself (issue 12).
* Logs carry hosts, counts, hashes and error classes, never content.

HTTP is plain ``http.client`` on purpose: no proxies from the environment (a proxy would turn
a loopback request into a remote one), no redirects followed, no ``file://`` URLs.

The module is a package along those seams: :mod:`.consent` (which endpoints may be used),
:mod:`.redaction`, :mod:`.prompt`, :mod:`.parsing`, :mod:`.transport` (HTTP) and
:mod:`.extractor` (the one class that combines them). Import from ``app.services.llm``.
"""

from __future__ import annotations

from app.services.llm.consent import (
    RETENTION,
    ConsentRequired,
    LlmConfig,
    check_consent,
    consent_text,
    is_loopback,
    normalise_base_url,
)
from app.services.llm.extractor import LlmExtractor, SaveRaw
from app.services.llm.parsing import (
    MAX_ITEMS,
    MAX_REPLY_BYTES,
    MAX_REPLY_CHARS,
    MAX_SOURCE_IDS,
    MAX_STR,
    STORES,
    WRITABLE_STORES,
    error_detail,
    parse_reply,
)
from app.services.llm.prompt import RETRY_PROMPT, SYSTEM_PROMPT, build_messages
from app.services.llm.redaction import Redactor, redact, unredact
from app.services.llm.transport import LlmUnavailable, Transport, http_post

__all__ = [
    "MAX_ITEMS", "MAX_REPLY_BYTES", "MAX_REPLY_CHARS", "MAX_SOURCE_IDS", "MAX_STR", "RETENTION",
    "RETRY_PROMPT", "STORES", "SYSTEM_PROMPT", "WRITABLE_STORES", "ConsentRequired",
    "LlmConfig", "LlmExtractor", "LlmUnavailable", "Redactor", "SaveRaw", "Transport",
    "build_messages", "check_consent", "consent_text", "error_detail", "http_post",
    "is_loopback", "normalise_base_url", "parse_reply", "redact", "unredact",
]
