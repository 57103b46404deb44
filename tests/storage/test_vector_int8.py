"""The int8 first pass of exact vector search (storage/vector_int8.py): its bound holds, and
the index answers through it exactly what the float32 product answers."""

from __future__ import annotations

import numpy as np
import pytest

from storage.vector import VectorIndex
from storage.vector_int8 import Int8Pass, Quantised, session


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    mat = rng.normal(size=(n, dim)).astype(np.float32)
    return mat / np.linalg.norm(mat, axis=1, keepdims=True)


def test_the_hand_written_model_multiplies_as_numpy_does() -> None:
    rng = np.random.default_rng(1)
    m = rng.integers(-127, 128, size=(300, 40), dtype=np.int8)
    q = rng.integers(0, 256, size=(1, 40)).astype(np.uint8)
    mt = np.ascontiguousarray(m.T)
    multiply = session(mt)
    mt[:] = 0  # the session holds its own copy
    got = multiply.run(None, {"A": q})[0]
    assert got.dtype == np.int32 and got.shape == (1, 300)
    want = (q.astype(np.int64) - 128) @ m.T.astype(np.int64)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("kind", ["unit", "spiky", "tiny", "zero rows"])
def test_the_bound_holds_for_every_row(kind: str) -> None:
    rng = np.random.default_rng(2)
    mat = unit_rows(rng, 3000, 384)
    if kind == "spiky":  # one large coordinate a row: the coarsest steps
        mat[np.arange(3000), rng.integers(0, 384, 3000)] += 5.0
        mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    elif kind == "tiny":
        mat *= 1e-3
    elif kind == "zero rows":
        mat[::7] = 0.0
    first = Int8Pass(Quantised.join([Quantised(mat[:1000]), Quantised(mat[1000:])]))
    for j in range(20):
        q = unit_rows(rng, 1, 384)[0]
        if j % 5 == 4:
            q = mat[j] if kind != "zero rows" else q  # a query that is one of the rows
        approx, bound = first.scores(q)
        exact = mat.astype(np.float64) @ q.astype(np.float64)
        assert np.all(np.abs(exact - approx) <= bound)
        if kind == "unit":  # rows like the model's: tight enough to rule most rows out
            assert np.median(bound) < 0.03
    approx, bound = first.scores(np.zeros(384, dtype=np.float32))
    assert np.all(approx == 0) and np.all(bound > 0)


def twins(rng: np.random.Generator, n: int, dim: int) -> tuple[VectorIndex, VectorIndex]:
    """The same vectors in an index with the int8 pass (its copy made) and one without."""
    mat = unit_rows(rng, n, dim)
    mat[10:20] = mat[0]  # ties: ten equal rows
    ids = np.arange(1, n + 1)
    fast = VectorIndex(dim, use_chroma=False, int8_min_rows=1000)
    plain = VectorIndex(dim, use_chroma=False, int8_min_rows=None)
    for index in (fast, plain):
        index.load(ids, mat)
    assert fast.wait_int8(30) == n and plain.wait_int8(0) == 0
    return fast, plain


def same_answers(fast: VectorIndex, plain: VectorIndex, queries: np.ndarray, k: int) -> None:
    for q in queries:
        got, got_floor = fast.search_with_floor(q, k)
        want, want_floor = plain.search_with_floor(q, k)
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)
        # the same ids, but rows tied in cosine may come in either order
        def by_score(hits: list[tuple[int, float]]) -> list[int]:
            return [i for i, _ in sorted(hits, key=lambda h: (-round(h[1], 5), h[0]))]
        assert by_score(got) == by_score(want)
        assert got_floor == pytest.approx(want_floor, abs=1e-6)


def test_the_index_answers_through_the_pass_what_the_full_product_answers() -> None:
    rng = np.random.default_rng(3)
    dim = 64
    fast, plain = twins(rng, 20_000, dim)
    queries = unit_rows(rng, 15, dim)
    queries[0] = fast.vector(1)  # ties at the top
    same_answers(fast, plain, queries, 200)
    same_answers(fast, plain, queries[1:4], 1)  # (queries[0]: eleven rows tie for first)

    # changes after the copy: new rows (outside it), changed rows, removed rows
    new = unit_rows(rng, 500, dim)
    changed = unit_rows(rng, 300, dim)
    gone = [int(i) for i in rng.choice(np.arange(1, 20_001), 2_000, replace=False)]
    for index in (fast, plain):
        index.add(np.arange(20_001, 20_501), new)
        index.add(np.arange(101, 401), changed)
        index.remove(gone)
    assert fast.wait_int8(0) == 20_000  # too few rows outside the copy to make it again
    queries = np.vstack([queries, new[:5], changed[:5]])
    same_answers(fast, plain, queries, 200)

    # enough rows outside it: the copy is made again and takes them in
    more = unit_rows(rng, 4_500, dim)
    for index in (fast, plain):
        index.add(np.arange(30_001, 34_501), more)
    assert fast.wait_int8(30) == 25_000
    same_answers(fast, plain, np.vstack([queries, more[:5]]), 200)


def test_a_small_index_makes_no_copy_and_lock_drops_it() -> None:
    rng = np.random.default_rng(4)
    small = VectorIndex(32, use_chroma=False, int8_min_rows=1000)
    small.load(np.arange(1, 900), unit_rows(rng, 899, 32))
    assert small.wait_int8(1) == 0
    small.add(np.arange(900, 1100), unit_rows(rng, 200, 32))  # grows past the threshold
    assert small.wait_int8(30) == 1099
    small.close()
    assert small.wait_int8(0) == 0 and len(small) == 0


def test_a_load_while_the_copy_is_made_copies_the_new_contents() -> None:
    rng = np.random.default_rng(5)
    index = VectorIndex(32, use_chroma=False, int8_min_rows=1000)
    index.load(np.arange(1, 30_001), unit_rows(rng, 30_000, 32))
    new = unit_rows(rng, 2_000, 32)
    index.load(np.arange(1, 2_001), new)  # most likely while the first copy is still made
    for _ in range(30):  # the first copy ends unused and a copy of the new contents follows
        if index.wait_int8(1) == 2_000:
            break
    assert index.wait_int8(0) == 2_000
    plain = VectorIndex(32, use_chroma=False, int8_min_rows=None)
    plain.load(np.arange(1, 2_001), new)
    same_answers(index, plain, new[:5], 50)


def test_a_failing_pass_leaves_exact_search_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(6)
    fast, plain = twins(rng, 3_000, 32)
    queries = unit_rows(rng, 3, 32)

    def broken(self: Int8Pass, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise RuntimeError("onnxruntime gave up")
    monkeypatch.setattr(Int8Pass, "scores", broken)
    same_answers(fast, plain, queries, 20)
    assert fast.wait_int8(0) == 0  # dropped, and not made again
    fast.add(np.arange(5_001, 10_001), unit_rows(rng, 5_000, 32))
    assert fast.wait_int8(5) == 0


def test_the_kernels_are_exact_at_the_extremes_the_pass_uses() -> None:
    """On x86 without AVX-512 VNNI, onnxruntime's u8 x s8 kernels saturate a 16-bit sum of
    two products: rows are kept within +-63 so that 255 * 63 * 2 fits, and the check that
    turns the pass off elsewhere passes here."""
    from storage.vector_int8 import ROW_LEVELS, kernel_checks
    assert kernel_checks() == (True, True)
    mat = np.zeros((4, 384), dtype=np.float32)
    mat[0] = 1.0
    mat[1, ::2], mat[1, 1::2] = 1.0, -1.0
    mat[2, :192] = 5.0
    mat[3, 7] = -3.0
    rows = Quantised(mat)
    assert np.abs(rows.mt.astype(np.int16)).max() == ROW_LEVELS
    first = Int8Pass(rows)
    for q in (np.ones(384, dtype=np.float32), -np.ones(384, dtype=np.float32), mat[1], mat[2]):
        approx, bound = first.scores(q)
        assert np.all(np.abs(mat.astype(np.float64) @ q.astype(np.float64) - approx) <= bound)


def test_a_query_that_is_not_a_number_keeps_the_pass() -> None:
    rng = np.random.default_rng(7)
    fast, plain = twins(rng, 3_000, 32)
    bad = np.full(32, np.nan, dtype=np.float32)
    fast.search_with_floor(bad, 10)  # whatever it answers, it does not fail
    assert fast.wait_int8(0) == 3_000
    same_answers(fast, plain, unit_rows(rng, 3, 32), 20)
