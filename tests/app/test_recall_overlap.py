"""Issue 28: recall embeds the query on a worker thread while it runs the lexical search
(app/services/recall.py:QueryEmbedding). The answers are those of the sequential way, the
embedder's error still reaches the caller, the embedding runs at the caller's priority, and
lock ends the workers. Speed itself is measured by bench/recall_ab.py, never here."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.clock import FixedClock
from app.domain.memory import Store
from app.facade import Vault
from app.services import recall as recall_module
from app.threads import BULK_NICENESS, background_priority
from tests.app.conftest import PW, remember, share_embedder
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
    return [t for t in threading.enumerate() if t.name.startswith("recall-embed")]


def test_the_query_is_embedded_beside_the_lexical_search_with_the_same_answers(
        vault: Vault) -> None:
    _fill(vault)
    service = inside(vault).recall
    service.overlap_embedding = True  # off by default (OVERLAP_EMBEDDING)
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
            assert len(_recall_embed_threads()) == 1  # one worker, reused
    finally:
        service.embedder = real
        del service.rows.fts_search
    assert [t.startswith("recall-embed") for t in watched.threads] == [True] * len(QUERIES)
    # Each embedding saw the lexical search run meanwhile: the two overlapped (had recall
    # embedded first, every wait would have timed out).
    assert watched.saw_event == [True] * len(QUERIES)
    assert any(before.values())  # the queries do find memories


def test_the_embedders_error_reaches_the_caller_and_no_thread_is_left(vault: Vault) -> None:
    _fill(vault)
    service = inside(vault).recall
    service.overlap_embedding = True  # off by default (OVERLAP_EMBEDDING)
    real = service.embedder
    watched = Watched(real)
    watched.fail_on = "who ran a marathon"
    service.embedder = watched
    try:
        with pytest.raises(RuntimeError, match="the model failed"):
            service.recall("who ran a marathon", now=1.8e9)
        assert service.recall("bike repair", now=1.8e9)  # the next call is served as usual
    finally:
        service.embedder = real
    assert len(watched.threads) == 2
    vault.lock()
    assert not _recall_embed_threads()  # lock ends the workers


def test_a_vector_handed_in_or_no_vectors_start_no_thread(vault: Vault) -> None:
    service = inside(vault).recall
    service.overlap_embedding = True  # off by default (OVERLAP_EMBEDDING)
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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread niceness: Linux")
def test_the_query_is_embedded_at_the_callers_priority(
        vault_dir: Path, fast_kdf: object, clock: FixedClock, embedder: object,
        monkeypatch: pytest.MonkeyPatch) -> None:
    share_embedder(monkeypatch, embedder)
    vault = Vault.create(vault_dir, PW, kdf=fast_kdf, threaded=True, clock=clock,
                         use_chroma=False).vault  # a reader per thread: recall from two
    try:
        _embedded_at_callers_priority(vault)
    finally:
        vault.lock()


def _embedded_at_callers_priority(vault: Vault) -> None:
    _fill(vault)
    deadline = time.monotonic() + 60
    while len(inside(vault).index) < len(TEXTS):  # vectors follow the writer (threaded)
        assert time.monotonic() < deadline, "the vectors never arrived"
        time.sleep(0.05)
    service = inside(vault).recall
    service.overlap_embedding = True  # off by default (OVERLAP_EMBEDDING)
    real = service.embedder
    seen: list[int] = []

    class Niceness(Watched):
        def embed_one(self, text: str) -> Any:
            seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
            return self.inner.embed_one(text)
    service.embedder = Niceness(real)
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    lowered: list[bool] = []

    found: list[int] = []

    def in_background() -> None:
        lowered.append(background_priority())
        found.append(len(service.recall("who ran a marathon", now=1.8e9)))
    try:
        service.recall("who ran a marathon", now=1.8e9)
        t = threading.Thread(target=in_background)
        t.start()
        t.join()
        service.recall("bike repair", now=1.8e9)
    finally:
        service.embedder = real
    if not lowered[0]:
        pytest.skip("this sandbox does not allow lowering a thread's priority")
    # The person's recalls embed at their priority, the background one at its own.
    assert found and found[0] > 0  # the background recall was served
    assert seen == [mine, mine + BULK_NICENESS, mine]
    assert len(_recall_embed_threads()) == 2  # one worker per priority


def test_off_by_default_the_query_is_embedded_on_the_callers_thread(vault: Vault) -> None:
    _fill(vault)
    service = inside(vault).recall
    assert service.overlap_embedding is False
    real = service.embedder
    watched = Watched(real)
    service.embedder = watched
    try:
        assert service.recall("who ran a marathon", now=1.8e9)
    finally:
        service.embedder = real
    assert watched.threads == [threading.current_thread().name]
    assert not _recall_embed_threads()


def test_texts_worked_out_ahead_are_what_recall_works_out_and_go_at_lock(vault: Vault) -> None:
    from app.services import currency, slots
    from app.services.text import is_small_talk
    _fill(vault)
    remember(vault, "Thanks!", Store.EPISODIC, speaker="Tom")
    service = inside(vault).recall
    when = 1.8e9
    cold = {q: _digest(service.recall(q, now=when)) for q in QUERIES}
    said = inside(vault).recall.rows.said()  # what the queries read, kept with their speakers
    assert said and all(isinstance(t, str) for t, _ in said)
    service.forget_texts()
    assert service.warm_texts(said) == len(said)
    for text, speaker in said:
        assert service._slots[text] == slots.slots_of(text)
        assert service._chatter[text] == is_small_talk(text)
        assert service._holders[(text, speaker, service.owner, None)] == currency.holder(
            text, speaker, service.owner, subject=None)
    assert {q: _digest(service.recall(q, now=when)) for q in QUERIES} == cold  # same answers
    # A lock while texts are being worked out: nothing of them stays.
    many = [(f"{t} ({n})", sp) for n in range(200) for t, sp in said]
    calls = [0]

    def lock_at_second_slice() -> bool:
        calls[0] += 1
        if calls[0] == 2:
            service.forget_texts()
        return False
    service.forget_texts()
    stored = service.warm_texts(many, stop=lock_at_second_slice)
    assert stored == recall_module._WARM_SLICE  # the first slice, then the lock
    assert not service._slots and not service._chatter and not service._holders


def test_texts_are_worked_out_ahead_only_between_recalls(vault: Vault) -> None:
    """Beside a recall the work would share the GIL (at 100k memories a recall then took
    300-430 ms instead of ~17): it waits while one is under way, slice by slice."""
    from app.threads import foreground
    service = inside(vault).recall
    service.forget_texts()
    many = [(f"We walked the dog by the river ({n})", "Tom") for n in range(1000)]
    done: list[int] = []
    with foreground():  # a recall under way
        worker = threading.Thread(target=lambda: done.append(service.warm_texts(many)))
        worker.start()
        time.sleep(0.3)
        assert len(service._slots) <= recall_module._WARM_SLICE  # at most the slice under way
    worker.join(10)
    assert done == [1000] and len(service._slots) == 1000  # all of it once the recall ended
