"""Habits and statistics are said on the person's clock, not in UTC (issue 25 item 5)."""

from __future__ import annotations

from app.services.habits import statistics


def test_the_most_active_hour_is_local(tokyo_time: None) -> None:
    at = 1_780_000_000.0 - (1_780_000_000.0 % 86_400) + 9 * 3600  # 09:00 UTC = 18:00 in Tokyo
    rows = [(at + d * 86_400, 0.0, "Sam") for d in range(5)]
    text = statistics(rows, None)["most_active_hour"][2]
    assert text.startswith("Most active hour: 18:00") and "UTC" not in text
