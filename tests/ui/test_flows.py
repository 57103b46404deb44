"""End-to-end window flows on real vault files (pytest-qt, offscreen): unlock and create,
browse (lazy keyset paging), search, correct, forget (confirmed and cancelled), auto-lock with
the Controller and the memory-hygiene scans of SECURITY.md requirements 20 and 23.

Nothing below the facade is mocked: SQLCipher files in ``tmp_path``, the threaded writer, the
global thread pool. Only blocking dialogs (the recovery code's ``exec``) and the error popup
are replaced by recorders.
"""

from __future__ import annotations

import gc
import hashlib
import os
import shutil
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QModelIndex, Qt, QThreadPool

from tests.inside import inside

pytestmark = pytest.mark.gui

PASSWORD = "correct horse battery staple"
T0 = 1_780_000_000.0  # 2026-05-28, a fixed "now" for every vault built here
WAIT = 15_000


# --- helpers -------------------------------------------------------------------------------
def file_hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir()) if p.is_file()}


def drain() -> None:
    """Let every background task finish and deliver its result."""
    QThreadPool.globalInstance().waitForDone(WAIT)
    QCoreApplication.processEvents()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    QCoreApplication.processEvents()


def make_vault(folder: Path, kdf: Any, *, turns: int = 0, facts: tuple[str, ...] = ()) -> Any:
    """A real threaded vault with ``turns`` conversation turns (two memories each: the turn
    and its episode), then ``facts`` as semantic memories, all at fixed times."""
    from app.api import Turn
    from app.clock import FixedClock
    from app.domain.memory import Draft, Store
    from app.facade import Vault
    if (kdf.m, kdf.t, kdf.p) == (65_536, 3, 4):  # fast_kdf's: a copy of an empty vault
        from tests.conftest import new_vault
        vault = new_vault(folder, PASSWORD, load_model=False, use_chroma=False,
                          clock=FixedClock(T0))
    else:
        vault = Vault.create(folder, PASSWORD, kdf=kdf, load_model=False, use_chroma=False,
                             clock=FixedClock(T0)).vault
    if turns:
        vault.import_turns([
            Turn(session=f"s{n // 10}", speaker="Sam", ref=f"s{n // 10}:{n}",
                 text=f"Turn {n}: notes about errand number {n} and the weather.",
                 at=T0 - 86_400 * 30 + n * 600) for n in range(turns)])
    for n, text in enumerate(facts):
        vault.remember(Draft(text=text, store=Store.SEMANTIC, occurred_at=T0 - 60 + n))
    return vault


def close_vault(vault: Any) -> None:
    QThreadPool.globalInstance().waitForDone(WAIT)
    if not vault.locked:
        vault.lock()


def row_of(model: Any, mid: int) -> int:
    for n, row in enumerate(model.rows):
        if int(row.id) == int(mid):
            return n
    raise AssertionError(f"memory {mid} is not in the loaded rows")


def select_memory(qtbot: Any, window: Any, mid: int) -> None:
    browse = window.browse
    qtbot.waitUntil(lambda: browse.model.rowCount() > 0, timeout=WAIT)
    browse.table.setCurrentIndex(browse.model.index(row_of(browse.model, mid), 0))
    qtbot.waitUntil(lambda: browse.detail.memory_id == mid, timeout=WAIT)


def history_lines(detail: Any) -> list[str]:
    return [detail.history.item(i).text() for i in range(detail.history.count())]


def forget_dialog(qtbot: Any, window: Any) -> Any:
    from ui.dialogs.forget import ForgetDialog
    found: list[Any] = []

    def shown() -> bool:
        found[:] = [d for d in window.findChildren(ForgetDialog) if d.isVisible()]
        return bool(found)
    qtbot.waitUntil(shown, timeout=WAIT)
    dlg = found[0]
    qtbot.waitUntil(lambda: dlg.plan is not None, timeout=WAIT)
    return dlg


def tree_groups(tree: Any) -> dict[str, str]:
    return {tree.topLevelItem(i).text(0): tree.topLevelItem(i).text(1)
            for i in range(tree.topLevelItemCount())}


# Memory-hygiene scans (SECURITY.md 20 and 23) -----------------------------------------------
_ATOMIC = (int, float, bool, type(None), bytes, complex)


def _label(obj: Any, child: Any = None) -> str:
    name = f"{type(obj).__module__}.{type(obj).__qualname__}"
    if isinstance(obj, dict):
        keys = [k for k, v in obj.items() if v is child or k is child][:3]
        owners = [f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_referrers(obj)
                  if getattr(o, "__dict__", None) is obj]
        return f"{name} keys={keys!r} owner={owners[:2]}"
    if isinstance(obj, types.FrameType):
        return f"{name} {obj.f_code.co_filename}:{obj.f_lineno} in {obj.f_code.co_name}"
    if isinstance(obj, types.FunctionType | types.MethodType):
        return f"{name} {getattr(obj, '__qualname__', '')}"
    if isinstance(obj, tuple | list) and child is not None:
        idx = [n for n, v in enumerate(obj) if v is child][:3]
        return f"{name} len={len(obj)} at index {idx}"
    return name


def canary_strings_report(needle: bytes) -> tuple[int, str]:
    """How many live ``str`` hold ``needle`` (UTF-8), and who keeps each alive.

    ``gc.get_objects()`` lists tracked containers only, and CPython untracks tuples and dicts
    holding only atomic values (rows fetched from SQLite, say), so this walks the referents of
    tracked objects recursively through untracked containers, remembering the path; thread
    stacks are added through ``sys._current_frames()``. The report gives, for each hit, the
    chain of containers up to a tracked object and then that object's referrers, two levels
    up (the scan's own bookkeeping excluded)."""
    gc.collect()
    roots: list[Any] = gc.get_objects()
    frames: dict[int, str] = {}
    for frame in sys._current_frames().values():
        f: types.FrameType | None = frame
        while f is not None:
            if f.f_code is not canary_strings_report.__code__:
                roots.append(f.f_locals)
                frames[id(roots[-1])] = _label(f)
            f = f.f_back
    parent: dict[int, Any] = {}
    hits: list[tuple[str, Any]] = []
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        obj = stack.pop()
        for ref in gc.get_referents(obj):
            if id(ref) in seen:
                continue
            seen.add(id(ref))
            if isinstance(ref, str):
                if needle in ref.encode("utf-8", "surrogatepass"):
                    hits.append((ref, obj))
            elif not isinstance(ref, _ATOMIC) and not gc.is_tracked(ref):
                parent[id(ref)] = obj
                stack.append(ref)
    ignore = {id(roots), id(stack), id(hits), id(parent), id(seen), id(frames)}
    lines: list[str] = []
    for text, holder in hits:
        lines.append(f"str {text[:70]!r}")
        child: Any = text
        obj = holder
        while True:
            lines.append(f"  <- {_label(obj, child)}"
                         + (f" (locals of {frames[id(obj)]})" if id(obj) in frames else ""))
            if id(obj) not in parent:
                break
            child, obj = obj, parent[id(obj)]
        level: list[Any] = [(obj, "    ")]
        ignore.add(id(level[0]))
        for _ in range(2):
            up: list[Any] = []
            ignore.update((id(level), id(up)))
            for o, indent in level:
                for r in gc.get_referrers(o):
                    if id(r) in ignore or (isinstance(r, types.FrameType)
                                           and r.f_code is canary_strings_report.__code__):
                        continue
                    lines.append(f"{indent}<- {_label(r, o)}")
                    if not isinstance(r, types.ModuleType):
                        up.append((r, indent + "  "))
                        ignore.add(id(up[-1]))
            level = up[:8]
    count = len(hits)
    del roots, stack, hits, parent, seen, frames
    return count, "\n".join(lines[:200])


def widget_texts() -> list[tuple[str, str]]:
    """(widget class, text) for every text a live widget holds (requirement 23)."""
    from PySide6.QtWidgets import (
        QAbstractButton,
        QAbstractItemView,
        QApplication,
        QLabel,
        QLineEdit,
        QPlainTextEdit,
        QTextEdit,
    )
    out: list[tuple[str, str]] = []
    for w in QApplication.allWidgets():
        name = type(w).__name__
        out += [(name, w.windowTitle()), (name, w.toolTip())]
        if isinstance(w, QLabel | QAbstractButton | QLineEdit):
            out.append((name, w.text()))
        elif isinstance(w, QPlainTextEdit | QTextEdit):
            out.append((name, w.toPlainText()))
        if isinstance(w, QAbstractItemView) and w.model() is not None:
            out += [(name, text) for text in _model_texts(w.model(), QModelIndex())]
    return out


def _model_texts(model: Any, parent: QModelIndex) -> list[str]:
    out = []
    for r in range(model.rowCount(parent)):
        for c in range(model.columnCount(parent)):
            idx = model.index(r, c, parent)
            for role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
                value = model.data(idx, role)
                if value is not None:
                    out.append(str(value))
        out += _model_texts(model, model.index(r, 0, parent))
    return out


# --- fixtures -------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def error_popups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[BaseException]]:
    """An unexpected error popup fails the test (it would otherwise be a silent QMessageBox)."""
    import ui.errors
    seen: list[BaseException] = []

    def record(_parent: Any, exc: BaseException) -> None:
        seen.append(exc)
    monkeypatch.setattr(ui.errors, "show_error", record)
    yield seen
    assert not seen, f"error popups: {seen!r}"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One locked vault with 243 memories, built once; every test opens its own copy
    (SQLCipher inserts are slow with cipher_memory_security, about 25 ms a memory)."""
    from storage.crypto import KdfParams
    folder = tmp_path_factory.mktemp("template") / "vault"
    close_vault(make_vault(folder, KdfParams(m=65_536, t=3, p=4), turns=120, facts=(
        "Marguerite keeps bees on the lighthouse roof in Ushuaia.",
        "Sam's dentist appointment is on Tuesday at nine.",
        "The office wifi password hint is the name of the first cat.",
    )))
    return folder


def open_copy(template: Path, folder: Path) -> Any:
    from app.clock import FixedClock
    from app.facade import Vault
    shutil.copytree(template, folder)
    return Vault.open(folder, PASSWORD, load_model=False, use_chroma=False,
                      clock=FixedClock(T0))


@pytest.fixture
def flow_vault(template: Path, tmp_path: Path) -> Iterator[Any]:
    vault = open_copy(template, tmp_path / "vault")
    yield vault
    close_vault(vault)


@pytest.fixture
def flow_window(qtbot: Any, flow_vault: Any) -> Iterator[Any]:
    from ui.bridge import CoreBridge
    from ui.main_window import MainWindow
    win = MainWindow(flow_vault, CoreBridge(), idle_minutes=5)
    qtbot.addWidget(win)
    win.show()
    yield win
    drain()


def find_fact(vault: Any, text: str) -> int:
    from app.services.browse import MemoryQuery
    rows = vault.page_memories(MemoryQuery(store="semantic"), limit=50).rows
    return next(int(r.id) for r in rows if r.text == text)


# --- unlock and create ----------------------------------------------------------------------
def test_unlock_wrong_then_right_password(
        qtbot: Any, unlock_dialog: tuple[Any, Path, dict[str, str]]) -> None:
    from app.errors import WrongKey
    from tests.ui.conftest import try_wrong_password
    dlg, folder, before = unlock_dialog
    try_wrong_password(qtbot, dlg, lambda: qtbot.mouseClick(dlg.ok, Qt.MouseButton.LeftButton))
    assert dlg.error.text() == WrongKey.user_message
    assert dlg.isVisible() and dlg.result() == 0
    assert file_hashes(folder) == before, "a wrong password changed a vault file"

    dlg.password.clear()
    qtbot.keyClicks(dlg.password, PASSWORD)
    with qtbot.waitSignal(dlg.unlocked, timeout=WAIT) as blocker:
        qtbot.mouseClick(dlg.ok, Qt.MouseButton.LeftButton)
    vault = blocker.args[0]
    try:
        assert not vault.locked
        assert vault.status().totals["semantic"] == 1
        assert dlg.password.text() == "" and not dlg.isVisible()
    finally:
        close_vault(vault)


def test_create_vault(qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      fast_kdf: Any) -> None:
    from app.facade import Vault
    from ui.dialogs.unlock import RecoveryCodeDialog, UnlockDialog
    shown: list[str] = []

    def record(self: RecoveryCodeDialog) -> int:
        shown.append(self.code.text())
        return 1
    monkeypatch.setattr(RecoveryCodeDialog, "exec", record)

    def factory(folder: Path, pw: str, create: bool, recovery: bool) -> tuple[Any, Any]:
        # The real Vault.create, with the test suite's faster (still real) Argon2id floor.
        assert create
        res = Vault.create(folder, pw, kdf=fast_kdf, recovery=recovery, load_model=False,
                           use_chroma=False)
        return res.vault, res.recovery_code

    folder = tmp_path / "new-vault"
    dlg = UnlockDialog(folder, create=True, vault_factory=factory)
    qtbot.addWidget(dlg)
    dlg.show()
    values = []
    for chunk in ("abc", "defgh", "Ij 42 and some words!"):
        qtbot.keyClicks(dlg.password, chunk)
        values.append(dlg.meter.value())
    assert values[0] < values[1] < values[2] and dlg.meter.format() != ""
    strong = dlg.password.text()
    qtbot.keyClicks(dlg.repeat, strong + "x")
    qtbot.mouseClick(dlg.ok, Qt.MouseButton.LeftButton)
    assert dlg.error.text() == "The two passwords differ."
    assert dlg.isVisible() and not folder.exists()

    dlg.repeat.clear()
    qtbot.keyClicks(dlg.repeat, strong)
    with qtbot.waitSignal(dlg.unlocked, timeout=WAIT) as blocker:
        qtbot.mouseClick(dlg.ok, Qt.MouseButton.LeftButton)
    vault = blocker.args[0]
    try:
        assert len(shown) == 1 and len(shown[0]) >= 20, shown
        assert dlg.recovery_code is None  # dropped after the one showing
        assert not vault.locked and vault.status().recovery_code
    finally:
        close_vault(vault)
    # The recovery code opens the vault (it was the real one).
    again = Vault.open(folder, recovery_code=shown[0], load_model=False, use_chroma=False)
    close_vault(again)


# --- browse and search ----------------------------------------------------------------------
def test_browse_lazy_keyset_pages(qtbot: Any, flow_window: Any, flow_vault: Any) -> None:
    from app.services.browse import MemoryQuery
    from ui.models.memory_table import PAGE
    model = flow_window.browse.model
    total = flow_vault.count_memories(MemoryQuery())
    assert total > PAGE
    qtbot.waitUntil(lambda: model.rowCount() > 0, timeout=WAIT)
    # "All memories" lists each thing said once (each turn as its event): under a page here.
    qtbot.waitUntil(lambda: "123 memories" in flow_window.browse.title.text(), timeout=WAIT)
    assert model.rowCount() == 123 and not model.canFetchMore(QModelIndex())
    # Every memory, turns and events both (a list the window does not offer): 243, paged.
    flow_window.browse.show_query("Every memory", MemoryQuery())
    qtbot.waitUntil(lambda: model.rowCount() > 0, timeout=WAIT)
    assert model.rowCount() == PAGE
    assert model.canFetchMore(QModelIndex())
    with qtbot.waitSignal(model.page_loaded, timeout=WAIT):
        model.fetchMore(QModelIndex())
    qtbot.waitUntil(lambda: not model.canFetchMore(QModelIndex()), timeout=WAIT)
    assert model.rowCount() == total
    keys = [(r.occurred_at, int(r.id)) for r in model.rows]
    assert keys == sorted(keys, reverse=True), "not newest first"
    assert len(set(keys)) == len(keys), "a row appears twice across pages"
    expected = [int(r.id) for r in flow_vault.page_memories(MemoryQuery(), limit=1000).rows]
    assert [k[1] for k in keys] == expected
    qtbot.waitUntil(lambda: f"{total:,} memories" in flow_window.browse.title.text(),
                    timeout=WAIT)


def test_search_best_first(qtbot: Any, flow_window: Any, flow_vault: Any) -> None:
    browse = flow_window.browse
    target = find_fact(flow_vault, "Marguerite keeps bees on the lighthouse roof in Ushuaia.")
    qtbot.waitUntil(lambda: browse.model.rowCount() > 0, timeout=WAIT)
    qtbot.keyClicks(browse.search, "bees on the lighthouse")
    qtbot.keyClick(browse.search, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "best first" in browse.title.text(), timeout=WAIT)
    rows = browse.model.rows
    assert rows and int(rows[0].id) == target
    scores = [r.relevance for r in rows]
    assert scores == sorted(scores, reverse=True)
    assert not browse.model.canFetchMore(QModelIndex())  # results are not a paged query


# --- correct --------------------------------------------------------------------------------
def test_correct_from_detail_pane(qtbot: Any, flow_window: Any, flow_vault: Any) -> None:
    old = "Sam's dentist appointment is on Tuesday at nine."
    new = "Sam's dentist appointment is on Thursday at ten."
    mid = find_fact(flow_vault, old)
    select_memory(qtbot, flow_window, mid)
    detail = flow_window.browse.detail
    assert detail.text.toPlainText() == old
    qtbot.mouseClick(detail.correct_btn, Qt.MouseButton.LeftButton)
    assert detail.editor.isVisible() and detail.editor.toPlainText() == old
    detail.editor.setPlainText(new)
    with qtbot.waitSignal(flow_window.bridge.changes_applied, timeout=WAIT):
        qtbot.mouseClick(detail.save_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: detail.text.toPlainText() == new, timeout=WAIT)
    assert detail.memory_id != mid and not detail.editor.isVisible()
    lines = history_lines(detail)
    assert any(f"current version (this one): {new}" in s for s in lines), lines
    assert any(f"earlier version: {old}" in s for s in lines), lines
    assert not any("#" in s for s in lines), lines
    assert flow_vault.get(mid).status.value == "superseded"


def test_after_a_correction_the_list_stays_and_holds_the_new_version(
        qtbot: Any, flow_window: Any, flow_vault: Any) -> None:
    """Issue 25: after Save correction the list jumped to another view (a search's results
    were replaced by the listing) and the corrected memory was not selected in it. Driven by
    keys: search, Down to the hit, Correct with Space, type, Save with Space."""
    old = "Sam's dentist appointment is on Tuesday at nine."
    new = "Sam's dentist appointment is on Thursday at ten."
    browse, detail = flow_window.browse, flow_window.browse.detail
    qtbot.waitUntil(lambda: browse.model.rowCount() > 0, timeout=WAIT)
    browse.search.setFocus()
    qtbot.keyClicks(browse.search, "dentist appointment")
    qtbot.keyClick(browse.search, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "for “dentist appointment”, best first" in browse.title.text(),
                    timeout=WAIT)
    ids = [r.id for r in browse.model.rows]
    mid = find_fact(flow_vault, old)
    assert mid in ids
    browse.table.setFocus()
    for _ in range(ids.index(mid) + 1):  # from no selection: Down selects the first row
        qtbot.keyClick(browse.table, Qt.Key.Key_Down)
    qtbot.waitUntil(lambda: detail.memory_id == mid, timeout=WAIT)
    detail.correct_btn.setFocus()
    qtbot.keyClick(detail.correct_btn, Qt.Key.Key_Space)
    assert detail.editor.isVisible() and detail.editor.hasFocus()
    detail.editor.selectAll()
    qtbot.keyClicks(detail.editor, new)
    detail.save_btn.setFocus()
    with qtbot.waitSignal(flow_window.bridge.changes_applied, timeout=WAIT):
        qtbot.keyClick(detail.save_btn, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: detail.text.toPlainText() == new, timeout=WAIT)

    def selected() -> int | None:
        row = browse.model.row_at(browse.table.currentIndex().row())
        return int(row.id) if row is not None else None
    qtbot.waitUntil(lambda: selected() == detail.memory_id, timeout=WAIT)
    assert "for “dentist appointment”, best first" in browse.title.text()  # the same view
    assert mid not in [r.id for r in browse.model.rows]  # the old version left the list

    # In a listing too (the search emptied, Enter: back to it): the new version is selected
    # where it stands.
    browse.search.setFocus()
    qtbot.keyClick(browse.search, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(browse.search, Qt.Key.Key_Delete)
    qtbot.keyClick(browse.search, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: browse.model.rowCount() > 0
                    and browse.title.text().startswith("All memories"), timeout=WAIT)
    current = detail.memory_id
    select_memory(qtbot, flow_window, current)
    qtbot.keyClick(detail.correct_btn, Qt.Key.Key_Space)
    detail.editor.selectAll()
    qtbot.keyClicks(detail.editor, "Sam's dentist appointment is on Friday at ten.")
    with qtbot.waitSignal(flow_window.bridge.changes_applied, timeout=WAIT):
        qtbot.keyClick(detail.save_btn, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: detail.memory_id != current and selected() == detail.memory_id,
                    timeout=WAIT)
    assert browse.title.text().startswith("All memories")


# --- forget ---------------------------------------------------------------------------------
def test_forget_confirmed(qtbot: Any, flow_window: Any, flow_vault: Any) -> None:
    from app.errors import NotFound
    from ui.dialogs.forget import GROUP_ROLE
    text = "Marguerite keeps bees on the lighthouse roof in Ushuaia."
    mid = find_fact(flow_vault, text)
    assert int(flow_vault.recall("Marguerite bees Ushuaia", touch=False)[0].id) == mid
    select_memory(qtbot, flow_window, mid)
    detail = flow_window.browse.detail
    qtbot.mouseClick(detail.forget_btn, Qt.MouseButton.LeftButton)
    dlg = forget_dialog(qtbot, flow_window)
    groups = tree_groups(dlg.tree)
    assert groups["the fact"] == "1"
    assert dlg.tree.topLevelItem(0).data(0, GROUP_ROLE) == "matched"
    assert "Also removed with them" in groups
    matched = dlg.tree.topLevelItem(0)
    assert matched.childCount() == 1 and text in matched.child(0).text(0)
    also = next(dlg.tree.topLevelItem(i) for i in range(dlg.tree.topLevelItemCount())
                if dlg.tree.topLevelItem(i).text(0) == "Also removed with them")
    also_counts = {also.child(i).text(0): also.child(i).text(1)
                   for i in range(also.childCount())}
    assert all(v.isdigit() and int(v) > 0 for v in also_counts.values()), also_counts
    assert "(1 memory)" in dlg.summary.text()
    assert not dlg.forget_btn.isEnabled()
    qtbot.keyClick(dlg, Qt.Key.Key_Return)  # Enter never forgets
    assert dlg.isVisible() and dlg.report is None
    dlg.confirm.setChecked(True)
    assert dlg.forget_btn.isEnabled()
    with qtbot.waitSignal(dlg.forgotten, timeout=WAIT) as blocker:
        qtbot.mouseClick(dlg.forget_btn, Qt.MouseButton.LeftButton)
    report = blocker.args[0]
    assert report.memories == 1
    qtbot.waitUntil(lambda: detail.memory_id is None or not detail.body.isVisible(),
                    timeout=WAIT)
    assert dlg.cancel_btn.text() == "Close" and not dlg.forget_btn.isVisible()  # no dead button
    with pytest.raises(NotFound):
        flow_vault.get(mid)
    assert mid not in {int(h.id) for h in flow_vault.recall("Marguerite bees Ushuaia",
                                                               touch=False)}
    drain()
    assert mid not in {int(r.id) for r in flow_window.browse.model.rows}


def test_forget_cancelled_changes_nothing(qtbot: Any, tmp_path: Path, fast_kdf: Any) -> None:
    from app.facade import Vault
    from ui.bridge import CoreBridge
    from ui.main_window import MainWindow
    folder = tmp_path / "vault"
    text = "Sam's passport number ends in 4471."
    vault = make_vault(folder, fast_kdf, turns=10, facts=(text,))
    mid = find_fact(vault, text)
    close_vault(vault)
    before = file_hashes(folder)["vault.db"]
    vault = Vault.open(folder, PASSWORD, load_model=False, use_chroma=False)
    try:
        win = MainWindow(vault, CoreBridge(), idle_minutes=5)
        qtbot.addWidget(win)
        win.show()
        select_memory(qtbot, win, mid)
        qtbot.mouseClick(win.browse.detail.forget_btn, Qt.MouseButton.LeftButton)
        dlg = forget_dialog(qtbot, win)
        assert dlg.plan.memory_ids == (mid,)
        qtbot.mouseClick(dlg.cancel_btn, Qt.MouseButton.LeftButton)
        assert not dlg.isVisible() and dlg.report is None
        drain()
        assert vault.get(mid).text == text
    finally:
        close_vault(vault)
    assert file_hashes(folder)["vault.db"] == before, "cancelling a forget changed the DB"


# --- auto-lock ------------------------------------------------------------------------------
def test_idle_timer_requests_lock(qtbot: Any, flow_window: Any) -> None:
    flow_window.set_idle_minutes(0.002)  # 120 ms
    with qtbot.waitSignal(flow_window.lock_requested, timeout=5_000):
        pass


def _plant_canary(vault: Any) -> tuple[bytes, int]:
    """A semantic memory holding a random token; returns the token as bytes (a ``str`` kept
    by the test would be found by the scan) and the memory id."""
    from app.domain.memory import Draft, Store
    token = os.urandom(12).hex().encode()
    mid = vault.remember(Draft(text="The spare key is under the blue flowerpot, code "
                                    + token.decode(), store=Store.SEMANTIC,
                               occurred_at=T0 + 3600)).value
    return token, int(mid)


def test_auto_lock_controller_memory_hygiene(qtbot: Any, qapp: Any, tmp_path: Path,
                                             template: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import app.jobs
    from ui.dialogs.unlock import UnlockDialog
    from ui.main import Controller
    real_build = app.jobs.build_scheduler

    def build_unstarted(*args: Any, **kwargs: Any) -> Any:
        # The real wiring (jobs added, bridge connected), but never a started
        # BackgroundScheduler in a test (STYLE B9).
        sched = real_build(*args, **kwargs)
        sched.start = lambda *a, **k: None
        return sched
    monkeypatch.setattr(app.jobs, "build_scheduler", build_unstarted)
    monkeypatch.setattr(qapp, "quit", lambda: None)
    folder = tmp_path / "vault"
    vault = open_copy(template, folder)
    needle, mid = _plant_canary(vault)
    controller = Controller(qapp, folder, demo=False)
    try:
        controller.show_main(vault)
        window = controller.window
        assert window.isVisible()
        # Put the canary everywhere the window can hold it: list, detail, history, search.
        select_memory(qtbot, window, mid)
        assert needle.decode() in window.browse.detail.text.toPlainText()
        qtbot.keyClicks(window.browse.search, needle.decode())
        qtbot.keyClick(window.browse.search, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: "best first" in window.browse.title.text(), timeout=WAIT)
        assert int(window.browse.model.rows[0].id) == mid
        drain()
        assert canary_strings_report(needle)[0], "the scan must see the canary while unlocked"

        with qtbot.waitSignal(window.lock_requested, timeout=5_000):
            window.set_idle_minutes(0.002)
        window = None
        drain()
        db = vault._opened.db
        assert vault.locked and db.closed and db.open_connection_count == 0
        keys = vault._opened.keys
        assert not any(keys.dek) and not any(keys.db_key) and not any(keys.file_key)
        assert len(inside(vault).index) == 0 and inside(vault).embedder is None
        assert controller.window is None and controller.vault is None
        assert isinstance(controller.dialog, UnlockDialog) and controller.dialog.isVisible()
        from PySide6.QtWidgets import QApplication

        from ui.main_window import MainWindow
        assert not [w for w in QApplication.allWidgets() if isinstance(w, MainWindow)]
        # Requirement 23: no live widget holds memory text after lock.
        leaked_widgets = [(cls, t) for cls, t in widget_texts() if needle.decode() in t]
        assert not leaked_widgets, leaked_widgets
        # Requirement 20: no live Python str holds the canary after lock.
        count, report = canary_strings_report(needle)
        assert count == 0, f"{count} canary strings alive after lock:\n{report}"
    finally:
        if controller.dialog is not None:
            controller.dialog.close()
            controller.dialog.deleteLater()
        controller.shutdown()
        if controller.window is not None:
            controller.window.close()
        close_vault(vault)
        drain()


# --- models (STYLE B7: qtmodeltester on every model) ---------------------------------------
def test_memory_table_model_tester(qtbot: Any, qtmodeltester: Any, flow_vault: Any) -> None:
    from PySide6.QtCore import QObject

    from app.services.browse import MemoryQuery
    from ui.models.memory_table import PAGE, MemoryTableModel
    owner = QObject()
    model = MemoryTableModel(flow_vault, owner)
    with qtbot.waitSignal(model.page_loaded, timeout=WAIT):
        model.set_query(MemoryQuery())
    assert model.rowCount() == PAGE
    qtmodeltester.check(model)
    # The tester stays attached while the next page arrives (an async insert) and a reset.
    with qtbot.waitSignal(model.page_loaded, timeout=WAIT):
        model.fetchMore(QModelIndex())
    assert model.rowCount() > PAGE
    model.clear()
    assert model.rowCount() == 0 and not model.canFetchMore(QModelIndex())
    drain()
