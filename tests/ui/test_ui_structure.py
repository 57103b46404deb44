"""The window's structure (issue 13, item 5): pages on one base, a registry instead of an
``if name == ...`` chain with a swallowed ImportError, one progress helper whose bar appears
after 600 ms, colours in ``ui/theme.py`` only, one error path, no view reaching into the
window, no widget importing storage or service internals; and the password length rule from
one place (item 7)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QProgressBar, QWidget

pytestmark = pytest.mark.gui

UI = Path(__file__).resolve().parents[2] / "ui"
WAIT = 20_000


def _sources(*, exclude: tuple[str, ...] = ()) -> dict[str, str]:
    return {str(p.relative_to(UI.parent)): p.read_text(encoding="utf-8")
            for p in sorted(UI.rglob("*.py")) if p.name not in exclude}


def _strings(source: str) -> list[str]:
    return [n.value for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Constant) and isinstance(n.value, str)]


# --- static guards ------------------------------------------------------------------------

def test_colours_live_in_theme_only() -> None:
    colour = re.compile(r"#[0-9a-fA-F]{3}(?:[0-9a-fA-F]{3})?\b|\bcolor\s*:|\bgr[ae]y\b")
    found = {path: hits for path, src in _sources(exclude=("theme.py",)).items()
             if (hits := [s for s in _strings(src) if colour.search(s)])}
    assert found == {}


def test_margins_and_spacings_are_on_the_one_scale() -> None:
    """Issue 25 item 7: every margin and spacing a layout sets is 0 or a step of the scale in
    ui/theme.py (XXS .. XL), never a number of its own."""
    call = re.compile(r"\.(?:setContentsMargins|setSpacing|addSpacing|setHorizontalSpacing|"
                      r"setVerticalSpacing)\(([^)]*)\)")
    bad = []
    for name, text in _sources(exclude=("theme.py",)).items():
        for m in call.finditer(text):
            args = [a.strip() for a in m.group(1).split(",") if a.strip()]
            if any(not (a == "0" or re.fullmatch(r"(?:theme\.|self\.)?[A-Z]{1,3}", a)
                        or a.startswith("theme.")) for a in args):
                bad.append(f"{name}: {m.group(0)}")
    assert not bad, "\n".join(bad)


def test_views_and_dialogs_do_not_reach_into_the_window() -> None:
    """No ``window_`` handle, and none of the window's parts (its stack, navigation, run
    action) read from a view: a page gets the vault and the bridge and uses signals."""
    window_parts = {"window_", "stack", "nav", "run_action", "import_action",
                    "set_idle_minutes", "refresh_status", "refresh_current"}
    found = []
    for path, src in _sources().items():
        if not path.startswith(("ui/views/", "ui/dialogs/")):
            continue
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Attribute) and node.attr in window_parts:
                found.append(f"{path}:{node.lineno} .{node.attr}")
    assert found == []


def test_no_view_or_dialog_connects_a_lambda_over_self() -> None:
    """A page or dialog is Python-owned when a test makes it without a parent. A lambda over
    ``self`` connected to a signal of one of its children (a row's button, a dialog it opens)
    is then held by that child, and may become the widget's last reference: released inside
    the child's deferred deletion, it deletes the widget and the child a second time (the
    devices window test's ``malloc_consolidate()`` abort). Connect a ``@Slot`` method instead,
    with what the lambda bound as a property of the sender (``ui/views/devices.py``)."""
    found = []
    for path, src in _sources().items():
        if not path.startswith(("ui/views/", "ui/dialogs/")):
            continue
        for node in ast.walk(ast.parse(src)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "connect" and node.args
                    and isinstance(node.args[0], ast.Lambda)
                    and any(isinstance(n, ast.Name) and n.id == "self"
                            for n in ast.walk(node.args[0]))):
                found.append(f"{path}:{node.lineno}")
    assert found == []


def test_widgets_import_no_storage_and_no_service_internals() -> None:
    """Only the composition root (ui/main.py) imports storage; no ui module imports
    app.services (the facade and app.api are the contract)."""
    found = []
    for path, src in _sources().items():
        for node in ast.walk(ast.parse(src)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                if name.startswith("app.services") or (
                        name.split(".")[0] == "storage" and path != "ui/main.py"):
                    found.append(f"{path}:{node.lineno} {name}")
    assert found == []


def test_no_swallowed_import_error_in_the_window() -> None:
    src = (UI / "main_window.py").read_text(encoding="utf-8")
    handlers = [h for h in ast.walk(ast.parse(src)) if isinstance(h, ast.ExceptHandler)]
    assert not [h for h in handlers if isinstance(h.type, ast.Name)
                and h.type.id == "ImportError"]


def test_no_init_of_a_hundred_lines() -> None:
    long = []
    for path, src in _sources().items():
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.FunctionDef) and node.name == "__init__":
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n >= 100:
                    long.append(f"{path}:{node.lineno} ({n} lines)")
    assert long == []


# --- the registry and the window's pages ----------------------------------------------------

def test_every_navigation_page_is_registered_and_unknown_ones_fail(window: Any) -> None:
    from PySide6.QtCore import Qt

    from ui.views.page import Page
    from ui.views.registry import PAGES, page_class
    nav = window.nav
    keys = [nav.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole)
            for i in range(nav.topLevelItemCount())]
    names = [k[1] for k in keys if k[0] == "page"]
    assert sorted(names) == sorted(PAGES)
    for name in names:
        page = window.page(name)
        assert type(page) is page_class(name) and isinstance(page, Page)
        assert page.vault is window.vault and page.bridge is window.bridge
    with pytest.raises(KeyError):
        window.page("no such page")  # a bug, said at once (was a "not available" label)


def test_settings_button_navigates_through_the_window(qtbot: Any, open_page: Any,
                                                      window: Any) -> None:
    view = open_page("consolidation")
    view.settings_btn.click()
    assert window.stack.currentWidget() is window.page("settings")


# --- Page: generation-checked loads, stale while hidden ------------------------------------

class _Probe:
    """A Page subclass that records what it was given (made inside the tests, after Qt)."""

    @staticmethod
    def make(vault: Any, bridge: Any) -> Any:
        from ui.views.page import Page

        class Probe(Page):
            def __init__(self) -> None:
                super().__init__(vault, bridge)
                self.filled: list[Any] = []
                self.refreshes = 0

            def refresh(self) -> None:
                self.refreshes += 1

            def wants(self, changes: Any) -> bool:
                return bool(changes.memories)
        return Probe()


def test_page_drops_the_result_of_an_older_load(qtbot: Any) -> None:
    """Both results arrive (in either order); only the newer load's is shown."""
    from PySide6.QtCore import QThreadPool

    from ui.bridge import CoreBridge
    page = _Probe.make(None, CoreBridge())
    qtbot.addWidget(page)
    page.load(lambda: "old", page.filled.append)
    page.load(lambda: "new", page.filled.append)
    qtbot.waitUntil(lambda: page.filled == ["new"], timeout=WAIT)
    QThreadPool.globalInstance().waitForDone(WAIT)
    qtbot.wait(20)  # the older result is delivered too, and dropped
    assert page.filled == ["new"]


def test_page_refreshes_when_shown_and_only_notes_changes_while_hidden(qtbot: Any) -> None:
    from app.changes import Changes
    from ui.bridge import CoreBridge
    bridge = CoreBridge()
    holder = QWidget()
    qtbot.addWidget(holder)
    page = _Probe.make(None, bridge)
    page.setParent(holder)
    holder.show()
    qtbot.waitExposed(holder)
    bridge.apply_changes(Changes(settings=True))  # not its concern
    assert page.refreshes == 0 and not page.stale
    bridge.apply_changes(Changes(memories=True))  # shown: at once
    assert page.refreshes == 1
    page.hide()
    bridge.apply_changes(Changes(memories=True))
    bridge.apply_changes(Changes(memories=True))
    assert page.refreshes == 1 and page.stale  # hidden: noted once, nothing loaded
    page.show()
    assert page.refreshes == 2 and not page.stale  # one reload on showing
    bridge.apply_changes(Changes(lock=True, memories=True))
    assert page.refreshes == 2


# --- one progress helper --------------------------------------------------------------------

def test_progress_bar_appears_only_after_600_ms(qtbot: Any) -> None:
    from ui.progress import SHOW_AFTER_MS, DelayedProgress
    assert SHOW_AFTER_MS == 600
    holder = QWidget()
    qtbot.addWidget(holder)
    bar = QProgressBar(holder)
    helper = DelayedProgress(bar, holder)
    holder.show()
    box = helper.start()
    assert helper.active and bar.isHidden()  # quick work never flashes a bar
    box.report(3, 10)  # from the worker: stored only
    qtbot.waitUntil(lambda: bar.isVisible() and bar.value() == 3, timeout=WAIT)
    assert bar.maximum() == 10
    helper.stop()
    assert bar.isHidden() and not helper.active
    helper.start()
    helper.stop()  # done before the delay: the bar never shows
    qtbot.wait(SHOW_AFTER_MS + 200)
    assert bar.isHidden()


def test_window_work_shows_no_bar_at_once_and_blocks_a_second_run(qtbot: Any,
                                                                 window: Any) -> None:
    window.show()
    window.run_consolidation()
    # Busy at once (actions off, a message), the bar only after the delay.
    assert window.progress.active and window.progress_bar.isHidden()
    assert not window.run_action.isEnabled() and not window.import_action.isEnabled()
    assert window.statusBar().currentMessage().startswith("Consolidating")
    qtbot.waitUntil(lambda: "Consolidation run" in window.statusBar().currentMessage(),
                    timeout=60_000)
    assert window.run_action.isEnabled() and window.progress_bar.isHidden()


# --- one place for error display -----------------------------------------------------------

def test_report_error_says_expected_failures_inline_and_pops_up_the_rest(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import ui.errors
    from app.errors import WrongKey
    popups: list[BaseException] = []
    monkeypatch.setattr(ui.errors, "show_error", lambda _p, exc: popups.append(exc))
    said: list[str] = []
    assert ui.errors.report_error(None, WrongKey(), said.append, prefix="No: ")
    assert said == [f"No: {WrongKey.user_message}"] and popups == []
    boom = RuntimeError("bug")
    assert not ui.errors.report_error(None, boom, said.append, otherwise="Not saved.")
    assert said[-1] == "Not saved." and popups == [boom]


# --- the password length rule: one source ----------------------------------------------------

def test_password_length_rule_has_one_source(qtbot: Any, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Raise the rule in app.validation and every path that sets a password follows it:
    the CLI (init), the create dialog, the recovery-code page and Settings."""
    import app.validation
    monkeypatch.setattr(app.validation, "MIN_PASSWORD_LENGTH", 12)
    eleven = "abcdefghijk"

    # CLI (in process): refused with the new number, nothing created.
    import contextlib
    import io

    from app.cli import main
    monkeypatch.setenv("KEPT_PASSWORD", eleven)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["--vault", str(tmp_path / "cli"), "init"])
    assert code == 2 and "at least 12 characters" in err.getvalue()
    assert not (tmp_path / "cli").exists() or not any((tmp_path / "cli").iterdir())

    # The create dialog and the recovery page.
    from ui.dialogs.unlock import UnlockDialog
    dlg = UnlockDialog(tmp_path / "new", create=True, vault_factory=lambda *a: pytest.fail(
        "a short password reached the vault"))
    qtbot.addWidget(dlg)
    dlg.password.setText(eleven)
    dlg.repeat.setText(eleven)
    dlg.ok.click()
    assert "at least 12 characters" in dlg.error.text()
    unlock = UnlockDialog(tmp_path / "new")
    qtbot.addWidget(unlock)
    unlock.use_code.click()
    unlock.code.setText("AAAA-BBBB")
    unlock.new_password.setText(eleven)
    unlock.new_repeat.setText(eleven)
    unlock.ok.click()
    assert "at least 12 characters" in unlock.error.text()

    # Settings' password change (pure validation, before any vault call; the page needs only
    # the facade's pure static checks here, so the Vault class stands in for an open vault).
    from app.facade import Vault
    from ui.bridge import CoreBridge
    from ui.views.settings import SettingsView
    monkeypatch.setattr(SettingsView, "refresh", lambda self: None)
    monkeypatch.setattr(SettingsView, "_probe_keychain", lambda self: None)
    view = SettingsView(Vault, CoreBridge())
    qtbot.addWidget(view)
    view.old_pw.setText("old password")
    view.new_pw.setText(eleven)
    view.repeat_pw.setText(eleven)
    problem = view.validate_password()
    assert problem is not None and "at least 12 characters" in problem[0]
    view.new_pw.setText(eleven + "x")
    view.repeat_pw.setText(eleven + "x")
    assert view.validate_password() is None
