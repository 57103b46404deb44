#!/usr/bin/env python3
"""Fifteen everyday tasks, done through the real window as a person does them. Prints JSON.

    KEPT_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx QT_QPA_PLATFORM=offscreen \\
        .venv/bin/python bench/ui_walkthrough.py

The real application path (``ui.main.Controller``: the unlock dialog, the main window, its
menus and dialogs) on a copy of the demo vault ("My vault", password ``demo``) with the
embedding model, in a temporary config folder. Each task is driven by key presses (QTest) and,
where a person would reach for the mouse, clicks on the widget they would click; both are
counted. Two steps stand in for a system file chooser, which cannot be driven offscreen: the
chosen path is handed over as the chooser would hand it (said in the task's ``note``).

For each task: ``ok`` (its effect is checked in the vault or the window, not assumed), the
``keys`` and ``clicks`` it took, its ``seconds``, and the longest GUI stall while it ran
(``max_stall_ms``: the longest gap of a 5 ms timer on the GUI thread, as
``bench/ui_responsiveness.py`` measures it). The machine is shared: give its load with the
figures (``loadavg`` is printed).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import storage  # noqa: E402,F401  (first: onnxruntime telemetry off)

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
DEFAULT_MODEL = ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2" / "onnx"
if "KEPT_MODEL_DIR" not in os.environ and DEFAULT_MODEL.is_dir():
    os.environ["KEPT_MODEL_DIR"] = str(DEFAULT_MODEL)

from ui_responsiveness import StallMeter, settle, wait_until  # noqa: E402

CHAT = ROOT / "tests" / "data" / "import" / "chatgpt_conversations.json"


class Hands:
    """Key presses and clicks on real widgets, counted."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.keys = 0
        self.clicks = 0

    def key(self, widget: Any, key: Any, mods: Any = None, n: int = 1) -> None:
        from PySide6.QtCore import Qt
        from PySide6.QtTest import QTest
        for _ in range(n):
            QTest.keyClick(widget, key, mods or Qt.KeyboardModifier.NoModifier)
            self.keys += 1
        self.app.processEvents()

    def type(self, widget: Any, text: str) -> None:
        from PySide6.QtTest import QTest
        QTest.keyClicks(widget, text)
        self.keys += len(text)
        self.app.processEvents()

    def click(self, widget: Any) -> None:
        from PySide6.QtCore import Qt
        from PySide6.QtTest import QTest
        QTest.mouseClick(widget, Qt.MouseButton.LeftButton)
        self.clicks += 1
        self.app.processEvents()

    def pick(self, action: Any, depth: int = 2) -> None:
        """A menu entry chosen with the mouse: a click on the menu, one per submenu level."""
        action.trigger()
        self.clicks += depth
        self.app.processEvents()

    def tab_to(self, start: Any, target: Any, limit: int = 40) -> None:
        """Tab from ``start`` until ``target`` has the focus (each Tab counted)."""
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import QApplication
        start.setFocus()
        self.app.processEvents()
        chain = []
        for _ in range(limit):
            focus = QApplication.focusWidget()
            if focus is target:
                return
            chain.append(f"{type(focus).__name__}:{focus.objectName() if focus else ''}")
            self.key(focus or start, Qt.Key.Key_Tab)
        raise AssertionError(f"Tab never reached {target!r}; went {chain[:12]}")


def top(kind: type, app: Any, timeout: float = 30) -> Any:
    from PySide6.QtWidgets import QApplication
    found: list[Any] = []

    def visible() -> bool:
        found[:] = [w for w in QApplication.topLevelWidgets()
                    if isinstance(w, kind) and w.isVisible()]
        return bool(found)
    if not wait_until(app, visible, timeout):
        raise AssertionError(f"no {kind.__name__} appeared")
    return found[0]


def searched(window: Any) -> bool:
    """The list shows a search's results ("3 results for “…”"), not "Searching for…"."""
    import re
    return re.match(r"[\d,]+ results? for", window.browse.title.text()) is not None


def confirm_box(app: Any) -> Any:
    from PySide6.QtWidgets import QApplication, QMessageBox

    def box() -> Any:
        return next((w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox)
                     and w.objectName() == "confirm" and w.isVisible()), None)
    wait_until(app, lambda: box() is not None, 30)
    return box()


def main() -> int:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    work = Path(tempfile.mkdtemp(prefix="kept-walk-"))
    os.environ["XDG_CONFIG_HOME"] = str(work / "config")
    from app.demo import DEMO_PASSWORD, create_demo_vault
    from app.prefs import Prefs
    from ui.application import KeptApplication
    from ui.main import Controller, last_vault
    app = KeptApplication(sys.argv[:1])
    mine = work / "My vault"
    create_demo_vault(mine).lock()
    prefs = Prefs.load()
    prefs.opened(mine)
    prefs.save()
    hands = Hands(app)
    results: list[dict[str, Any]] = []
    ctl = Controller(app, last_vault(), demo=False)
    C, S, K = Qt.KeyboardModifier.ControlModifier, Qt.KeyboardModifier.ShiftModifier, Qt.Key

    def task(name: str, run: Callable[[], bool], note: str = "") -> None:
        hands.keys = hands.clicks = 0
        if ctl.window is not None:  # as a window manager does once a dialog has closed
            ctl.window.activateWindow()
            wait_until(app, lambda: QApplication.activeWindow() is ctl.window, 5)
        meter = StallMeter()
        meter.start()
        t0 = time.perf_counter()
        try:
            ok, error = bool(run()), ""
        except Exception as exc:  # a task that fails is reported, the walk goes on
            ok, error = False, f"{type(exc).__name__}: {exc}"
        settle(app, 0.5)
        stall = meter.stop()
        row: dict[str, Any] = {"task": name, "ok": ok, "keys": hands.keys,
                               "clicks": hands.clicks,
                               "seconds": round(time.perf_counter() - t0, 2),
                               "max_stall_ms": stall["max_gap_ms"]}
        if note:
            row["note"] = note
        if error:
            row["error"] = error
        results.append(row)

    def win() -> Any:
        assert ctl.window is not None
        return ctl.window

    def unlock(password: str) -> bool:
        from ui.dialogs.unlock import UnlockDialog
        dlg = top(UnlockDialog, app)
        hands.type(dlg.password, password)
        hands.key(dlg.password, K.Key_Return)
        return wait_until(app, lambda: ctl.window is not None and ctl.window.isVisible()
                          and ctl.window.browse.model.rowCount() > 0, 60)

    # 1 ------------------------------------------------------------------------------------
    def open_last() -> bool:
        ctl.start()
        ok = unlock(DEMO_PASSWORD)
        win().resize(1200, 760)
        win().activateWindow()
        return ok and ctl.folder == mine
    task("open the last vault", open_last)

    # 2 ------------------------------------------------------------------------------------
    def search_filter() -> bool:
        w = win()
        hands.key(w.browse.table, K.Key_F, C)
        bar = w.browse.search_bar
        hands.tab_to(w.browse.search, bar.as_of_check)
        hands.key(bar.as_of_check, K.Key_Space)  # As of: today
        hands.click(w.browse.search)
        hands.type(w.browse.search, "favorite film")
        hands.key(w.browse.search, K.Key_Return)
        ok = wait_until(app, lambda: searched(w), 30)
        ok = ok and any(t.startswith("as of") for t in w.browse.chips.texts) \
            and w.browse.model.rowCount() > 0  # the limit shows as a chip
        hands.key(bar.as_of_check, K.Key_Space)  # off again
        return ok
    task("search with a filter (as of a day)", search_filter)

    # 3 ------------------------------------------------------------------------------------
    added: list[int] = []

    def add() -> bool:
        from ui.dialogs.add_memory import AddMemoryDialog
        w = win()
        hands.key(w.browse.table, K.Key_N, C)
        dlg = top(AddMemoryDialog, app)
        hands.type(dlg.text, "My dentist is Dr Okafor on Rua Augusta.")
        hands.key(dlg.text, K.Key_Return, C)

        def listed() -> bool:
            row = w.browse.model.row_at(w.browse.table.currentIndex().row())
            if row is not None and row.text.startswith("My dentist is Dr Okafor"):
                added[:] = [int(row.id)]
                return True
            return False
        return wait_until(app, listed, 30)
    task("add a memory", add)

    # 4 ------------------------------------------------------------------------------------
    def correct() -> bool:
        w = win()
        detail = w.browse.detail
        hands.key(w.browse.table, K.Key_F2)
        wait_until(app, detail.editor.isVisible, 10)
        hands.key(detail.editor, K.Key_A, C)
        hands.type(detail.editor, "My dentist is Dr Okafor on Rua do Ouro.")
        hands.tab_to(detail.editor, detail.save_btn)
        hands.key(detail.save_btn, K.Key_Space)
        return wait_until(app, lambda: detail.text.toPlainText().endswith("Rua do Ouro.")
                          and w.browse.selected_ids() == [detail.memory_id], 30)
    task("correct a memory", correct)

    # 5 ------------------------------------------------------------------------------------
    def resolve() -> bool:
        w = win()
        vault = w.vault
        before = len(vault.contradictions("open"))
        hands.key(w.browse.table, K.Key_I, C | S)
        inbox = w.page("inbox")
        wait_until(app, lambda: bool(getattr(inbox, "cards", None)), 30)
        card = next(iter(inbox.cards.values()))
        hands.tab_to(w.nav, card.keep_a_btn, limit=60)
        hands.key(card.keep_a_btn, K.Key_Space)
        return wait_until(app, lambda: len(vault.contradictions("open")) == before - 1, 30)
    task("resolve a contradiction (keep one)", resolve)

    # 6 ------------------------------------------------------------------------------------
    def forget() -> bool:
        from ui.dialogs.forget import ForgetDialog
        w = win()
        hands.key(w.nav, K.Key_1, C)
        wait_until(app, lambda: w.browse.model.rowCount() > 0, 30)
        target = added[0] if added else None
        hands.click(w.browse.search)
        hands.type(w.browse.search, "dentist Okafor")
        hands.key(w.browse.search, K.Key_Return)
        wait_until(app, lambda: searched(w), 30)
        hands.key(w.browse.search, K.Key_Tab)  # to the list
        hands.key(w.browse.table, K.Key_Down)
        wanted = w.browse.selected_ids()
        hands.key(w.browse.table, K.Key_Delete)
        dlg = top(ForgetDialog, app)
        wait_until(app, lambda: dlg.plan is not None, 30)
        hands.tab_to(dlg.tree, dlg.confirm)
        hands.key(dlg.confirm, K.Key_Space)
        hands.tab_to(dlg.confirm, dlg.forget_btn)
        hands.key(dlg.forget_btn, K.Key_Space)
        from app.errors import NotFound

        def gone() -> bool:
            try:
                w.vault.get(wanted[0])
            except NotFound:
                return True
            return False
        ok = bool(wanted) and wait_until(app, gone, 30)
        if dlg.isVisible():
            hands.key(dlg, K.Key_Escape)
        return ok and target is not None
    task("forget", forget)

    # 7 ------------------------------------------------------------------------------------
    def undo_run() -> bool:
        w = win()
        w.go(("page", "consolidation"))
        hands.clicks += 1  # the navigation item
        view = w.page("consolidation")
        runs = w.vault.runs(5)
        run = next(r for r in runs if r.undone_at is None)
        wait_until(app, lambda: run.id in view.undo_buttons
                   and view.undo_buttons[run.id].isEnabled(), 30)
        hands.click(view.undo_buttons[run.id])
        box = confirm_box(app)
        action = box.findChild(type(view.undo_buttons[run.id]), "confirmAction")
        action.setFocus()
        hands.keys += 1  # Tab from Cancel to the action
        hands.key(action, K.Key_Space)
        return wait_until(app, lambda: w.vault.runs(5)[0].undone_at is not None, 60)
    task("undo a consolidation run", undo_run)

    # 8 ------------------------------------------------------------------------------------
    def import_chat() -> bool:
        w = win()
        before = sum(w.vault.status().totals.values())
        hands.keys += 1  # Ctrl+I: File > Import… opens the system file chooser
        hands.clicks += 2  # the file, then Open, in the chooser
        w.files.import_file(CHAT)
        return wait_until(app, lambda: w.files.last_message.startswith("Imported"), 60) and \
            sum(w.vault.status().totals.values()) > before
    task("import a chat export", import_chat,
         note="the system file chooser stands in as the path it returns (it cannot be driven "
              "offscreen): Ctrl+I, then a click on the file and on Open are counted")

    # 9 ------------------------------------------------------------------------------------
    def export() -> bool:
        from ui.dialogs.files import ExportDialog
        w = win()
        w.files.export_action.trigger()
        hands.keys += 1  # Ctrl+E
        dlg = top(ExportDialog, app)
        hands.tab_to(dlg.format, dlg.format)
        hands.key(dlg.format, K.Key_Down)  # JSON file
        hands.tab_to(dlg.format, dlg.path)
        hands.type(dlg.path, str(work / "export.json"))
        hands.tab_to(dlg.path, dlg.understood)
        hands.key(dlg.understood, K.Key_Space)
        hands.click(dlg.path)
        hands.key(dlg.path, K.Key_Return)
        return wait_until(app, lambda: (work / "export.json").is_file()
                          and w.files.last_message.startswith("Exported"), 60)
    task("export", export)

    # 10 -----------------------------------------------------------------------------------
    def backup() -> bool:
        from ui.dialogs.files import BackupDialog
        w = win()
        w.files.backup_action.trigger()
        hands.keys += 1  # Ctrl+B
        dlg = top(BackupDialog, app)
        hands.key(dlg.path, K.Key_A, C)
        hands.type(dlg.path, str(work / "my.keptbackup"))
        hands.key(dlg.path, K.Key_Return)
        return wait_until(app, lambda: w.files.last_message.startswith("Backed up"), 120)
    task("back up", backup)

    # 11 -----------------------------------------------------------------------------------
    restored = work / "Restored vault"

    def restore() -> bool:
        from ui.dialogs.files import RestoreDialog
        w = win()
        hands.pick(w.files.restore_action)
        dlg = top(RestoreDialog, app)
        hands.click(dlg.file)
        hands.type(dlg.file, str(work / "my.keptbackup"))
        hands.click(dlg.folder)
        hands.type(dlg.folder, str(restored))
        hands.click(dlg.password)
        hands.type(dlg.password, "not it")
        hands.key(dlg.password, K.Key_Return)  # wrong: said in the dialog, all kept
        wait_until(app, lambda: dlg.problem.isVisible(), 60)
        kept = dlg.isVisible() and dlg.file.text() == str(work / "my.keptbackup")
        hands.type(dlg.password, DEMO_PASSWORD)  # the wrong one is selected: typed over
        hands.key(dlg.password, K.Key_Return)
        box = confirm_box(app)  # open it now? Enter: not now
        hands.key(box, K.Key_Return)
        return kept and (restored / "vault.db").is_file()
    task("restore a backup", restore)

    # 12 -----------------------------------------------------------------------------------
    def pair() -> bool:
        from ui.dialogs.pair import PairDialog
        w = win()
        hands.key(w.nav, K.Key_Comma, C)
        settings = w.page("settings")
        btn = settings.assistants.pair_btn
        btn.setFocus()
        hands.keys += 1  # Tab to "Pair an assistant…"
        hands.key(btn, K.Key_Space)
        dlg = top(PairDialog, app)
        hands.type(dlg.name, "claude-desktop")
        hands.key(dlg.name, K.Key_Return)
        ok = wait_until(app, lambda: bool(dlg.key_field.text()), 30)
        ok = ok and any(a.name == "claude-desktop" for a in w.vault.agents())
        hands.click(dlg.close_btn)
        return ok
    task("pair an assistant", pair)

    # 13 -----------------------------------------------------------------------------------
    def lock_unlock() -> bool:
        w = win()
        hands.key(w.nav, K.Key_L, C)
        wait_until(app, lambda: ctl.window is None, 30)
        return unlock(DEMO_PASSWORD)
    task("lock, then unlock with Enter", lock_unlock)

    # 14 -----------------------------------------------------------------------------------
    def switch() -> bool:
        w = win()
        hands.keys += 1  # Ctrl+O: File > Open vault… opens the system folder chooser
        hands.clicks += 2
        w.files.open_vault(restored)
        if not unlock(DEMO_PASSWORD) or ctl.folder != restored:
            return False
        w2 = win()
        w2.files._fill_recent()
        back = next(a for a in w2.files.recent_menu.actions() if "My vault" in a.text())
        hands.pick(back, depth=3)  # File > Open recent > My vault
        return unlock(DEMO_PASSWORD) and ctl.folder == mine
    task("switch vault (and back through Open recent)", switch,
         note="the system folder chooser stands in as the path it returns: Ctrl+O, then a "
              "click on the folder and on Open are counted")

    # 15 -----------------------------------------------------------------------------------
    def change_theme() -> bool:
        from PySide6.QtGui import QPalette
        w = win()
        hands.pick(w.menus.theme_actions["dark"], depth=3)  # View > Theme > Dark
        dark = app.palette().color(QPalette.ColorRole.Window).lightness() < 80
        hands.pick(w.menus.theme_actions["light"], depth=3)
        return dark and Prefs.load().theme == "light"
    task("change the theme (dark, then light)", change_theme)

    ctl.shutdown()
    if ctl.window is not None:
        ctl.window.close()
    settle(app, 0.5)
    QApplication.processEvents()
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"loadavg": [round(x, 2) for x in os.getloadavg()],
                      "cpus": os.cpu_count(), "tasks": results,
                      "ok": sum(r["ok"] for r in results),
                      "longest_stall_ms": max(r["max_stall_ms"] or 0 for r in results)},
                     indent=1))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
