"""An int8 copy of the vector index's matrix, for the first pass of an exact search. Layer:
storage. Runs on: the caller's thread (``scores``, thread-safe); built on the index's thread.

Why: exact search is one product of the float32 matrix with the query, and at 50,000 vectors
(a 100k-memory vault of conversation) that product reads 77 MB and is bound by memory
bandwidth: 7-8 ms of a recall whose query embedding takes 5-6 (issue 28). The same product
over int8 rows reads a quarter of the bytes, and onnxruntime (already here for the model) runs
it with its integer kernels (AVX2 / AVX-512 VNNI) on a right-hand side packed once when the
copy is made: 1.3 ms against 7.6 at 50,000 vectors (one thread, dev, random unit vectors).

The answers stay exact. Each row x is stored as ``a * m`` (m int8 in [-63, 63], a = max|x| / 63)
and the query q as ``b * n`` (n in [-127, 127]); then for every row

    |x.q - a*b*(m.n)| <= (b/2) * |a*m|_1 + (a/2) * |q|_1  (+ a float32 rounding slack)

(the error of each side's rounding, at most half a step a coordinate, times the other side's
L1 norm). ``scores`` gives the approximate cosine and that bound for every row, so a caller
keeps every row whose upper bound reaches the k-th best lower bound and rescores those few
exactly in float32 (storage/vector.py): the same top k as the full product, and the same
minimum over a sample. No new dependency: the one-node graph is written here in protobuf's
wire format (what ``onnx.helper`` would write), since the ``onnx`` package is not installed.
"""

from __future__ import annotations

import functools
import struct
from typing import Any

import numpy as np

# Added to every row's bound, times |x| |q| (1e-4 for unit vectors): the float32 rounding of
# the exact product itself (a dot product of 384 terms carries a relative error near 1e-6) and
# of the arithmetic here; relative, so rows of any length are covered.
SLACK = 1e-4
# A row's values lie in [-ROW_LEVELS, ROW_LEVELS]. Not 127: on x86 CPUs without AVX-512 VNNI
# (AVX2 only), onnxruntime's u8 x s8 kernels add two products into a 16-bit integer that
# saturates (vpmaddubsw); with the query's byte up to 255 that needs |m| <= 64 to be exact
# (onnxruntime's own guard, session.x64quantprecision, uses the same range). ``kernel_checks``
# verifies exactness on the machine's kernels before any pass is made.
ROW_LEVELS = 63

_INT8, _UINT8, _INT32 = 3, 2, 6  # onnx TensorProto data types
_OPSET, _IR_VERSION = 13, 8


# --- protobuf wire format, the few fields an ONNX model needs ------------------------------
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _str(field: int, text: str) -> bytes:
    return _bytes(field, text.encode())


def _value_info(name: str, elem_type: int, dims: list[int | str]) -> bytes:
    shape = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _str(2, d)) for d in dims)
    tensor_type = _int(1, elem_type) + _bytes(2, shape)
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


def _tensor(name: str, elem_type: int, dims: list[int], raw: bytes) -> bytes:
    return b"".join(_int(1, d) for d in dims) + _int(2, elem_type) + _str(8, name) + \
        _bytes(9, raw)


def matmul_integer_model(k: int, n: int) -> bytes:
    """An ONNX model of one ``MatMulInteger``: ``Y[1, n] = (A[1, k] - 128) @ B[k, n]``, A the
    query shifted into uint8 (its zero point 128 is a constant) and B the int8 matrix, a
    constant that onnxruntime packs once. B's bytes are not in the model: it names B as
    external data, and the session is given B's array (``SessionOptions.
    add_external_initializers``), so no serialised copy of the matrix is ever made."""
    external = _bytes(13, _str(1, "location") + _str(2, "kept-in-memory")) + _int(14, 1)
    node = _str(1, "A") + _str(1, "B") + _str(1, "A_zero") + _str(2, "Y") + \
        _str(4, "MatMulInteger")
    graph = (_bytes(1, node) + _str(2, "kept_int8_pass")
             + _bytes(5, _int(1, k) + _int(1, n) + _int(2, _INT8) + _str(8, "B") + external)
             + _bytes(5, _tensor("A_zero", _UINT8, [], struct.pack("B", 128)))
             + _bytes(11, _value_info("A", _UINT8, [1, k]))
             + _bytes(12, _value_info("Y", _INT32, [1, n])))
    opset = _str(1, "") + _int(2, _OPSET)
    return _int(1, _IR_VERSION) + _bytes(8, opset) + _bytes(7, graph)


def session(mat_t: np.ndarray) -> Any:
    """An onnxruntime session multiplying a query by ``mat_t`` (int8, k x n, C order)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    opts.add_external_initializers(["B"], [ort.OrtValue.ortvalue_from_numpy(mat_t)])
    return ort.InferenceSession(matmul_integer_model(*mat_t.shape), sess_options=opts,
                                providers=["CPUExecutionProvider"])


class Quantised:
    """Rows of a float32 matrix as int8 values ``m`` (kept transposed, ``mt``) times a step
    ``a`` a row, with what the error bound needs: the L1 and L2 norms of each stored row
    ``a*m`` and of its rounding error."""

    def __init__(self, mat: np.ndarray) -> None:
        mat = np.asarray(mat, dtype=np.float32)
        peak = np.abs(mat).max(axis=1) if len(mat) else np.zeros(0, dtype=np.float32)
        self.a = peak / np.float32(ROW_LEVELS)  # a row's step; 0 for a zero row
        step = np.where(self.a > 0, self.a, np.float32(1.0))[:, None]
        # One float32 temporary a slice, worked in place (float64 copies were 12.6 MB each);
        # the norms' own rounding, relative 1e-7, is far inside SLACK.
        work = mat / step
        np.rint(work, out=work)
        np.clip(work, -ROW_LEVELS, ROW_LEVELS, out=work)
        self.mt = np.ascontiguousarray(work.astype(np.int8).T)  # k x rows, as the session takes
        work *= self.a[:, None]  # each row as stored
        self.l1 = np.abs(work).sum(axis=1)
        self.l2 = np.sqrt(np.einsum("ij,ij->i", work, work))
        work -= mat  # its rounding error
        self.err_l2 = np.sqrt(np.einsum("ij,ij->i", work, work))

    @staticmethod
    def join(parts: list[Quantised]) -> Quantised:
        """The parts' rows in order, as one (the parts are emptied)."""
        out = Quantised.__new__(Quantised)
        for name in ("a", "l1", "l2", "err_l2"):
            setattr(out, name, np.concatenate([getattr(p, name) for p in parts]))
        out.mt = np.empty((parts[0].mt.shape[0], len(out.a)), dtype=np.int8)
        start = 0
        for p in parts:  # each part's copy let go as it is copied: one matrix at a time
            out.mt[:, start:start + p.mt.shape[1]] = p.mt
            start += p.mt.shape[1]
            p.mt = np.zeros((0, 0), dtype=np.int8)
        return out


def extremes(levels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A product at the extremes of the u8 x s8 kernels: an int8 matrix of +-``levels`` (runs of
    equal signs down each column, so adjacent pairs add up), a query of bytes 0 and 255, and
    the exact answer (with the query's zero point 128)."""
    k, n = 384, 64
    mt = np.full((k, n), levels, dtype=np.int8)
    mt[:, ::2] = -levels
    mt[::3, 1::2] = -levels
    a = np.full((1, k), 255, dtype=np.uint8)
    a[0, ::5] = 0
    return mt, a, (a.astype(np.int64) - 128) @ mt.astype(np.int64)


@functools.cache
def kernel_checks() -> tuple[bool, bool]:
    """(exact, copies) for onnxruntime's kernels on this machine, once a process: whether the
    product is exact at the extremes the pass uses (query bytes 0 and 255, row values -63 and
    63), and whether a session keeps its own copy of the matrix (so the caller's may go)."""
    mt, a, want = extremes(ROW_LEVELS)
    multiply = session(mt)
    exact = bool(np.array_equal(multiply.run(None, {"A": a})[0], want))
    mt[:] = 0
    copies = bool(np.array_equal(multiply.run(None, {"A": a})[0], want))
    return exact, copies


class Int8Pass:
    """Rows ``[0, n)`` of the index's matrix, quantised. Immutable after construction;
    ``scores`` may run on several threads at once."""

    def __init__(self, rows: Quantised) -> None:
        self.dim, self.n = rows.mt.shape
        self._a = rows.a
        self._half_l1 = rows.l1 / 2
        self._half_a = rows.a / 2
        self._l2 = rows.l2
        self._err_l2 = rows.err_l2
        self._norm = rows.l2 + rows.err_l2  # at least |x| (triangle inequality)
        exact, copies = kernel_checks()
        if not exact:
            raise RuntimeError("onnxruntime's int8 product is not exact on this CPU")
        # Kept only where onnxruntime reads the caller's array instead of copying it.
        self._mt = None if copies else rows.mt
        self._session = session(rows.mt)

    def scores(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(approximate dot products, their error bounds) of ``q`` with every row, float32:
        the exact product lies within ``bound`` of ``approx`` for every row."""
        q = np.asarray(q, dtype=np.float64)
        size = np.abs(q)
        b = float(size.max()) / 127.0 if len(q) else 0.0
        if b == 0.0:
            return np.zeros(self.n, np.float32), np.full(self.n, SLACK, np.float32)
        n = np.clip(np.rint(q / b), -127, 127)
        f = q - n * b  # the query's rounding error
        dots = self._session.run(None, {"A": (n + 128).astype(np.uint8)[None, :]})[0][0]
        approx = dots.astype(np.float32)
        approx *= self._a
        approx *= np.float32(b)
        # |x.q - xs.qs| = |xs.f + e.q|: by Hoelder with L1/Linf, or by Cauchy-Schwarz; the
        # smaller of the two holds.
        q_norm = float(np.sqrt(q @ q))
        bound = self._half_l1 * np.float32(b)
        bound += self._half_a * np.float32(size.sum())
        by_l2 = self._l2 * np.float32(np.sqrt(f @ f))
        by_l2 += self._err_l2 * np.float32(q_norm)
        np.minimum(bound, by_l2, out=bound)
        bound += self._norm * np.float32(SLACK * q_norm)
        bound += np.float32(1e-30)  # never 0 (a zero row against any query)
        return approx, bound
