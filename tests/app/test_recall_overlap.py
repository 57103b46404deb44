"""Issue 28: recall embeds the query on a thread of its own while it runs the lexical search
(app/services/recall.py:QueryEmbedding). The answers are those of the sequential way, the
embedder's error still reaches the caller, and no thread outlives the call. Speed itself is
measured by bench/recall_ab.py, never here."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from app.domain.memory import Store
from app.facade import Vault
from tests.app.conftest import remember
from tests.inside import inside

TEXTS = ["We planted tomatoes in the community garden on Sunday",
         "Anna ran a half marathon in Lisbon and felt proud",
         "Marco is learning Portuguese before the trip to Porto",
         "The old bike needed a new chain, fixed it on Friday",
         "Priya baked a lemon cake for her grandmother's birthday",
         "Went kayaking on the lake with Tom, the water was cold"]
QUERIES = ["what did we plant in the garden", "who ran a marathon", "cake for grandma",
           "where is Marco travelling", "kayaking with whom", "bike repair"]


class Watched:
    """The real embedder, noting the thread each ``embed_one`` runs on; with ``until`` set, a
    call first waits (up to 10 s) for that event and notes whether it came."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.threads: list[str] = []
        self.until: threading.Event | None = None
        self.saw_event: list[bool] = []
        self.fail_on: str | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_one(self, text: str) -> Any:
        self.threads.append(threading.current_thread().name)
        if self.until is not None:
            self.saw_event.append(self.until.wait(10))
        if text == self.fail_on:
            raise RuntimeError("the model failed")
        return self.inner.embed_one(text)


def _fill(vault: Vault) -> None:
    for text in TEXTS:
        remember(vault, text, Store.EPISODIC, speaker="Anna")


def _digest(hits: list[Any]) -> list[tuple[Any, ...]]:
    return [(int(h.id), h.score, sorted(h.breakdown.items()), h.text, h.refs, repr(h.currency))
            for h in hits]


def _recall_embed_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "recall-embed"]


def test_the_query_is_embedded_beside_the_lexical_search_with_the_same_answers(
        vault: Vault) -> None:
    _fill(vault)
    service = inside(vault).recall
    real = service.embedder
    when = 1.8e9
    # The sequential way: the vector made first and handed in.
    before = {q: _digest(service.recall(q, now=when, qvec=real.embed_one(q))) for q in QUERIES}
    watched = Watched(real)
    service.embedder = watched
    lexical_ran = threading.Event()
    fts_search = service.rows.fts_search

    def noted(*a: Any, **k: Any) -> Any:
        lexical_ran.set()
        return fts_search(*a, **k)
    service.rows.fts_search = noted  # type: ignore[method-assign]
    watched.until = lexical_ran  # the embedding waits for the lexical search to have run
    try:
        for q in QUERIES:
            lexical_ran.clear()
            assert _digest(service.recall(q, now=when)) == before[q]
            assert not _recall_embed_threads()  # the call's thread ended with it
    finally:
        service.embedder = real
        del service.rows.fts_search
    assert watched.threads == ["recall-embed"] * len(QUERIES)
    # Each embedding saw the lexical search run meanwhile: the two overlapped (had recall
    # embedded first, every wait would have timed out).
    assert watched.saw_event == [True] * len(QUERIES)
    assert any(before.values())  # the queries do find memories


def test_the_embedders_error_reaches_the_caller_and_no_thread_is_left(vault: Vault) -> None:
    _fill(vault)
    service = inside(vault).recall
    real = service.embedder
    watched = Watched(real)
    watched.fail_on = "who ran a marathon"
    service.embedder = watched
    try:
        with pytest.raises(RuntimeError, match="the model failed"):
            service.recall("who ran a marathon", now=1.8e9)
        assert not _recall_embed_threads()
        assert service.recall("bike repair", now=1.8e9)  # the next call is served as usual
    finally:
        service.embedder = real
    assert watched.threads == ["recall-embed", "recall-embed"]


def test_a_vector_handed_in_or_no_vectors_start_no_thread(vault: Vault) -> None:
    service = inside(vault).recall
    real = service.embedder
    watched = Watched(real)
    service.embedder = watched
    try:
        assert service.recall("anything at all", now=1.8e9) == []  # an empty vault: no index
        _fill(vault)
        q = "what did we plant in the garden"
        vec = np.asarray(real.embed_one(q), dtype=np.float32)
        assert service.recall(q, now=1.8e9, qvec=vec)
    finally:
        service.embedder = real
    assert watched.threads == []  # neither embedded anything
