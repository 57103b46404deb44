"""Parsing an LLM reply (docs/security.md#16-parsers-never-crash-or-lose-input). Layer: app. Pure.

:func:`parse_reply` accepts any text and either returns valid objects or raises
:class:`~app.errors.ParseError` -- nothing else, for any input. Error details name the path
of what was wrong, never the content, so they are safe to log and to send back on the retry.
An LLM "delete" only ever becomes a :class:`~app.domain.fact.DeleteRequest`.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterable
from typing import Any

from app.domain.fact import DeleteRequest, FactCandidate
from app.errors import ParseError

log = logging.getLogger(__name__)

# parse_reply refuses anything longer (docs/security.md#16-parsers-never-crash-or-lose-input)
MAX_REPLY_CHARS = 1_000_000
MAX_REPLY_BYTES = 4 * MAX_REPLY_CHARS  # the transport stops reading after this many bytes
MAX_STR = 500                        # every string field of a fact or delete
MAX_ITEMS = 500                      # facts (and, separately, deletes) in one reply
MAX_SOURCE_IDS = 200

STORES = ("working", "short_term", "episodic", "semantic", "procedural", "implicit")
WRITABLE_STORES = ("semantic", "procedural")


class _Bad(Exception):
    """Internal: a reply failed validation; ``str(self)`` names the path, never the content."""


def _fail(detail: str) -> ParseError:
    err = ParseError()
    err.detail = detail  # type: ignore[attr-defined]
    return err


def error_detail(exc: BaseException) -> str:
    """The content-free reason a reply was refused (safe to log and to send back)."""
    return str(getattr(exc, "detail", "") or type(exc).__name__)


def _no_constant(name: str) -> Any:
    raise _Bad(f"{name} is not allowed in JSON")


def _finite_float(s: str) -> float:
    v = float(s)
    if not math.isfinite(v):
        raise _Bad("a number is out of range")
    return v


def _bounded_int(s: str) -> int:
    if len(s) > 30:
        raise _Bad("an integer is too long")
    return int(s)


def _loads(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float,
                          parse_int=_bounded_int)
    except _Bad:
        raise
    except json.JSONDecodeError as exc:
        raise _Bad(f"invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise _Bad("JSON nested too deeply") from None
    except (ValueError, TypeError, OverflowError, MemoryError):
        raise _Bad("invalid JSON") from None


def _candidates(text: str) -> list[str]:
    """Where the JSON object might be: the whole text, a ``` fence, or first { to last }."""
    s = text.strip()
    out = [s]
    start = s.find("```")
    if start >= 0:
        body_start = s.find("\n", start)
        end = s.find("```", start + 3)
        if body_start >= 0 and end > body_start:
            out.append(s[body_start + 1:end].strip())
        elif end > start:
            out.append(s[start + 3:end].removeprefix("json").removeprefix("JSON").strip())
    first, last = s.find("{"), s.rfind("}")
    if 0 <= first < last:
        out.append(s[first:last + 1])
    return list(dict.fromkeys(c for c in out if c))


def _decode(text: str) -> Any:
    cands = _candidates(text)
    if not cands:
        raise _Bad("the reply is empty")
    first_err: _Bad | None = None
    for c in cands:
        try:
            return _loads(c)
        except _Bad as exc:
            first_err = first_err or exc
    assert first_err is not None
    raise first_err


def _content_of(envelope: dict[str, Any]) -> str | None:
    """The message text of an OpenAI (choices[0].message.content) or Ollama (message.content)
    envelope, or None when ``envelope`` is not one."""
    msg: Any = None
    if "choices" in envelope:
        choices = envelope["choices"]
        if not isinstance(choices, list) or not choices:
            raise _Bad("choices must be a non-empty list")
        first = choices[0]
        if not isinstance(first, dict):
            raise _Bad("choices[0] must be an object")
        msg = first.get("message")
        if msg is None and isinstance(first.get("text"), str):
            return str(first["text"])
    elif isinstance(envelope.get("message"), dict) and "facts" not in envelope:
        msg = envelope["message"]
    else:
        return None
    if not isinstance(msg, dict):
        raise _Bad("choices[0].message must be an object")
    content = msg.get("content")
    if content is None and msg.get("refusal"):
        raise _Bad("the model refused the request")
    if isinstance(content, list):  # content parts
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        content = "".join(t for t in texts if isinstance(t, str))
    if not isinstance(content, str) or not content.strip():
        raise _Bad("choices[0].message.content must be a non-empty string")
    return content


_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_SNAKE = re.compile(r"[a-z0-9_]{1,40}")


def _str(obj: dict[str, Any], key: str, path: str, *, required: bool = True,
         allow_empty: bool = False) -> str | None:
    v = obj.get(key)
    if v is None:
        if required:
            raise _Bad(f"{path}.{key} is missing")
        return None
    if not isinstance(v, str):
        raise _Bad(f"{path}.{key} must be a string, not {_tname(v)}")
    if len(v) > MAX_STR * 4:
        raise _Bad(f"{path}.{key} is longer than {MAX_STR} characters")
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        raise _Bad(f"{path}.{key} is not valid text") from None
    v = " ".join(_CTRL.sub(" ", v).split())
    if not v and not allow_empty:
        raise _Bad(f"{path}.{key} must not be empty")
    if len(v) > MAX_STR:
        raise _Bad(f"{path}.{key} is longer than {MAX_STR} characters")
    return v


def _snake(obj: dict[str, Any], key: str, path: str, default: str | None) -> str:
    v = _str(obj, key, path, required=default is None)
    if v is None:
        assert default is not None
        return default
    s = re.sub(r"[^a-z0-9]+", "_", v.lower()).strip("_")
    if not _SNAKE.fullmatch(s):
        raise _Bad(f"{path}.{key} must be snake_case [a-z0-9_], 1 to 40 characters")
    return s


def _tname(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(v), "a value")


def _bool(obj: dict[str, Any], key: str, path: str) -> bool:
    v = obj.get(key, False)
    if v is None:
        return False
    if not isinstance(v, bool):
        raise _Bad(f"{path}.{key} must be true or false, not {_tname(v)}")
    return v


def _id(v: Any, path: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 < v < 2**63:
        raise _Bad(f"{path} must be a positive integer id")
    return v


def _fact(obj: Any, path: str, episode_ids: frozenset[int] | None) -> FactCandidate:
    if not isinstance(obj, dict):
        raise _Bad(f"{path} must be an object, not {_tname(obj)}")
    subject = _str(obj, "subject", path)
    obj_ = _str(obj, "object", path)
    statement = _str(obj, "statement", path)
    predicate = _snake(obj, "predicate", path, None)
    category = _snake(obj, "category", path, "general")
    conf = obj.get("confidence", 0.6)
    if conf is None:
        conf = 0.6
    if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 <= conf <= 1:
        raise _Bad(f"{path}.confidence must be a number from 0 to 1")
    store = obj.get("store", "semantic")
    if store is None:
        store = "semantic"
    if not isinstance(store, str) or store.strip().lower() not in WRITABLE_STORES:
        raise _Bad(f'{path}.store must be "semantic" or "procedural"')
    qualifier = _str(obj, "qualifier", path, required=False, allow_empty=True) or None
    ids = obj.get("source_ids", [])
    if ids is None:
        ids = []
    if not isinstance(ids, list):
        raise _Bad(f"{path}.source_ids must be a list of episode ids")
    if len(ids) > MAX_SOURCE_IDS:
        raise _Bad(f"{path}.source_ids has more than {MAX_SOURCE_IDS} ids")
    source = tuple(dict.fromkeys(_id(i, f"{path}.source_ids[{n}]") for n, i in enumerate(ids)))
    if episode_ids is not None:
        for i in source:
            if i not in episode_ids:
                raise _Bad(f"{path}.source_ids: {i} is not the id of an episode in this batch")
    entry = obj.get("entry_type")
    entry = entry.strip().upper() if isinstance(entry, str) else ""
    if entry == "PROCEDURE" and obj.get("store") is None:
        store = "procedural"
    assert subject and obj_ and statement
    return FactCandidate(
        subject=subject, predicate=predicate, object=obj_, statement=statement,
        category=category, confidence=float(conf),
        change=_bool(obj, "change", path) or entry == "ENTITY_UPDATE",
        negated=_bool(obj, "negated", path), store=store.strip().lower(),  # type: ignore[arg-type]
        qualifier=qualifier, source_ids=source)


def _delete(obj: Any, path: str) -> DeleteRequest:
    if not isinstance(obj, dict):
        raise _Bad(f"{path} must be an object, not {_tname(obj)}")
    mid = obj.get("memory_id")
    memory_id = None if mid is None else _id(mid, f"{path}.memory_id")
    statement = _str(obj, "statement", path)
    reason = _str(obj, "reason", path, required=False, allow_empty=True) or ""
    assert statement
    return DeleteRequest(memory_id=memory_id, statement=statement, reason=reason)


def _items(top: dict[str, Any], key: str) -> list[Any]:
    v = top.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise _Bad(f"{key} must be a list, not {_tname(v)}")
    if len(v) > MAX_ITEMS:
        raise _Bad(f"{key} has more than {MAX_ITEMS} entries")
    return v


def _parse(raw: Any, episode_ids: frozenset[int] | None
           ) -> tuple[list[FactCandidate], list[DeleteRequest]]:
    if isinstance(raw, bytes | bytearray):
        if len(raw) > MAX_REPLY_BYTES:
            raise _Bad(f"the reply is larger than {MAX_REPLY_CHARS} characters")
        raw = bytes(raw).decode("utf-8", errors="replace")
    if not isinstance(raw, str):
        raise _Bad("the reply is not text")
    if len(raw) > MAX_REPLY_CHARS:
        raise _Bad(f"the reply is larger than {MAX_REPLY_CHARS} characters")
    top = _decode(raw)
    if isinstance(top, dict):
        content = _content_of(top)
        if content is not None:
            top = _decode(content)
    if isinstance(top, str) and len(top) <= MAX_REPLY_CHARS:  # JSON encoded twice
        top = _decode(top)
    if not isinstance(top, dict):
        raise _Bad(f'the reply must be a JSON object with "facts" and "deletes", not '
                   f"{_tname(top)}")
    if "facts" not in top and "deletes" not in top:
        raise _Bad('the reply must be a JSON object with "facts" and "deletes"')
    facts = [_fact(f, f"facts[{n}]", episode_ids) for n, f in enumerate(_items(top, "facts"))]
    deletes = [_delete(d, f"deletes[{n}]") for n, d in enumerate(_items(top, "deletes"))]
    return facts, deletes


def parse_reply(raw: str, episode_ids: Iterable[int] | None = None
                ) -> tuple[list[FactCandidate], list[DeleteRequest]]:
    """Parse an LLM reply: the OpenAI envelope, an Ollama envelope, the bare object, or the
    object inside a ```json fence. With ``episode_ids``, every source id must be one of them.
    Returns valid objects or raises ParseError (with a content-free ``detail``); never anything
    else, for any input."""
    try:
        ids = None if episode_ids is None else frozenset(episode_ids)
        return _parse(raw, ids)
    except _Bad as exc:
        raise _fail(str(exc)) from None
    except ParseError:
        raise
    except RecursionError:
        raise _fail("the reply is nested too deeply") from None
    except Exception as exc:  # a bug here must not crash the caller: still a ParseError
        log.warning("llm reply parser hit an unexpected %s", type(exc).__name__)
        raise _fail("the reply could not be read") from None


def parse_salience(raw: str, episode_ids: Iterable[int]
                   ) -> tuple[str | None, dict[int, tuple[float, str]]]:
    """004's ``analysis`` and each episode's ``salience_score`` with its ``reasoning`` from a
    reply :func:`parse_reply` accepted: (analysis or None, episode id -> (score, reasoning)).
    Optional and forgiving: an entry that is missing or malformed is left out; never raises."""
    ids = frozenset(episode_ids)
    try:
        top = _decode(raw)
        if isinstance(top, dict):
            content = _content_of(top)
            if content is not None:
                top = _decode(content)
        if isinstance(top, str):
            top = _decode(top)
    except (_Bad, ParseError, RecursionError, ValueError, TypeError):
        return None, {}
    if not isinstance(top, dict):
        return None, {}
    analysis = top.get("analysis")
    note = " ".join(_CTRL.sub(" ", analysis).split())[:MAX_STR] \
        if isinstance(analysis, str) else None
    out: dict[int, tuple[float, str]] = {}
    items = top.get("salience")
    for item in items[:MAX_ITEMS] if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        mid, score = item.get("id"), item.get("salience_score")
        if isinstance(score, str):
            try:
                score = float(score)
            except ValueError:
                continue
        if isinstance(mid, bool) or not isinstance(mid, int) or mid not in ids \
                or isinstance(score, bool) or not isinstance(score, (int, float)) \
                or not 0.0 <= score <= 1.0:
            continue
        why = item.get("reasoning")
        out[mid] = (float(score), " ".join(_CTRL.sub(" ", why).split())[:MAX_STR]
                    if isinstance(why, str) else "")
    return note or None, out
