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

# 002 monitoring (Insights, issue 27 item 9): the period its rates cover; a recalled memory
# counts as used when the same assistant explains it or gets it in a context within the hour;
# "high quality" is 002's composite above .7 (its health check).
INSIGHTS_PERIOD_D = 30
USED_WITHIN_S = HOUR
QUALITY_COMPOSITE = 0.7

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

# 002 scheduled boosters: a memory is boosted on a schedule set by its composite score
# (> .8 daily, .6-.8 every 3 days, .4-.6 weekly, < .4 never). 002 gives the schedule, not the
# amount; Kept uses 002's spaced-repetition boost (+15% importance, REINFORCE_FACTOR), capped at
# 1.0. Bands as (lowest composite, days between boosts), highest first. Turns (short-term) and
# implicit statistics are not boosted: turns live a day, statistics are recomputed.
BOOSTER_BANDS = ((0.8, 1.0), (0.6, 3.0), (0.4, 7.0))
BOOSTER_FACTOR = REINFORCE_FACTOR
BOOSTED_STORES = ("episodic", "semantic", "procedural")

# 002 working -> episodic asks composite > .7, accesses > 5 and age > 1 d. A Kept turn cannot
# meet it: at one day the working class's recency is .001 (half-life 2 h, rate .8), so a turn's
# composite is at most .34 by then. DESIGN section 5 asks for "what a request used": a turn kept
# short-term only (low salience) that recall or a context briefing returned at least this many
# times becomes an episode with PROMOTED_FROM at the next consolidation, so what proved useful
# outlives short-term retention.
PROMOTE_WORKING_ACCESSES = 1

# 003 confidence factors that move (scoring.user_validation, scoring.usage_success).
# User validation: the person confirmed it: 1.0; the person corrected it (its replacement is
# theirs): 0.0; else unknown (CONF_UNKNOWN). Usage success: never used: unknown; used n times by
# recall or a context briefing and never contradicted: 1 - .5 ** (n + 1) (.75, .875, ...);
# contradicted (a CONTRADICTS link) after being used: USAGE_CONTRADICTED.
USAGE_CONTRADICTED = 0.0
CONFIDENCE_STORES = ("semantic", "procedural")

# DESIGN section 6 per-store quotas for the context briefing (002's default strategy: working 5,
# episodic 5, semantic 5, social 3 of 18 results). A store takes at most its share of the
# budget, the shares counted among the stores that have something to brief (facts and episodes
# alone: half each); budget a store leaves unused goes to what the quotas left out, in the same
# order (app/services/context.fill_with_quotas). Procedures and preferences share the facts'
# quota (002 has no procedural layer); entity summaries take the social share.
CONTEXT_STORE_SHARE = {"short_term": 5 / 18, "episodic": 5 / 18, "semantic": 5 / 18,
                       "people": 3 / 18}
CONTEXT_QUOTA_GROUP = {"short_term": "short_term", "episodic": "episodic",
                       "semantic": "semantic", "procedural": "semantic", "implicit": "semantic",
                       "people": "people"}

# Recall's second hop (issue 27 item 7, app.services.hops): the share of a best hit's score
# lent to what is linked to it or names the same person or topic. 0 = off; the LoCoMo dev
# figures behind the choice are in RecallTuning.hop_weight (app/services/recall.py).
RECALL_HOP_WEIGHT = 0.0

# 004 salience routing (issue 27): a turn whose salience (app/services/salience.py) is at least
# this also becomes an episode; below it, it stays short-term only and expires by short-term's
# retention (DECAY["working"]). 004 gives the score and leaves the cut to the router; .3 keeps
# every fact, plan, change, preference and event of tests/app/test_salience.py and sends
# small talk, one-off requests and bare reactions to short-term only (LoCoMo dev: see
# docs/memory-model.md#salience-routing for how many turns and the recall figures).
SALIENCE_EPISODE_MIN = 0.3

# 003 short-term summarisation (issue 27 item 2): a conversation with at least this many
# short-term turns not summarised yet becomes one summary episode (the consolidation step
# "summaries"). 003 summarises a session once it is long; 13 of LoCoMo dev's 128 sessions have
# 30 turns or more (the longest ~40), so 30 summarises the long ones only.
SUMMARY_MIN_TURNS = 30
# About 150 tokens: a summary fits a context beside the facts (DEFAULT_CONTEXT_BUDGET).
SUMMARY_MAX_CHARS = 600
# Extractive ranking: this share centrality, the rest salience.
SUMMARY_W_CENTRAL = 0.5

# Issue 27 item 3 (000/001 PARA lifecycle): a project no memory has mentioned for this many
# days becomes an archive (000 archives what is idle past 90 days; the same number).
PROJECT_IDLE_D = 90.0
# One entity per thing: two names that are variants of each other (one a word-for-word part
# of the other, "Spanish" / "Spanish on Duolingo") merge when their MiniLM embeddings are at
# least this close. Chosen on bench/entity_pairs.py's 51 labelled pairs (dev), precision
# first: .80 is the lowest with no wrong merge (P 1.0, R .70; .75: P .95, R .78; .60: P .92,
# R .96, merging "Ruby" into "Ruby on Rails" (.73) but also "Spanish on Duolingo" (.63)).
ENTITY_MERGE_COSINE = 0.8

# Issue 28, one-at-a-time remember: the vector of a remembered memory is made after the call
# is acknowledged, in batches (app/services/vector_follow.py). A batch of this many texts is one
# model call and one transaction (a recall's query embedding waits for at most one such call).
FOLLOW_BATCH = 32
# Texts to embed the follower keeps in RAM; past this many a remember still returns at once and
# the follower reads its text back from the vault's pending rows later. A caller used to wait
# while 256 were due, so a burst longer than that ran at the model's rate (~51/s); now the
# vectors lag instead (figures: bench/remember_rate.py --sustained, "drain_after_last_s").
FOLLOW_MAX_QUEUED = 1024
# The follower embeds once no remember came for this long (the caller paused), ...
FOLLOW_GATHER_S = 0.05
# ... or once its oldest memory waited this long (a steady stream never pauses), or once
# FOLLOW_MAX_QUEUED - FOLLOW_BATCH are due (the queue would soon spill). Until then the model
# leaves the CPU to the remembers being acknowledged: on this 2-core machine, a burst of 200
# one-at-a-time remembers went 145 -> 231/s and 74 -> 198/s (medians of 3 and 5 alternating
# rounds, load 11-12, dev) against a follower that embedded as soon as 32 were due.
FOLLOW_MAX_DEFER_S = 1.0

# Issue 29, joining a device (app/sync/pairing.py): a pairing session allows this many tries of
# its 8-digit secret, then closes. Each try is one online guess (SPAKE2 gives the folder host no
# offline test), so a host that writes answers itself wins with odds 3 in 10^8; three leave room
# for two typing mistakes. Magic Wormhole allows one try of a ~16-bit code; ours has more digits
# because the person types it, not a machine.
PAIR_TRIES = 3
# The offer expires after this many minutes: long enough for a sync tool to move the files both
# ways a few times (Syncthing rescans every hour unless watching; with watching, seconds).
PAIR_MINUTES = 10

# Sync epochs (issue 29 item 4, app/sync/epochs.py, docs/sync.md#epochs). The founding device
# rotates the shared key when a slot has passed since the last rotation and some device wrote
# since; a forget does not rotate sooner. So the host sees a rotation after a slot iff it saw log
# files since the last one (which it sees anyway): a rotation tells it nothing about forgets.
# A day: the forget's op erases the memory on every online device at once (seconds); the slot
# only bounds how long the old ciphertext copies (folder, .stversions, cloud trash) stay openable
# by a device key, and each rotation costs one snapshot file (10k memories: one 8 MiB bucket,
# bench/sync_rotation.py) per active day.
SYNC_ROTATION_SLOT_S = DAY
# A device acknowledges how far it applied at most once a minute (and at once when it moves to a
# new epoch): "forgotten on 2 of 3 devices" lags by at most this, and the folder gets at most one
# acknowledgement file per device per minute of activity.
SYNC_ACK_EVERY_S = 60.0

# The owner's sync job (issue 29 item 1, app/sync/runner.py, app/jobs.py): a tick every
# SYNC_TICK_S while sync is set up (a tick with nothing new lists a few folders and reads the
# journal: no write), and one SYNC_SOON_S after a local change the journal recorded, so a memory
# leaves within about a second and a burst of writes (an import) still makes one tick. The other
# device receives when its folder watch sees the file land (SYNC_LANDED_S below), else at its
# next interval tick. Measured (bench/sync_owner.py, two owners, load
# 13-17, docs/sync.md): 5 s gave remember-to-listed p95 4.7 s (no sync tool's delay yet, so no
# room under the 5 s target), 2 s gives p95 3.0 s for 47-57 ms of CPU a minute (both owners
# idle; 21-23 at 5 s). At lock or quit a tick under
# way gets SYNC_STOP_WAIT_S to finish; past that it is abandoned (the vault closes under it: each
# of its transactions is whole or absent, as after a crash, and the next start compares again).
SYNC_TICK_S = 2
SYNC_SOON_S = 1.0
# Another device's file landed in the folder (app/sync/watch.py saw it): tick this soon. The
# watch waits 250 ms after each call, so a sync tool landing many files makes a few ticks.
SYNC_LANDED_S = 0.1
SYNC_STOP_WAIT_S = 5.0
