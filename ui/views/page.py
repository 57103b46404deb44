"""The base of every page of the main window (and of the detail pane). Layer: ui. GUI thread.

What each view used to copy: the vault and the bridge (injected, never read through the
window), loads off the GUI thread whose late results are dropped (a generation per kind of
load), refreshing from the bridge's change flags, and staleness while hidden (a page that is
not shown only notes that it is out of date and reloads when it is shown again: the Insights
read every active row, and an import sends a change a second).

A page talks to the window through signals only (``navigate_requested``, ``running_changed``,
``idle_minutes_changed``); the window connects them when it makes the page
(``ui/views/registry.py`` lists the pages).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QScrollArea, QVBoxLayout, QWidget

from app.api import SettingValue, VaultAPI
from app.changes import Changes
from ui.bridge import CoreBridge
from ui.tasks import run_query

T = TypeVar("T")


def setting_int(value: SettingValue | None) -> int:
    """A number setting as read from ``VaultAPI.setting`` (which gives a declared setting's
    default, never None, for the keys the pages read)."""
    if value is None:
        raise TypeError("a declared setting has no value")
    return int(value)


class Page(QWidget):
    """Owned by the window's page stack (or by another page); lives on the GUI thread.
    Subclasses set what they draw in ``__init__``, load in ``refresh`` (through ``load``) and
    say which change flags concern them in ``wants``."""

    # A navigation key for the window, as the navigation tree holds them: ("page", "settings").
    navigate_requested = Signal(object)
    # Long work this page runs (a consolidation) started (True) or ended (False): the window
    # keeps its own "Run consolidation now" off meanwhile, and calls ``set_run_allowed``.
    running_changed = Signal(bool)
    # The auto-lock delay was saved (minutes).
    idle_minutes_changed = Signal(float)

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None
                 ) -> None:
        super().__init__(parent)
        self.vault = vault
        self.bridge = bridge
        self._generations: dict[str, int] = {}
        self._stale = False
        bridge.changes_applied.connect(self._on_bridge_changes_applied)

    # --- loading ------------------------------------------------------------------------
    def refresh(self) -> None:
        """Load what the page shows (through ``load``). Default: nothing to load."""

    def load(self, fn: Callable[[], T], fill: Callable[[T], None], *, kind: str = "") -> None:
        """Run ``fn`` off the GUI thread, then ``fill(result)`` on it, unless a newer load of
        the same ``kind`` started meanwhile (its result is the one that counts)."""
        gen = self._generations.get(kind, 0) + 1
        self._generations[kind] = gen

        def done(result: T) -> None:
            if self._generations.get(kind) == gen:
                fill(result)
        run_query(self, fn, done)

    def fill_scrolled(self, content: QWidget, name: str = "") -> None:
        """Make ``content`` the page's body, inside a borderless scroll area. ``name``: for a
        page with no control of its own, the scroll area's accessible name; it is then a Tab
        stop, so the keys can scroll the page (``ui.access``)."""
        scroll = QScrollArea()
        scroll.setAccessibleName(name)
        scroll.setWidgetResizable(True)
        scroll.setWidget(content)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(scroll)

    def generation(self, kind: str = "") -> int:
        """The newest load of ``kind`` (work in slices checks it is still the newest)."""
        return self._generations.get(kind, 0)

    def drop_loads(self) -> None:
        """Results of every load under way will be dropped (e.g. the page was cleared)."""
        for kind in self._generations:
            self._generations[kind] += 1

    # --- change flags -------------------------------------------------------------------
    def wants(self, changes: Changes) -> bool:
        """Whether ``changes`` touch what this page shows. Default: nothing does."""
        return False

    def on_changes(self, changes: Changes, initiator: QObject | None = None) -> None:
        """Reload now when shown, else once it is shown again."""
        if changes.lock or not self.wants(changes):
            return
        if self.shown():
            self.refresh()
        else:
            self._stale = True

    def shown(self) -> bool:
        """The page is the one its window shows (even while the window itself is hidden)."""
        return self.isVisibleTo(self.window())

    @property
    def stale(self) -> bool:
        return self._stale

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt name)
        super().showEvent(event)
        if self._stale:
            self._stale = False
            self.refresh()

    @Slot(object, object)
    def _on_bridge_changes_applied(self, changes: Changes, initiator: QObject | None) -> None:
        self.on_changes(changes, initiator)

    # --- from the window ----------------------------------------------------------------
    def set_run_allowed(self, allowed: bool) -> None:
        """The window's "Run consolidation now" is (not) available. Default: ignored."""
