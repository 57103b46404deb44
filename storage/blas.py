"""numpy's BLAS on one thread. Layer: storage. Runs on: any thread, once per process.

Why: the vector index's matrix-vector products (exact search, the similarity floor) are
numpy calls into OpenBLAS, which by default starts a worker per core and leaves the workers
spinning for a while after each call. On the 2-core machine each recall then burned a second
core for nothing: process CPU per recall was twice its wall time (10k memories, dev queries of
``bench/scale.py``: 56.8 ms CPU for 29.1 ms wall; the bare query embedding, measured right
after a recall, 9.4 ms CPU for 5.2 ms wall), and on a loaded machine the spinning worker
competes with the other processes and with our own threads. With one thread: 28.0 ms CPU for
28.0 ms wall, wall time unchanged. A product of one query vector with the matrix is bound by
memory bandwidth, not by arithmetic, so a second thread buys little. Kept's parallelism is
across batches of the embedder (storage/embedder.py), not inside numpy.

``OPENBLAS_NUM_THREADS`` set before numpy loads is the portable way (``storage/__init__.py``
sets a default); numpy is often imported first (``app.facade`` imports it before anything
imports ``storage``), so ``one_thread()`` also asks the loaded OpenBLAS itself, found the way
threadpoolctl finds it (the shared objects mapped into the process, Linux). Elsewhere, or
with another BLAS, it does nothing and says so by returning False.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# The setter's name in the OpenBLAS builds numpy ships (scipy-openblas, 64-bit ints) and
# in a system OpenBLAS.
_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_", "openblas_get_num_threads")
_done: bool | None = None
_lock = threading.Lock()


def _loaded_openblas() -> list[Path]:
    maps = Path("/proc/self/maps")
    if not maps.is_file():
        return []
    found: dict[str, None] = {}
    for line in maps.read_text().splitlines():
        path = line.split(maxsplit=5)[-1] if line.count(" ") >= 5 else ""
        if "openblas" in Path(path).name.lower():
            found[path] = None
    return [Path(p) for p in found]


def _function(lib: ctypes.CDLL, names: tuple[str, ...]) -> Callable[..., Any] | None:
    for name in names:
        fn: Callable[..., Any] | None = getattr(lib, name, None)
        if fn is not None:
            return fn
    return None


def _functions(names: tuple[str, ...]) -> list[Callable[..., Any]]:
    """The first of ``names`` found in each loaded OpenBLAS (numpy is imported first)."""
    import numpy  # noqa: F401  (loads the BLAS)
    found = []
    for path in _loaded_openblas():
        try:
            fn = _function(ctypes.CDLL(str(path)), names)
        except OSError:
            continue
        if fn is not None:
            found.append(fn)
    return found


def threads() -> int | None:
    """The loaded OpenBLAS's thread count, or None when none is found."""
    return next((int(fn()) for fn in _functions(_GETTERS)), None)


def one_thread() -> bool:
    """Make numpy's OpenBLAS use one thread in this process (idempotent). True if it did."""
    global _done
    with _lock:
        if _done is not None:
            return _done
        done = False
        for fn in _functions(_SETTERS):
            fn(1)
            done = True
        if not done:
            log.info("numpy's BLAS thread count left as it is (no OpenBLAS found)")
        _done = done
        return done


__all__ = ["one_thread", "threads"]
