"""UI test fixtures: a real demo vault (SQLCipher, threaded writer, the real model loaded once
per session) and a real MainWindow. The keychain is the in-memory backend from
tests/conftest.py; nothing is mocked below the facade. Every test gets its own vault (a copy
of one made per session) and its own window (no session-wide app window, STYLE B9)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from app.facade import Vault


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory, session_embedder: Any) -> Path:
    """The demo vault made once per session (Argon2id, the import, the consolidation run);
    each test opens its own copy of it, as ``kept-app --demo`` opens an existing demo."""
    from app import bootstrap
    from app.demo import create_demo_vault
    folder = tmp_path_factory.mktemp("demo-template") / "v"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bootstrap, "load_embedder", lambda load_model: (
            (session_embedder, session_embedder.model_dir) if load_model else (None, None)))
        create_demo_vault(folder, threaded=False).lock()
    assert bootstrap.vault_exists(folder)
    return folder


@pytest.fixture
def demo_vault(tmp_path: Path, demo_template: Path, shared_model: None) -> Iterator[Any]:
    from app.demo import DEMO_PASSWORD
    shutil.copytree(demo_template, tmp_path / "v")
    # The page self-test runs before this returns, so no background work is left over that a
    # freshly created vault would not have had.
    vault = Vault.open(tmp_path / "v", DEMO_PASSWORD, threaded=True, use_chroma=False,
                                 verify="sync")
    assert vault.status().semantic_search and not vault.background_work()
    yield vault
    # Background tasks may still hold a reader; let them finish before the keys are wiped.
    from PySide6.QtCore import QThreadPool
    QThreadPool.globalInstance().waitForDone(10_000)
    vault.lock()


def main_window(qtbot: Any, vault: Any) -> Any:
    """The real main window on ``vault`` (5 min idle lock), owned by qtbot."""
    from ui.bridge import CoreBridge
    from ui.main_window import MainWindow
    win = MainWindow(vault, CoreBridge(), idle_minutes=5)
    qtbot.addWidget(win)
    return win


def shown_window(qtbot: Any, vault: Any) -> Any:
    """``main_window`` on ``vault``, shown and exposed."""
    win = main_window(qtbot, vault)
    win.show()
    qtbot.waitExposed(win)
    return win


def maya_said(folder: Path, password: str, said: Sequence[str], first_at: float,
              now: float) -> Iterator[Any]:
    """For a fixture to ``yield from``: a threaded vault without the model, its clock at
    ``now``, where Maya said each of ``said`` (episodes ten minutes apart from ``first_at``),
    consolidated once; locked after the test."""
    from PySide6.QtCore import QThreadPool

    from app.clock import FixedClock
    from app.domain.memory import Draft, Store
    from tests.conftest import new_vault
    v = new_vault(folder, password, load_model=False, use_chroma=False, clock=FixedClock(now))
    for n, text in enumerate(said):
        v.remember(Draft(text=text, store=Store.EPISODIC, speaker="Maya",
                         occurred_at=first_at + n * 600))
    v.consolidate()
    yield v
    QThreadPool.globalInstance().waitForDone(15_000)
    if not v.locked:
        v.lock()


@pytest.fixture
def window(qtbot: Any, demo_vault: Any) -> Iterator[Any]:
    win = main_window(qtbot, demo_vault)
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


@pytest.fixture
def unlock_dialog(qtbot: Any, tmp_path: Path, fast_kdf: Any
                  ) -> tuple[Any, Path, dict[str, str]]:
    """The unlock dialog, shown, on a closed vault (``test_flows.PASSWORD``) holding one
    fact, with the hashes of the vault's files before any password is tried: (dialog,
    folder, hashes)."""
    from tests.ui.test_flows import close_vault, file_hashes, make_vault
    from ui.dialogs.unlock import UnlockDialog
    folder = tmp_path / "vault"
    close_vault(make_vault(folder, fast_kdf, facts=("Sam likes green tea.",)))
    before = file_hashes(folder)
    dlg = UnlockDialog(folder)
    qtbot.addWidget(dlg)
    dlg.show()
    return dlg, folder, before


def try_wrong_password(qtbot: Any, dlg: Any, submit: Callable[[], None]) -> None:
    """Type a wrong password into ``unlock_dialog``'s dialog, submit it with ``submit`` (a
    key or a click) and wait until the dialog says what went wrong."""
    qtbot.keyClicks(dlg.password, "not the password")
    submit()
    qtbot.waitUntil(lambda: dlg.ok.isEnabled() and dlg.error.text() != "", timeout=15_000)


def answer_confirm(qtbot: Any, *, accept: bool, timeout: int = 15_000) -> str:
    """Wait for the question ``ui.dialogs.confirm.ask`` opens and answer it as a person does:
    Space on the action's button (after tabbing to it), or Enter, which takes the default
    Cancel. Returns the question's words (text and detail) for the test to read."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication, QMessageBox, QPushButton

    def box() -> QMessageBox | None:
        for w in QApplication.topLevelWidgets():
            if isinstance(w, QMessageBox) and w.objectName() == "confirm" and w.isVisible():
                return w
        return None
    qtbot.waitUntil(lambda: box() is not None, timeout=timeout)
    found = box()
    assert found is not None
    words = f"{found.text()}\n{found.informativeText()}"
    if accept:
        action = found.findChild(QPushButton, "confirmAction")
        assert action is not None
        action.setFocus()
        qtbot.keyClick(action, Qt.Key.Key_Space)
    else:
        qtbot.keyClick(found, Qt.Key.Key_Return)  # the default button is Cancel
    qtbot.waitUntil(lambda: not found.isVisible(), timeout=timeout)
    return words
