"""The consolidation pipeline's queries (docs/memory-model.md#consolidation): what each step reads
and writes, as named rows. Layer: storage. Reads run on a reader, writes inside ``Database.write``
(the caller's transaction: a step reads, decides in app/services/consolidation and writes through
these functions on the one connection it was given).

Implements ``app.ports.ConsolidationRows`` as a module. Nothing here decides anything: which
facts agree, which memory wins, when a memory fades are the pipeline's rules; this module
only knows the tables. The run log (``run``, ``run_change``) is in storage/runlog.py, the
inbox's table (``contradiction``) in storage/inbox.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence

from app.domain.memory import Draft, LinkKind, Memory, MemoryId, Scores
from app.ports import (
    ComputedStatistic,
    DecayRow,
    EntityKey,
    EntityMerge,
    EntityScope,
    EntityState,
    EpisodeRow,
    EpisodeSignal,
    FactRow,
    HabitEpisode,
    Json,
    KnownHabit,
    MemoryState,
    MentionSource,
    MergeFact,
    MergeHabit,
    RelationRow,
    Scope,
    SessionTurn,
    SummaryFact,
    TopicMention,
)
from storage import lifecycle, repo
from storage import scores as _scores
from storage.batching import chunks, marks
from storage.browse import listed_clause
from storage.sqlcipher import Connection

# This module's part of the port lives in storage/scores.py (issue 27).
boost_rows = _scores.boost_rows
factor_rows = _scores.factor_rows
set_boosts = _scores.set_boosts
set_confidence_factors = _scores.set_confidence_factors
used_turns_unpromoted = _scores.used_turns_unpromoted


# --- shared with the rest of storage ---------------------------------------------------------

def get_setting(conn: Connection, key: str) -> Json:
    return repo.get_setting(conn, key)


def put_setting(conn: Connection, key: str, value: Json) -> None:
    repo.put_setting(conn, key, value)


def get_memory(conn: Connection, mid: int) -> Memory | None:
    return repo.get_memory(conn, mid)


def insert_memory(conn: Connection, d: Draft, *, now: float, decay_class: str, scores: Scores,
                  confidence: float, fts_keys: str = "") -> MemoryId:
    return repo.insert_memory(conn, d, now=now, decay_class=decay_class, scores=scores,
                              confidence=confidence, fts_keys=fts_keys)


def add_history(conn: Connection, mid: int, now: float, action: str, detail: str | None
                ) -> None:
    repo.add_history(conn, mid, now, action, None, detail)


def forget(conn: Connection, ids: set[int]) -> None:
    """Delete these memories outright (what a run made, on undo; a statistic left with
    nothing to compute it from)."""
    lifecycle.execute_forget(conn, ids, set())


# --- step 1: extraction ----------------------------------------------------------------------

_EPISODE_COLS = "id, text, speaker, occurred_at, agent, context"


def episodes_after(conn: Connection, upto: int) -> list[EpisodeRow]:
    """Active episodes with an id above the watermark, by id."""
    return [EpisodeRow(*r) for r in conn.execute(
        f"SELECT {_EPISODE_COLS} FROM memory WHERE store = 'episodic' "
        f"AND status = 'active' AND id > ? AND {NOT_SUMMARY} ORDER BY id", (upto,))]


def episodes_by_id(conn: Connection, ids: Sequence[int]) -> list[EpisodeRow]:
    """These memories (a failed batch's episodes, retried), whatever their state."""
    out: list[EpisodeRow] = []
    for chunk in chunks(ids):
        out += [EpisodeRow(*r) for r in conn.execute(
            f"SELECT {_EPISODE_COLS} FROM memory WHERE id IN ({marks(len(chunk))})", chunk)]
    return out


def speaker_episodes(conn: Connection, speakers: Sequence[str], scope: Scope
                     ) -> dict[int, tuple[str, float]]:
    """id -> (speaker, occurred_at) of the active episodes these speakers said in ``scope``."""
    out: dict[int, tuple[str, float]] = {}
    agent, context = scope
    for chunk in chunks(list(speakers)):
        for r in conn.execute(
                "SELECT id, speaker, occurred_at FROM memory WHERE store = 'episodic' "
                f"AND status = 'active' AND speaker IN ({marks(len(chunk))}) AND agent = ? "
                "AND context IS ?", (*chunk, agent, context)):
            out[int(r[0])] = (r[1], float(r[2]))
    return out


def known_people(conn: Connection, agent: str) -> list[str]:
    """Speakers and person entities of ``agent`` and of the shared global scope."""
    agents = ("global", agent)
    rows = conn.execute("SELECT DISTINCT speaker FROM memory WHERE agent IN (?, ?) AND "
                        "speaker IS NOT NULL LIMIT 500", agents).fetchall()
    rows += conn.execute("SELECT name FROM entity WHERE kind = 'person' AND agent IN (?, ?) "
                         "LIMIT 2000", agents).fetchall()
    return list(dict.fromkeys(r[0] for r in rows if r[0]))


def save_llm_reply(conn: Connection, at: float, raw: str, error: str,
                   source_ids: Iterable[int]) -> None:
    """An LLM reply that stayed malformed, kept (encrypted) with the episodes it was about."""
    rid = conn.execute("INSERT INTO llm_reply (at, raw, error) VALUES (?,?,?)",
                       (at, raw, error)).lastrowid
    conn.executemany("INSERT OR IGNORE INTO llm_reply_source VALUES (?, ?)",
                     [(rid, mid) for mid in source_ids])


def scope_of(conn: Connection, mid: int) -> Scope | None:
    row = conn.execute("SELECT agent, context FROM memory WHERE id = ?", (mid,)).fetchone()
    return None if row is None else (row[0], row[1])


def scopes(conn: Connection, ids: Sequence[int]) -> dict[int, Scope]:
    out: dict[int, Scope] = {}
    for chunk in chunks(ids):
        out.update({r[0]: (r[1], r[2]) for r in conn.execute(
            f"SELECT id, agent, context FROM memory WHERE id IN ({marks(len(chunk))})", chunk)})
    return out


def fact_texts_matching(conn: Connection, tokens: Iterable[str], scope: Scope, limit: int
                        ) -> list[tuple[int, str]]:
    """(id, text) of the active facts and procedures of ``scope`` among the best ``limit``
    full-text hits of ``tokens``, best first."""
    match = repo.fts_query(tokens)
    if not match:
        return []
    out = []
    for mid, _score in repo.fts_search(conn, match, limit):
        row = conn.execute("SELECT text FROM memory WHERE id = ? AND status = 'active' "
                           "AND store IN ('semantic','procedural') AND agent = ? AND "
                           "context IS ?", (mid, *scope)).fetchone()
        if row:
            out.append((int(mid), str(row[0])))
    return out


def given_from(conn: Connection, ids: Sequence[int]
               ) -> dict[int, list[tuple[str, str, str | None]]]:
    """Per turn, the (subject, predicate, object) of the facts already derived from it: what
    an assistant gave with ``remember_fact(source_ids=...)`` before extraction read the turn
    (issue 26: extraction does not give it again)."""
    out: dict[int, list[tuple[str, str, str | None]]] = {}
    for part in chunks(list(ids)):
        for dst, subj, pred, obj in conn.execute(
                "SELECT l.dst, f.subject, f.predicate, f.object FROM link l JOIN fact f "
                f"ON f.memory_id = l.src WHERE l.kind = 'DERIVED_FROM' AND l.dst IN "
                f"({marks(len(part))})", part):
            out.setdefault(int(dst), []).append((str(subj or ""), str(pred or ""),
                                                 None if obj is None else str(obj)))
    return out


def active_facts(conn: Connection, subject: str, scope: Scope) -> list[FactRow]:
    """The active facts about ``subject`` (case-insensitive) in ``scope``."""
    return [FactRow(*r) for r in conn.execute(
        "SELECT m.id, f.subject, f.predicate, f.object, f.category, m.occurred_at, "
        "m.confidence, m.user_validated, m.status, m.text, p.kind FROM memory m "
        "JOIN fact f ON f.memory_id = m.id LEFT JOIN procedure p ON p.memory_id = m.id "
        "WHERE m.status = 'active' AND lower(f.subject) = lower(?) AND m.agent = ? AND "
        "m.context IS ?", (subject, *scope))]


def latest_occurred(conn: Connection, ids: Sequence[int]) -> float | None:
    """The latest ``occurred_at`` of these memories (None if none exists)."""
    if not ids:
        return None
    row = conn.execute(f"SELECT max(occurred_at) FROM memory WHERE id IN "
                       f"({marks(len(ids))})", list(ids)).fetchone()
    return None if row is None or row[0] is None else float(row[0])


def occurred_at(conn: Connection, mid: int) -> float:
    return float(conn.execute("SELECT occurred_at FROM memory WHERE id = ?",
                              (mid,)).fetchone()[0])


def mark_preference(conn: Connection, mid: int, subject: str, predicate: str,
                    obj: str | None, category: str) -> None:
    """A procedural fact: its procedure row says preference, and it keeps a fact row too
    (subject and predicate, for contradiction checks)."""
    conn.execute("UPDATE procedure SET kind = 'preference', trigger = ?, actions = ? "
                 "WHERE memory_id = ?", (predicate, json.dumps([obj]), mid))
    conn.execute("INSERT INTO fact (memory_id, subject, predicate, object, category) "
                 "VALUES (?,?,?,?,?)", (mid, subject, predicate, obj, category))


def add_link(conn: Connection, src: int, dst: int, kind: LinkKind, now: float,
             weight: float = 1.0) -> bool:
    """True if the link is new (an existing one is left as it is)."""
    cur = conn.execute("INSERT OR IGNORE INTO link (src, dst, kind, weight, created_at) "
                       "VALUES (?, ?, ?, ?, ?)", (src, dst, kind.value, weight, now))
    return bool(cur.rowcount)


def source_count(conn: Connection, mid: int) -> int:
    return int(conn.execute("SELECT count(*) FROM link WHERE src = ? AND kind = "
                            "'DERIVED_FROM'", (mid,)).fetchone()[0])


def set_confidence(conn: Connection, mid: int, confidence: float) -> None:
    conn.execute("UPDATE memory SET confidence = ? WHERE id = ?", (confidence, mid))


def set_valid_until(conn: Connection, mid: int, until: float | None) -> None:
    conn.execute("UPDATE memory SET valid_until = ? WHERE id = ?", (until, mid))


def set_agent(conn: Connection, mid: int, agent: str) -> None:
    """Move a memory to another scope ("global": the person's; issue 26, an accepted change)."""
    conn.execute("UPDATE memory SET agent = ? WHERE id = ?", (agent, mid))


def agent_of(conn: Connection, mid: int) -> str | None:
    row = conn.execute("SELECT agent FROM memory WHERE id = ?", (mid,)).fetchone()
    return None if row is None else str(row[0])


def valid_from_of(conn: Connection, mid: int) -> float | None:
    row = conn.execute("SELECT valid_from FROM memory WHERE id = ?", (mid,)).fetchone()
    return None if row is None or row[0] is None else float(row[0])


def validate(conn: Connection, mid: int) -> None:
    """The person says this memory is right: user-validated, confidence 1.0."""
    conn.execute("UPDATE memory SET user_validated = 1, confidence = 1.0 WHERE id = ?", (mid,))


def states(conn: Connection, ids: Sequence[int]) -> dict[int, MemoryState]:
    """The current state of each existing memory of ``ids``, in that order."""
    out = {}
    for mid in ids:
        r = conn.execute("SELECT status, superseded_by, valid_until, user_validated, confidence "
                         "FROM memory WHERE id = ?", (mid,)).fetchone()
        if r:
            out[mid] = MemoryState(*r)
    return out


def restore_state(conn: Connection, mid: int, state: MemoryState) -> None:
    conn.execute("UPDATE memory SET status = ?, superseded_by = ?, valid_until = ?, "
                 "user_validated = ?, confidence = ? WHERE id = ?", (*state, mid))


def supersede(conn: Connection, loser: int, winner: int, now: float) -> MemoryState | None:
    """``winner`` supersedes ``loser`` (with its history line); returns ``loser``'s state
    before."""
    prior = states(conn, (loser,)).get(loser)
    lifecycle.supersede(conn, loser, winner, now)
    repo.add_history(conn, loser, now, "superseded", None, f"superseded by {winner}")
    return prior


# --- step: links between episodes and facts ---------------------------------------------------

def link_mark(conn: Connection) -> Json:
    """What the links step depends on: the newest memory id and the number of mentions."""
    return [int(conn.execute("SELECT coalesce(max(id), 0) FROM memory").fetchone()[0]),
            int(conn.execute("SELECT count(*) FROM entity_mention").fetchone()[0])]


def unlinked_successions(conn: Connection) -> list[tuple[int, int]]:
    """(episode, the one before it in its conversation) for every pair of consecutive
    episodes of one session and scope that has no PRECEDED_BY link yet."""
    return [(int(a), int(b)) for a, b in conn.execute(
        "WITH ordered AS (SELECT id, LAG(id) OVER (PARTITION BY session, agent, "
        "coalesce(context, '') ORDER BY occurred_at, id) AS prev FROM memory "
        "WHERE store = 'episodic' AND status IN ('active', 'archived') AND session IS NOT NULL "
        f"AND session != '' AND {NOT_SUMMARY}) "
        "SELECT o.id, o.prev FROM ordered o WHERE o.prev IS NOT NULL AND NOT EXISTS ("
        "SELECT 1 FROM link l WHERE l.src = o.id AND l.dst = o.prev AND l.kind = 'PRECEDED_BY')")]


def topic_mentions(conn: Connection, kinds: Sequence[str]) -> list[TopicMention]:
    """Episodes that mention an entity of ``kinds``, by entity then time."""
    q = marks(len(kinds))
    return [TopicMention(*r) for r in conn.execute(
        "SELECT em.entity_id, m.id, m.session, m.agent, m.context, m.occurred_at "
        "FROM entity_mention em JOIN entity e ON e.id = em.entity_id "
        "JOIN memory m ON m.id = em.memory_id "
        f"WHERE e.kind IN ({q}) AND m.store = 'episodic' AND m.status = 'active' "
        "AND m.session IS NOT NULL ORDER BY em.entity_id, m.occurred_at, m.id", list(kinds))]


def facts_sharing_entities(conn: Connection, mid: int, skip: Sequence[str], limit: int
                           ) -> list[int]:
    """The newest other active facts of ``mid``'s scope that mention an entity it mentions
    (not the entities named in ``skip``, the owner, nor anyone who speaks in the episodes)."""
    q = marks(len(skip)) if skip else "''"
    return [int(r[0]) for r in conn.execute(
        "SELECT DISTINCT o.id FROM entity_mention a JOIN entity e ON e.id = a.entity_id "
        "JOIN entity_mention b ON b.entity_id = a.entity_id AND b.memory_id != a.memory_id "
        "JOIN memory o ON o.id = b.memory_id JOIN memory m ON m.id = a.memory_id "
        f"WHERE a.memory_id = ? AND e.name_key NOT IN ({q}) AND o.store = 'semantic' "
        # Not the people talking: every fact is about them, so sharing them relates nothing.
        "AND e.name_key NOT IN (SELECT DISTINCT lower(speaker) FROM memory WHERE "
        "store = 'episodic' AND speaker IS NOT NULL) "
        "AND o.status = 'active' AND o.agent = m.agent AND coalesce(o.context, '') = "
        "coalesce(m.context, '') ORDER BY o.occurred_at DESC, o.id DESC LIMIT ?",
        [mid, *skip, limit])]


def merge_candidates(conn: Connection) -> tuple[list[MergeFact], list[MergeHabit]]:
    """Active facts and habits not waiting in the Inbox, as ``app.services.merge`` reads
    them."""
    free = ("NOT EXISTS (SELECT 1 FROM contradiction c WHERE c.status = 'open' AND "
            "(c.a = m.id OR c.b = m.id))")
    facts = [MergeFact(*r) for r in conn.execute(
        "SELECT m.id, m.agent, m.context, f.subject, f.predicate, f.object, m.occurred_at, "
        "m.user_validated FROM memory m JOIN fact f ON f.memory_id = m.id "
        "WHERE m.store = 'semantic' AND m.status = 'active' AND f.subject IS NOT NULL "
        f"AND f.predicate IS NOT NULL AND f.object IS NOT NULL AND {free}")]
    habits = [MergeHabit(*r) for r in conn.execute(
        "SELECT m.id, m.agent, m.context, coalesce(f.subject, m.speaker, ''), m.text, "
        "p.trigger, m.occurred_at FROM memory m LEFT JOIN fact f ON f.memory_id = m.id "
        "LEFT JOIN procedure p ON p.memory_id = m.id WHERE m.store = 'procedural' AND "
        "m.status = 'active' AND (f.predicate = 'habit' OR (p.kind = 'procedure' AND "
        f"p.trigger IS NOT NULL)) AND {free}")]
    return facts, habits


def derived_sources(conn: Connection, mid: int) -> list[int]:
    return [int(r[0]) for r in conn.execute(
        "SELECT dst FROM link WHERE src = ? AND kind = 'DERIVED_FROM'", (mid,))]


# --- step 2: entities ------------------------------------------------------------------------

def mention_sources(conn: Connection) -> Iterator[MentionSource]:
    """Every active episode, fact and procedure, lazily (the whole store is read)."""
    for r in conn.execute("SELECT id, text, speaker, agent, context FROM memory WHERE store IN "
                          "('episodic','semantic','procedural') AND status = 'active' "
                          f"AND {NOT_SUMMARY}"):
        yield MentionSource(*r)


def relations(conn: Connection) -> list[RelationRow]:
    """Stated relations (``predicate = 'relation'``): both sides are people."""
    return [RelationRow(*r) for r in conn.execute(
        "SELECT f.subject, f.object, m.agent, m.context FROM fact f JOIN memory m "
        "ON m.id = f.memory_id WHERE f.predicate = 'relation'")]


def entity_keys(conn: Connection) -> list[EntityKey]:
    return [EntityKey(*r) for r in conn.execute(
        "SELECT id, name_key, kind, agent, context FROM entity")]


def add_entity(conn: Connection, kind: str, name: str, scope: Scope, now: float) -> int:
    return int(conn.execute(
        "INSERT INTO entity (kind, name, name_key, agent, context, created_at, updated_at) "
        "VALUES (?,?,?,?,?,?,?)", (kind, name, name.casefold(), *scope, now, now)).lastrowid or 0)


def add_mention(conn: Connection, entity_id: int, mid: int) -> bool:
    """True if the mention is new."""
    return bool(conn.execute("INSERT OR IGNORE INTO entity_mention VALUES (?, ?)",
                             (entity_id, mid)).rowcount)


# --- step 4: habits --------------------------------------------------------------------------

def habit_episodes(conn: Connection) -> list[HabitEpisode]:
    """Active episodes in time order."""
    return [HabitEpisode(*r) for r in conn.execute(
        "SELECT id, text, coalesce(speaker, ''), occurred_at, coalesce(session, ''), "
        "agent, context FROM memory WHERE store = 'episodic' AND status = 'active' "
        f"AND {NOT_SUMMARY} ORDER BY occurred_at, id")]


def procedure_triggers(conn: Connection) -> dict[tuple[str, Scope], KnownHabit]:
    """Every habit already known (any status: one superseded is not made again), by
    (trigger, scope)."""
    return {(r[0], (r[1], r[2])): KnownHabit(int(r[3]), r[4], int(r[5]), int(r[6]))
            for r in conn.execute(
                "SELECT p.trigger, m.agent, m.context, m.id, m.status, p.success_count, "
                "p.failure_count FROM procedure p JOIN memory m ON m.id = p.memory_id "
                "WHERE p.kind = 'procedure' AND p.trigger IS NOT NULL")}


def set_procedure_counts(conn: Connection, mid: int, success: int, failure: int) -> None:
    conn.execute("UPDATE procedure SET success_count = ?, failure_count = ? WHERE memory_id = ?",
                 (success, failure, mid))


def mark_procedure(conn: Connection, mid: int, trigger: str, actions: Sequence[str],
                   success_count: int, failure_count: int = 0) -> None:
    conn.execute("UPDATE procedure SET kind = 'procedure', trigger = ?, actions = ?,"
                 " success_count = ?, failure_count = ? WHERE memory_id = ?",
                 (trigger, json.dumps(list(actions)), success_count, failure_count, mid))


# --- step: short-term summaries -------------------------------------------------------------

# Episodes that summarise a conversation (issue 27 item 2): read by recall, never again by
# extraction, habits, statistics or the succession links (their turns already were).
NOT_SUMMARY = "id NOT IN (SELECT memory_id FROM episode WHERE event_type = 'summary')"


def summary_turns(conn: Connection) -> list[SessionTurn]:
    """Active short-term turns of a conversation that no summary covers yet, by
    conversation and order."""
    return [SessionTurn(*r) for r in conn.execute(
        "SELECT m.id, m.session, m.agent, m.context, m.speaker, m.text, m.occurred_at, "
        "r.salience FROM memory m LEFT JOIN routing r ON r.memory_id = m.id "
        "WHERE m.store = 'short_term' AND m.status = 'active' AND m.session IS NOT NULL "
        "AND m.session != '' AND NOT EXISTS (SELECT 1 FROM link l JOIN episode e "
        "ON e.memory_id = l.src WHERE l.dst = m.id AND l.kind = 'DERIVED_FROM' "
        "AND e.event_type = 'summary') "
        "ORDER BY m.session, m.agent, coalesce(m.context, ''), m.seq, m.occurred_at, m.id")]


def turn_event_vectors(conn: Connection, turns: Sequence[int], model: str
                       ) -> dict[int, bytes]:
    """Turn id -> the stored vector (``model``'s, float32 bytes) of the event kept from it
    (the event's DERIVED_FROM link to its turn; summaries are not such events): what the
    summaries step ranks a turn's sentences by instead of embedding them again."""
    out: dict[int, bytes] = {}
    for part in chunks(list(turns)):
        for turn, vec in conn.execute(
                "SELECT l.dst, v.vec FROM link l CROSS JOIN memory e ON e.id = l.src "
                "JOIN vector v ON v.memory_id = e.id "
                f"WHERE l.dst IN ({marks(len(part))}) AND l.kind = 'DERIVED_FROM' "
                "AND e.store = 'episodic' AND v.model = ? AND NOT EXISTS (SELECT 1 FROM "
                "episode ep WHERE ep.memory_id = e.id AND ep.event_type = 'summary') "
                "ORDER BY l.dst, l.src", [*part, model]):
            out.setdefault(int(turn), bytes(vec))
    return out


def route_by_llm(conn: Connection, episode: int, score: float, stores: Sequence[str],
                 reason: str) -> tuple[int, dict[str, Json]] | None:
    """The LLM's routing decision for the turn ``episode`` was made from: (turn id, the
    decision it replaces, {} for none), or None when the episode has no turn."""
    row = conn.execute("SELECT l.dst FROM link l JOIN memory t ON t.id = l.dst "
                       "WHERE l.src = ? AND l.kind = 'DERIVED_FROM' AND t.store = 'short_term' "
                       "ORDER BY l.dst LIMIT 1", (episode,)).fetchone()
    if row is None:
        return None
    turn = int(row[0])
    old = conn.execute("SELECT salience, stores, reason, by FROM routing WHERE memory_id = ?",
                       (turn,)).fetchone()
    prior: dict[str, Json] = {} if old is None else {
        "salience": float(old[0]), "stores": str(old[1]), "reason": str(old[2]),
        "by": str(old[3])}
    repo.put_routing(conn, [(turn, score, stores, reason, "llm")])
    return turn, prior


# --- step 5: implicit statistics -------------------------------------------------------------

def episode_signals(conn: Connection) -> Iterator[EpisodeSignal]:
    """Every episode the person has not forgotten, archived ones too."""
    for r in conn.execute("SELECT occurred_at, emotional, speaker, agent, context FROM memory "
                          "WHERE store = 'episodic' AND status IN ('active', 'archived') "
                          f"AND {NOT_SUMMARY}"):
        yield EpisodeSignal(*r)


def top_person(conn: Connection, scope: Scope) -> tuple[str, int] | None:
    """The person entity of ``scope`` with the most memories, and their count: the memories
    their list shows (``storage.browse.listed_clause``, as People & Projects and the entity
    card count them; every mention made Insights say "Sam (21 memories)" beside a list of
    20, issue 25). Ties go to the name first in order, as in People & Projects."""
    listed, params = listed_clause()
    row = conn.execute(
        "SELECT e.name, count(m.id) AS n FROM entity e JOIN entity_mention em ON "
        f"em.entity_id = e.id JOIN memory m ON m.id = em.memory_id AND {listed} "
        "WHERE e.kind = 'person' AND e.agent = ? AND "
        "e.context IS ? AND e.status != 'merged' GROUP BY e.id ORDER BY n DESC, e.name "
        "LIMIT 1", [*params, *scope]).fetchone()
    return None if row is None else (row[0], int(row[1]))


def statistics(conn: Connection) -> list[ComputedStatistic]:
    return [ComputedStatistic(*r) for r in conn.execute(
        "SELECT s.metric, s.memory_id, s.value, s.sample_size, m.agent, m.context FROM "
        "statistic s JOIN memory m ON m.id = s.memory_id")]


def update_statistic(conn: Connection, mid: int, value: float, sample_size: int, text: str,
                     now: float) -> None:
    """A recomputed statistic: its numbers, its sentence and the sentence's full-text row."""
    conn.execute("UPDATE statistic SET value = ?, sample_size = ?, computed_at = ?"
                 " WHERE memory_id = ?", (value, sample_size, now, mid))
    conn.execute("UPDATE memory SET text = ? WHERE id = ?", (text, mid))
    repo.replace_fts_row(conn, mid, text)


# --- step 6: decay ---------------------------------------------------------------------------

def decay_rows(conn: Connection) -> list[DecayRow]:
    return [DecayRow(*r) for r in conn.execute(
        "SELECT id, store, occurred_at, last_accessed_at, access_count, importance, "
        "emotional, social, decay_class, user_validated, created_at FROM memory "
        "WHERE status = 'active'")]


def archive(conn: Connection, mid: int) -> None:
    conn.execute("UPDATE memory SET status = 'archived' WHERE id = ?", (mid,))


def was_promoted(conn: Connection, mid: int) -> bool:
    return conn.execute("SELECT 1 FROM link WHERE dst = ? AND kind = 'PROMOTED_FROM'",
                        (mid,)).fetchone() is not None


def set_scores(conn: Connection, updates: Sequence[tuple[float, float, float, int]]) -> None:
    """(recency, frequency, composite, id) for each memory rescored."""
    conn.executemany("UPDATE memory SET recency = ?, frequency = ?, composite = ? "
                     "WHERE id = ?", updates)


# --- step 7: entity summaries ----------------------------------------------------------------

def entity_scopes(conn: Connection) -> list[EntityScope]:
    return [EntityScope(*r) for r in conn.execute("SELECT id, agent, context FROM entity WHERE status != 'merged'")]


def summary_facts(conn: Connection, entity: EntityScope, limit: int = 40) -> list[SummaryFact]:
    """The entity's active facts and procedures of its own scope, most confident first."""
    return [SummaryFact(*r) for r in conn.execute(
        "SELECT m.text, m.occurred_at, m.last_accessed_at, m.access_count, m.created_at "
        "FROM memory m JOIN entity_mention em ON em.memory_id = m.id WHERE em.entity_id = ? AND "
        "m.status = 'active' AND m.store IN ('semantic','procedural') AND m.agent = ? "
        "AND m.context IS ? ORDER BY m.confidence DESC, m.id DESC LIMIT ?",
        (entity.id, entity.agent, entity.context, limit))]


def set_summary(conn: Connection, entity_id: int, summary: str | None, now: float) -> None:
    conn.execute("UPDATE entity SET summary = ?, updated_at = ? WHERE id = ?",
                 (summary, now, entity_id))


# --- the owner's name (issue 23 item 4) -------------------------------------------------------

def rename_subject(conn: Connection, old: Sequence[str], new: str) -> int:
    """Facts about any of ``old`` (case-insensitive: "User", "user", "human", a former name)
    become facts about ``new``: their subject, the name in their sentence and its full-text
    row; person entities so named are renamed (merged into ``new``'s when it exists). Returns
    how many facts changed."""
    import re
    keys = sorted({o.strip().casefold() for o in old if o.strip()} - {new.casefold()})
    if not keys:
        return 0
    ph = ",".join("?" * len(keys))
    rows = conn.execute(
        f"SELECT f.memory_id, f.subject, m.text FROM fact f JOIN memory m ON m.id = "
        f"f.memory_id WHERE lower(f.subject) IN ({ph})", keys).fetchall()
    for mid, subject, text in rows:
        renamed = re.sub(rf"\b{re.escape(subject)}\b", new, text) if subject else text
        conn.execute("UPDATE fact SET subject = ? WHERE memory_id = ?", (new, mid))
        if renamed != text:
            conn.execute("UPDATE memory SET text = ? WHERE id = ?", (renamed, mid))
            repo.replace_fts_row(conn, mid, renamed)
    for eid, agent, context in conn.execute(
            f"SELECT id, agent, context FROM entity WHERE kind = 'person' AND name_key IN ({ph})",
            keys).fetchall():
        target = conn.execute(
            "SELECT id FROM entity WHERE kind = 'person' AND name_key = ? AND agent = ? AND "
            "context IS ?", (new.casefold(), agent, context)).fetchone()
        if target is None:
            conn.execute("UPDATE entity SET name = ?, name_key = ? WHERE id = ?",
                         (new, new.casefold(), eid))
        else:
            conn.execute("INSERT OR IGNORE INTO entity_mention (entity_id, memory_id) "
                         "SELECT ?, memory_id FROM entity_mention WHERE entity_id = ?",
                         (target[0], eid))
            conn.execute("DELETE FROM entity WHERE id = ?", (eid,))
    return len(rows)


# --- words about memory (issue 23 item 5) ----------------------------------------------------

def memories_about(conn: Connection, tokens: Sequence[str], scope: Scope, before: float,
                   limit: int = 200) -> list[int]:
    """Memories of ``scope`` said before ``before`` whose text holds every one of ``tokens``
    (full text, stemmed as the index stems): what "forget what I told you about X" names."""
    quoted = ['"' + t.replace('"', '""') + '"' for t in tokens if t]
    if not quoted:
        return []
    rows = conn.execute(
        "SELECT m.id FROM memory_fts f JOIN memory m ON m.id = f.rowid WHERE memory_fts MATCH "
        "? AND m.agent = ? AND m.context IS ? AND m.occurred_at < ? ORDER BY m.id LIMIT ?",
        ("{text} : (" + " AND ".join(quoted) + ")", *scope, before, limit)).fetchall()
    return [int(r[0]) for r in rows]


def ask_forget(conn: Connection, who: str, ids: Sequence[int], query: str, reason: str,
               now: float) -> int:
    """File a forget request for the person to confirm (the Inbox's forget requests)."""
    from storage import agents
    return agents.add_pending_forget(conn, who, [int(i) for i in ids], query, reason, now)


# Outcomes of episodes (issue 27 item 8): the pipeline's ``outcomes`` step and habits.
from storage.episodes import episode_outcome as episode_outcome  # noqa: E402
from storage.episodes import episode_outcomes as episode_outcomes  # noqa: E402
from storage.episodes import outcome_turns as outcome_turns  # noqa: E402
from storage.episodes import set_episode_outcome as set_episode_outcome  # noqa: E402

# --- issue 27 item 3: archives and one entity per thing ---------------------------------------

def entity_states(conn: Connection) -> list[EntityState]:
    """Every entity with its mention count and when its newest mention happened."""
    return [EntityState(*r) for r in conn.execute(
        "SELECT e.id, e.agent, e.context, e.name, e.name_key, e.kind, e.status, e.was_kind, "
        "e.merged_into, count(em.memory_id), max(m.occurred_at) FROM entity e "
        "LEFT JOIN entity_mention em ON em.entity_id = e.id "
        "LEFT JOIN memory m ON m.id = em.memory_id AND m.status != 'forgotten' "
        "GROUP BY e.id ORDER BY e.id")]


def project_mentions(conn: Connection) -> list[tuple[int, str]]:
    """(entity id, text) of every memory that mentions an active project, oldest first."""
    return [(int(r[0]), str(r[1])) for r in conn.execute(
        "SELECT em.entity_id, m.text FROM entity_mention em JOIN entity e ON e.id = "
        "em.entity_id JOIN memory m ON m.id = em.memory_id WHERE e.kind = 'project' AND "
        "e.status = 'active' AND m.status != 'forgotten' ORDER BY m.occurred_at, m.id")]


def archive_entity(conn: Connection, eid: int, ended_at: float, how: str) -> str:
    """Entity ``eid`` becomes an archive that ended at ``ended_at``; its old kind."""
    kind = str(conn.execute("SELECT kind FROM entity WHERE id = ?", (eid,)).fetchone()[0])
    conn.execute("UPDATE entity SET was_kind = kind, kind = 'archive', ended_at = ?, "
                 "ended_how = ? WHERE id = ?", (ended_at, how, eid))
    return kind


def unarchive_entity(conn: Connection, eid: int) -> None:
    conn.execute("UPDATE entity SET kind = was_kind, was_kind = NULL, ended_at = NULL, "
                 "ended_how = NULL WHERE id = ? AND was_kind IS NOT NULL", (eid,))


def merge_entity(conn: Connection, kept: int, merged: int, reason: str, now: float) -> int:
    """``merged`` joins ``kept``: its mentions are copied to ``kept`` (those it lacked are
    recorded, so undo removes exactly them) and it is set aside as 'merged'."""
    added = [int(r[0]) for r in conn.execute(
        "SELECT memory_id FROM entity_mention WHERE entity_id = ? AND memory_id NOT IN "
        "(SELECT memory_id FROM entity_mention WHERE entity_id = ?) ORDER BY memory_id",
        (merged, kept))]
    conn.executemany("INSERT OR IGNORE INTO entity_mention VALUES (?, ?)",
                     [(kept, m) for m in added])
    conn.execute("UPDATE entity SET status = 'merged', merged_into = ? WHERE id = ?",
                 (kept, merged))
    return int(conn.execute(
        "INSERT INTO entity_merge (kept, merged, added, reason, merged_at) VALUES (?,?,?,?,?)",
        (kept, merged, json.dumps(added), reason, now)).lastrowid or 0)


def _merge_row(r: Sequence[object]) -> EntityMerge:
    return EntityMerge(int(r[0]), int(r[1]), int(r[2]),  # type: ignore[call-overload]
                       [int(x) for x in json.loads(str(r[3]))], str(r[4]),
                       float(r[5]))  # type: ignore[arg-type]


def unmerge_entity(conn: Connection, merge_id: int) -> EntityMerge | None:
    """Undo merge ``merge_id``: the copied mentions leave the one kept, the merged entity is
    active again. None when there is no such merge (already undone)."""
    r = conn.execute("SELECT id, kept, merged, added, reason, merged_at FROM entity_merge "
                     "WHERE id = ?", (merge_id,)).fetchone()
    if r is None:
        return None
    m = _merge_row(r)
    for part in chunks(m.added, 500):
        conn.execute(f"DELETE FROM entity_mention WHERE entity_id = ? AND memory_id IN "
                     f"({marks(len(part))})", [m.kept, *part])
    conn.execute("UPDATE entity SET status = 'active', merged_into = NULL WHERE id = ?",
                 (m.merged,))
    conn.execute("DELETE FROM entity_merge WHERE id = ?", (merge_id,))
    return m


def entity_merges(conn: Connection, eid: int) -> list[EntityMerge]:
    """The merges entity ``eid`` took part in, newest first."""
    return [_merge_row(r) for r in conn.execute(
        "SELECT id, kept, merged, added, reason, merged_at FROM entity_merge WHERE kept = ? "
        "OR merged = ? ORDER BY id DESC", (eid, eid))]


def distinct_entities(conn: Connection) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in conn.execute("SELECT a, b FROM entity_distinct")]


def keep_apart(conn: Connection, a: int, b: int) -> None:
    conn.execute("INSERT OR IGNORE INTO entity_distinct VALUES (?, ?)", (min(a, b), max(a, b)))
