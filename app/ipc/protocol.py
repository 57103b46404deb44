"""The owner's wire format. Layer: app (pure: no storage, no sockets beyond reading bytes).

A frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON (an object).
Request: ``{"v": 1, "id": n, "method": "recall", "args": {...}}``.
Reply: ``{"v": 1, "id": n, "ok": true, "result": ...}`` or
``{"v": 1, "id": n, "ok": false, "error": {"kind": "VaultLocked", "message": "...",
"hint": null, "exit_code": 2}}``.

Arguments and results are the frozen dataclasses of ``app.api``, turned into JSON and back by
a codec driven by their type hints (``to_wire`` / ``from_wire``): the decoder is strict and
raises one ``ProtocolError`` for anything that is not exactly the declared type.

Only the methods in ``METHODS`` can be called remotely; ``REFUSED`` lists the ``VaultAPI``
members left out on purpose, with the reason. Both are read from the ``@op`` marks on
``VaultAPI`` (``app/operations.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import inspect
import json
import math
import os
import struct
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Union

import orjson

from app import api
from app.changes import Changes, Result
from app.errors import AppError
from app.operations import Access, Op, operations

__all__ = [
    "AGENT_METHODS", "MAX_FRAME", "METHODS", "OPERATIONS", "REFUSED", "SOCKET_NAME", "VERSION", "MethodSpec", "ProtocolError",
    "Reply", "Request", "decode_reply", "decode_request", "encode", "encode_error",
    "encode_request", "encode_result", "frame", "from_wire", "read_frame", "socket_path",
    "to_wire",
]

VERSION = 1
MAX_FRAME = 1 << 20  # bytes of JSON in one frame, either way
MAX_DEPTH = 32       # nesting of JSON values
SOCKET_NAME = "kept.sock"
_HEADER = struct.Struct(">I")


def socket_path(folder: Path) -> Path:
    """Where the owner of the vault in ``folder`` listens."""
    return Path(folder) / SOCKET_NAME


_SUN_PATH_MAX = 107  # bytes of a Unix socket address (108 with the NUL, on Linux)


@contextlib.contextmanager
def address(path: Path) -> Iterator[str]:
    """An address for ``bind``/``connect`` that reaches ``path`` even when ``path`` is longer
    than a socket address can be: then the folder is opened and named through
    ``/proc/self/fd`` (Linux), which is short. The folder's own permissions still apply."""
    raw = os.fsencode(path)
    if len(raw) <= _SUN_PATH_MAX or not os.path.isdir("/proc/self/fd"):
        yield str(path)
        return
    fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_PATH", 0) | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


class ProtocolError(AppError):
    user_message = "A malformed message reached Kept's owner process; nothing was changed."
    exit_code = 1


# --- frames --------------------------------------------------------------------------------

def frame(obj: Mapping[str, object]) -> bytes:
    data = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")
                      ).encode("utf-8")
    if len(data) > MAX_FRAME:
        raise ProtocolError(f"The message is too large ({len(data):,} bytes; at most "
                            f"{MAX_FRAME:,}).")
    return _HEADER.pack(len(data)) + data


def read_exact(recv: Callable[[int], bytes], n: int) -> bytes | None:
    """``n`` bytes, or None at a clean end of stream before the first byte."""
    parts: list[bytes] = []
    got = 0
    while got < n:
        chunk = recv(min(n - got, 1 << 16))
        if not chunk:
            if got == 0:
                return None
            raise ProtocolError("The connection ended in the middle of a message.")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


class Oversized(ProtocolError):
    """A frame header announced more than ``MAX_FRAME`` bytes (the stream cannot be resynced)."""


def read_frame(recv: Callable[[int], bytes]) -> bytes | None:
    """The payload of the next frame (None at end of stream). Raises ``Oversized`` without
    reading the body when the header is over the limit."""
    header = read_exact(recv, _HEADER.size)
    if header is None:
        return None
    (n,) = _HEADER.unpack(header)
    if n > MAX_FRAME:
        raise Oversized(f"The message is too large ({n:,} bytes; at most {MAX_FRAME:,}).")
    body = read_exact(recv, n)
    if body is None:
        raise ProtocolError("The connection ended in the middle of a message.")
    return body


def _json(payload: bytes) -> dict[str, object]:
    """A frame's JSON object. Read by orjson (twice as fast as ``json`` on a recall's reply,
    issue 26 item 9), which is stricter than the standard library where it matters here:
    it refuses NaN and infinities, lone surrogates (``"\\ud800"``) and bytes that are not
    UTF-8, so every string it returns can be encoded again. One difference: an integer
    beyond 64 bits becomes a float, which every integer argument then refuses."""
    if len(payload) > MAX_FRAME:
        raise ProtocolError("The message is too large.")
    try:
        obj = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"The message is not UTF-8 JSON ({_reason(exc)}).") from None
    if not isinstance(obj, dict):
        raise ProtocolError("A message is a JSON object.")
    _check_depth(obj, 0)
    return obj


def _reason(exc: Exception) -> str:
    """orjson's reason without its position ("unexpected character")."""
    return str(exc).split(":", 1)[0][:80] or type(exc).__name__


def _check_depth(obj: object, depth: int) -> None:
    """No value deeper than ``MAX_DEPTH``: a container at ``depth`` holds values at
    ``depth + 1``. Only containers are walked (scalars are most of a reply's values)."""
    if depth > MAX_DEPTH:
        raise ProtocolError("The message is nested too deeply.")
    t = type(obj)
    values: Iterable[object]
    if t is dict:
        values = obj.values()  # type: ignore[attr-defined]
    elif t is list:
        values = obj  # type: ignore[assignment]
    else:
        return
    if depth >= MAX_DEPTH and values:
        raise ProtocolError("The message is nested too deeply.")
    for v in values:
        tv = type(v)
        if tv is dict or tv is list:
            _check_depth(v, depth + 1)


# --- the codec -------------------------------------------------------------------------------

Encoder = Callable[[object], object]
# One encoder per exact type, chosen on first use by ``_encoder_for`` (every choice depends on
# the type alone): a recall reply holds a few hundred values, and asking each of them the same
# dozen isinstance questions was most of the owner's encoding (issue 26, item 9).
_ENCODERS: dict[type, Encoder] = {}


def to_wire(value: object) -> object:
    """A value of an ``app.api`` type as JSON-ready data."""
    t = type(value)
    enc = _ENCODERS.get(t)
    if enc is None:
        enc = _ENCODERS.setdefault(t, _encoder_for(t))
    return enc(value)


def _same(value: object) -> object:
    return value


def _finite(value: object) -> object:
    if not math.isfinite(value):  # type: ignore[arg-type]
        raise ProtocolError("A number is not finite.")
    return value


def _mapping(value: object) -> object:
    items = value.items()  # type: ignore[attr-defined]
    if all(isinstance(k, str) for k in value):  # type: ignore[attr-defined]
        return {str(k): to_wire(v) for k, v in items}
    return [[to_wire(k), to_wire(v)] for k, v in items]


def _plain_dict(value: object) -> object:
    if all(type(k) is str for k in value):  # type: ignore[attr-defined]
        return {k: to_wire(v) for k, v in value.items()}  # type: ignore[attr-defined]
    return _mapping(value)


def _encoder_for(t: type) -> Encoder:  # noqa: C901 - one branch per kind of type, in order
    if t is str or t is int or t is bool or t is type(None):
        return _same
    if t is float:
        return _finite
    if t is dict:
        return _plain_dict
    if issubclass(t, bool | str):
        return _same
    if issubclass(t, enum.Enum):
        return lambda v: to_wire(v.value)  # type: ignore[attr-defined]
    if issubclass(t, int):
        return lambda v: int(v)  # type: ignore[call-overload]
    if issubclass(t, float):
        return _finite
    if issubclass(t, Path):
        return str
    if dataclasses.is_dataclass(t):
        names = tuple(f.name for f in dataclasses.fields(t))
        return lambda v: {n: to_wire(getattr(v, n)) for n in names}
    if issubclass(t, tuple) and hasattr(t, "_fields"):  # a NamedTuple
        return lambda v: {n: to_wire(getattr(v, n)) for n in v._fields}  # type: ignore[attr-defined]
    if issubclass(t, Mapping):
        return _mapping
    if issubclass(t, list | tuple | set | frozenset):
        return lambda v: [to_wire(x) for x in v]  # type: ignore[attr-defined]

    def cannot(value: object) -> object:
        raise ProtocolError(f"A {t.__name__} cannot be sent.")
    return cannot


def _fail(what: str, tp: object, obj: object) -> typing.NoReturn:
    name = getattr(tp, "__name__", None) or str(tp).replace("typing.", "")
    raise ProtocolError(f"{what}: expected {name}, got {type(obj).__name__}.")


_HINTS: dict[type, dict[str, object]] = {}


def _hints(cls: type) -> dict[str, object]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


Decoder = Callable[[object, str], object]
# One decoder per type, built on first use (``_compile``): a reply of ten hits decodes a few
# hundred values, and walking the type's shape for each of them cost more than the values
# (issue 26, item 9: 0.33 -> 0.1 ms for a recall reply).
_DECODERS: dict[object, Decoder] = {}


def from_wire(tp: object, obj: object, what: str = "value") -> object:
    """``obj`` (decoded JSON) as a value of type ``tp``; ``ProtocolError`` if it is not one."""
    return _decoder_of(tp)(obj, what)


def _decoder_of(tp: object) -> Decoder:
    """``tp``'s decoder from the cache, compiled on a miss."""
    try:
        return _DECODERS[tp]
    except KeyError:
        return _DECODERS.setdefault(tp, _compile(tp))
    except TypeError:  # an unhashable annotation: no cache
        return _compile(tp)


def _decoder(tp: object) -> Decoder:
    """``tp``'s decoder, looked up when first called (a dataclass may name itself)."""
    found: list[Decoder] = []

    def decode(obj: object, what: str) -> object:
        if not found:
            found.append(_decoder_of(tp))
        return found[0](obj, what)
    return decode


def _compile(tp: object) -> Decoder:  # noqa: C901 - one branch per kind of type
    if tp is bool:
        def boolean(obj: object, what: str) -> object:
            if obj is True or obj is False:
                return obj
            _fail(what, tp, obj)
        return boolean
    if tp is int:
        def integer(obj: object, what: str) -> object:
            if type(obj) is int or (isinstance(obj, int) and not isinstance(obj, bool)):
                return obj
            _fail(what, tp, obj)
        return integer
    if tp is float:
        def number(obj: object, what: str) -> object:
            if type(obj) is float:
                return obj
            if isinstance(obj, bool) or not isinstance(obj, int | float):
                _fail(what, tp, obj)
            return float(obj)
        return number
    if tp is str:
        def string(obj: object, what: str) -> object:
            if type(obj) is str or isinstance(obj, str):
                return obj
            _fail(what, tp, obj)
        return string
    if tp is object:  # free-form JSON (``extra`` maps)
        return lambda obj, what: obj
    if tp is type(None) or tp is None:
        def null(obj: object, what: str) -> object:
            if obj is not None:
                _fail(what, "null", obj)
            return None
        return null
    supertype = getattr(tp, "__supertype__", None)  # NewType: MemoryId and friends
    if supertype is not None:
        return _decoder_of(supertype)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Union or origin is types.UnionType:
        # bool before int before float: a JSON true is never a number.
        trials = [_decoder(a) for a in sorted((a for a in args if a is not type(None)),
                                              key=_union_rank)]
        optional = type(None) in args

        def union(obj: object, what: str) -> object:
            if obj is None and optional:
                return None
            for trial in trials:
                try:
                    return trial(obj, what)
                except ProtocolError:
                    continue
            _fail(what, tp, obj)
        return union
    if origin is Literal:
        allowed = frozenset((type(a), a) for a in args)

        def literal(obj: object, what: str) -> object:
            try:
                if (type(obj), obj) in allowed:
                    return obj
            except TypeError:  # a list or an object: unhashable, and no literal
                pass
            raise ProtocolError(f"{what}: not one of {', '.join(map(repr, args))}.")
        return literal
    if tp is Path:
        def path(obj: object, what: str) -> object:
            if not isinstance(obj, str):
                _fail(what, tp, obj)
            return Path(obj)
        return path
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        members = tp

        def member(obj: object, what: str) -> object:
            try:
                return members(obj)
            except ValueError:
                raise ProtocolError(f"{what}: not a {members.__name__}.") from None
        return member
    if origin in (list, Sequence, Iterable) or tp in (list, Sequence, Iterable):
        inner = _decoder(args[0] if args else object)
        as_list = origin is list

        def sequence(obj: object, what: str) -> object:
            if not isinstance(obj, list):
                _fail(what, "list", obj)
            out = [inner(v, what) for v in obj]
            return out if as_list else tuple(out)
        return sequence
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            each = _decoder(args[0])

            def homogeneous(obj: object, what: str) -> object:
                if not isinstance(obj, list):
                    _fail(what, "list", obj)
                return tuple(each(v, what) for v in obj)
            return homogeneous
        items = [_decoder(a) for a in args]

        def fixed(obj: object, what: str) -> object:
            if not isinstance(obj, list):
                _fail(what, "list", obj)
            if len(items) != len(obj):
                raise ProtocolError(f"{what}: expected {len(items)} items, got {len(obj)}.")
            return tuple(d(v, what) for d, v in zip(items, obj, strict=True))
        return fixed
    if origin in (dict, Mapping):
        kt, vt = args if args else (str, object)
        value = _decoder(vt)
        if kt is str:
            exact = vt if vt in _EXACT else None  # a score breakdown: dozens of floats

            def mapping(obj: object, what: str) -> object:
                if not isinstance(obj, dict):
                    _fail(what, "object", obj)
                return {k: v if type(v) is exact else value(v, what) for k, v in obj.items()}
            return mapping
        key = _decoder(kt)

        def pairs(obj: object, what: str) -> object:
            if not isinstance(obj, list) or not all(isinstance(p, list) and len(p) == 2
                                                    for p in obj):
                _fail(what, "list of pairs", obj)
            return {key(k, what): value(v, what) for k, v in obj}
        return pairs
    if origin is Result:
        inner_value = _decoder(args[0] if args else object)

        def result(obj: object, what: str) -> object:
            if not isinstance(obj, dict) or set(obj) != {"value", "changes"}:
                _fail(what, "Result", obj)
            return Result(inner_value(obj["value"], what),
                          typing.cast(Changes, from_wire(Changes, obj["changes"], what)))
        return result
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        cls = tp
        return lambda obj, what: _dataclass(cls, obj, what)
    if isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields"):
        nt = tp
        return lambda obj, what: _namedtuple(nt, obj, what)

    def cannot(obj: object, what: str) -> object:
        raise ProtocolError(f"{what}: the type {tp!r} cannot cross the socket.")
    return cannot


def _union_rank(tp: object) -> int:
    ranks: dict[object, int] = {bool: 0, int: 1, float: 2}
    return ranks.get(tp, 3)


# Per dataclass, read once: its init fields as (name, decoder, type, required, nullable), and
# their names.
Plan = tuple[tuple[tuple[str, Decoder, object, bool, bool], ...], frozenset[str]]
_PLANS: dict[type, Plan] = {}
_ABSENT = object()
# Types whose JSON value is the Python value itself, checked inline (no call, no path string).
_EXACT = {str: str, int: int, float: float}


def _inline(tp: object) -> tuple[object, bool]:
    """The type the inline check compares a value's type with, and whether null is allowed:
    a NewType (``MemoryId``) as its base and ``X | None`` as ``X``, so an id or an optional
    text skips the decoder's call."""
    nullable = False
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(tp))
        if len(args) != 1:
            return tp, nullable
        tp = args[0]
    return getattr(tp, "__supertype__", tp), nullable


def _plan(cls: type) -> Plan:
    try:
        return _PLANS[cls]
    except KeyError:
        hints = _hints(cls)
        # The field's decoder itself: compiling a dataclass's decoder never compiles its
        # fields, so a class that holds itself compiles.
        fields = []
        for f in dataclasses.fields(cls):
            if f.init:
                tp, nullable = _inline(hints[f.name])
                required = f.default is dataclasses.MISSING \
                    and f.default_factory is dataclasses.MISSING
                fields.append((f.name, _decoder_of(hints[f.name]), tp, required, nullable))
        plan = tuple(fields)
        _PLANS[cls] = plan, frozenset(name for name, *_ in plan)
        return _PLANS[cls]


def _dataclass(cls: type, obj: object, what: str) -> object:
    if not isinstance(obj, dict):
        _fail(what, cls, obj)
    plan, names = _plan(cls)
    if not names.issuperset(obj):
        unknown = set(obj) - names
        raise ProtocolError(f"{what}: unknown field(s) of {cls.__name__}: "
                            f"{', '.join(sorted(unknown)[:5])}.")
    kwargs = {}
    for name, decode, tp, required, nullable in plan:
        value = obj.get(name, _ABSENT)
        if value is _ABSENT:
            if required:
                raise ProtocolError(f"{what}: {cls.__name__}.{name} is missing.")
        elif _EXACT.get(type(value)) is tp or value is None and nullable:
            kwargs[name] = value  # a str for str, an int (not a bool) for int, a null
        else:
            kwargs[name] = decode(value, f"{what}.{name}")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"{what}: not a valid {cls.__name__} "
                            f"({type(exc).__name__}).") from None


def _namedtuple(cls: type, obj: object, what: str) -> object:
    if not isinstance(obj, dict) or set(obj) != set(cls._fields):  # type: ignore[attr-defined]
        _fail(what, cls, obj)
    hints = _hints(cls)
    return cls(**{n: from_wire(hints[n], obj[n], f"{what}.{n}") for n in obj})


# --- methods -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class MethodSpec:
    name: str
    params: Mapping[str, object]   # name -> type
    required: frozenset[str]
    result: object                 # the return type
    write: bool
    person: bool = False           # needs ``elevate`` first; never an assistant's


# Everything below is read from the marks on ``VaultAPI`` (``app/operations.py``): reads and
# writes run in parallel in the owner (writes serialised by the Database); the person's
# decisions and reads are served only on a connection that proved the password (``elevate``),
# never on an assistant's; an assistant's connection may call what is marked ``agent`` (the
# owner runs it through ``app.agent_scope.AgentSession``, which fixes the scope).
OPERATIONS: Mapping[str, Op] = operations(api.VaultAPI)
AGENT_METHODS = frozenset(n for n, o in OPERATIONS.items() if o.agent and o.access.remote)
# Never over the socket: the reason, per member of VaultAPI.
REFUSED: Mapping[str, str] = {
    n: (o.why if o.access is Access.LOCAL else "local helper: the client runs it itself")
    for n, o in OPERATIONS.items() if o.access in (Access.LOCAL, Access.HELPER)}
# Arguments that cannot cross (callbacks, tokens): dropped by the client, never decoded.
LOCAL_ARGS = frozenset({"progress", "cancel", "self"})
# Pseudo-methods of the protocol itself.
PING = "ping"        # -> {"version": 1}
ELEVATE = "elevate"  # {password} -> {"version": 1}: the person's decisions on this connection
HELLO = "hello"      # {agent, key} -> {"version": 1}: scopes the connection to an agent
SESSION = "session"  # -> SessionInfo
LOGOUT = "logout"    # -> {"version": 1}: drop this connection's proof and its terminal's ticket
UNLOCK = "unlock"    # {password} -> {"version": 1, "unlocked": 0|1}: a locked `kept serve` opens again


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What a client learns when it connects (``session``)."""
    version: int
    folder: str
    locked: bool
    semantic_search: bool
    strict: bool = False     # strict mode: the person's calls need the password first
    may_read: bool = True    # this connection (or its terminal's ticket) may read now


def _spec(name: str, write: bool, person: bool = False) -> MethodSpec:
    fn = getattr(api.VaultAPI, name)
    hints = typing.get_type_hints(fn, vars(api))
    sig = inspect.signature(fn)
    params = {p: t for p, t in hints.items() if p != "return" and p not in LOCAL_ARGS}
    required = frozenset(p.name for p in sig.parameters.values()
                         if p.name in params and p.default is inspect.Parameter.empty)
    return MethodSpec(name, params, required, hints["return"], write, person)


METHODS: Mapping[str, MethodSpec] = {
    **{n: _spec(n, o.access.writes, o.access.person) for n, o in OPERATIONS.items()
       if o.access.remote},
    ELEVATE: MethodSpec(ELEVATE, {"password": str}, frozenset({"password"}), dict[str, int],
                        False),
    PING: MethodSpec(PING, {}, frozenset(), dict[str, int], False),
    HELLO: MethodSpec(HELLO, {"agent": str | None, "key": str | None}, frozenset({"agent"}),
                      dict[str, int], False),
    SESSION: MethodSpec(SESSION, {}, frozenset(), SessionInfo, False),
    LOGOUT: MethodSpec(LOGOUT, {}, frozenset(), dict[str, int], False),
    UNLOCK: MethodSpec(UNLOCK, {"password": str}, frozenset({"password"}), dict[str, int],
                       False),
}


# --- requests and replies ----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Request:
    id: int
    method: str
    args: Mapping[str, object]  # decoded to the declared types


@dataclass(frozen=True, slots=True)
class Reply:
    id: int
    ok: bool
    result: object = None            # the raw JSON result (decode with ``decode_result``)
    kind: str = ""
    message: str = ""
    hint: str | None = None
    exit_code: int = 1


_MAX_ID = 2**53


def _envelope(obj: dict[str, object], keys: set[str]) -> int:
    if obj.get("v") != VERSION or isinstance(obj.get("v"), bool):
        raise ProtocolError(f"Unsupported protocol version {obj.get('v')!r} "
                            f"(this Kept speaks {VERSION}).")
    if not set(obj) <= keys:
        raise ProtocolError(f"Unknown key(s): {', '.join(sorted(set(obj) - keys)[:5])}.")
    mid = obj.get("id")
    if isinstance(mid, bool) or not isinstance(mid, int) or not 0 <= mid < _MAX_ID:
        raise ProtocolError("'id' must be a whole number.")
    return mid


def request_id(payload: bytes) -> int:
    """The id of a request, if it can be read (so an error reply can carry it), else 0."""
    try:
        obj = orjson.loads(payload)
        mid = obj.get("id") if isinstance(obj, dict) else 0
        return mid if isinstance(mid, int) and not isinstance(mid, bool) \
            and 0 <= mid < _MAX_ID else 0
    except orjson.JSONDecodeError:
        return 0


def decode_request(payload: bytes) -> Request:
    """A request frame's payload, checked whole: version, id, a whitelisted method, and
    arguments of exactly the declared names and types."""
    obj = _json(payload)
    mid = _envelope(obj, {"v", "id", "method", "args"})
    method = obj.get("method")
    if not isinstance(method, str):
        raise ProtocolError("'method' must be a string.")
    spec = METHODS.get(method)
    if spec is None:
        if method in REFUSED:
            raise ProtocolError(f"{method} cannot be called over the socket: "
                                f"{REFUSED[method]}.")
        raise ProtocolError(f"Unknown method {method[:60]!r}.")
    raw = obj.get("args", {})
    if not isinstance(raw, dict):
        raise ProtocolError("'args' must be an object.")
    unknown = set(raw) - set(spec.params)
    if unknown:
        raise ProtocolError(f"Unknown argument(s) of {method}: "
                            f"{', '.join(sorted(unknown)[:5])}.")
    missing = spec.required - set(raw)
    if missing:
        raise ProtocolError(f"Missing argument(s) of {method}: {', '.join(sorted(missing))}.")
    args = {name: from_wire(spec.params[name], value, name) for name, value in raw.items()}
    return Request(mid, method, args)


def encode_request(mid: int, method: str, args: Mapping[str, object]) -> bytes:
    return frame({"v": VERSION, "id": mid, "method": method,
                  "args": {k: to_wire(v) for k, v in args.items()}})


def encode_result(mid: int, method: str, value: object) -> bytes:
    """A result frame. ``to_wire`` has refused what JSON cannot say (a NaN, a type it does
    not know), so orjson writes it (a quarter of ``json.dumps``'s time on a recall); what
    orjson itself refuses (a lone surrogate, an integer beyond 64 bits) goes through
    ``frame`` and its errors as before."""
    obj = {"v": VERSION, "id": mid, "ok": True, "result": to_wire(value)}
    try:
        data = orjson.dumps(obj)
    except orjson.JSONEncodeError:
        return frame(obj)
    if len(data) > MAX_FRAME:
        raise ProtocolError(f"The message is too large ({len(data):,} bytes; at most "
                            f"{MAX_FRAME:,}).")
    return _HEADER.pack(len(data)) + data


def encode_error(mid: int, kind: str, message: str, hint: str | None = None,
                 exit_code: int = 1) -> bytes:
    return frame({"v": VERSION, "id": mid, "ok": False,
                  "error": {"kind": kind, "message": message, "hint": hint,
                            "exit_code": exit_code}})


def encode(obj: Mapping[str, object]) -> bytes:
    return frame(obj)


def decode_reply(payload: bytes) -> Reply:
    obj = _json(payload)
    mid = _envelope(obj, {"v", "id", "ok", "result", "error"})
    ok = obj.get("ok")
    if ok is True:
        return Reply(mid, True, obj.get("result"))
    if ok is not False:
        raise ProtocolError("'ok' must be true or false.")
    err = obj.get("error")
    if not isinstance(err, dict):
        raise ProtocolError("'error' must be an object.")
    kind, message, hint, code = (err.get("kind"), err.get("message"), err.get("hint"),
                                 err.get("exit_code", 1))
    if not isinstance(kind, str) or not isinstance(message, str) \
            or not (hint is None or isinstance(hint, str)) \
            or isinstance(code, bool) or not isinstance(code, int) or not 0 <= code < 256:
        raise ProtocolError("'error' needs a kind, a message and an exit code.")
    return Reply(mid, False, None, kind, message, hint, code)


def decode_result(method: str, raw: object) -> object:
    return from_wire(METHODS[method].result, raw, f"the result of {method}")
