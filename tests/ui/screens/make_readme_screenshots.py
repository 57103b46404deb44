#!/usr/bin/env python3
"""Render the README screenshots from the real app on the demo vault (offscreen, Fusion, the
bundled font, Kept's light and dark themes, 1200x760), into ``assets/screenshots/``:

    QT_QPA_PLATFORM=offscreen python tests/ui/screens/make_readme_screenshots.py

main-<theme>.png: the main window with a fact selected in the detail pane; inbox-<theme>.png:
the Inbox with the demo's open contradiction; forget-<theme>.png: the forget dialog showing a
plan; <theme> is light and dark (README shows the one matching the reader's setting).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_SCALE_FACTOR", "1")
MODEL = ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2" / "onnx"
if "KEPT_MODEL_DIR" not in os.environ and MODEL.is_dir():
    os.environ["KEPT_MODEL_DIR"] = str(MODEL)
OUT = ROOT / "assets" / "screenshots"


def pump(app: Any, pred: Any = lambda: True, timeout: float = 30.0, settle: float = 0.3) -> None:
    from PySide6.QtCore import QEventLoop, QThreadPool, QTimer
    deadline = time.monotonic() + timeout
    quiet = [time.monotonic()]
    loop = QEventLoop()

    def tick() -> None:
        now = time.monotonic()
        if QThreadPool.globalInstance().activeThreadCount() or not pred():
            quiet[0] = now
        if now - quiet[0] >= settle or now > deadline:
            loop.quit()
    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(20)
    loop.exec()
    timer.stop()
    if not pred():
        raise TimeoutError("the window did not get there")


def save(widget: Any, name: str) -> Path:
    path = OUT / name
    widget.grab().toImage().save(str(path), "PNG", 0)
    return path


def main() -> int:
    from PySide6.QtWidgets import QApplication

    from storage.paths import private_umask
    from tests.ui.screens.look import apply_look, fixed_demo_vault
    private_umask()
    app = QApplication([sys.argv[0]])
    OUT.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="kept-shots-")) / "demo"
    vault = fixed_demo_vault(folder)
    written: list[Path] = []
    for theme_name in ("light", "dark"):
        apply_look(app, theme_name)
        written += shoot(app, vault, theme_name)
    vault.lock()
    for path in written:
        print(f"{path} {path.stat().st_size // 1024} KB")
    return 0


def shoot(app: Any, vault: Any, theme_name: str) -> list[Path]:
    from PySide6.QtCore import QSize

    from tests.ui.screens.look import find_memory
    from ui.bridge import CoreBridge
    from ui.dialogs.forget import ForgetDialog
    from ui.main import DEMO_BANNER
    from ui.main_window import MainWindow
    win = MainWindow(vault, CoreBridge(), idle_minutes=5)
    win.show_banner(DEMO_BANNER)  # as ui.main.Controller shows it
    win.resize(QSize(1200, 760))
    win.show()
    browse = win.browse
    pump(app, lambda: browse.model.rowCount() > 0 and win.status_label.text() != "")
    mid = find_memory(vault, "Sam lives in Porto", "semantic")
    row = next(n for n, r in enumerate(browse.model.rows) if int(r.id) == mid)
    browse.table.setCurrentIndex(browse.model.index(row, 0))
    pump(app, lambda: browse.detail.memory_id == mid)
    written = [save(win, f"main-{theme_name}.png")]

    try:
        from ui.views.inbox import InboxView  # noqa: F401
    except ImportError:
        print("ui/views/inbox.py is missing: no inbox.png", file=sys.stderr)
    else:
        win.nav.setCurrentItem(win.inbox_item)
        page = win.page("inbox")
        pump(app, lambda: bool(getattr(page, "cards", None))
             and page.summary.text() != "Loading…")
        written.append(save(win, f"inbox-{theme_name}.png"))
        win.nav.setCurrentItem(win.nav.topLevelItem(0).child(0))
        pump(app, lambda: browse.model.rowCount() > 0)

    episode = find_memory(vault, "I moved to Porto; the Lisbon flat was too expensive.",
                          "episodic")
    dlg = ForgetDialog(win.vault, win.bridge, win, ids=[episode])
    dlg.resize(QSize(640, 520))
    dlg.show()
    pump(app, lambda: dlg.plan is not None)
    written.append(save(dlg, f"forget-{theme_name}.png"))
    dlg.reject()

    win.clear_for_lock()
    win.close()
    pump(app)
    return written


if __name__ == "__main__":
    sys.exit(main())
