"""UI test fixtures: a real demo vault (SQLCipher, threaded writer) and a real MainWindow.
The keychain is the in-memory backend from tests/conftest.py; nothing is mocked below the
facade. Every test gets its own vault and window (no session-wide app window, STYLE B9)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def demo_vault(tmp_path: Path) -> Iterator[Any]:
    from app.demo import create_demo_vault
    vault = create_demo_vault(tmp_path / "v", threaded=True)
    yield vault
    # Background tasks may still hold a reader; let them finish before the keys are wiped.
    from PySide6.QtCore import QThreadPool
    QThreadPool.globalInstance().waitForDone(10_000)
    vault.lock()


@pytest.fixture
def window(qtbot: Any, demo_vault: Any) -> Iterator[Any]:
    from ui.bridge import CoreBridge
    from ui.main_window import MainWindow
    win = MainWindow(demo_vault, CoreBridge(), idle_minutes=5)
    qtbot.addWidget(win)
    yield win
    from PySide6.QtCore import QThreadPool
    QThreadPool.globalInstance().waitForDone(10_000)


@pytest.fixture
def open_page(qtbot: Any, window: Any) -> Any:
    """Show the window and select a page in the navigation, as a click would."""
    from PySide6.QtCore import Qt

    def open_(name: str) -> Any:
        if not window.isVisible():
            window.show()
            qtbot.waitExposed(window)
        nav = window.nav
        for i in range(nav.topLevelItemCount()):
            item = nav.topLevelItem(i)
            if item.data(0, Qt.ItemDataRole.UserRole) == ("page", name):
                nav.setCurrentItem(item)
                break
        else:
            raise AssertionError(f"no page {name!r} in the navigation")
        page = window.page(name)
        assert window.stack.currentWidget() is page
        return page
    return open_
