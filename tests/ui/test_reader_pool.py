"""Readers on the window's thread pool: one SQLCipher connection per pool thread, not per task.

A QThreadPool thread gets a fresh Python thread state for each task, so thread-locals
do not survive between tasks; the reader cache must not rely on them (it leaked one open
connection, with its page cache and key, per background task)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QThreadPool
from PySide6.QtWidgets import QWidget

from tests.inside import inside


def test_pool_tasks_reuse_one_reader_per_thread(qtbot: Any, demo_vault: Any) -> None:
    from ui.tasks import run_query
    parent = QWidget()
    qtbot.addWidget(parent)
    results: list[int] = []
    pool = QThreadPool.globalInstance()
    n_tasks = 60
    for _ in range(n_tasks):
        run_query(parent, lambda: len(demo_vault.timeline_days()), results.append)
    qtbot.waitUntil(lambda: len(results) == n_tasks, timeout=30_000)
    assert len(set(results)) == 1 and results[0] > 0
    readers = len(inside(demo_vault).db._readers)
    assert readers <= pool.maxThreadCount() + 1, (
        f"{readers} reader connections after {n_tasks} pool tasks on "
        f"{pool.maxThreadCount()} threads")
