"""Every policy number in one place, each with its source. Layer: app.

Sources: docs/memory-model.md#scores and the reference documents in docs/memory-model.md#sources
(000 = MyCasa PARA/decay, 001 = atomic facts, 002 = LifeOS multi-layer, 003 = QuantumLife,
004 = routing spec).
"""

from __future__ import annotations

from dataclasses import dataclass

HOUR = 3600.0
DAY = 24 * HOUR


@dataclass(frozen=True, slots=True)
class DecayClass:
    rate: float
    half_life_h: float
    max_retention_d: float


# 002: (rate, half-life, max retention) per decay class; procedural uses semantic's.
DECAY = {
    "working": DecayClass(0.8, 2.0, 7.0),
    "episodic": DecayClass(0.3, 7 * 24.0, 365.0),
    "semantic": DecayClass(0.1, 30 * 24.0, 5 * 365.0),
    "social": DecayClass(0.2, 14 * 24.0, 2 * 365.0),
    "emotional": DecayClass(0.4, 3 * 24.0, 365.0),
}
STORE_DECAY = {"short_term": "working", "episodic": "episodic", "semantic": "semantic",
               "procedural": "semantic", "implicit": "semantic"}

# 002 composite weights.
W_IMPORTANCE, W_RECENCY, W_FREQUENCY, W_EMOTIONAL, W_SOCIAL = 0.30, 0.25, 0.20, 0.15, 0.10
# Frequency saturates near 20 accesses (000 treats > 20 as high).
FREQUENCY_SATURATION = 20

# 000 tiers by days since last access, with frequency resistance.
HOT_DAYS, WARM_DAYS = 7.0, 30.0
RESIST_10 = (10, 10.0, 45.0)   # > 10 accesses: hot <= 10 d, warm <= 45 d
RESIST_20 = (20, 14.0, 60.0)   # > 20 accesses: hot <= 14 d, warm <= 60 d

# 002 reinforcement.
REINFORCE_WINDOW_H = 24.0
REINFORCE_FACTOR = 1.15
EMOTIONAL_REINFORCE_THRESHOLD = 0.5
EMOTIONAL_WINDOW_H = 48.0
EMOTIONAL_FACTOR = 1.2
FREQUENT_ACCESSES = 10
FREQUENT_WEEKLY_BOOST = 1.10
FREQUENT_BOOST_WINDOW_H = 7 * 24.0   # the boost holds in a week the memory is used

# 002 promotion. 002's working -> episodic rule has no counterpart here: working memory is
# assembled per request and never stored, and an imported turn gets its episode at once.
PROMOTE_EPISODIC = dict(importance=0.8, emotional_below=0.3, accesses=10, age_d=30.0)

# 001/002/003 archival (never deletion).
ARCHIVE_MIN_COMPOSITE = 0.1
ARCHIVE_IDLE_D = 90.0

# 003 confidence weights (scoring.confidence), for what consolidation derives.
CONF_SOURCE, CONF_CORROBORATION, CONF_RECENCY, CONF_USER, CONF_USAGE = 0.20, 0.25, 0.10, 0.30, 0.15
# A factor with no evidence yet (not reviewed by the person; no usage feedback) counts as
# neutral. A lone explicit statement (reliability .85) then scores .50, two sources .62, and a
# newer fact needs four sources to pass .70 and win a contradiction on its own.
CONF_UNKNOWN = 0.5

# 003 contradiction resolution order.
NEWER_WINS_CONFIDENCE = 0.7
CONFIDENCE_MARGIN = 0.2

# Default importance by store when the caller gives none (003: facts and procedures outlive
# episodes; turns are the least durable).
DEFAULT_IMPORTANCE = {"short_term": 0.3, "episodic": 0.5, "semantic": 0.6, "procedural": 0.6,
                      "implicit": 0.4}

# docs/memory-model.md#context-assembly: working-memory context budget (tokens).
DEFAULT_CONTEXT_BUDGET = 4000

# Issue 27 item 3 (000/001 PARA lifecycle): a project no memory has mentioned for this many
# days becomes an archive (000 archives what is idle past 90 days; the same number).
PROJECT_IDLE_D = 90.0
# One entity per thing: two names that are variants of each other (one a word-for-word part
# of the other, "Spanish" / "Spanish on Duolingo") merge when their MiniLM embeddings are at
# least this close. Chosen on bench/entity_pairs.py's 51 labelled pairs (dev), precision
# first: .80 is the lowest with no wrong merge (P 1.0, R .70; .75: P .95, R .78; .60: P .92,
# R .96, merging "Ruby" into "Ruby on Rails" (.73) but also "Spanish on Duolingo" (.63)).
ENTITY_MERGE_COSINE = 0.8
