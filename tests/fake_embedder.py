"""A deterministic stand-in for the ONNX model, for tests of ranking logic that must not depend
on what the model knows: the lexical mirror against FTS5, recall with and without it.

Each word (casefolded ``\\w+``) adds +1 or -1 to one of EMBED_DIM dimensions picked by a hash of
the word; the sum is L2-normalised, as the real model's output is. Texts that share words get
a positive cosine, texts that share none get about 0, and the same text always gets the same
vector, in any process. It knows nothing of meaning ("cat" and "kitten" are unrelated), so
tests of recall quality, of vectors at rest and of the security requirements keep the real
model (the ``embedder`` and ``session_embedder`` fixtures).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from storage.embedder import EMBED_DIM

_WORD = re.compile(r"\w+")


class FakeEmbedder:
    """Satisfies ``app.ports.Embedder``. Its vectors are stored under their own model name,
    never mixed with MiniLM's."""

    model_name = "test-hashed-bag-of-words"
    dim = EMBED_DIM
    model_dir = Path("/nonexistent/fake-embedder")

    def __init__(self) -> None:
        self.calls = 0  # texts embedded, so a test can see the fake was the one used

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), EMBED_DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.casefold()) or [text]
            for word in words:
                h = hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8).digest()
                out[row, int.from_bytes(h[:4], "little") % EMBED_DIM] += 1.0 if h[4] & 1 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm == 0.0:  # +1 and -1 on one dimension cancelled out
                out[row, 0] = 1.0
            else:
                out[row] /= norm
        self.calls += len(texts)
        return out

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def use_fake_embedder(monkeypatch: pytest.MonkeyPatch) -> FakeEmbedder:
    """Vaults created or opened through ``app.bootstrap`` get a FakeEmbedder (when they load
    a model at all); returns it."""
    from app import bootstrap
    fake = FakeEmbedder()

    def load(load_model: bool) -> tuple[Any, Any]:
        return (fake, fake.model_dir) if load_model else (None, None)
    monkeypatch.setattr(bootstrap, "load_embedder", load)
    return fake
