"""The window after a file import (issue 28): the import returns once the turns are in, and the
status bar says "finding meaning: N of M" while their vectors follow, then stops saying it.
Real widgets offscreen, the real demo vault (threaded, real model); the follower's model calls
are held at a gate so the text is seen before any vector is made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.app.test_import_follow import Gate, _chat_file
from tests.inside import inside

pytestmark = pytest.mark.gui
WAIT = 60_000


def test_status_bar_says_finding_meaning_until_the_vectors_land(
        qtbot: Any, window: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app import facade
    monkeypatch.setattr(facade, "FINDING_MEANING_MIN", 8)
    follower = inside(window.vault).follower
    assert follower is not None
    gate = Gate(follower.embedder)
    follower.embedder = gate
    try:
        window.files.import_file(_chat_file(tmp_path / "chat.jsonl"))
        qtbot.waitUntil(lambda: window.files.last_message.startswith("Imported"), timeout=WAIT)
        pending = window.vault.status().vectors_pending
        assert pending >= 8 and gate.calls == 0
        qtbot.waitUntil(lambda: f"finding meaning: 0 of {pending:,}"
                        in window.status_label.text(), timeout=WAIT)
    finally:
        gate.go.set()
    qtbot.waitUntil(lambda: "finding meaning" not in window.status_label.text(),
                    timeout=WAIT)
    assert window.vault.status().vectors_pending == 0


def test_what_is_under_way_comes_right_after_the_count(qtbot: Any, window: Any) -> None:
    """At 1,024 pixels the end of the status bar is cut off: the estimate must not be."""
    qtbot.waitUntil(lambda: window.memory_figure != "", timeout=WAIT)
    window._background = "finding meaning: 0 of 41, about 1 min left"
    window._render_status()
    assert window.status_label.text().startswith(
        f"{window.memory_figure} · finding meaning: 0 of 41, about 1 min left… · ")
    window._background = ""
    window._render_status()
    assert "finding meaning" not in window.status_label.text()
    assert window.status_label.text().startswith(f"{window.memory_figure} · ")
