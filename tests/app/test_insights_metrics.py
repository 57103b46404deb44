"""Insights' monitoring numbers (issue 27 item 9, reference 002) on a real vault: retrieval
efficiency and layer utilisation from the assistants' read log, promotions from
PROMOTED_FROM links, archiving from the history, the quality ratio from composites; only
what falls in the period counts. ``kept insights --json``: tests/app/cli/test_rate_insights_cli.py."""

from __future__ import annotations

from typing import Any

from app import policy
from app.domain.memory import Draft, Store
from app.facade import Vault
from tests.app.conftest import DAY, T0
from tests.inside import inside


def _metrics(v: Vault) -> dict[str, Any]:
    return {m.key: m for m in v.insights().metrics}


def test_monitoring_numbers_follow_the_read_log_links_history_and_scores(vault: Vault) -> None:
    empty = _metrics(vault)
    assert set(empty) == {"retrieval_efficiency", "layer_utilisation", "promotion_rate",
                          "archive_rate", "quality_ratio"}
    assert empty["retrieval_efficiency"].value is None and empty["quality_ratio"].value is None
    assert all(m.tip and m.text for m in empty.values())

    ids = [int(vault.remember(Draft(text=t, store=s)).value) for t, s in (
        ("Ana's birthday is on March 3rd.", Store.SEMANTIC),
        ("Ana moved to Porto last spring.", Store.SEMANTIC),
        ("We talked about the Porto trip.", Store.EPISODIC),
        ("Book the train two weeks ahead.", Store.PROCEDURAL))]
    now = T0
    old = now - (policy.INSIGHTS_PERIOD_D + 5) * DAY  # outside the period

    def write(c: Any) -> None:
        reads = [  # (memory, agent, via, at)
            (ids[0], "claude", "recall", now - 100), (ids[1], "claude", "recall", now - 100),
            (ids[2], "claude", "recall", now - 100),            # one search, three results
            (ids[0], "claude", "explain", now - 50),            # the first used at once
            (ids[1], "cursor", "context", now - 40),            # another assistant: not a use
            (ids[2], "claude", "context", now - 100 + 2 * policy.USED_WITHIN_S),  # too late
            (ids[3], "claude", "recall", now - 10),              # a second search
            (ids[3], "claude", "recall", old), (ids[3], "claude", "explain", old + 5)]
        c.executemany("INSERT INTO memory_read (memory_id, agent, via, at) VALUES (?,?,?,?)",
                      reads)
        c.execute("INSERT INTO link (src, dst, kind, created_at) VALUES (?, ?, "
                  "'PROMOTED_FROM', ?)", (ids[1], ids[2], now - DAY))
        c.execute("INSERT INTO link (src, dst, kind, created_at) VALUES (?, ?, "
                  "'PROMOTED_FROM', ?)", (ids[0], ids[2], old))
        c.execute("UPDATE memory SET composite = CASE WHEN id = ? THEN 0.9 ELSE 0.3 END",
                  (ids[0],))
    inside(vault).db.write_sync(write)
    vault.archive(ids[3])

    m = _metrics(vault)
    assert m["retrieval_efficiency"].value == 1 / 4       # 1 used of 4 recalled, 2 searches
    assert "1 of 4" in m["retrieval_efficiency"].text and "2.0 a search" in \
        m["retrieval_efficiency"].text
    ins = vault.insights()
    # Reads in the period by kind: facts 4 (2 recalls, an explain, a context), event 2, habit 1
    assert ins.reads_by_store == {"semantic": 4, "episodic": 2, "procedural": 1}
    assert m["layer_utilisation"].value == 4 / 7
    assert m["layer_utilisation"].text.startswith("Facts 57%")
    assert m["promotion_rate"].value == 1 / (policy.INSIGHTS_PERIOD_D / 7)
    assert m["archive_rate"].value == 1 / policy.INSIGHTS_PERIOD_D
    assert m["quality_ratio"].value == 1 / 3              # 3 active, one above .7
    assert "1 of 3 in your lists" in m["quality_ratio"].text
