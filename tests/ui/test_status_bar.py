"""The status bar (issue 25): a passing message never runs into the vault's figures."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.gui


def test_a_long_message_ends_in_an_ellipsis_beside_the_figures_never_under_them(
        qtbot: Any, window: Any) -> None:
    from ui.status_bar import StatusBar
    window.resize(1024, 640)
    window.show()
    qtbot.waitExposed(window)
    bar = window.statusBar()
    assert isinstance(bar, StatusBar)
    qtbot.waitUntil(lambda: "memories" in window.status_label.text(), timeout=15_000)
    long = ("Backed up 1,234 memories to /home/sam/Documents/backups/kept-2026-11-26.keptbackup "
            "(245.1 MB, encrypted; read back and checked)")
    bar.showMessage(long, 10_000)
    qtbot.wait(50)
    message = bar.findChild(type(bar._message), "statusMessage")
    assert message is not None
    # What is shown ends in an ellipsis and fits; the whole text is its tooltip and is the
    # current message.
    assert bar.currentMessage() == long and message.toolTip() == long
    assert message.text().endswith("…") and len(message.text()) < len(long)
    fm = message.fontMetrics()
    assert fm.horizontalAdvance(message.text()) <= message.contentsRect().width()
    # The two never overlap: the message (its gap included) ends before the figures begin.
    right_of_message = message.mapTo(bar, message.rect().topRight()).x()
    left_of_figures = window.status_label.mapTo(bar, window.status_label.rect().topLeft()).x()
    assert right_of_message < left_of_figures
    # A short one is shown whole, and it goes after its time.
    bar.showMessage("Saved", 100)
    assert message.text() == "Saved"
    qtbot.waitUntil(lambda: bar.currentMessage() == "" and message.text() == "", timeout=5_000)
