"""KeptApplication: Fusion style, the bundled font, the single-instance guard and the
last-resort exception hooks. Layer: ui. GUI thread."""

from __future__ import annotations

import logging
import sys
import threading
from types import TracebackType

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QFont
from PySide6.QtNetwork import QLocalServer, QLocalSocket
from PySide6.QtWidgets import QApplication

log = logging.getLogger(__name__)
SERVER_NAME = "app.kept.instance"


class _Relay(QObject):
    error = Signal(object)


class KeptApplication(QApplication):
    def __init__(self, argv: list[str]) -> None:
        super().__init__(argv)
        self.setApplicationName("Kept")
        self.setOrganizationName("Kept")
        self.setStyle("Fusion")
        self.setFont(QFont("DejaVu Sans", 10))
        # Kept's own light or dark theme, as chosen in View > Theme; "system" follows the
        # desktop's setting, also when it changes while Kept runs.
        from app.prefs import Prefs
        from ui import theme
        theme.apply_theme(self, Prefs.load().theme)
        self.styleHints().colorSchemeChanged.connect(self._on_color_scheme_changed)
        self._server: QLocalServer | None = None
        self._relay = _Relay()
        self._relay.error.connect(self._show_error)
        sys.excepthook = self._excepthook
        threading.excepthook = self._thread_excepthook

    def _on_color_scheme_changed(self, *_a: object) -> None:
        from app.prefs import Prefs
        from ui import theme
        if Prefs.load().theme == "system":
            theme.apply_theme(self, "system")

    def claim_single_instance(self) -> bool:
        """One window per user: a second start just tells the first (it raises itself)."""
        probe = QLocalSocket()
        probe.connectToServer(SERVER_NAME)
        if probe.waitForConnected(300):
            probe.write(b"raise")
            probe.flush()
            probe.waitForBytesWritten(300)
            return False
        QLocalServer.removeServer(SERVER_NAME)
        self._server = QLocalServer(self)
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self._server.listen(SERVER_NAME)
        self._server.newConnection.connect(self._on_server_new_connection)
        return True

    def _on_server_new_connection(self) -> None:
        assert self._server is not None
        conn = self._server.nextPendingConnection()
        conn.close()
        for w in self.topLevelWidgets():
            if w.isVisible():
                w.raise_()
                w.activateWindow()

    def _excepthook(self, etype: type[BaseException], value: BaseException,
                    tb: TracebackType | None) -> None:
        log.critical("unhandled %s", etype.__name__, exc_info=(etype, value, tb))
        self._relay.error.emit(value)

    def _thread_excepthook(self, args: threading.ExceptHookArgs) -> None:
        log.critical("unhandled %s in thread %s", args.exc_type.__name__,
                     args.thread.name if args.thread else "?")
        self._relay.error.emit(args.exc_value)

    def _show_error(self, exc: BaseException) -> None:
        from ui.errors import show_error
        show_error(self.activeWindow(), exc)
