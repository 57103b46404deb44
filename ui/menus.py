"""The window's Edit, View and Help menus (the File menu is ``ui.file_menu``). Layer: ui.
GUI thread.

Everyday actions, each with its key: Ctrl+N adds a memory, F2 corrects the selected one, Delete
asks to forget the selection, Ctrl+F goes to the search field, Ctrl+1..6 to a store, F1 shows
every key. Text fields keep their own keys (Delete, Ctrl+A) while they have the focus: Qt asks
the focused widget first (a shortcut override), so Delete in the search field deletes a
character and never asks to forget anything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, Slot
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QApplication, QMenu

from app import __version__
from app.prefs import THEMES, Prefs
from ui import theme
from ui.dialogs import confirm

if TYPE_CHECKING:
    from ui.main_window import MainWindow, NavKey

THEME_LABELS = {"system": "Follow the &system", "light": "&Light", "dark": "&Dark"}


def add_action(menu: QMenu, owner: QObject, label: str, slot: Callable[[], None],
               key: str | None = None, *, name: str = "") -> QAction:
    """An entry of ``menu`` (owned by ``owner``, the window, so its key works anywhere in it)
    that calls ``slot``; ``key``: its shortcut, ``name``: its object name."""
    a = QAction(label, owner)
    if key is not None:
        a.setShortcut(QKeySequence(key))
    if name:
        a.setObjectName(name)
    a.triggered.connect(slot)
    menu.addAction(a)
    return a


class WindowMenus(QObject):
    """Owner: the main window (its Qt child; no Python reference back, as ``FileMenu``)."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        bar = window.menuBar()
        self.edit = bar.addMenu("&Edit")
        self.view = bar.addMenu("&View")
        self.help = bar.addMenu("&Help")
        self._build_edit()
        self._build_view()
        self._build_help()
        self.edit.aboutToShow.connect(self.update_edit_actions)
        window.browse.table.selectionModel().selectionChanged.connect(
            self.update_edit_actions)
        window.browse.detail.memory_changed.connect(self.update_edit_actions)
        self.update_edit_actions()

    @property
    def window(self) -> MainWindow:
        from typing import cast

        from ui.main_window import MainWindow
        return cast(MainWindow, self.parent())

    def _act(self, menu: QMenu, label: str, slot: Callable[[], None], key: str | None = None,
             *, name: str = "") -> QAction:
        return add_action(menu, self.window, label, slot, key, name=name)

    # --- Edit ----------------------------------------------------------------------------
    def _build_edit(self) -> None:
        m = self.edit
        self.add_action = self._act(m, "&Add a memory…", self.add_memory, "Ctrl+N",
                                    name="addMemoryAction")
        m.addSeparator()
        self.correct_action = self._act(m, "&Correct…", self._on_correct, "F2")
        self.confirm_action = self._act(m, "Con&firm it is right", self._on_confirm)
        self.archive_action = self._act(m, "A&rchive", self.archive_selection)
        self.forget_action = self._act(m, "&Forget…", self.forget_selection, "Delete",
                                       name="forgetAction")
        self.share_action = self._act(m, "S&hare with all assistants…", self._on_share,
                                      name="shareAction")
        m.addSeparator()
        self.select_all_action = self._act(m, "Select &all in the list", self._on_select_all,
                                           "Ctrl+A")
        # A text field keeps Delete and Ctrl+A for itself (see the module's note): only when
        # the focus is elsewhere do they reach these actions.
        for a in (self.forget_action, self.select_all_action):
            a.setShortcutContext(Qt.ShortcutContext.WindowShortcut)

    @Slot()
    def update_edit_actions(self, *_a: object) -> None:
        browse = self.window.browse
        ids = browse.selected_ids()
        detail = browse.detail
        one = detail.memory_id is not None
        self.correct_action.setEnabled(one and detail.correct_btn.isEnabled())
        self.confirm_action.setEnabled(one and detail.confirm_btn.isEnabled())
        self.archive_action.setEnabled(bool(ids))
        self.archive_action.setText("&Restore from the Archive" if one and detail.status
                                    == "archived" and len(ids) <= 1 else "A&rchive")
        self.forget_action.setEnabled(bool(ids))
        self._update_share_action()
        n = len(ids)
        self.forget_action.setText(f"&Forget {n} memories…" if n > 1 else "&Forget…")

    def _update_share_action(self) -> None:
        """As the detail pane's share button: an assistant's memory, or one the person shared
        (then it undoes the sharing)."""
        detail = self.window.browse.detail
        shown = detail.memory_id is not None and not detail.share_btn.isHidden()
        self.share_action.setEnabled(shown)
        self.share_action.setText("&Undo sharing" if shown and detail.shared_from
                                  else "S&hare with all assistants…")

    @Slot()
    def _on_share(self) -> None:
        detail = self.window.browse.detail
        if detail.memory_id is not None and not detail.share_btn.isHidden():
            self.window.stack.setCurrentWidget(self.window.browse)
            detail.share_btn.click()

    @Slot()
    def add_memory(self) -> None:
        from ui.dialogs.add_memory import AddMemoryDialog
        window = self.window
        dlg = AddMemoryDialog(window.vault, window.bridge, window.vault_name(), window)
        dlg.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dlg.added.connect(window.show_added)
        dlg.open()

    @Slot()
    def _on_correct(self) -> None:
        detail = self.window.browse.detail
        if detail.correct_btn.isEnabled() and detail.memory_id is not None:
            self.window.stack.setCurrentWidget(self.window.browse)
            detail.correct_btn.click()

    @Slot()
    def _on_confirm(self) -> None:
        detail = self.window.browse.detail
        if detail.confirm_btn.isEnabled():
            detail.confirm_btn.click()

    @Slot()
    def archive_selection(self) -> None:
        """One memory: as its Archive button does. Several: ask first, then archive each."""
        browse = self.window.browse
        ids = browse.selected_ids()
        if not ids:
            return
        if len(ids) == 1:
            browse.detail.archive_btn.click()
            return
        vault, bridge = self.window.vault, self.window.bridge

        def archive_all() -> None:
            from app.changes import Changes, Result
            from ui.tasks import run_op

            def run() -> Result[int]:
                done = 0
                for mid in ids:
                    if vault.get(mid).status.value == "active":
                        vault.archive(mid)
                        done += 1
                return Result(done, Changes(memories=True))

            def said(result: Result[int]) -> None:
                self.window.statusBar().showMessage(
                    f"Archived {result.value} memories; they are in the Archive, where "
                    "Restore brings each back.", 10_000)
            run_op(self.window, run, said, bridge)
        confirm.ask(self.window, "Archive",
                    f"Archive the {len(ids)} selected memories?",
                    detail="They leave the lists and recall but are not forgotten: the "
                    "Archive keeps them, and Restore brings each back.",
                    action="A&rchive them", then=archive_all)

    @Slot()
    def forget_selection(self) -> None:
        """Shows everything that would go and asks (``ForgetDialog``)."""
        from ui.dialogs.forget import ForgetDialog
        window = self.window
        ids = window.browse.selected_ids()
        if not ids or window.stack.currentWidget() is not window.browse:
            return
        dlg = ForgetDialog(window.vault, window.bridge, window, ids=ids)
        dlg.forgotten.connect(lambda _report: window.browse.detail.clear())
        dlg.show()

    @Slot()
    def _on_select_all(self) -> None:
        window = self.window
        if window.stack.currentWidget() is window.browse:
            window.browse.table.selectAll()

    # --- View ----------------------------------------------------------------------------
    def _build_view(self) -> None:
        m = self.view
        window = self.window
        self.find_action = self._act(m, "&Find…", self.find, "Ctrl+F", name="findAction")
        self.as_of_action = self._act(m, "Search &as of a day", self._on_as_of)
        self.as_of_action.setCheckable(True)
        window.browse.search_bar.as_of_check.toggled.connect(self.as_of_action.setChecked)
        m.addSeparator()
        for n, (label, key) in enumerate(window.store_items(), start=1):
            self._act(m, label, self._go_to(key), f"Ctrl+{n}")
        m.addSeparator()
        for label, key, shortcut in (("&Inbox", ("page", "inbox"), "Ctrl+Shift+I"),
                                     ("A&rchive", ("archive",), None),
                                     ("&Consolidation", ("page", "consolidation"), None),
                                     ("Insi&ghts", ("page", "insights"), None),
                                     ("&Settings", ("page", "settings"), "Ctrl+,")):
            self._act(m, label, self._go_to(key), shortcut)
        self._act(m, "&Timeline", self._on_timeline)
        m.addSeparator()
        themes = m.addMenu("T&heme")
        group = QActionGroup(self)
        group.setExclusive(True)
        current = Prefs.load().theme
        self.theme_actions: dict[str, QAction] = {}
        for name in THEMES:
            a = QAction(THEME_LABELS[name], self.window)
            a.setCheckable(True)
            a.setChecked(name == current)
            a.triggered.connect(lambda _c=False, t=name: self.set_theme(t))
            group.addAction(a)
            themes.addAction(a)
            self.theme_actions[name] = a

    def _go_to(self, key: NavKey) -> Callable[[], None]:
        return lambda: self.window.go(key)

    @Slot()
    def find(self) -> None:
        window = self.window
        if window.stack.currentWidget() is not window.browse:
            window.go(("store", None, "All memories"))
        window.browse.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        window.browse.search.selectAll()

    @Slot()
    def _on_as_of(self) -> None:
        check = self.window.browse.search_bar.as_of_check
        check.setChecked(self.as_of_action.isChecked())
        if check.isChecked():
            self.window.browse.search_bar.as_of_date.setFocus()

    @Slot()
    def _on_timeline(self) -> None:
        window = self.window
        window.nav.setCurrentItem(window.timeline_item)
        window.timeline_item.setExpanded(True)
        window.nav.setFocus()

    def set_theme(self, name: str) -> None:
        """Use and remember a theme (``ui.theme.apply_theme``)."""
        app = QApplication.instance()
        if isinstance(app, QApplication):
            theme.apply_theme(app, name)
        prefs = Prefs.load()
        prefs.theme = next((t for t in THEMES if t == name), "system")
        prefs.save()
        self.theme_actions[prefs.theme].setChecked(True)

    # --- Help ----------------------------------------------------------------------------
    def _build_help(self) -> None:
        m = self.help
        self.shortcuts_action = self._act(m, "&Keyboard shortcuts", self.show_shortcuts, "F1",
                                          name="shortcutsAction")
        self._act(m, "How Kept keeps your memories &safe", self.show_security)
        m.addSeparator()
        self._act(m, "&About Kept", self.show_about)

    def shortcut_lines(self) -> list[tuple[str, str]]:
        """(keys, what they do) for every menu action with a key, then the list's own keys."""
        lines: list[tuple[str, str]] = []
        for menu in self.window.menuBar().findChildren(QMenu):
            for a in menu.actions():
                key = a.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
                if key and not a.isSeparator():
                    lines.append((key, a.text().replace("&", "").rstrip("…")))
        lines += [("Up, Down", "Move through the list"),
                  ("Shift+Up, Shift+Down", "Select several memories"),
                  ("Enter (in the search field)", "Search"),
                  ("Tab, Shift+Tab", "Move between the list, the details and their buttons"),
                  ("Escape", "Close a dialog without doing anything")]
        return lines

    @Slot()
    def show_shortcuts(self) -> None:
        from ui.dialogs.help import HelpDialog
        rows = "".join(f"<tr><td style='padding-right:18px'><b>{k}</b></td><td>{t}</td></tr>"
                       for k, t in self.shortcut_lines())
        HelpDialog.open_one(self.window, "Keyboard shortcuts", f"<table>{rows}</table>")

    @Slot()
    def show_security(self) -> None:
        from ui.dialogs.help import SECURITY_SUMMARY, HelpDialog
        HelpDialog.open_one(self.window, "How Kept keeps your memories safe", SECURITY_SUMMARY)

    @Slot()
    def show_about(self) -> None:
        from ui.dialogs.help import HelpDialog, about_html
        HelpDialog.open_one(self.window, "About Kept", about_html(__version__))
