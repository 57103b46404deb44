"""Changes made by scheduler jobs reach the window (issue 12, item 9).

The window is built by the real composition root (``ui.main.Controller.show_main``), which
starts a real APScheduler ``BackgroundScheduler``; the consolidation job is moved to "now" and
runs on APScheduler's own thread, on a real vault (SQLCipher, threaded writer, the model).
Before ``Vault.subscribe`` had a caller, the job's changes never reached the window: the list,
People & Projects, the Inbox count and the status bar stayed as they were at unlock.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QThreadPool

WAIT = 30_000


@pytest.fixture
def controller(qtbot: Any, qapp: Any, tmp_path: Path, fast_kdf: Any,
               monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An unlocked vault holding the demo conversation, not yet consolidated, shown by the
    Controller the way an unlock does."""
    from app.demo import demo_turns
    from app.facade import Vault
    from ui.main import Controller
    monkeypatch.setattr(qapp, "quit", lambda: None)
    vault = Vault.create(tmp_path / "vault", "pw", kdf=fast_kdf, threaded=True,
                         use_chroma=False).vault
    vault.import_turns(demo_turns())
    ctl = Controller(qapp, tmp_path / "vault", demo=False)
    ctl.show_main(vault)
    qtbot.addWidget(ctl.window)
    yield ctl
    ctl.shutdown()
    if ctl.dialog is not None:
        ctl.dialog.close()
    QThreadPool.globalInstance().waitForDone(WAIT)
    if not vault.locked:
        vault.lock()


def _memories_in_status(window: Any) -> int:
    m = re.match(r"([\d,]+) memories", window.status_label.text())
    return int(m.group(1).replace(",", "")) if m else -1


def test_scheduled_job_refreshes_list_people_inbox_and_status(qtbot: Any,
                                                              controller: Any) -> None:
    window = controller.window
    browse = window.browse
    # The state at unlock: the turns' episodes only, nobody known yet, an empty inbox.
    qtbot.waitUntil(lambda: _memories_in_status(window) > 0 and browse.model.rowCount() > 0,
                    timeout=WAIT)
    before_status = _memories_in_status(window)
    before_rows = browse.model.rowCount()
    assert window.people_item.childCount() == 0
    assert window.inbox_item.text(0) == "Inbox"

    with qtbot.waitSignal(window.bridge.job_finished, timeout=WAIT) as job:
        controller.session.scheduler.modify_job("consolidation", next_run_time=datetime.now(UTC))
    assert job.args[0].job == "consolidation" and job.args[0].ok

    def refreshed() -> bool:
        return (window.people_item.childCount() > 0
                and window.inbox_item.text(0).startswith("Inbox (")
                and _memories_in_status(window) > before_status
                and browse.model.rowCount() > before_rows)
    qtbot.waitUntil(refreshed, timeout=WAIT)
    people = [window.people_item.child(i).text(0)
              for i in range(window.people_item.childCount())]
    assert any(p.startswith("Ana ") for p in people), people


def test_window_work_is_announced_once_with_its_initiator(qtbot: Any,
                                                          controller: Any) -> None:
    """The vault tells its listeners about every change, the window's own work included;
    run_op already broadcasts that with its initiator, so the bridge must not repeat it."""
    window = controller.window
    seen: list[tuple[Any, Any]] = []
    window.bridge.changes_applied.connect(lambda c, i: seen.append((c, i)))
    window.run_consolidation()
    qtbot.waitUntil(lambda: len(seen) >= 1, timeout=WAIT)
    QThreadPool.globalInstance().waitForDone(WAIT)
    QCoreApplication.processEvents()  # a queued duplicate would be delivered by now
    assert [i for _c, i in seen] == [window]
    assert seen[0][0].memories and seen[0][0].contradictions
