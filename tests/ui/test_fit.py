"""Dialogs and pages fit their text (issue 25 item 2): every dialog and every page of the
window is walked at 100 %, 150 % and 200 %, with the window at 1024x640, and every visible
label must show all of its text; the memory list must show at least the first 30 characters
of what each column holds.

How the scales are simulated: ``QT_SCALE_FACTOR`` is read once, when the QApplication starts,
and the test session has one QApplication at scale 1 (tests/conftest.py). So 150 % and 200 %
scale the application font by 1.5 and 2 instead (the bundled DejaVu Sans of the screenshot
tests, 10 pt at 100 %) before any dialog or window is made, so each lays itself out and takes
its sizes in characters from the scaled font, as at a real scale; the main window is sized to
1024x640 logical pixels at that scale (1536x960 and 2048x1280 device pixels, what
``QT_SCALE_FACTOR=2`` makes of a 1024x640 window). Frame widths and margins stay at their 1x
pixel sizes, so text has slightly more room than at a real scale factor; text sizes, which
is what cuts words, are scaled as a real scale factor scales them. Dialogs are shown at the
size they choose themselves, as the app shows them, and checked after their background work
(the keychain probe, the folder check, a failed unlock) has changed their text.

What "fits" means for one label (``misfits``):
- word-wrapped: ``heightForWidth(width) <= height`` (the wrapped text is not cut at the
  bottom), and no word is wider than the label;
- one line: the widest line of the text, measured with the label's font metrics (rich text
  through a QTextDocument), is no wider than the label's contents, and all its lines are as
  tall as they need; a label may cut its text only when it elides it on purpose (property
  ``elided`` set, the full text in its tool tip);
- and it is not drawn over by a visible sibling, nor outside its window.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QRect, QSize, Qt, QThreadPool
from PySide6.QtGui import QFont, QFontMetrics, QTextDocument
from PySide6.QtGui import Qt as GuiQt
from PySide6.QtWidgets import QAbstractScrollArea, QLabel, QWidget

pytestmark = pytest.mark.gui

SCALES = (1.0, 1.5, 2.0)
WINDOW = QSize(1024, 640)
BASE_POINTS = 10.0
WAIT = 15_000
FIRST_CHARS = 30


# --- measuring -----------------------------------------------------------------------------
def _is_rich(label: QLabel) -> bool:
    fmt = label.textFormat()
    if fmt == Qt.TextFormat.AutoText:
        return bool(GuiQt.mightBeRichText(label.text()))
    return fmt == Qt.TextFormat.RichText


def text_size(label: QLabel) -> QSize:
    """The size ``label``'s text needs on one line per paragraph, from its font metrics."""
    if _is_rich(label):
        doc = QTextDocument()
        doc.setDefaultFont(label.font())
        doc.setDocumentMargin(0)
        doc.setHtml(label.text())
        return QSize(int(doc.idealWidth() + 0.999), int(doc.size().height() + 0.999))
    fm = label.fontMetrics()
    lines = label.text().split("\n")
    return QSize(max(fm.horizontalAdvance(line) for line in lines), fm.height() * len(lines))


def _text_room(label: QLabel) -> QRect:
    room = label.contentsRect()
    m = label.margin()
    return room.adjusted(m, m, -m, -m)


def _scroll_area(w: QWidget) -> QAbstractScrollArea | None:
    p = w.parentWidget()
    while p is not None:
        if isinstance(p, QAbstractScrollArea):
            return p
        p = p.parentWidget()
    return None


def _label_name(label: QLabel) -> str:
    where = label.window().windowTitle() or type(label.window()).__name__
    name = label.objectName() or type(label.parentWidget()).__name__
    return f"{where} / {name} {label.text()[:50]!r}"


def misfits(root: QWidget) -> list[str]:
    """Every visible label under ``root`` (a window) whose text does not fit; see above."""
    out: list[str] = []
    window_rect = root.rect()
    for label in root.findChildren(QLabel):
        if not label.isVisible() or not label.text() or label.width() <= 0:
            continue
        name = _label_name(label)
        room = _text_room(label)
        if label.wordWrap():
            need = label.heightForWidth(label.width())
            if need > label.height():
                out.append(f"{name}: wrapped text needs {need} px, has {label.height()}")
            fm = label.fontMetrics()
            if not _is_rich(label):
                words = re.split(r"[\s\u200b]+", label.text())  # a zero-width space may break
                widest = max((fm.horizontalAdvance(w) for w in words), default=0)
                if widest > room.width():
                    out.append(f"{name}: a word is {widest} px wide, the label {room.width()}")
        elif not label.property("elided"):
            size = text_size(label)
            if size.width() > room.width():
                out.append(f"{name}: text is {size.width()} px wide, has {room.width()}")
            if size.height() > room.height() + 1:
                out.append(f"{name}: text is {size.height()} px tall, has {room.height()}")
        area = _scroll_area(label)
        if area is not None:
            # Scrolled content may lie outside the window, but only as far as it can be
            # scrolled: with no horizontal scroll bar, it must lie within the viewport's width.
            if area.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOff:
                view = area.viewport()
                left = label.mapTo(view, label.rect().topLeft()).x()
                if left < 0 or left + label.width() > view.width():
                    out.append(f"{name}: {left}..{left + label.width()} px, outside its "
                               f"scroll area's width {view.width()} (no horizontal scroll bar)")
            continue
        top_left = label.mapTo(root, label.rect().topLeft())
        in_window = QRect(top_left, label.size())
        if not window_rect.contains(in_window):
            out.append(f"{name}: at {in_window}, outside its window {window_rect}")
        parent = label.parentWidget()
        if parent is None:
            continue
        for sib in parent.findChildren(QWidget, options=Qt.FindChildOption.FindDirectChildrenOnly):
            if sib is label or not sib.isVisible() or sib.isWindow():
                continue
            if sib.geometry().intersects(label.geometry()):
                out.append(f"{name}: overlapped by {type(sib).__name__} "
                           f"{sib.objectName() or ''} at {sib.geometry()}")
    return out


# --- scale and settling --------------------------------------------------------------------
def settle(qtbot: Any) -> None:
    """Background work delivered, every posted layout request handled."""
    for _ in range(3):
        QThreadPool.globalInstance().waitForDone(WAIT)
        QCoreApplication.processEvents()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
        qtbot.wait(20)


@pytest.fixture(params=SCALES, ids=lambda s: f"{int(s * 100)}pct")
def scale(request: pytest.FixtureRequest, qapp: Any) -> Iterator[float]:
    """The screenshot look (Fusion, DejaVu Sans) with the font scaled; restored after."""
    from tests.ui.screens.look import apply_look
    restore = apply_look(qapp)
    font = QFont(qapp.font())
    font.setPointSizeF(BASE_POINTS * request.param)
    qapp.setFont(font)
    yield request.param
    restore()


def scaled(size: QSize, s: float) -> QSize:
    return QSize(round(size.width() * s), round(size.height() * s))


# --- dialogs -------------------------------------------------------------------------------
def _show(qtbot: Any, dlg: QWidget) -> QWidget:
    qtbot.addWidget(dlg)
    dlg.show()
    qtbot.waitExposed(dlg)
    settle(qtbot)
    return dlg


def _dialogs(qtbot: Any, vault: Any, tmp_path: Path) -> Iterator[tuple[str, QWidget]]:
    """Each dialog in the states where its text changes after it is shown."""
    from app.errors import WrongKey
    from ui.bridge import CoreBridge
    from ui.dialogs.files import BackupDialog, ExportDialog, RestoreDialog
    from ui.dialogs.forget import ForgetDialog
    from ui.dialogs.pair import PairDialog
    from ui.dialogs.unlock import RecoveryCodeDialog, UnlockDialog
    bridge = CoreBridge()

    create = UnlockDialog(tmp_path / "new-vault", create=True)
    _show(qtbot, create)
    qtbot.waitUntil(lambda: create.remember.isVisible() or create.remember_note.text() != "",
                    timeout=WAIT)
    create.password.setText("password1")
    settle(qtbot)
    yield "create", create
    create.reject()

    def refuse(*_a: object) -> Any:
        raise WrongKey()
    unlock = UnlockDialog(vault.folder, vault_factory=refuse)
    _show(qtbot, unlock)
    qtbot.waitUntil(lambda: unlock.remember.isVisible() or unlock.remember_note.text() != "",
                    timeout=WAIT)
    yield "unlock", unlock
    unlock.password.setText("not the password")
    unlock.ok.click()
    qtbot.waitUntil(lambda: unlock.error.text() != "", timeout=WAIT)
    settle(qtbot)
    yield "unlock, wrong password", unlock
    unlock.use_code.click()
    settle(qtbot)
    yield "unlock with the recovery code", unlock
    unlock.reject()

    code = RecoveryCodeDialog("ABCD-EFGH-JKLM-NPQR-STUV-WXYZ-2345-6789", folder=vault.folder)
    yield "recovery code", _show(qtbot, code)
    code.reject()

    mid = int(vault.page_memories(vault_query(), limit=1).rows[0].id)
    forget = ForgetDialog(vault, bridge, ids=[mid])
    _show(qtbot, forget)
    qtbot.waitUntil(lambda: forget.plan is not None, timeout=WAIT)
    settle(qtbot)
    yield "forget", forget
    forget.reject()

    pair = PairDialog(vault, bridge)
    yield "pair", _show(qtbot, pair)
    pair.name.setText("fit-test")
    pair.pair_btn.click()
    qtbot.waitUntil(lambda: bool(pair.key), timeout=WAIT)
    settle(qtbot)
    yield "pair, paired", pair
    pair.reject()

    export = ExportDialog(vault.folder)
    _show(qtbot, export)
    export.path.setText(str(tmp_path / "Dropbox" / "export-here"))
    settle(qtbot)
    yield "export", export
    export.reject()
    backup = BackupDialog(str(tmp_path), vault_folder=vault.folder)
    yield "backup", _show(qtbot, backup)
    backup.reject()
    restore = RestoreDialog()
    yield "restore", _show(qtbot, restore)
    restore.reject()


def vault_query() -> Any:
    from app.api import MemoryQuery
    return MemoryQuery()


def test_every_dialog_fits_its_text(qtbot: Any, scale: float, demo_vault: Any,
                                    tmp_path: Path) -> None:
    problems: list[str] = []
    seen = []
    for state, dlg in _dialogs(qtbot, demo_vault, tmp_path):
        seen.append(state)
        problems += [f"[{state}] {p}" for p in misfits(dlg)]
    assert len(seen) == 11
    assert not problems, "\n".join(problems)


def test_dialogs_name_the_vault(qtbot: Any, demo_vault: Any, tmp_path: Path) -> None:
    """Each dialog that acts on a vault says which, in its title or its first line."""
    from PySide6.QtWidgets import QLayout
    name = demo_vault.folder.name
    missing = []
    for state, dlg in _dialogs(qtbot, demo_vault, tmp_path):
        if state == "restore":
            continue  # restoring makes a new vault; the dialog asks for its folder
        expect = "new-vault" if state == "create" else name
        lay = dlg.layout()
        first = ""
        if isinstance(lay, QLayout):
            labels = [w for w in dlg.findChildren(QLabel) if w.isVisible() and w.text()]
            labels.sort(key=lambda w: w.mapTo(dlg, w.rect().topLeft()).y())
            first = labels[0].text() if labels else ""
        if expect not in dlg.windowTitle() and expect not in first:
            missing.append(f"{state}: title {dlg.windowTitle()!r}, first line {first!r}")
    assert not missing, "\n".join(missing)


def test_the_window_title_names_the_vault(window: Any, demo_vault: Any) -> None:
    assert window.windowTitle() == f"Kept — {demo_vault.folder.name}"


# --- pages ---------------------------------------------------------------------------------
def _pages(qtbot: Any, window: Any, open_page: Callable[[str], Any]
           ) -> Iterator[str]:
    from ui.views.registry import PAGES
    browse = window.browse
    qtbot.waitUntil(lambda: browse.model.rowCount() > 0, timeout=WAIT)
    browse.table.setCurrentIndex(browse.model.index(0, 0))
    qtbot.waitUntil(lambda: browse.detail.memory_id is not None, timeout=WAIT)
    settle(qtbot)
    yield "memory list"
    for name in PAGES:
        open_page(name)
        settle(qtbot)
        yield name


def test_every_page_fits_its_text(qtbot: Any, scale: float, window: Any,
                                  open_page: Callable[[str], Any]) -> None:
    window.resize(scaled(WINDOW, scale))
    window.show()
    qtbot.waitExposed(window)
    settle(qtbot)
    assert window.size() == scaled(WINDOW, scale), "the window cannot be made this small"
    problems: list[str] = []
    for page in _pages(qtbot, window, open_page):
        problems += [f"[{page}] {p}" for p in misfits(window)]
    assert not problems, "\n".join(problems)


def test_memory_list_columns_show_30_characters(qtbot: Any, scale: float, window: Any) -> None:
    """At 1024 px (logical), each column of the memory list is at least as wide as the first
    30 characters of the widest thing it holds, its header included; only a last column that
    stretches may be narrower (nothing lies to its right)."""
    from PySide6.QtWidgets import QHeaderView
    window.resize(scaled(WINDOW, scale))
    window.show()
    qtbot.waitExposed(window)
    browse = window.browse
    qtbot.waitUntil(lambda: browse.model.rowCount() > 0, timeout=WAIT)
    browse.table.setCurrentIndex(browse.model.index(0, 0))
    qtbot.waitUntil(lambda: browse.detail.memory_id is not None, timeout=WAIT)
    settle(qtbot)
    table, model = browse.table, browse.model
    header = table.horizontalHeader()
    fm = QFontMetrics(table.font())
    hfm = QFontMetrics(header.font())
    pad = 2 * (table.style().pixelMetric(table.style().PixelMetric.PM_FocusFrameHMargin) + 1)
    narrow = []
    last = model.columnCount() - 1
    for col in range(model.columnCount()):
        if col == last and header.sectionResizeMode(col) == QHeaderView.ResizeMode.Stretch:
            continue
        if table.isColumnHidden(col):  # Relevance: search results only (test_list_search)
            continue
        texts = [str(model.index(r, col).data() or "")[:FIRST_CHARS]
                 for r in range(model.rowCount())]
        need = max(fm.horizontalAdvance(t) for t in texts) + pad
        title = str(model.headerData(col, Qt.Orientation.Horizontal))
        need = max(need, hfm.horizontalAdvance(title) + pad)
        if header.sectionSize(col) < need:
            narrow.append(f"{title}: {header.sectionSize(col)} px, needs {need}")
    assert not narrow, "\n".join(narrow)


def test_the_window_fits_a_1024_screen_with_a_memory_shown(qtbot: Any, window: Any,
                                                           qapp: Any) -> None:
    """At 100 % (the application's own font, as ``KeptApplication`` sets it) the window's
    narrowest still fits 1024 px with a memory in the detail pane, in a list and in search
    results (it once needed 1108, then 1077: the list's 36 characters, a long When column, the
    Relevance column counted while hidden); a window asked to be 1024 wide is 1024 wide, not
    pushed past the screen's edge."""
    from PySide6.QtGui import QFont
    font = qapp.font()
    qapp.setFont(QFont("DejaVu Sans", 10))
    try:
        _fits_1024(qtbot, window)
    finally:
        qapp.setFont(font)


def _fits_1024(qtbot: Any, window: Any) -> None:
    from ui.views.browse import BrowsePage
    old = window.browse
    # The page as the application builds it in its own font.
    window.browse = BrowsePage(window.vault, window.bridge)
    window.stack.addWidget(window.browse)
    window.stack.setCurrentWidget(window.browse)
    window.browse.show_query("All memories", old.model.query)
    window.resize(WINDOW)
    window.show()
    qtbot.waitExposed(window)
    browse = window.browse
    qtbot.waitUntil(lambda: browse.model.rowCount() > 2, timeout=15_000)
    browse.table.selectRow(1)
    qtbot.waitUntil(lambda: browse.detail.memory_id is not None, timeout=15_000)
    qtbot.wait(100)
    assert window.minimumSizeHint().width() <= WINDOW.width()
    window.resize(WINDOW)
    qtbot.wait(50)
    assert window.width() == WINDOW.width()
    browse.search.setText("film")
    qtbot.keyClick(browse.search, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: browse.model.searching and browse.model.rowCount() > 0,
                    timeout=15_000)
    browse.table.selectRow(0)
    qtbot.waitUntil(lambda: browse.detail.memory_id is not None, timeout=15_000)
    qtbot.wait(100)
    assert window.minimumSizeHint().width() <= WINDOW.width()
