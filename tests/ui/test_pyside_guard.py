"""Guards against binding bugs that crash the app rather than fail a feature.

PySide6 6.12.0 returns ``True`` from ``SignalInstance.emit()`` without taking a reference, so
every signal emitted from Python drops one reference to ``True``. On Python 3.11 (where
``True`` is not immortal) the interpreter aborts after a few hundred emits with "Fatal Python
error: bool_dealloc: deallocating True or False" (seen in the window after ~600 background
tasks). 6.11.3 is fine. Python >= 3.12 makes ``True`` immortal, which hides it.
"""

from __future__ import annotations

import ctypes
import sys

import pytest
from PySide6.QtCore import QObject, Signal


class _Emitter(QObject):
    plain = Signal()
    with_arg = Signal(object)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="True is immortal from Python 3.12")
def test_signal_emit_keeps_true_alive() -> None:
    import PySide6
    e = _Emitter()
    e.with_arg.connect(lambda _v: None)
    before = sys.getrefcount(True)
    for n in range(50):
        e.plain.emit()
        e.with_arg.emit(n)
    lost = before - sys.getrefcount(True)
    for _ in range(max(0, lost)):  # pay the references back, so this test cannot abort the run
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(True))
    assert lost < 50, (f"PySide6 {PySide6.__version__}: 100 Signal.emit() calls dropped {lost} "
                       "references to True; the app would abort with 'bool_dealloc'. Use a "
                       "PySide6 without this bug (6.11.3 is fine; 6.12.0 is not).")
