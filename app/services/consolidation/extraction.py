"""Extractors for the pipeline's first step: the rules (default) and the optional LLM.
Layer: app. Runs on: the consolidation worker.

An extractor turns one scope's batch of episodes into fact candidates. The LLM one may also
ask for a memory to be deleted: that never deletes, it becomes a review request in the
person's inbox.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.domain.fact import EpisodeView, FactCandidate
from app.errors import AppError
from app.ports import Clock, ConsolidationRows, Database, InboxRows, Scope
from app.services.extract import extract

if TYPE_CHECKING:
    from app.services.consolidation.runlog import RunLog

log = logging.getLogger(__name__)

# One scope's batch of episodes in, fact candidates out.
Extractor = Callable[[list[EpisodeView], Scope], list[FactCandidate]]

MATCH_RATIO = 80  # rapidfuzz token_set_ratio for a DELETE's statement to name a fact


def rules(eps: list[EpisodeView], _scope: Scope) -> list[FactCandidate]:
    """The rule extractor: every episode on its own (scope-free)."""
    return [f for e in eps for f in extract(e)]


def llm_extractor(db: Database, rows: ConsolidationRows, inbox: InboxRows, clock: Clock,
                  rl: RunLog) -> Extractor:
    """The optional LLM extractor. When it cannot help (no consent for a cloud endpoint,
    the endpoint is down, a reply stays malformed after one retry: its raw text is kept
    encrypted in llm_reply), the batch falls back to the rules, so consolidation always
    progresses; the run report lists those batches by the error's class
    (``llm_fallbacks``), so a broken endpoint shows in the window and the CLI."""
    from app.services.llm import LlmConfig, LlmExtractor

    def setting(key: str) -> Any:
        return db.read(lambda c: rows.get_setting(c, key))
    cfg = LlmConfig(base_url=setting("extraction.llm_base_url") or "",
                    model=setting("extraction.llm_model") or "",
                    consent=setting("extraction.cloud_consent") or "",
                    redact=bool(setting("extraction.redact")))
    llm = LlmExtractor(cfg)
    names_of: dict[Scope, list[str]] = {}
    from app.services import sensitive
    never = sensitive.parse(setting("privacy.never_send") if setting("privacy.never_send")
                            is not None else sensitive.NEVER_SEND_DEFAULT)

    def in_scope(mid: int, scope: Scope) -> bool:
        return db.read(lambda c: rows.scope_of(c, mid)) == scope

    def run(eps: list[EpisodeView], scope: Scope) -> list[FactCandidate]:
        # What the person chose never to send (privacy.never_send) is read by the rules.
        kept_back = [e for e in eps if sensitive.blocked(e.text, never)]
        if kept_back:
            rl.counts["kept_from_llm"] += len(kept_back)
            eps = [e for e in eps if e not in kept_back]
            if not eps:
                return rules(kept_back, scope)
        return run_llm(eps, scope) + (rules(kept_back, scope) if kept_back else [])

    def run_llm(eps: list[EpisodeView], scope: Scope) -> list[FactCandidate]:
        if scope not in names_of:  # people this scope may know: never another agent's
            names_of[scope] = db.read(lambda c: rows.known_people(c, scope[0]))
        names = names_of[scope]

        def save_raw(raw: str, error: str) -> None:
            db.write_sync(lambda c: rows.save_llm_reply(c, clock.now(), raw, error,
                                                          [e.id for e in eps]))
        llm.last_salience = (None, {})
        try:
            facts, deletes = llm.extract(eps, names, save_raw)
        except AppError as exc:
            log.warning("LLM extraction unavailable (%s); rules used for this batch",
                        type(exc).__name__)
            rl.llm_fallbacks[type(exc).__name__] += 1
            return rules(eps, scope)
        for d in deletes:
            # An LLM DELETE never deletes: the memory it means goes to the person's inbox.
            target = d.memory_id if d.memory_id is not None else match_fact(
                db, rows, d.statement, scope)
            if target is not None and in_scope(target, scope):
                review_request(db, inbox, clock, target,
                               d.reason or "the assistant thinks this is no longer true")
        if llm.last_salience[1]:
            llm_routing(db, rows, rl, llm.last_salience[1], facts)
        return facts
    return run


def llm_routing(db: Database, rows: ConsolidationRows, rl: RunLog,
                rated: dict[int, tuple[float, str]], facts: list[FactCandidate]) -> None:
    """Reference 004's salience in LLM mode (issue 27 item 1): each episode's score and
    reasoning replace the rules' routing decision of its turn ("rated by the LLM" in explain),
    and an episode the LLM rates below ``policy.SALIENCE_EPISODE_MIN`` that gave no fact is
    put aside (archived, never deleted; its turn stays short-term). Both are undone with the
    run."""
    from app import policy
    used = {i for f in facts for i in f.source_ids}

    def write(conn: Any) -> None:
        for eid, (score, why) in rated.items():
            keep = score >= policy.SALIENCE_EPISODE_MIN or eid in used
            stores = ("short_term", "episodic") if keep else ("short_term",)
            reason = why or ("worth keeping" if keep else "nothing to keep")
            prior = rows.route_by_llm(conn, eid, score, stores, reason)
            if prior is None:
                continue
            turn, old = prior
            rl.change(conn, "routing", turn, **old)
            rl.counts["routed_by_llm"] += 1
            if not keep:
                rows.archive(conn, eid)
                rl.change(conn, "status", eid, status="active", superseded_by=None,
                          valid_until=None)
                rl.counts["episodes_set_aside"] += 1
    db.write_sync(write)


def match_fact(db: Database, rows: ConsolidationRows, statement: str, scope: Scope) -> int | None:
    """The active fact of ``scope`` a free-text statement most likely means, if one
    clearly matches."""
    from rapidfuzz import fuzz

    from app.services.recall import query_tokens
    tokens = query_tokens(statement)
    for mid, text in db.read(lambda c: rows.fact_texts_matching(c, tokens, scope, 5)):
        if fuzz.token_set_ratio(text, statement) >= MATCH_RATIO:
            return mid
    return None


def review_request(db: Database, inbox: InboxRows, clock: Clock, mid: int, reason: str) -> None:
    """A review request of one memory (kind 'review'; ``b`` repeats ``a`` because the
    column is NOT NULL). Never a contradiction of the memory with itself: answering that
    with "keep A" superseded the memory by itself (issue 12)."""
    db.write_sync(lambda c: inbox.add_review(c, mid, reason[:200], clock.now()))
