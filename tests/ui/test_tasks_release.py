"""A finished background task keeps nothing alive (issue 12, item 8: the auto-lock hygiene
test in tests/ui/test_flows.py failed or passed depending on the tests before it and on
timing).

The scan found a search text (a canary memory's words) alive after lock, held by the closure
of ``BrowsePage``'s search task. A ``_Task`` held its function for as long as its Python
wrapper lived, and PySide decides that lifetime (the pool deletes the C++ runnable on its own
thread, after the result was already delivered). Now the task lets go of the function as it
starts it, so however long the wrapper lives, it holds nothing."""

from __future__ import annotations

import gc
import weakref
from typing import Any


class _Secret:
    pass


def test_task_lets_go_of_its_function_once_run(qtbot: Any) -> None:
    from ui.tasks import _Task, _TaskSignals
    secret = _Secret()
    ref = weakref.ref(secret)
    results: list[int] = []

    def work(s: _Secret = secret) -> int:  # a closure like a search or an op
        return id(s)
    signals = _TaskSignals()
    signals.done.connect(results.append)
    task = _Task(work, signals)
    task.setAutoDelete(False)
    del work, secret
    task.run()  # the wrapper is still alive here, as PySide may keep it
    assert results and ref() is None
    gc.collect()
    assert ref() is None


def test_task_lets_go_of_its_function_when_it_fails(qtbot: Any) -> None:
    from ui.tasks import _Task, _TaskSignals
    secret = _Secret()
    ref = weakref.ref(secret)
    errors: list[BaseException] = []

    def work(s: _Secret = secret) -> int:
        raise ValueError("no")
    signals = _TaskSignals()
    signals.failed.connect(errors.append)
    task = _Task(work, signals)
    task.setAutoDelete(False)
    del work, secret
    task.run()
    errors.clear()  # the traceback's frames would hold the function's defaults
    gc.collect()
    assert ref() is None


def test_a_result_for_a_widget_gone_meanwhile_is_dropped_and_nothing_stays(qtbot: Any) -> None:
    """The widget that asked is deleted while its task runs (its receiver with it): the
    worker still emits on the task's signals object, which is the application's and which only
    the task deletes, so that object is never one the GUI thread is deleting; the result is
    dropped, and the object goes once the task is done (none left behind)."""
    import threading

    import shiboken6
    from PySide6.QtCore import QCoreApplication, QThreadPool
    from PySide6.QtWidgets import QWidget

    from ui.tasks import run_query
    app = QCoreApplication.instance()
    assert app is not None

    def pending() -> dict[int, Any]:
        return {shiboken6.getCppPointer(c)[0]: c for c in app.children()
                if type(c).__name__ == "_TaskSignals"}
    before = pending()
    started, go = threading.Event(), threading.Event()
    got: list[object] = []

    def work() -> int:
        started.set()
        go.wait(10)
        return 1
    widget = QWidget()
    run_query(widget, work, got.append)
    assert started.wait(10)
    # This task's object (a task of an earlier test may still end meanwhile: count only ours).
    mine = [c for addr, c in pending().items() if addr not in before]
    assert len(mine) == 1
    del widget  # Python-owned: deleted now, its receiver with it
    go.set()
    QThreadPool.globalInstance().waitForDone(10_000)
    qtbot.waitUntil(lambda: not shiboken6.isValid(mine[0]), timeout=5_000)
    qtbot.wait(20)
    assert got == []
