"""The LLM extractor: consent, redaction, prompt, transport and parsing for one batch.
Layer: app. Runs on: a worker thread (blocking HTTP); no Qt.

Consent is checked before anything is sent; a bad reply is retried once with a content-free
error, then kept (names restored, stored encrypted by the caller) and refused. This module has
no access to storage: an LLM "delete" comes back as a request for the person to decide.
Logs carry hosts, counts, hashes and error classes, never content.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from app.domain.fact import DeleteRequest, EpisodeView, FactCandidate
from app.errors import ParseError
from app.services.llm.consent import LlmConfig, _host, check_consent
from app.services.llm.parsing import (
    MAX_REPLY_CHARS,
    _Bad,
    _content_of,
    error_detail,
    parse_reply,
    parse_salience,
)
from app.services.llm.prompt import RETRY_PROMPT, build_messages
from app.services.llm.redaction import Redactor, _unredact_fact, unredact
from app.services.llm.transport import LlmUnavailable, Transport, http_post
from app.services.text import STOPWORDS

log = logging.getLogger(__name__)

_MAX_RETRY_ECHO = 20_000             # how much of a bad reply is sent back on the retry

SaveRaw = Callable[[str, str], None]


class LlmExtractor:
    """Facts and delete requests from a batch of episodes, through ``cfg``'s endpoint.

    ``transport(url, body, headers, timeout) -> bytes`` defaults to :func:`http_post`.
    """

    def __init__(self, cfg: LlmConfig, transport: Transport | None = None) -> None:
        self.cfg = cfg
        self.transport: Transport = transport or http_post
        self._json_mode = True        # off for good once the server refuses response_format
        # 004's analysis and per-episode salience of the last batch that parsed (names
        # restored): (analysis or None, episode id -> (salience_score, reasoning)).
        self.last_salience: tuple[str | None, dict[int, tuple[float, str]]] = (None, {})

    def _redactor(self, episodes: Sequence[EpisodeView], known_names: Iterable[str]
                  ) -> Redactor | None:
        if not self.cfg.redact:
            return None
        return Redactor(list(known_names) + [e.speaker for e in episodes if e.speaker])

    def _body(self, messages: list[dict[str, str]], json_mode: bool) -> bytes:
        req: dict[str, Any] = {"model": self.cfg.model, "messages": messages, "temperature": 0}
        if json_mode:
            req["response_format"] = {"type": "json_object"}
        return json.dumps(req, ensure_ascii=False).encode("utf-8")

    def preview(self, episodes: Sequence[EpisodeView], known_names: Iterable[str]) -> str:
        """The exact JSON body the first request would send (docs/security.md#19-cloud-llm-consent),
        for the person to see before agreeing. Opens nothing."""
        names = list(known_names)
        messages = build_messages(episodes, names, redactor=self._redactor(episodes, names))
        return self._body(messages, True).decode("utf-8")

    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.cfg.api_key:
            h["Authorization"] = f"Bearer {self.cfg.api_key}"
        return h

    def _post(self, url: str, messages: list[dict[str, str]]) -> str:
        body = self._body(messages, self._json_mode)
        log.info("llm request to %s: %d bytes, sha256 %s", _host(url), len(body),
                 hashlib.sha256(body).hexdigest()[:16])
        try:
            raw = self.transport(url, body, self._headers(), float(self.cfg.timeout))
        except LlmUnavailable as exc:
            # Some servers (LM Studio) refuse response_format json_object: once, without it.
            if getattr(exc, "status", None) == 400 and self._json_mode:
                log.info("llm endpoint refused response_format; retrying without it")
                self._json_mode = False
                body = self._body(messages, False)
                raw = self.transport(url, body, self._headers(), float(self.cfg.timeout))
            else:
                raise
        return raw.decode("utf-8", errors="replace")

    def extract(self, episodes: list[EpisodeView], known_names: list[str], save_raw: SaveRaw
                ) -> tuple[list[FactCandidate], list[DeleteRequest]]:
        """Check consent, send the (redacted) batch, parse; on a bad reply retry once with the
        error; when that fails too, hand each bad reply (names restored) to ``save_raw(raw,
        error)`` and raise ParseError. Unreachable endpoint: LlmUnavailable."""
        base = check_consent(self.cfg)
        if not episodes:
            return [], []
        url = base + "/chat/completions"
        names = list(known_names)
        redactor = self._redactor(episodes, names)
        mapping = redactor.mapping if redactor is not None else {}
        messages = build_messages(episodes, names, redactor=redactor)
        if redactor is not None:
            log.info("llm batch of %d episodes; redacted %s", len(episodes),
                     ", ".join(f"{n} {k.lower()}" for k, n in redactor.counts.items() if n)
                     or "nothing")
        ids = frozenset(e.id for e in episodes)
        failures: list[tuple[str, ParseError]] = []
        for attempt in (1, 2):
            try:
                raw = self._post(url, messages)
            except LlmUnavailable:
                self._save(failures, mapping, save_raw)  # never lose the first bad reply
                raise
            try:
                facts, deletes = parse_reply(raw, ids)
            except ParseError as exc:
                detail = error_detail(exc)
                log.warning("llm reply %d of batch was not valid: %s", attempt, detail)
                failures.append((raw, exc))
                messages = [*messages, {"role": "assistant", "content": _echo(raw)},
                            {"role": "user", "content": RETRY_PROMPT.format(error=detail)}]
                continue
            log.info("llm batch of %d episodes -> %d facts, %d delete requests",
                     len(episodes), len(facts), len(deletes))
            note, rated = parse_salience(raw, ids)
            self.last_salience = (unredact(note, mapping) if note else None,
                                  {i: (sc, unredact(why, mapping)) for i, (sc, why)
                                   in rated.items()})
            facts = [_unredact_fact(f, mapping) for f in facts]
            kept = [f for f in facts if grounded(f, episodes)]
            if len(kept) < len(facts):
                log.info("llm batch: dropped %d facts whose value is not in their episodes",
                         len(facts) - len(kept))
            facts = kept
            deletes = [DeleteRequest(d.memory_id, unredact(d.statement, mapping),
                                     unredact(d.reason, mapping)) for d in deletes]
            return facts, deletes
        self._save(failures, mapping, save_raw)
        raise failures[-1][1]

    @staticmethod
    def _save(failures: list[tuple[str, ParseError]], mapping: Mapping[str, str],
              save_raw: SaveRaw) -> None:
        """Each bad reply, with names restored (it is stored encrypted, and a later re-parse
        must not depend on this batch's placeholder mapping)."""
        for bad_raw, err in failures:
            save_raw(unredact(bad_raw, mapping), f"{type(err).__name__}: {error_detail(err)}")


# Words of a value that say nothing about where it came from: a normalised date may name a
# month or a weekday its episode never wrote.
_CALENDAR = frozenset("""january february march april may june july august september october
november december monday tuesday wednesday thursday friday saturday sunday""".split())
_WORD = re.compile(r"[^\W\d_]{3,}")


def grounded(fact: FactCandidate, episodes: Sequence[EpisodeView]) -> bool:
    """Whether the fact's value is in its source episodes: at least one content word of its
    object appears in their text (a value with no such word, a number or a date, passes).
    Small local models copy the prompt's example ("lives in Porto") into batches that never
    said it; such a fact would put a false change in the Inbox, so it is dropped."""
    words = [w for w in _WORD.findall(fact.object.lower())
             if w not in STOPWORDS and w not in _CALENDAR]
    if not words:
        return True
    ids = set(fact.source_ids)
    text = " ".join(f"{e.speaker or ''} {e.text or ''}" for e in episodes
                    if not ids or e.id in ids).lower()
    return any(w in text for w in words)


def _echo(raw: str) -> str:
    """The bad reply as the assistant turn of the retry: its message content when it came in
    an envelope, cut to a sane size."""
    text = raw
    if len(raw) <= MAX_REPLY_CHARS:
        try:
            top = json.loads(raw, parse_constant=lambda s: None)
            if isinstance(top, dict):
                text = _content_of(top) or raw
        except (ValueError, RecursionError, TypeError, _Bad):
            pass
    if len(text) > _MAX_RETRY_ECHO:
        text = text[:_MAX_RETRY_ECHO] + " ...(cut)"
    return text
