"""Recall (docs/memory-model.md#recall): query analysis, hybrid candidates, ranking, time travel,
reinforcement, explain. Layer: app. Runs on: any worker thread (reads on the caller's reader
connection; touches go through the writer).
"""

from __future__ import annotations

import heapq
import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from app import policy
from app.api import Currency, Filters, Hit
from app.domain.memory import MemoryId, Status, Store
from app.ports import Database, Embedder, FloatArray, Lexicon, RecallMeta, RecallRows, VectorIndex
from app.services import confidence, currency, scoring, slots
from app.services.text import STOPWORDS, is_small_talk
from app.threads import foreground, give_way

log = logging.getLogger(__name__)


# --- ranking constants (tuned on LoCoMo dev: bench/locomo_recall.py; the why of each) --------
@dataclass(frozen=True, slots=True)
class RecallTuning:
    # relevance = w_lexical * lexical + w_dense * dense. Lexical (BM25 over text, speaker and
    # date, and the neighbouring turns) is the stronger ranker on conversations (.777 R@10 alone
    # vs .497 for dense); dense adds paraphrases (+.028 R@10). .5/.7/.8 gave .797/.804/.805.
    w_lexical: float = 0.6
    w_dense: float = 0.4
    # docs/memory-model.md#ranking starts at final = .6 relevance + .4 composite. On LoCoMo dev
    # composite mostly encodes an event's age, and any weight above .05 on it cost recall (.2: -.015
    # to -.04 R@10; .3: up to -.09). So strength and recency break ties; they do not outvote
    # relevance.
    # Re-measured 2026-11-26 (issue 27, docs/memory-model.md#ranking): R@10 0: .8078, .05: .8098,
    # .2: .8066, .4 (002): .8036.
    w_relevance: float = 1.0
    w_composite: float = 0.05
    # Candidate depth per source (50/100/200 gave the same numbers).
    lexical_depth: int = 200
    dense_depth: int = 200
    # A person named in the query: memories they said or that mention them get this added
    # (+.011 R@10 on categories 1-4; adversarial questions naming the wrong person pay .023).
    speaker_boost: float = 0.10
    # + this share of the best score in the same session (conversations cluster): +.007 R@10.
    session_share: float = 0.2
    # Store priorities (002 strategies) multiply relevance; adjusted by query type below.
    store_weight: dict[str, float] = field(default_factory=lambda: {
        "episodic": 1.0, "semantic": 1.05, "procedural": 1.0, "implicit": 0.9,
        "short_term": 1.0})
    # A parsed time range in the query ("in May 2023", "last week") boosts memories inside it.
    time_range_boost: float = 1.25
    # What decay archived stays searchable, ranked lower (000: cold facts remain for search):
    # its relevance is multiplied by this, so an archived memory comes after an active one
    # that matches as well. LoCoMo: no effect (nothing is archived there).
    archived_weight: float = 0.8
    # A fact (semantic, procedural, implicit) outranks the episode or turn it was derived from
    # when both are among the best: it is lifted just above its source when its own relevance
    # is at least this share of the source's (the episode matches more words, the fact is the
    # answer). A fact the person confirmed or corrected always qualifies. LoCoMo: no effect
    # (no facts there).
    derived_min_share: float = 0.5
    # What is current (issue 23). For a question about one thing as it is now (``asks_now``:
    # not about the past, not asking for a list), the best answers put the latest first:
    # among the ``now_block`` most relevant statements that answer it (relevance at least
    # ``now_share`` of the best, about the slot asked (app.services.slots) or naming a word of
    # the question or a value, about whom it asks), newer before older. Development stories
    # (bench/stories.py, 69 questions): current first 41 -> 46, stale first 24 -> 19; LoCoMo
    # dev R@10 unchanged (.8114), R@5 .7191 -> .7155. Putting all the answers in time order
    # (block 6, share .5) gave 47/17 but R@5 .6819; only the newest first, 45/20.
    now_share: float = 0.6
    now_slot_share: float = 0.3  # ... or this, for a statement about the slot asked
    now_block: int = 3
    # The slots a question asks about (app.services.slots) are searched through their tags
    # in memories' full-text keys and add this much (times the normalised BM25 of the tags)
    # to relevance, so a statement in other words is found ("first day at Kitewood" for
    # "where do I work"). .15: LoCoMo R@10 unchanged; .3: -.011 (stories +4 current first).
    w_slot: float = 0.15
    slot_max_words: int = 2  # ... for questions of at most this many content words
    # Two statements of one holder are about the same thing (the ``earlier`` mark) when their
    # embeddings' cosine is at least this, or they are facts of one slot.
    same_topic: float = 0.55
    # Small talk ("Thanks!", "ok cool", an assistant's "You're welcome!"): its final score is
    # multiplied by this among the best candidates, so it ranks below anything substantive
    # that matches (issue 23 item 6: "Thanks!" came 5th for "where do I live").
    small_talk_weight: float = 0.2
    # The second hop (app.services.hops, issue 27 item 7): the ``hop_seeds`` best candidates
    # lend ``hop_weight`` of their relevance to the candidates linked to them (PRECEDED_BY,
    # RELATES_TO, REINFORCES, SIMILAR_TO) or, with ``hop_entities``, naming a person or topic
    # they name (entities at most ``hop_broad`` memories mention). Off (policy): LoCoMo dev,
    # consolidated, multi-hop R@10 .4599 without; .4499 at .2 with entities (R@10 .8102 ->
    # .8031, R@5 .7192 -> .7028); .4587 at .1 links only (R@10 .8142, R@5 .7126); .4642 at
    # .05 links only from 3 seeds (R@10 .8123, R@5 .7163: R@5 drops, so it stays off).
    hop_weight: float = policy.RECALL_HOP_WEIGHT
    hop_seeds: int = 5
    hop_entities: float = 1.0  # 1: also through shared entities; 0: links only
    hop_broad: int = 40


TUNING = RecallTuning()
# Embed the query on a worker while the lexical search runs (``RecallService.recall``,
# issue 28). Off: on the 2-core machine at load 12-16 (bench/recall_ab.py, dev, two rounds
# alternating, same answers) recall over the bare embedding was p50 2.45x with it against
# 2.25x without at 10k memories, 4.20x against 3.98x at 100k: it can hide the lexical search
# and the query analysis (1-3 ms CPU), but the worker waits for a core and the caller then
# waits to be woken, two scheduling delays a recall on a loaded machine.
OVERLAP_EMBEDDING = False
_TEXT_MEMO = 65_536  # texts whose slots, small talk and holder are kept (a bound on RAM)
_WARM_SLICE = 100  # texts worked out ahead between two give_way()s (warm_texts): ~10-20 ms

_TEMPORAL = re.compile(r"\b(when|what time|what year|what month|what day|how long ago|since|"
                       r"yesterday|today|last|ago|recently|before|after|during)\b", re.I)
_EMOTIONAL = re.compile(r"\b(feel|feels|felt|feeling|happy|sad|angry|upset|excited|afraid|"
                        r"worried|love|hate|proud|stressed)\b", re.I)
_PROCEDURAL = re.compile(r"\b(how (do|to|should)|usually|routine|habit|prefer|always|steps?)\b",
                         re.I)
_MONTHS = ("january february march april may june july august september october november "
           "december").split()


_FACT_STORES = frozenset(("semantic", "procedural", "implicit"))
_SOURCE_STORES = frozenset(("episodic", "short_term"))

# The present, asked about: a cue word, or "does/is ... live/work/job/partner" without a past.
_PRESENT_CUE = re.compile(r"\b(now|currently|current|these days|nowadays|at the moment|"
                          r"at present|anymore|any more|latest|still)\b", re.I)
_PRESENT_ASK = re.compile(r"\b(?:does|do|is|are|'s)\b[\w' ]{0,40}?\b(?:live|lives|living|based|"
                          r"work|works|working|job|role|position|title|employer|partner|"
                          r"boyfriend|girlfriend|husband|wife|dating|married|address|home)\b",
                          re.I)
_PAST = re.compile(r"\b(did|was|were|used to|before|previously|formerly|earlier|ago|back then|"
                   r"at first|originally|in (?:19|20)\d\d|last (?:year|month|week|time))\b",
                   re.I)
_PRESENT_WORDS = frozenset("now currently current nowadays latest still anymore".split())
_WORD = re.compile(r"[a-z0-9]+")
# Question fillers that never carry content, on top of the standard stop words.
_FILLERS = frozenset("also ever might likely kind type sort many much way".split())


# About the past, a plan or a maybe: then the latest statement is not what is asked. LoCoMo dev
# (the questions whose evidence ranking changed): "what was the poetry reading ... about",
# "the cooking show she hosted", "would she go ... soon", "when is he planning to".
_ABOUT_PAST = re.compile(r"\b(did|didn't|was|wasn't|were|weren't|used to|before|previously|"
                         r"formerly|earlier|ago|back then|at first|originally|"
                         r"in (?:19|20)\d\d|last (?:year|month|week|time)|had|first time|"
                         r"at the time|would|will|going to|plan|plans|planning|soon)\b|"
                         r"\b(?:i|he|she|they|we|you|[A-Z][a-z]+)\s+\w{3,}ed\b", re.I)


# Questions whose answer is a list or everything so far, never one current value: a plural
# after what/which ("what activities", "which books"), "kinds of", the perfect ("has ... ever",
# "where has she camped"), "all", "ever", "any".
_MANY = re.compile(r"\b(?:kinds?|types?|sorts?) of\b|\b(?:what|who|which|where)\s+(?:are|were)\b|\b(?:has|have|hasn't|haven't)\b(?!\s+"
                   r"(?:to|got)\b)|\b(?:all|ever|any|list|some)\b", re.I)
_WH_NOUN = re.compile(r"\b(?:what|which)\s+((?:[a-z']+\s+){0,2}[a-z']+)", re.I)
# Words that end in s after what/which but are no plural: verbs and the like.
_NOT_PLURAL = frozenset("""is was has does goes says means uses lives works runs plays likes loves
makes takes gives needs wants keeps gets thinks seems costs this his its us bus gas class glass
yes news series species""".split())


def _plural_asked(query: str) -> bool:
    """'what activities', 'which books does': a plural noun right after what/which."""
    m = _WH_NOUN.search(query)
    if not m:
        return False
    for w in m.group(1).lower().split():
        if w in _NOT_PLURAL or w in STOPWORDS:
            return False  # the noun phrase ended (a verb, "do", "the")
        if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is", "'s")):
            return True
    return False


def asks_now(query: str) -> bool:
    """A question about one thing as it is now (issue 23): not explicitly about the past, and
    not asking for a list or everything so far."""
    return not (_ABOUT_PAST.search(query) or _MANY.search(query) or _plural_asked(query))


def asks_present(query: str) -> bool:
    """A question about how things are now, not how they were."""
    if _PAST.search(query):
        return False
    return bool(_PRESENT_CUE.search(query) or _PRESENT_ASK.search(query))


_VALUE = re.compile(r"\d|(?<![.!?]\s)(?<!^)\b(?!I\b)[A-Z][a-z]+")


def _answers(text: str, stems: Sequence[str]) -> bool:
    """Whether a statement can answer a question: it names one of the question's words (by
    its first five letters: "vet", "lives"/"live", "milk") or a value (a number, a name)."""
    words = _WORD.findall(text.lower())
    return bool(_VALUE.search(text)) or any(w.startswith(s) or s.startswith(w[:5])
                                            for w in words if len(w) >= 3 for s in stems)


def query_tokens(query: str) -> list[str]:
    """Lower-case [a-z0-9]+ words without stop words, each once (+.014 R@10 vs all words)."""
    return list(dict.fromkeys(w for w in _WORD.findall(query.lower())
                              if w not in STOPWORDS and w not in _FILLERS))


def _mention_patterns(people: Sequence[str]) -> re.Pattern[str] | None:
    if not people:
        return None
    return re.compile(r"\b(" + "|".join(re.escape(p) for p in people) + r")\b", re.I)


@dataclass(frozen=True, slots=True)
class QueryPlan:
    text: str
    tokens: tuple[str, ...]
    temporal: bool
    time_range: tuple[float, float] | None
    people: tuple[str, ...]
    emotional: bool
    procedural: bool
    store_weight: dict[str, float]
    present: bool = False  # asks how things are now (asks_present)
    now: bool = False      # not explicitly about the past (asks_now)


def parse_time_range(query: str, now: float) -> tuple[float, float] | None:
    """Explicit periods only: a year, a month (with or without year), yesterday, last week,
    last month, last year, N days/weeks ago. Returns (start, end) in epoch seconds. A period
    that would fall outside the years 1 to 9999 ("3000 years ago", "yesterday" on 1 January of
    year 1) is no period: the query is searched without one (issue 11, item 5)."""
    try:
        return _parse_time_range(query, now)
    except (OverflowError, ValueError):
        return None


def _parse_time_range(query: str, now: float) -> tuple[float, float] | None:
    q = query.lower()
    today = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if "yesterday" in q:
        start = today - timedelta(days=1)
        return start.timestamp(), today.timestamp()
    if "today" in q:
        return today.timestamp(), (today + timedelta(days=1)).timestamp()
    if "last week" in q:
        return (today - timedelta(days=today.weekday() + 7)).timestamp(), \
            (today - timedelta(days=today.weekday())).timestamp()
    m = re.search(r"\b(\d+|a|one|two|three|four|five|six) (day|week|month|year)s? ago\b", q)
    if m:
        words = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
        n = int(m.group(1)) if m.group(1).isdigit() else words[m.group(1)]
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[m.group(2)] * n
        center = today - timedelta(days=days)
        width = timedelta(days=max(1, days // 4))
        return (center - width).timestamp(), (center + width + timedelta(days=1)).timestamp()
    months = "|".join(m for m in _MONTHS if m != "may")
    # "may" is a month only beside a year, a day or "in/of/since": "where may I ..." is not.
    month = re.search(r"\b(" + months + r")\b(?:,?\s+(\d{4}))?", q) or re.search(
        r"(?:\b(?:in|of|since|during|early|late|mid)\s+(may)\b(?:,?\s+(\d{4}))?|\b(may)"
        r"(?:,?\s+(\d{4})|\s+\d{1,2}\b)|\b\d{1,2}(?:st|nd|rd|th)?\s+(may)\b(?:,?\s+(\d{4}))?)", q)
    year = re.search(r"\b(?:in|during|since|of|from|by|year)\s+((?:19|20)\d\d)\b", q)
    if month:
        groups = [g for g in month.groups() if g]
        name = next(g for g in groups if not g.isdigit())
        mi = _MONTHS.index(name) + 1
        explicit = next((g for g in groups if g.isdigit()), None)
        if explicit:
            y = int(explicit)
        elif year:
            y = int(year.group(1))
        else:  # the latest such month not after now
            y = today.year if mi <= today.month else today.year - 1
        start = datetime(y, mi, 1, tzinfo=UTC)
        end = datetime(y + (mi == 12), mi % 12 + 1, 1, tzinfo=UTC)
        return start.timestamp(), end.timestamp()
    if year:
        y = int(year.group(1))
        return datetime(y, 1, 1, tzinfo=UTC).timestamp(), datetime(y + 1, 1, 1,
                                                                    tzinfo=UTC).timestamp()
    if "last month" in q:
        first = today.replace(day=1)
        prev = (first - timedelta(days=1)).replace(day=1)
        return prev.timestamp(), first.timestamp()
    if "last year" in q:
        return datetime(today.year - 1, 1, 1, tzinfo=UTC).timestamp(), \
            datetime(today.year, 1, 1, tzinfo=UTC).timestamp()
    return None


def plain(f: Filters) -> bool:
    """No filter but ``happened_by`` (which the facade sets for an explicit ``now``), nothing
    superseded included: then ``visible_plain`` answers for ``RecallService._visible``."""
    return (f.stores is None and f.agent is None and f.context is None and f.since is None
            and f.until is None and f.as_of is None and f.known_at is None
            and not f.only_archived and not f.include_superseded)


def visible_plain(ids: Sequence[int], meta: dict[int, RecallMeta], f: Filters,
                  now: float) -> list[int]:
    """The ids with ranking fields that ``RecallService._visible`` accepts, for ``plain``
    filters: its three checks that apply, in one comprehension instead of a call per
    candidate (issue 28: ~400 calls a query, 0.5 ms CPU at 10k memories, cProfile, dev).
    ``tests/app/test_recall_speed.py`` checks both give the same."""
    happened_by, day = f.happened_by, policy.DAY
    return [i for i in ids if (m := meta.get(i)) is not None
            and m.status != "superseded"
            and (happened_by is None or not m.occurred_at > happened_by)
            and (m.store != "short_term" or now - m.occurred_at <= day)]


class QueryEmbedding:
    """``embed(query)`` handed to a ``recall-embed`` worker thread; ``result()`` waits for the
    vector (or raises what the embedder raised), ``join()`` for the work to end.

    One worker per scheduling priority of the callers (``EmbedWorkers``), started by the
    first caller of that priority, so it inherits it (app/threads.py: a background recall
    embeds at background priority, the person's at theirs; Linux cannot raise a thread's
    priority back). A thread started per call was tried first: ``Thread.start()`` waits for
    the new thread to run, 11 ms a call at load 15 on two cores (cProfile, 10k memories,
    dev). An idle worker blocks on its queue: nothing spins between recalls."""

    def __init__(self, workers: EmbedWorkers, embed: Callable[[str], FloatArray],
                 query: str) -> None:
        self._future = workers.pool().submit(embed, query)

    def join(self) -> None:
        futures.wait([self._future])

    def result(self) -> FloatArray:
        vec: FloatArray = self._future.result()
        return vec


class EmbedWorkers:
    """The ``recall-embed`` workers, one per caller priority (niceness on Linux, one
    elsewhere); ``close`` (lock) ends them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pools: dict[int, futures.ThreadPoolExecutor] = {}

    def pool(self) -> futures.ThreadPoolExecutor:
        key = _niceness()
        with self._lock:
            got = self._pools.get(key)
            if got is None:
                got = self._pools[key] = futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="recall-embed")
            return got

    def close(self) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for p in pools:
            p.shutdown(wait=True)


def _niceness() -> int:
    """This thread's niceness (Linux: per thread), else 0."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    except OSError:
        return 0


class RecallService:
    """Stateless apart from its collaborators; safe to call from several threads. ``rows``:
    the queries (``storage.repo``); ``lexicon``: the RAM mirror of the full-text index, or
    None for FTS5 only."""

    def __init__(self, db: Database, index: VectorIndex, embedder: Embedder | None,
                 tuning: RecallTuning = TUNING, lexicon: Lexicon | None = None, *,
                 rows: RecallRows) -> None:
        self.db = db
        self.lexicon = lexicon
        self.index = index
        self.embedder = embedder
        self.tuning = tuning
        self.rows = rows
        self.owner: str | None = None  # the person's name (setting owner.name), if known
        self._people_seen: dict[int, tuple[Any, tuple[int, int], tuple[str, ...]]] = {}
        # Pure functions of a candidate's text, asked of the same texts query after query
        # (issue 28: 3 ms of a 21 ms recall at 10k memories, bench/scale.py, dev). Keyed by
        # the text itself, so an edit is a new key; emptied at lock (``forget_texts``).
        self._slots: dict[str, tuple[str, ...]] = {}
        self._chatter: dict[str, bool] = {}
        self._holders: dict[tuple[str, str | None, str | None, str | None], str] = {}
        self._memo_lock = threading.Lock()  # forget_texts against warm_texts
        self._memo_gen = 0
        self._embed_workers = EmbedWorkers()  # the query embedded beside the lexical search
        self.overlap_embedding = OVERLAP_EMBEDDING

    def forget_texts(self) -> None:
        """Lock: drop what was kept per text, and end the embedding workers."""
        with self._memo_lock:
            self._memo_gen += 1  # a warm_texts under way stores nothing more
            self._slots, self._chatter, self._holders = {}, {}, {}
        self._embed_workers.close()

    def warm_texts(self, said: Sequence[tuple[str, str | None]],
                   stop: Callable[[], bool] = lambda: False) -> int:
        """Work out ahead what recall keeps per text (its slots, whether it is small talk,
        whom it is about, for a memory that is no fact) for ``said`` (text, speaker), on the
        caller's thread (the lexicon's, at background priority, after the preload): a
        question's first recall then finds them, as a question asked again does (issue 28:
        at 10k memories recall was 2.10x the bare embedding for a new question against 1.85x
        asked again, bench/recall_ab.py, dev). Pure functions of the text, so the answers are
        the same. In slices, each stored only if no lock came meanwhile; stops at
        ``stop()``, at lock, or before the memos' bound (``_TEXT_MEMO``). Returns the texts
        stored."""
        with self._memo_lock:
            gen = self._memo_gen
        done = 0
        for start in range(0, len(said), _WARM_SLICE):
            if stop():
                break
            part = said[start:start + _WARM_SLICE]
            slots_ = {t: slots.slots_of(t) for t, _ in part}
            chatter = {t: is_small_talk(t) for t, _ in part}
            owner = self.owner
            holders: dict[tuple[str, str | None, str | None, str | None], str] = {
                (t, sp, owner, None): currency.holder(t, sp, owner, subject=None)
                for t, sp in part}
            with self._memo_lock:
                if self._memo_gen != gen or len(self._slots) + len(slots_) >= _TEXT_MEMO \
                        or len(self._holders) + len(holders) >= _TEXT_MEMO:
                    break
                self._slots.update(slots_)
                self._chatter.update(chatter)
                self._holders.update(holders)
            done += len(part)
            give_way()  # not beside a recall (app/threads.py): it would share the GIL
        return done

    def _slots_of(self, text: str) -> tuple[str, ...]:
        got = self._slots.get(text)
        if got is None:
            if len(self._slots) >= _TEXT_MEMO:
                self._slots = {}
            got = self._slots[text] = slots.slots_of(text)
        return got

    def _small_talk(self, text: str) -> bool:
        got = self._chatter.get(text)
        if got is None:
            if len(self._chatter) >= _TEXT_MEMO:
                self._chatter = {}
            got = self._chatter[text] = is_small_talk(text)
        return got

    def _holder(self, text: str, speaker: str | None, subject: str | None = None) -> str:
        key = (text, speaker, self.owner, subject)
        got = self._holders.get(key)
        if got is None:
            if len(self._holders) >= _TEXT_MEMO:
                self._holders = {}
            got = self._holders[key] = currency.holder(text, speaker, self.owner,
                                                       subject=subject)
        return got

    # --- 1. query analysis ---------------------------------------------------------------
    def analyze(self, query: str, now: float, known_people: Sequence[str] = ()) -> QueryPlan:
        toks = tuple(query_tokens(query))
        words = set(_WORD.findall(query.lower()))
        # A person is named when every word of their name is in the query.
        people = tuple(p for p in known_people
                       if _WORD.findall(p.lower()) and set(_WORD.findall(p.lower())) <= words)
        temporal = bool(_TEMPORAL.search(query))
        emotional = bool(_EMOTIONAL.search(query))
        procedural = bool(_PROCEDURAL.search(query))
        weights = dict(self.tuning.store_weight)
        if procedural:
            weights["procedural"] = weights.get("procedural", 1.0) * 1.3
        if temporal:
            weights["episodic"] = weights.get("episodic", 1.0) * 1.1
        time_range = parse_time_range(query, now)
        return QueryPlan(query, toks, temporal, time_range, people, emotional,
                         procedural, weights, asks_present(query) and not time_range,
                         now=asks_now(query) and not time_range)

    def known_people(self) -> list[str]:  # speakers and person entities
        return self.db.read(self._known_people_seen)

    def _known_people_seen(self, conn: Any) -> list[str]:
        """``rows.known_people``, read again only when the database changed since this
        connection last read it: ``PRAGMA data_version`` moves with every commit made by
        another connection (the writer's, for a reader), ``total_changes`` with the
        connection's own (one connection for both, ``Database(threaded=False)``). The query
        is a skip-scan of every speaker: 2.7 ms of a 24 ms recall at 10k memories
        (bench/scale.py, dev)."""
        version = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
        seen = self._people_seen.get(id(conn))
        if seen is not None and seen[0] is conn and seen[1] == version:
            return list(seen[2])
        names = self.rows.known_people(conn)
        # The connection itself is kept beside its id so the id cannot be reused meanwhile.
        self._people_seen[id(conn)] = (conn, version, tuple(names))
        return names

    # --- 2.-3. candidates and ranking ----------------------------------------------------
    def recall(self, query: str, *, k: int = 10, now: float, filters: Filters = Filters(),
               qvec: FloatArray | None = None, dedupe: bool = True,
               current: bool | None = None
               ) -> list[Hit]:
        """Best first. ``dedupe=False`` keeps a turn and the episode made from it both (explain
        needs the score of the very memory asked about). ``current``: put the latest answers
        first (None: when the question is about one thing as it is now; True: unless it is
        about the past, as a briefing does; False: never).

        With ``overlap_embedding`` (off by default: ``OVERLAP_EMBEDDING``), the query is
        embedded on a worker (``QueryEmbedding``) while this thread analyses the query and
        runs the lexical searches, which need no vector: onnxruntime releases the GIL, so on
        free cores the wall time is about the longer of the two, not their sum (issue 28).
        The work ends with the call."""
        pending = None
        if self.overlap_embedding and qvec is None and self.embedder is not None \
                and len(self.index) > 0:
            pending = QueryEmbedding(self._embed_workers, self.embedder.embed_one, query)
        try:
            # The lexicon's scan waits while a recall runs (app/threads.py).
            with foreground():
                return self._recall(query, k=k, now=now, filters=filters, qvec=qvec,
                                    dedupe=dedupe, current=current, pending=pending)
        finally:
            if pending is not None:
                pending.join()  # nothing of this call runs on after it

    def _recall(self, query: str, *, k: int, now: float, filters: Filters,
                qvec: FloatArray | None, dedupe: bool, current: bool | None,
                pending: QueryEmbedding | None) -> list[Hit]:
        t = self.tuning
        rows = self.rows
        plan = self.analyze(query, now, self.known_people())
        tokens = query_tokens(query)
        if plan.present:
            tokens = [w for w in tokens if w not in _PRESENT_WORDS] or tokens
        asked_slots = slots.question_slots(query) if t.w_slot > 0 else ()
        names = {w for p in plan.people for w in _WORD.findall(p.lower())}
        # Only a short question ("where do I work") needs its slot searched: a specific one
        # ("which basketball team does Tim support") finds its answer by its own words, and
        # the slot's broad vocabulary only adds noise there (LoCoMo dev R@5 -.0085).
        generic = len([w for w in tokens if w not in names]) <= t.slot_max_words
        tags = [slots.slot_tag(s) for s in asked_slots] if generic else []
        search_tokens = tokens
        # The RAM mirror of the full-text index once built (big vaults), else FTS5: same scores.
        lexical: Sequence[tuple[int, float]] | None = (
            self.lexicon.search(search_tokens, t.lexical_depth) if self.lexicon else None)
        if lexical is None:
            match = rows.fts_query(search_tokens)
            if match and self.lexicon is not None and self.lexicon.building:
                # A big vault in its first seconds after unlock, before the RAM lexicon is
                # ready: skip the neighbour-context column, which matches five times the rows
                # (100k memories: ~50 ms instead of ~300). Ranking is then slightly coarser.
                match = "{text keys} : (" + match + ")"
            lexical = self.db.read(lambda c: rows.fts_search(c, match, t.lexical_depth))
        slotted: Sequence[tuple[int, float]] = ()
        if tags:  # the slots asked about, a lexical search of their own (RecallTuning.w_slot)
            slotted = (self.lexicon.search(tags, t.lexical_depth) if self.lexicon else None) \
                or self.db.read(lambda c: rows.fts_search(c, rows.fts_query(tags),
                                                          t.lexical_depth))
        dense: list[tuple[int, float]] = []
        lo = hi = 0.0
        if self.embedder is not None and len(self.index) > 0:
            if qvec is None:
                qvec = pending.result() if pending is not None else \
                    self.embedder.embed_one(query)
            dense, floor = self.index.search_with_floor(qvec, t.dense_depth)
            if dense:
                hi = dense[0][1]
                lo = floor
        cand_ids = list(dict.fromkeys([i for i, _ in lexical] + [i for i, _ in dense]
                                      + [i for i, _ in slotted]))
        if not cand_ids:
            return []
        meta = self.db.read(lambda c: rows.recall_meta(c, cand_ids))
        if plain(filters):  # the usual recall: the few checks that apply
            cand_ids = visible_plain(cand_ids, meta, filters, now)
        else:
            cand_ids = [i for i in cand_ids
                        if i in meta and self._visible(meta[i], filters, now)]
        if filters.entity_id is not None and cand_ids:
            eid, ids = filters.entity_id, cand_ids
            mentioned = self.db.read(lambda c: rows.mentioning(c, eid, ids))
            cand_ids = [i for i in cand_ids if i in mentioned]
        archived = [i for i in cand_ids if meta[i].status == "archived"]
        if archived and not (filters.include_archived or filters.only_archived):
            # What the person put aside stays out; what decay put aside is searched.
            put_aside = self.db.read(lambda c: rows.archived_by_person(c, archived))
            cand_ids = [i for i in cand_ids if i not in put_aside]
        if not cand_ids:
            return []
        lex = dict(lexical)
        lex_max = max((lex.get(i, 0.0) for i in cand_ids), default=0.0) or 1.0
        slot_of = dict(slotted)
        slot_max = max((slot_of.get(i, 0.0) for i in cand_ids), default=0.0) or 1.0
        # Every candidate gets its true cosine, lexical-only ones too (-.025 R@10 otherwise),
        # scaled between the store's lowest and the best similarity to this query.
        cos = dict(dense)
        missing = [i for i in cand_ids if i not in cos]
        if missing and qvec is not None:
            cos.update(self.index.similarities(qvec, missing))
        span = (hi - lo) if hi - lo > 1e-9 else 1.0
        mention = _mention_patterns(plan.people)
        texts = self.db.read(lambda c: rows.texts(c, cand_ids)) if mention else {}
        # Every candidate's final score, as plain floats; the breakdown (rounded parts, a
        # dict each) only for those that can be shown: 1,150 round() calls and 275 dicts a
        # query were a quarter of recall's own Python (issue 28, bench/scale.py, dev).
        rel: dict[int, float] = {}
        parts: dict[int, tuple[float, float, float]] = {}
        for i in cand_ids:
            lx = lex.get(i, 0.0) / lex_max
            dn = min(1.0, max(0.0, (cos[i] - lo) / span)) if i in cos else 0.0
            sl = slot_of.get(i, 0.0) / slot_max
            rel[i] = t.w_lexical * lx + t.w_dense * dn + t.w_slot * sl
            parts[i] = (lx, dn, sl)
        best_in_session: dict[str, float] = {}
        for i in cand_ids:
            session = meta[i].session
            if session is not None:
                best_in_session[session] = max(best_in_session.get(session, 0.0), rel[i])
        finals: dict[int, float] = {}
        terms: dict[int, tuple[float, float, float, float, float, float]] = {}
        relevances: dict[int, tuple[float, float, float, float]] = {}
        for i in cand_ids:
            m = meta[i]
            session_bonus = t.session_share * best_in_session.get(m.session, 0.0) \
                if m.session is not None else 0.0
            person = 0.0
            if plan.people and (m.speaker in plan.people or (
                    mention and mention.search(texts.get(i, "")))):
                person = t.speaker_boost
            boost = plan.store_weight.get(m.store, 1.0)
            if plan.time_range and plan.time_range[0] <= m.occurred_at < plan.time_range[1]:
                boost *= t.time_range_boost
            if m.status == "archived":
                boost *= t.archived_weight
            relevances[i] = ((rel[i] + session_bonus + person) * boost, session_bonus, person,
                             boost)
        n_head = max(4 * k, 40)
        scoring_ids: Sequence[int] = cand_ids
        if t.hop_weight <= 0 and len(cand_ids) > n_head:
            # The composite (002) is the one part that needs exp and log per candidate. Its
            # recency and frequency lie in [0, 1], so without them a candidate's final score
            # is known to within w_composite * (W_RECENCY + W_FREQUENCY); one whose best case
            # stays below the n_head-th best worst case cannot be shown and is not scored.
            spread = t.w_composite * (policy.W_RECENCY + policy.W_FREQUENCY)
            low = {i: t.w_relevance * relevances[i][0] + t.w_composite * scoring.composite(
                meta[i].importance, 0.0, 0.0, meta[i].emotional, meta[i].social)
                for i in cand_ids}
            bar = heapq.nlargest(n_head, low.values())[-1] - 1e-9  # ulp-safe
            scoring_ids = [i for i in cand_ids if low[i] + spread >= bar]
        for i in scoring_ids:
            m = meta[i]
            relevance, session_bonus, person, boost = relevances[i]
            comp, rec, freq = self._composite_terms(m, now)
            finals[i] = t.w_relevance * relevance + t.w_composite * comp
            terms[i] = (session_bonus, person, boost, comp, rec, freq)

        def breakdown(i: int) -> dict[str, float]:
            lx, dn, sl = parts[i]
            session_bonus, person, boost, comp, rec, freq = terms[i]
            m = meta[i]
            out = {"lexical": round(lx, 4), "dense": round(dn, 4)}
            if sl:
                out["slot"] = round(sl, 4)
            return {**out, "relevance": round(rel[i], 4), "session": round(session_bonus, 4),
                    "person": person, "boost": boost, "composite": comp, "lift": 0.0,
                    "final": finals[i], "importance": m.importance, "recency": rec,
                    "frequency": freq, "emotional": m.emotional, "social": m.social}

        if t.hop_weight > 0:  # the second hop lends to any candidate: every breakdown
            scored = {i: breakdown(i) for i in cand_ids}
            self._second_hop(scored)
            finals = {i: s["final"] for i, s in scored.items()}

        # Ties go to conversation order (session, then turn), as people read them.
        def first(i: int) -> tuple[float, str, int, int]:
            return (-finals[i], meta[i].session or "", meta[i].seq or 0, i)
        head = heapq.nsmallest(n_head, scoring_ids, key=first)  # == sorted(...)[:n_head]
        if t.hop_weight <= 0:
            scored = {i: breakdown(i) for i in head}

        def order(i: int) -> tuple[float, str, int, int]:
            return (-scored[i]["final"], meta[i].session or "", meta[i].seq or 0, i)
        if self._lift_facts(head, meta, scored):
            head.sort(key=order)
        head_texts = self.db.read(lambda c: rows.texts(c, head))
        chatter = [i for i in head if self._small_talk(head_texts.get(i, ""))]
        for i in chatter:
            scored[i]["small_talk"] = t.small_talk_weight
            scored[i]["final"] *= t.small_talk_weight
        if chatter:
            head.sort(key=order)
        # Marks as of the moment asked about: time travel sees a fact that ended later as true.
        point = min(x for x in (now, filters.as_of, filters.known_at) if x is not None)
        marks = self._currency(head, meta, head_texts, point)
        wants_now = plan.now if current is None else (
            current and not _ABOUT_PAST.search(query) and plan.time_range is None)
        if wants_now and self._latest_answers_first(head, meta, scored, head_texts, tokens,
                                                    plan, asked_slots):
            head.sort(key=order)
        refs = self.db.read(lambda c: rows.refs_of(c, head))
        hits: list[Hit] = []
        seen_refs: set[tuple[str, ...]] = set()
        for i in head:
            r = tuple(refs.get(i, []))
            m = meta[i]
            # Dedupe: a turn and the episode made from it carry the same refs; keep the better.
            # What the person confirmed or corrected is never dropped for a copy of its source.
            if dedupe and r and r in seen_refs and not m.user_validated:
                continue
            if r:
                seen_refs.add(r)
            hits.append(Hit(MemoryId(i), Store(m.store), head_texts[i], round(scored[i]["final"], 6), r,
                            m.occurred_at, m.speaker, scored[i], Status(m.status), m.agent,
                            marks.get(i)))
            if len(hits) >= k:
                break
        if filters.min_share is not None and hits:
            floor = filters.min_share * max(h.score for h in hits)
            hits = [h for h in hits if h.score >= floor]
        return self._describe(hits, meta, filters.agent)

    def _second_hop(self, scored: dict[int, dict[str, float]]) -> int:
        """``hops.lend`` with this vault's links and entities (RecallTuning.hop_weight)."""
        from app.services import hops
        t, rows, skip = self.tuning, self.rows, [self.owner] if self.owner else []
        reads: list[hops.Neighbours] = [
            lambda ids: self.db.read(lambda c: rows.linked(c, ids, hops.HOP_KINDS))]
        if t.hop_entities:
            reads.append(lambda ids: self.db.read(
                lambda c: rows.sharing_entities(c, ids, broad=int(t.hop_broad), skip=skip)))
        return hops.lend(scored, hops.Hops(t.hop_weight, int(t.hop_seeds),
                                           bool(t.hop_entities), int(t.hop_broad)), reads)

    def _describe(self, hits: list[Hit], meta: dict[int, RecallMeta], viewer: str | None
                  ) -> list[Hit]:
        """Who wrote each hit, whether the person confirmed it, and a change waiting for it
        in the Inbox (issue 26, ``assistant_change.describe``)."""
        from dataclasses import replace

        from app.services import assistant_change as ac
        d = ac.describe(self.db, self.rows, [
            ac.Said(int(h.id), h.agent, h.store.value, bool(meta[int(h.id)].user_validated),
                    h.currency) for h in hits], viewer)
        return [replace(h, currency=d[int(h.id)].currency, written_by=d[int(h.id)].written_by,
                        confirmed_by_person=d[int(h.id)].confirmed_by_person) for h in hits]

    def _latest_answers_first(self, head: list[int], meta: dict[int, RecallMeta],
                              scored: dict[int, dict[str, float]], texts: dict[int, str],
                              tokens: Sequence[str], plan: QueryPlan,
                              asked_slots: Sequence[str]) -> bool:
        """What is true now (``RecallTuning.now_share``): among the best statements that
        answer the question, the latest first. They keep their place as a block at the top
        (the best of them sets it); inside it, newer goes before older, and the move is
        recorded as ``current``. True if any moved."""
        t = self.tuning
        rels = [scored[i]["relevance"] for i in head]
        if not rels:
            return False
        best = max(rels)
        stems = [w[:5] for w in tokens if len(w) >= 3]
        asked = currency.question_holder(plan.text, plan.people, self.owner)
        chosen = [i for i in head
                  if (scored[i]["relevance"] >= t.now_share * best
                      or set(self._slots_of(texts.get(i, ""))) & set(asked_slots)
                      and scored[i]["relevance"] >= t.now_slot_share * best)
                  and meta[i].status == "active" and "small_talk" not in scored[i]
                  and (set(self._slots_of(texts.get(i, ""))) & set(asked_slots)
                       if asked_slots else _answers(texts.get(i, ""), stems))
                  and (asked is None or currency.compatible_holder(
                      asked, self._holder(texts.get(i, ""), meta[i].speaker),
                      texts.get(i, "").casefold()))]
        chosen = sorted(chosen, key=lambda i: -scored[i]["relevance"])[:t.now_block]
        if len(chosen) < 2:
            return False
        top = max(scored[i]["final"] for i in chosen)
        # Newer said first (a fact: when its source was said); at one moment (a turn and the
        # fact learned from it) the order stays.
        newest = sorted(chosen, key=lambda i: (-meta[i].occurred_at, -scored[i]["final"]))
        for n, i in enumerate(newest):
            target = top + 1e-3 * (len(newest) - n)
            scored[i]["current"] = round(target - scored[i]["final"], 6)
            scored[i]["final"] = target
        return True

    def _currency(self, head: list[int], meta: dict[int, RecallMeta],
                  texts: dict[int, str], point: float) -> dict[int, Currency]:
        """``currency.marks`` over the candidates (turns, episodes and facts alike; small talk
        carries no mark)."""
        facts = [i for i in head if meta[i].store in _FACT_STORES]
        keys = self.db.read(lambda c: self.rows.fact_keys(c, facts)) if facts else {}
        items = []
        for i in head:
            m = meta[i]
            text = texts.get(i, "")
            if self._small_talk(text):
                continue
            vec = self.index.vector(i) if self.embedder is not None else None
            ended = m.valid_until if m.store in _FACT_STORES else None
            if m.status == "superseded" and ended is None:
                ended = m.superseded_at
            if ended is not None and ended > point:
                ended = None  # still true at the moment asked about
            key = keys.get(i)
            qualifier = (key[2] or "").partition("|q=")[2].partition("|")[0] if key else ""
            items.append(currency.Said(
                i, m.occurred_at, self._holder(text, m.speaker, key[0] if key else None), vec,
                slot=f"{key[1]}|{qualifier}" if key else None, ended_at=ended,
                successor=m.superseded_by, topics=frozenset(self._slots_of(text)),
                speaker="owner" if currency.is_owner(m.speaker, self.owner) else (
                    m.speaker or "").casefold(), text=text.casefold()))
        return currency.marks(items, same_topic=self.tuning.same_topic)

    def _lift_facts(self, head: list[int], meta: dict[int, RecallMeta],
                    scored: dict[int, dict[str, float]]) -> bool:
        """A fact outranks its own source episode (or turn) when both are in ``head`` and
        the fact qualifies (RecallTuning.derived_min_share): its final score is raised just
        above the source's and the difference is recorded as ``lift``. True if any moved."""
        facts = [i for i in head if meta[i].store in _FACT_STORES]
        if not facts:
            return False
        sources = self.db.read(lambda c: self.rows.ancestors(c, facts))
        in_head = set(head)
        t = self.tuning

        def matched(s: dict[str, float]) -> float:  # the query-dependent part of final
            return (s["final"] - s["lift"]
                    - t.w_composite * s["composite"])
        moved = False
        for i in facts:
            own = scored[i]
            above = [a for a in sources.get(i, ()) if a in in_head
                     and meta[a].store in _SOURCE_STORES and scored[a]["final"] >= own["final"]]
            if not above:
                continue
            src = scored[max(above, key=lambda a: scored[a]["final"])]
            if not meta[i].user_validated and matched(own) < t.derived_min_share * matched(src):
                continue
            lift = src["final"] - own["final"] + 1e-6
            own["lift"] = round(own["lift"] + lift, 6)
            own["final"] += lift
            moved = True
        return moved

    def _visible(self, m: RecallMeta, f: Filters, now: float) -> bool:
        store, status, occurred, created = m.store, m.status, m.occurred_at, m.created_at
        valid_from, valid_until, superseded_at = m.valid_from, m.valid_until, m.superseded_at
        if f.stores is not None and store not in f.stores:
            return False
        if f.agent is not None and m.agent not in ("global", f.agent):
            return False
        if f.context is not None and m.context not in (None, f.context):
            return False
        if f.since is not None and occurred < f.since:
            return False
        if f.until is not None and occurred >= f.until:
            return False
        if f.happened_by is not None and occurred > f.happened_by:
            return False  # an explicit ``now`` never returns what happened after it
        if f.only_archived and status != "archived":
            return False
        point = now
        if f.as_of is not None:  # said and true at D
            if occurred > f.as_of:
                return False
            point = min(point, f.as_of)
        if f.known_at is not None:  # learned by D
            if created > f.known_at:
                return False
            point = min(point, f.known_at)
        if f.as_of is not None or f.known_at is not None:
            # Valid at the time asked about (as_of, else known_at): valid_until exclusive.
            at = f.as_of if f.as_of is not None else f.known_at
            assert at is not None
            if valid_from is not None and valid_from > at:
                return False
            if valid_until is not None and valid_until <= at:
                return False
        if status == "superseded" and not f.include_superseded:
            if f.known_at is not None:
                if superseded_at is not None and superseded_at <= f.known_at:
                    return False  # already replaced by then
            elif f.as_of is not None:
                if valid_until is None:
                    return False  # corrected or refuted, not a state that later changed
            else:
                return False
        if store == "short_term":
            # Turns are the current session's scratchpad; older ones live on as episodes.
            return point - occurred <= policy.DAY
        return True

    @staticmethod
    def _composite_terms(m: RecallMeta, now: float) -> tuple[float, float, float]:
        """A candidate's composite score (002) now, with its recency and frequency."""
        last_access = m.last_accessed_at
        reference = m.occurred_at if last_access is None else max(m.occurred_at, last_access)
        rec = scoring.recency(m.decay_class, (now - reference) / policy.HOUR)
        freq = scoring.frequency(m.access_count, (now - last_access) / policy.HOUR
                                 if last_access is not None else None)
        return scoring.composite(m.importance, rec, freq, m.emotional, m.social), rec, freq

    # --- 5. reinforcement ----------------------------------------------------------------
    def touch(self, ids: Sequence[int], now: float) -> None:
        if not ids:
            return

        rows = self.rows

        def run(conn: Any) -> None:
            updates = []
            for mid, s in rows.reinforcement_state(conn, ids).items():
                new_imp, r_at, e_at = scoring.reinforce(
                    s.importance, s.emotional, s.access_count, s.last_accessed_at,
                    s.reinforced_at, s.emotional_reinforced_at, now)
                updates.append((new_imp, r_at, e_at, now,
                                scoring.frequency(s.access_count + 1, 0.0), mid))
            rows.touch(conn, updates)
            # Being used moves 003's usage success (app/services/confidence.py, issue 27).
            confidence.refresh_confidence(conn, rows, ids)
        self.db.write_sync(run)


__all__ = ["Filters", "Hit", "QueryPlan", "RecallService", "RecallTuning", "TUNING",
           "parse_time_range"]
