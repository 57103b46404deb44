"""Text from memories is never markup (issue 22 item 5, SECURITY.md requirement 28): a vault whose
turns, speakers, assistant facts, contradictions, entity summaries, forget request and folder
name all hold HTML is opened in the real window; every page of the navigation, a selected memory
of each, the Inbox, the entity cards, the forget dialog and the unlock dialog are shown, and
every label, text view and list item is checked: wherever our marker shows, its tags show too
(a label that rendered them as markup would have swallowed them, and loaded the image).
Real threaded SQLCipher vault, real consolidation, real widgets offscreen."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6 import QtGui
from PySide6.QtCore import QModelIndex, Qt, QThreadPool
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QTextEdit,
    QTreeWidgetItem,
    QWidget,
)

from tests.conftest import new_vault
from tests.ui.conftest import main_window

pytestmark = pytest.mark.gui

PASSWORD = "plain text password"
NOW = 1_782_950_400.0  # 2026-07-02
WAIT = 15_000
MARK = "ZQX"
TAG = f"{MARK}<b>"  # every payload has the marker right before a tag
IMG = '<img src="/etc/hostname">'
SAID = [f"{TAG}Bob</b> moved to Porto last spring {IMG}",
        f"My sister {TAG}Ana</b> lives in Lisbon and works at {TAG}Acme</b>",
        f"I started reading {TAG}Dune</b> this week",
        f"Sorry, {TAG}Ana</b> lives in Madrid now, not Lisbon"]


def rendered(label: QLabel) -> str:
    """What a label shows: its text, or the text of the document it renders."""
    text = label.text()
    fmt = label.textFormat()
    rich = fmt == Qt.TextFormat.RichText or (
        fmt == Qt.TextFormat.AutoText and QtGui.Qt.mightBeRichText(text))
    if not rich:
        return text
    doc = QTextDocument()
    doc.setHtml(text)
    return doc.toPlainText()


def shown_texts(root: QWidget | None = None) -> Iterator[tuple[str, str, str]]:
    """(widget, raw text, shown text) for every text-bearing widget and item."""
    widgets = root.findChildren(QWidget) + [root] if root else QApplication.allWidgets()
    for w in widgets:
        name = f"{type(w).__name__} {w.objectName() or ''}".strip()
        if isinstance(w, QLabel):
            yield name, w.text(), rendered(w)
        elif isinstance(w, QTextEdit):
            yield name, w.toHtml(), w.toPlainText()
        elif isinstance(w, QPlainTextEdit | QLineEdit):
            text = w.toPlainText() if isinstance(w, QPlainTextEdit) else w.text()
            yield name, text, text
        elif isinstance(w, QAbstractItemView) and w.model() is not None:
            for v in _item_texts(w.model(), QModelIndex(), 0):
                yield f"{name} item", v, v  # the default delegate paints plain text
        tip = w.toolTip()
        if tip:
            doc = QTextDocument()
            if QtGui.Qt.mightBeRichText(tip):
                doc.setHtml(tip)
                yield f"{name} tooltip", tip, doc.toPlainText()


def _item_texts(model: Any, parent: QModelIndex, depth: int) -> Iterator[str]:
    for r in range(min(model.rowCount(parent), 200)):
        for c in range(8):
            index = model.index(r, c, parent)
            if not index.isValid():
                break
            for role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
                v = index.data(role)
                if isinstance(v, str):
                    yield v
            if c == 0 and depth < 4:
                yield from _item_texts(model, index, depth + 1)


def markup_shown(root: QWidget | None = None) -> tuple[list[str], int]:
    """Widgets that rendered our tags as markup, and how many showed the marker at all."""
    bad, seen = [], 0
    for name, raw, shown in shown_texts(root):
        if MARK in shown:
            seen += 1
            if TAG in raw and TAG not in shown:
                bad.append(f"{name}: {shown[:80]!r}")
    return bad, seen


@pytest.fixture
def vault(tmp_path: Path, fast_kdf: Any) -> Iterator[Any]:
    from app.api import AssistantFact
    from app.clock import FixedClock
    from app.domain.memory import Draft, Store
    v = new_vault(tmp_path / f"{MARK}<b>vault</b>", PASSWORD, load_model=False, use_chroma=False,
                  clock=FixedClock(NOW))
    ids = []
    for n, text in enumerate(SAID):
        ids.append(v.remember(Draft(text=text, store=Store.EPISODIC, speaker="me",
                                    session=f"{MARK}<i>chat</i>",
                                    occurred_at=NOW - 60 * 86_400 + n * 86_400)).value)
    v.pair_agent("helper")
    for value in (f"{TAG}Porto</b>", f"{TAG}Faro</b>"):
        v.remember_fact(AssistantFact(subject=f"{TAG}Bob</b>", attribute="lives_in",
                                      value=value, statement=f"{TAG}Bob</b> lives in {value}"),
                        agent="helper")
    v.request_forget(agent="helper", ids=[ids[0]], reason=f"{TAG}please</b> {IMG}")
    v.consolidate()
    # The person's correction keeps its words as typed, tags and all: entity summaries are
    # built from it.
    from app.api import MemoryQuery
    fact = next(r for r in v.page_memories(MemoryQuery(store="semantic")).rows
                if "sister" in r.text)
    v.correct(fact.id, f"{TAG}Ana</b> is my sister {IMG}")
    v.consolidate()
    assert any(TAG in (e.summary or "") for e in v.entities())
    yield v
    QThreadPool.globalInstance().waitForDone(WAIT)
    if not v.locked:
        v.lock()


def _nav_items(window: Any) -> list[QTreeWidgetItem]:
    out: list[QTreeWidgetItem] = []

    def walk(item: QTreeWidgetItem) -> None:
        out.append(item)
        for i in range(item.childCount()):
            walk(item.child(i))
    for i in range(window.nav.topLevelItemCount()):
        walk(window.nav.topLevelItem(i))
    return out


def test_no_memory_text_renders_as_markup(qtbot: Any, vault: Any) -> None:
    from ui.dialogs.forget import ForgetDialog
    win = main_window(qtbot, vault)
    win.show()
    qtbot.waitExposed(win)
    qtbot.waitUntil(lambda: win.people_item.childCount() > 0, timeout=WAIT)
    bad: list[str] = []
    seen = 0
    for item in _nav_items(win):
        if item.flags() & Qt.ItemFlag.ItemIsSelectable:
            win.nav.setCurrentItem(item)
            qtbot.wait(150)
            QThreadPool.globalInstance().waitForDone(WAIT)
            qtbot.wait(50)
            table = win.browse.table
            if win.stack.currentWidget() is win.browse and win.browse.model.rowCount():
                for row in range(min(win.browse.model.rowCount(), 12)):
                    table.selectRow(row)
                    QThreadPool.globalInstance().waitForDone(WAIT)
                    qtbot.wait(30)
                    b, n = markup_shown()
                    bad += b
                    seen += n
            b, n = markup_shown()
            bad += b
            seen += n
    # the forget plan of a memory with markup
    mid = next(h.id for h in vault.recall("Porto", k=5) if MARK in h.text)
    # No parent: closing the window at teardown may delete its children before qtbot closes
    # this dialog (seen as "ForgetDialog already deleted" once in a while).
    dlg = ForgetDialog(vault, win.bridge, None, ids=[mid])
    qtbot.addWidget(dlg)
    dlg.show()
    qtbot.waitUntil(lambda: markup_shown(dlg)[1] > 0, timeout=WAIT)
    b, n = markup_shown(dlg)
    bad += b
    seen += n
    dlg.reject()
    assert seen >= 20, "the walk never met the marked text: it checked nothing"
    assert not bad, "\n".join(dict.fromkeys(bad))


def test_the_unlock_dialog_names_a_marked_folder_as_plain_text(qtbot: Any, vault: Any) -> None:
    from ui.dialogs.unlock import UnlockDialog
    folder = vault.folder
    vault.lock()
    dlg = UnlockDialog(folder, create=False)
    qtbot.addWidget(dlg)
    dlg.show()
    b, _n = markup_shown(dlg)
    assert not b, b


def test_every_dialog_shows_marked_text_as_plain_text(qtbot: Any, vault: Any) -> None:
    """The dialogs that quote paths, names and requests: export and backup (the vault folder
    named with HTML), restore, pairing, and the forget plan of an assistant's request (its
    reason holds HTML)."""
    from ui.bridge import CoreBridge
    from ui.dialogs.files import BackupDialog, ExportDialog, RestoreDialog
    from ui.dialogs.forget import ForgetDialog
    from ui.dialogs.pair import PairDialog
    bridge = CoreBridge()
    pid = vault.pending_forgets("pending")[0].id
    dialogs = [ExportDialog(vault.folder), BackupDialog(str(vault.folder)), RestoreDialog(),
               PairDialog(vault, bridge), ForgetDialog(vault, bridge, ids=None, pending=pid)]
    bad: list[str] = []
    seen = 0
    for dlg in dialogs:
        qtbot.addWidget(dlg)
        dlg.show()
        qtbot.wait(100)
        QThreadPool.globalInstance().waitForDone(WAIT)
        qtbot.wait(100)
        b, n = markup_shown(dlg)
        bad += [f"{type(dlg).__name__}: {x}" for x in b]
        seen += n
        dlg.reject()
    assert seen >= 3, "the dialogs never showed the marked text: nothing was checked"
    assert not bad, "\n".join(bad)
