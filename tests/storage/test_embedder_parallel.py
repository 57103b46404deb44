"""storage.embedder: batches run in parallel give exactly the sequential vectors, in order."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from storage import embedder as embedder_mod
from storage.embedder import Embedder

_DEFAULT_SHARED = (
    Path(__file__).resolve().parents[3] / "shared" / "models" / "all-MiniLM-L6-v2" / "onnx"
)
TEXTS = [f"Memory {i}: {'we walked by the river and talked ' * (i % 7)}with Anna in Lisbon."
         for i in range(37)]


@pytest.fixture(scope="module")
def model_dir() -> Path:
    env = os.environ.get("KEPT_MODEL_DIR")
    path = Path(env) if env else _DEFAULT_SHARED
    if not ((path / "model.onnx").is_file() and (path / "tokenizer.json").is_file()):
        pytest.skip(f"MiniLM model not available at {path}")
    return path


def test_parallel_batches_match_sequential(model_dir: Path) -> None:
    seq = Embedder(model_dir, batch_size=4, threads=1).embed(TEXTS)
    par = Embedder(model_dir, batch_size=4, threads=3).embed(TEXTS)
    assert par.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(par, seq, rtol=0, atol=1e-6)
    singles = Embedder(model_dir, batch_size=4, threads=2)
    for i in (0, 5, 36):
        np.testing.assert_allclose(singles.embed_one(TEXTS[i]), seq[i], rtol=0, atol=1e-6)


def test_parallel_error_reaches_caller() -> None:
    seen: list[int] = []

    def fn(item: int) -> None:
        seen.append(item)
        if item == 3:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        embedder_mod._run_parallel(fn, list(range(10)), 2)
    assert 3 in seen


def test_one_text_does_not_wait_behind_a_batch_and_batches_still_take_turns(
        model_dir: Path) -> None:
    """A recall's query is one text: it runs while another thread's batch holds the
    embedder's turn (the follower or an import at background priority), and gives the same
    vector as on its own; a second batch waits for the turn."""
    import threading
    emb = Embedder(model_dir, batch_size=8, threads=1)
    alone = emb.embed_one(TEXTS[3])
    with emb._lock:  # a batch under way on another thread holds this
        got: list[np.ndarray] = []
        one = threading.Thread(target=lambda: got.append(emb.embed_one(TEXTS[3])))
        one.start()
        one.join(timeout=30)
        assert not one.is_alive() and len(got) == 1, "one text waited for the batch"
        batch = threading.Thread(target=lambda: got.append(emb.embed(TEXTS[:2])))
        batch.start()
        batch.join(timeout=0.5)
        assert batch.is_alive(), "a batch did not wait for the other batch's turn"
    batch.join(timeout=30)
    assert not batch.is_alive()
    np.testing.assert_allclose(got[0], alone, rtol=0, atol=1e-6)
    # Both at once, for real: the query's vector is the same while a batch runs beside it.
    many = threading.Thread(target=lambda: emb.embed(TEXTS * 4))
    many.start()
    for _ in range(5):
        np.testing.assert_allclose(emb.embed_one(TEXTS[3]), alone, rtol=0, atol=1e-6)
    many.join(timeout=60)
