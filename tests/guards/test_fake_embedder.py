"""The test suite's fake embedder (tests/fake_embedder.py) keeps the contract of the real one
that the ranking code relies on: float32 rows of EMBED_DIM, unit length, the same vector for
the same text, and more similarity for texts that share words."""

from __future__ import annotations

import numpy as np

from storage.embedder import EMBED_DIM
from tests.fake_embedder import FakeEmbedder


def test_shape_norm_and_determinism() -> None:
    fake = FakeEmbedder()
    texts = ["Ana's birthday is on July 3", "", "a a", "naïve café İstanbul", "\ud800"]
    vecs = fake.embed(texts)
    assert vecs.shape == (len(texts), EMBED_DIM) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(vecs, FakeEmbedder().embed(texts))
    assert np.array_equal(fake.embed_one(texts[0]), vecs[0])
    assert fake.calls == len(texts) + 1


def test_shared_words_rank_above_unrelated_text() -> None:
    fake = FakeEmbedder()
    q, near, far = fake.embed(["the dog is called Pixel", "Pixel the greyhound is a dog",
                               "thunderstorms over Lisbon tonight"])
    assert float(q @ near) > 0.3 > abs(float(q @ far))
