"""The Timeline's days, a day's list and the as-of day are the person's days (this computer's
time zone), not UTC's (issue 25 item 5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.api import LIVE, MemoryQuery
from app.domain.memory import Draft


def test_a_late_evening_in_utc_is_the_next_morning_in_tokyo(tmp_path: Path, fast_kdf: Any,
                                                             tokyo_time: None) -> None:
    from app.facade import Vault
    vault = Vault.create(tmp_path / "v", "a long enough password", kdf=fast_kdf,
                         load_model=False, use_chroma=False).vault
    try:
        # 2026-06-15 20:00 UTC = 2026-06-16 05:00 in Tokyo.
        at = 1_781_553_600.0
        mid = int(vault.remember(Draft(text="Flew home from Lisbon.", occurred_at=at)).value)
        days = dict(vault.timeline_days())
        assert "2026-06-16" in days and "2026-06-15" not in days
        listed = MemoryQuery(day="2026-06-16", status=LIVE, fold=True)
        assert mid in [int(r.id) for r in vault.page_memories(listed).rows]
        assert days["2026-06-16"] == vault.count_memories(listed)
        assert vault.count_memories(MemoryQuery(day="2026-06-15", status=LIVE, fold=True)) == 0
    finally:
        vault.lock()
