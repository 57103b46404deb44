"""Composition root of the desktop app: logging, paths, the single-instance guard, unlock,
the main window, the scheduler, and the lock/unlock cycle. Layer: ui. GUI thread.

    kept-app                 # your vault; a demo vault (password "demo") on first run
    kept-app --demo          # always the demo vault
    kept-app --vault PATH
"""

from __future__ import annotations

import argparse
import logging
import logging.handlers
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtCore import QObject
    from PySide6.QtWidgets import QApplication

    from app.api import VaultAPI
    from app.changes import Changes
    from app.owner import OwnerSession
    from ui.dialogs.unlock import UnlockDialog
    from ui.main_window import MainWindow

log = logging.getLogger(__name__)


def setup_logging(debug: bool) -> None:
    """Ids, counts and error classes only; never content
    (docs/security.md#21-logs-hold-no-content)."""
    from app.bootstrap import log_dir, make_private_dir
    level = logging.DEBUG if debug or os.environ.get("APP_LOG_LEVEL") == "DEBUG" else logging.INFO
    handlers: list[logging.Handler] = [logging.StreamHandler()]
    try:
        folder = log_dir()
        make_private_dir(folder)
        handlers.append(logging.handlers.TimedRotatingFileHandler(
            folder / "kept.log", when="D", backupCount=7, encoding="utf-8"))
    except OSError:
        pass
    logging.basicConfig(level=level, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s")
    for noisy in ("chromadb", "apscheduler", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def harden_process() -> None:
    """No core dumps of a process holding keys
    (docs/security.md#20-auto-lock-and-memory-hygiene)."""
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass


def share_the_gil() -> None:
    """The GUI thread gets the GIL back within 0.5 ms instead of Python's 5 ms: it shares
    the interpreter with an import's pipeline, consolidation and the owner's socket threads,
    and waiting out their 5 ms slices was most of the window's longest stalls during a 10k-turn
    import (bench/ui_responsiveness.py: the GUI thread computed 20 ms of a 104 ms gap). The
    owner's socket sets the same interval for its own reasons once it serves
    (``app.ipc.server.SWITCH_INTERVAL_S``); here it holds from the start, before unlock."""
    from app.ipc.server import SWITCH_INTERVAL_S
    sys.setswitchinterval(SWITCH_INTERVAL_S)


# What the window needs once unlocked, imported while the person types the password: the
# first import of these took ~370 ms of the GUI thread right after unlock (APScheduler alone
# ~250 ms, scanning entry points), the longest stall of opening a vault (bench/ui_walkthrough.py).
WARM = ("apscheduler.schedulers.background", "app.jobs", "app.owner", "ui.main_window",
        "ui.menus", "ui.file_menu", "ui.status_bar", "ui.choosers", "ui.dialogs.confirm",
        "app.model_words", "app.prefs", "app.settings", "ui.dialogs.add_memory",
        "ui.dialogs.forget")
_warmed = False


def warm_imports() -> None:
    """Import ``WARM`` on a background thread, once (the import lock makes a GUI thread that
    needs one of them meanwhile wait for it, never import it twice)."""
    global _warmed
    if _warmed:
        return
    _warmed = True
    import importlib
    import threading

    def run() -> None:
        for name in WARM:
            try:
                importlib.import_module(name)
            except Exception:  # the GUI thread imports it again and reports the problem
                log.debug("warm import of %s failed", name, exc_info=True)
    threading.Thread(target=run, name="kept-warm-imports", daemon=True).start()


DEMO_BANNER = ("This is a demo vault with made-up memories (password: demo). What you change "
               "or forget stays that way; Reset demo brings the original back. "
               "To keep your own memories, choose File > New vault.")


def last_vault() -> Path:
    """What a plain ``kept-app`` opens: the vault opened last (if it is still there), else the
    default folder (the demo opens when neither holds a vault)."""
    from app.bootstrap import default_vault_dir, vault_exists
    from app.prefs import Prefs
    last = Prefs.load().last_vault()
    return last if last is not None and vault_exists(last) else default_vault_dir()


def demo_folder() -> Path:
    from app.bootstrap import default_vault_dir
    return default_vault_dir().parent / "demo-vault"


class Controller:
    """Owns the window and the lock/unlock cycle; the unlocked vault's socket, schedule and
    lock order are its ``OwnerSession`` (``app/owner.py``), as for ``kept serve``."""

    def __init__(self, app: QApplication, folder: Path, *, demo: bool) -> None:
        from ui.bridge import CoreBridge
        self.app = app
        self.folder = folder
        self.demo = demo
        self.bridge = CoreBridge()
        self.bridge.vault_corrupt.connect(self._on_vault_corrupt)
        self.vault: VaultAPI | None = None
        self.window: MainWindow | None = None
        self.dialog: UnlockDialog | None = None
        self.session: OwnerSession | None = None  # while the vault is unlocked
        self._return_to: tuple[Path, bool] | None = None  # the vault before File > Open

    def start(self) -> None:
        if self.demo:
            self._open_demo()
        else:
            self.ask_unlock()

    def _open_demo(self) -> None:
        from app.demo import create_demo_vault
        from ui.tasks import run_query
        folder = self.folder
        self._splash_parent = _Hidden()
        run_query(self._splash_parent, lambda: create_demo_vault(folder, threaded=True),
                  self.show_main)

    def ask_unlock(self) -> None:
        from app.bootstrap import vault_exists
        from ui.dialogs.unlock import UnlockDialog
        warm_imports()
        self.dialog = UnlockDialog(self.folder, create=not vault_exists(self.folder))
        self.dialog.unlocked.connect(self.show_main)
        self.dialog.rejected.connect(self._on_dialog_rejected)
        self.dialog.show()
        from PySide6.QtCore import QTimer

        from ui.warm import warm_widgets
        QTimer.singleShot(200, warm_widgets)  # while the person types (ui/warm.py)

    def _on_dialog_rejected(self) -> None:
        back, self._return_to = self._return_to, None
        if self.window is None and back is not None:  # a switch cancelled: the old vault
            self.folder, self.demo = back
            self.ask_unlock()
            return
        if self.window is None:
            self.app.quit()

    def show_main(self, vault: VaultAPI) -> None:
        from ui.main_window import MainWindow
        self.vault = vault
        self._return_to = None
        from app.owner import OwnerSession, idle_minutes
        idle = idle_minutes(vault)
        self.window = MainWindow(vault, self.bridge, idle_minutes=idle,
                                 folder=None if self.demo else self.folder)
        self.window.files.vault_requested.connect(self.switch_vault)
        if self.demo:
            self.window.show_banner(DEMO_BANNER)
            self._add_reset_demo_action()
        elif self.dialog is not None and self.dialog.notice:
            # e.g. a new password was set with the recovery code
            self.window.show_banner(self.dialog.notice)
        if not self.demo:  # the next plain start opens this one; File > Open recent lists it
            from app.prefs import Prefs
            prefs = Prefs.load()
            prefs.opened(self.folder)
            prefs.save()
        self.window.lock_requested.connect(self.lock)
        self.window.show()
        # Changes made by scheduler jobs reach the window (list, People & Projects, Inbox
        # count, status bar) through the bridge, on the GUI thread.
        vault.subscribe(self.bridge.listener)
        # Serve the unlocked vault to assistants and the CLI (``kept.sock`` in its folder) and
        # run the schedule. Requests and jobs run on their own threads; what they change
        # reaches the window through ``Vault.subscribe`` and the bridge.
        self.session = OwnerSession(vault, on_job_done=self.bridge.job_listener,
                                    on_job_start=self.bridge.job_progress)
        self.session.start()
        self.bridge.changes_applied.connect(self._on_bridge_changes_applied)
        if self.session.serve_error is not None:  # e.g. a folder path too long for a socket
            self.window.statusBar().showMessage(
                "Assistants and the kept command cannot connect to this window "
                f"({self.session.serve_error}); everything else works.", 30_000)
        # The page self-test runs in the background after unlock (storage/db.py): if it
        # fails, nothing has been written and nothing will be; lock and say so.
        vault.watch_integrity(self.bridge.corrupt_listener)

    def _on_vault_corrupt(self) -> None:
        if self.vault is None:
            return
        from app.errors import VaultCorrupt
        self.lock()
        if self.dialog is not None:
            from ui.errors import error_text
            self.dialog.error.setText(error_text(VaultCorrupt()))

    def _on_bridge_changes_applied(self, changes: Changes, _initiator: QObject | None) -> None:
        """Changed schedules apply at once; the settings are read off the GUI thread."""
        session = self.session
        if not getattr(changes, "settings", False) or session is None:
            return
        from ui.tasks import run_query
        if self.window is not None:
            run_query(self.window, session.reschedule, lambda _r: None)

    def _add_reset_demo_action(self) -> None:
        from PySide6.QtGui import QAction
        from PySide6.QtWidgets import QToolBar

        from ui import icons
        if self.window is None:
            return
        action = QAction("Reset demo…", self.window)
        action.setIcon(icons.icon("rotate-ccw"))
        action.setObjectName("resetDemoAction")
        action.setToolTip("Replace the demo vault with a fresh copy of its made-up memories")
        action.triggered.connect(self._on_reset_demo_action_triggered)
        toolbar = self.window.findChild(QToolBar, "mainToolbar")
        if toolbar is not None:
            toolbar.addAction(action)
        else:
            self.window.addAction(action)

    def _on_reset_demo_action_triggered(self) -> None:
        from ui.dialogs import confirm
        if self.window is None:
            return
        confirm.ask(self.window, "Reset demo",
                    "Replace the demo vault with a fresh copy of its made-up memories? "
                    "Everything added, corrected or forgotten in it is lost.",
                    detail="Your own vaults are not touched.", action="&Reset demo",
                    then=self.reset_demo)

    def reset_demo(self) -> None:
        """Close the demo vault, delete it, and open a fresh one (only ever the demo)."""
        if not self.demo or self.vault is None:
            return
        from app.demo import reset_demo_vault
        from ui.tasks import run_query
        self._close_vault()
        folder = self.folder
        self._splash_parent = _Hidden()
        run_query(self._splash_parent, lambda: reset_demo_vault(folder, threaded=True),
                  self.show_main, self._on_reset_demo_failed)

    def _on_reset_demo_failed(self, exc: BaseException) -> None:
        from ui.errors import show_error
        self.ask_unlock()
        self._error_box = show_error(self.dialog, exc)  # non-modal: keep it alive

    def lock(self) -> None:
        """Close connections, drop the index and models, wipe keys, then ask again."""
        if self.vault is None:
            return
        self._close_vault()
        self.ask_unlock()

    def switch_vault(self, folder: Path) -> None:
        """File > New vault / Open vault: lock this one (socket, scheduler, keys), then ask
        for the other one's password, or create it. Cancelling goes back to this vault's
        unlock dialog."""
        if self.vault is None:
            return
        self._return_to = (self.folder, self.demo)
        self._close_vault()
        self.folder, self.demo = Path(folder), False
        self.ask_unlock()

    def _end_session(self, before_keys: Callable[[], None] | None = None) -> None:
        """The owner's lock order (socket, jobs, keys); ``before_keys`` drops the window."""
        from PySide6.QtCore import QThreadPool
        session, self.session = self.session, None
        vault, self.vault = self.vault, None
        if session is not None:  # connected with the session, in show_main
            self.bridge.changes_applied.disconnect(self._on_bridge_changes_applied)

        def drop_window() -> None:
            if before_keys is not None:
                before_keys()
            QThreadPool.globalInstance().waitForDone(5000)
        if session is not None:
            session.lock(before_keys=drop_window)
        elif vault is not None:
            drop_window()
            vault.lock()

    def _close_vault(self) -> None:
        def drop_window() -> None:
            if self.window is not None:
                self.window.clear_for_lock()
                self.window.hide()
                self.window.deleteLater()
                self.window = None
        self._end_session(drop_window)
        import gc
        gc.collect()

    def shutdown(self) -> None:
        self._end_session()


class _Hidden:
    """A parent QObject for the first-run demo task (created lazily with Qt)."""

    def __new__(cls) -> QObject:  # type: ignore[misc]
        from PySide6.QtCore import QObject
        return QObject()


def missing_xcb_libraries() -> list[str]:
    """Shared libraries Qt's X11 (xcb) platform plugin needs and this system lacks.

    Qt links them at run time and, when one is missing, aborts the whole process ("no Qt
    platform plugin could be initialized"); a minimal Debian with Xvfb lacks
    libxcb-icccm4 and libxcb-keysyms1, for one. Checked only when Qt will pick xcb."""
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if not sys.platform.startswith("linux") or platform not in ("", "xcb"):
        return []
    if not platform and os.environ.get("WAYLAND_DISPLAY"):
        return []
    import ctypes
    import shutil
    import subprocess

    import PySide6
    plugin = Path(PySide6.__file__).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    if not plugin.exists():
        return []
    missing: list[str] = []
    ldd = shutil.which("ldd")
    if ldd:
        # ldd resolves the whole dependency tree: libQt6XcbQpa's own needs are listed too.
        try:
            out = subprocess.run([ldd, str(plugin)], capture_output=True, text=True,
                                 timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        missing += [ln.split()[0] for ln in out.splitlines() if "not found" in ln]
    # Qt >= 6.5 opens libxcb-cursor itself (not a link-time dependency).
    try:
        ctypes.CDLL("libxcb-cursor.so.0")
    except OSError:
        missing.append("libxcb-cursor.so.0")
    return list(dict.fromkeys(missing))


def debian_package(soname: str) -> str:
    """libxcb-icccm.so.4 -> libxcb-icccm4, libxkbcommon-x11.so.0 -> libxkbcommon-x11-0
    (Debian's naming of shared-library packages)."""
    name, _, version = soname.partition(".so.")
    version = version.split(".")[0]
    return f"{name}{'-' if name[-1:].isdigit() else ''}{version}"


def screen_problem() -> str | None:
    """Why Qt's platform plugin would find no screen here, or None. Qt does not fail with an
    error then: it aborts the whole process (SIGABRT), so this is checked first."""
    if not sys.platform.startswith("linux"):
        return None
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    display, wayland = os.environ.get("DISPLAY"), os.environ.get("WAYLAND_DISPLAY")
    if (platform == "" and not display and not wayland) or (platform == "xcb" and not display):
        return "no screen found (DISPLAY is not set)"
    if platform.startswith("wayland") and not wayland:
        return "no Wayland display (WAYLAND_DISPLAY is not set)"
    return None


def _qt_render() -> str:
    from PySide6 import __version__ as pyside_version
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication, QLabel
    _app = QApplication.instance() or QApplication(sys.argv[:1])  # held while it renders
    label = QLabel("Kept")
    label.resize(80, 20)
    image = label.grab().toImage()
    if image.isNull():
        raise RuntimeError("a widget did not render")
    return f"PySide6 {pyside_version}, platform {QGuiApplication.platformName()}"


def _qt_probe() -> int:
    """``kept-app --qt-probe`` (hidden): the Qt check in its own process, one line out."""
    try:
        print(_qt_render())
    except Exception as exc:  # reported as the check's line by the parent
        print(f"{type(exc).__name__}: {exc}")
        return 1
    return 0


def _qt_check() -> str:
    """The Qt platform plugin loads and a widget renders (what a frozen build most often
    misses). Rendered in a child process: when the plugin cannot start, Qt aborts the process,
    which would take every other line of the report with it."""
    import signal
    import subprocess
    problem = screen_problem()
    if problem:
        raise RuntimeError(f"{problem}: run it on a desktop or under a virtual screen "
                           "(xvfb-run -a kept-app --self-check), or check Qt without a screen "
                           "with QT_QPA_PLATFORM=offscreen")
    missing = missing_xcb_libraries()
    if missing:
        raise RuntimeError(f"missing system libraries: {', '.join(missing)} (install "
                           f"{' '.join(debian_package(m) for m in missing)})")
    cmd = [sys.executable] if getattr(sys, "frozen", False) else [sys.executable, "-m",
                                                                   "ui.main"]
    r = subprocess.run([*cmd, "--qt-probe"], capture_output=True, text=True, timeout=120)
    out = (r.stdout.strip().splitlines() or [""])[-1]
    if r.returncode == 0:
        return out
    if r.returncode < 0:
        err = [ln for ln in r.stderr.splitlines() if ln.strip()]
        raise RuntimeError(f"Qt stopped the process ({signal.Signals(-r.returncode).name})"
                           + (f": {err[0].strip()}" if err else ""))
    raise RuntimeError(out or f"exit code {r.returncode}")


def self_check() -> int:
    """``kept-app --self-check``: the CLI's checks plus the Qt platform plugin."""
    from app.bootstrap import self_check as run_self_check
    check = run_self_check(extra=(("qt", _qt_check, True),))
    print("\n".join(check.lines))
    return 0 if check.ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kept-app")
    parser.add_argument("--vault", help="vault folder")
    parser.add_argument("--demo", action="store_true", help="open the demo vault")
    parser.add_argument("--debug", action="store_true")
    parser.add_argument("--self-check", action="store_true",
                        help="check the native parts (SQLCipher, Chroma, model, keychain, Qt) "
                        "and exit: 0 if every required one works")
    parser.add_argument("--qt-probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.qt_probe:
        return _qt_probe()
    if args.self_check:
        return self_check()
    from app.bootstrap import private_umask, vault_exists
    private_umask()
    harden_process()
    share_the_gil()
    setup_logging(args.debug)
    problem = screen_problem()
    if problem:
        print(f"kept-app: {problem}. Run it on a desktop, or under "
              "a virtual screen: xvfb-run -a kept-app. The CLI works without one: kept demo.",
              file=sys.stderr)
        return 2
    missing = missing_xcb_libraries()
    if missing:
        # Qt would abort the process with a long, unhelpful message; say what to install.
        print("kept-app: the window needs system libraries that are missing here: "
              f"{', '.join(missing)}. On Debian or Ubuntu: sudo apt-get install "
              f"{' '.join(debian_package(m) for m in missing)}", file=sys.stderr)
        return 2
    from ui.application import KeptApplication
    app = KeptApplication(sys.argv[:1])
    if not app.claim_single_instance():
        log.warning("Kept is already running")
        return 1
    folder = Path(args.vault).expanduser() if args.vault else last_vault()
    demo = args.demo or (not args.vault and not vault_exists(folder))
    controller = Controller(app, demo_folder() if demo else folder, demo=demo)
    app.aboutToQuit.connect(controller.shutdown)
    controller.start()
    return int(app.exec())


if __name__ == "__main__":
    sys.exit(main())
