"""Tests for storage.embedder: model lookup, parity with Chroma's default EF, ordering."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from storage import embedder as embedder_mod
from storage.embedder import Embedder, find_model_dir

# Where the shared dev model lives; KEPT_MODEL_DIR in the environment wins.
_DEFAULT_SHARED = (
    Path(__file__).resolve().parents[3] / "shared" / "models" / "all-MiniLM-L6-v2" / "onnx"
)

LONG_TEXT = " ".join(
    f"On day {i} Caroline went to the LGBTQ support group and then painted a sunrise with Melanie."
    for i in range(40)
)  # ~700 tokens: exercises truncation at 256

TEXTS = [
    "Hey Mel! Good to see you! How have you been?",
    "I went to a LGBTQ support group yesterday and it was so powerful.",
    "What did Caroline research?",
    "ok",
    "",
    "Café crème, naïve façade, Zürich – and 東京 with emoji 🎨🏖️!",
    "Привет, как дела? Мы ходили в поход на выходных.",
    LONG_TEXT,
    "When did Melanie paint a sunrise? " * 30,  # > 256 tokens as well
    "Researching adoption agencies — it's been a dream to have a family and give a loving home.",
    "The kids loved the pottery workshop; we made our own plates and it was so much fun!!!",
]


@pytest.fixture(scope="module")
def model_dir() -> Path:
    env = os.environ.get("KEPT_MODEL_DIR")
    path = Path(env) if env else _DEFAULT_SHARED
    if not ((path / "model.onnx").is_file() and (path / "tokenizer.json").is_file()):
        pytest.skip(f"MiniLM model not available at {path}")
    return path


@pytest.fixture(scope="module")
def emb(model_dir: Path) -> Embedder:
    return Embedder(model_dir, batch_size=4, threads=1)


@pytest.fixture(scope="module")
def emb_float(model_dir: Path) -> Embedder:
    """The weight products as the file stores them (float32): Chroma's own vectors."""
    return Embedder(model_dir, batch_size=4, threads=1, compute="float32")


def _fake_model_dir(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "model.onnx").write_bytes(b"")
    (root / "tokenizer.json").write_text("{}")
    return root


def test_find_model_dir_env_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _fake_model_dir(tmp_path / "m")
    monkeypatch.setenv("KEPT_MODEL_DIR", str(d))
    assert find_model_dir() == d


def test_find_model_dir_requires_both_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    incomplete = tmp_path / "incomplete"
    incomplete.mkdir()
    (incomplete / "tokenizer.json").write_text("{}")  # no model.onnx (a lone model.onnx is
    # complete: Kept ships the tokenizer)
    cache = _fake_model_dir(
        tmp_path / "home" / ".cache" / "chroma" / "onnx_models" / "all-MiniLM-L6-v2" / "onnx"
    )
    monkeypatch.setenv("KEPT_MODEL_DIR", str(incomplete))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(embedder_mod, "_REL_MODEL_DIR", Path("no") / "such" / "dir")
    monkeypatch.setattr(embedder_mod, "package_model_file", lambda: None)
    assert find_model_dir() is None  # a set KEPT_MODEL_DIR is the only place looked
    monkeypatch.delenv("KEPT_MODEL_DIR")
    assert find_model_dir() == cache


def test_find_model_dir_frozen_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = _fake_model_dir(
        tmp_path / "bundle" / "assets" / "models" / "all-MiniLM-L6-v2" / "onnx"
    )
    monkeypatch.delenv("KEPT_MODEL_DIR", raising=False)
    monkeypatch.setattr("sys.frozen", True, raising=False)
    monkeypatch.setattr("sys._MEIPASS", str(tmp_path / "bundle"), raising=False)
    assert find_model_dir() == bundle


def test_find_model_dir_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KEPT_MODEL_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(embedder_mod, "_REL_MODEL_DIR", Path("no") / "such" / "dir")
    monkeypatch.setattr(embedder_mod, "package_model_file", lambda: None)
    assert find_model_dir() is None


def test_find_model_dir_with_env(model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KEPT_MODEL_DIR", str(model_dir))
    assert find_model_dir() == model_dir


def test_shape_dtype_norm(emb: Embedder) -> None:
    vecs = emb.embed(TEXTS)
    assert vecs.shape == (len(TEXTS), 384)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert emb.dim == 384 and emb.model_name == "all-MiniLM-L6-v2"


def test_empty_input(emb: Embedder) -> None:
    out = emb.embed([])
    assert out.shape == (0, 384) and out.dtype == np.float32


@pytest.mark.parametrize("compute", ["float32", "int8"])
def test_order_preserved_with_mixed_lengths(model_dir: Path, emb_float: Embedder,
                                            compute: str) -> None:
    # Mixed lengths force sorting across several batches (batch_size=4); every row must still
    # be the text embedded on its own (in int8, near it).
    emb = emb_float if compute == "float32" else Embedder(model_dir, batch_size=4, threads=1,
                                                          compute="int8")
    texts = [TEXTS[i % len(TEXTS)] + (" more" * (i % 7)) for i in range(23)]
    batch = emb.embed(texts)
    singles = np.stack([emb.embed_one(t) for t in texts])
    # int8 activations are quantised over a whole batch: a little of the neighbours shows.
    assert np.min(np.sum(batch * singles, axis=1)) > (0.9999 if emb.compute == "float32"
                                                       else 0.93)
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    # and shuffled input gives the shuffled output
    perm = np.random.default_rng(0).permutation(len(texts))
    shuffled = emb.embed([texts[i] for i in perm])
    if emb.compute == "float32":
        np.testing.assert_allclose(shuffled, batch[perm], atol=1e-5)
    else:
        assert np.min(np.sum(shuffled * batch[perm], axis=1)) > 0.93


def test_embed_one(emb: Embedder) -> None:
    v = emb.embed_one("hello world")
    assert v.shape == (384,)
    assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-5


def test_matches_chroma_default_ef(
    model_dir: Path, emb_float: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    ef_mod = pytest.importorskip("chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2")
    cls = ef_mod.ONNXMiniLM_L6_V2
    needed = [
        "config.json",
        "model.onnx",
        "special_tokens_map.json",
        "tokenizer_config.json",
        "tokenizer.json",
        "vocab.txt",
    ]
    if model_dir.name != cls.EXTRACTED_FOLDER_NAME or not all(
        (model_dir / f).is_file() for f in needed
    ):
        pytest.skip("model dir does not have the layout Chroma expects offline")

    def no_download(*_a: object, **_k: object) -> None:
        raise AssertionError("Chroma tried to download the model")

    # Chroma reads <DOWNLOAD_PATH>/onnx/{model.onnx,tokenizer.json}; point it at our copy.
    monkeypatch.setattr(cls, "DOWNLOAD_PATH", model_dir.parent)
    monkeypatch.setattr(cls, "_download", no_download)
    ef = cls(preferred_providers=["CPUExecutionProvider"])
    ref = np.asarray(ef(TEXTS), dtype=np.float32)
    ours = emb_float.embed(TEXTS)
    cos = np.sum(ref * ours, axis=1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(ours, axis=1))
    assert cos.shape == (len(TEXTS),)
    assert float(cos.min()) >= 0.9999, cos


def test_concurrent_callers(emb: Embedder) -> None:
    expected = emb.embed(TEXTS)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(emb.embed(TEXTS))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 4
    for r in results:
        np.testing.assert_allclose(r, expected, atol=1e-5)
