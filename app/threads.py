"""Background threads give way to the person's (issue 25: the window's longest stall during an
import; issue 28: recall in the first seconds after unlock). Layer: app (pure: threads only;
``storage`` may import it, as it imports ``app.kdf``). Runs on: the thread that calls it, once,
at its start.

On two cores, an import's embedding or the lexicon's build after unlock took a core from the
window's thread or a recall for tens of milliseconds at a time. A thread that calls
``background_priority()`` runs at a lower priority (niceness + ``BULK_NICENESS``), and so do
the threads it starts (Linux copies a thread's niceness into the threads it creates: the
embedder's helper threads). It still gets every core nobody else wants: an idle machine runs
the work as fast as before.

Linux only: there ``setpriority(PRIO_PROCESS, tid)`` reaches one thread. Elsewhere the same call
would reach the whole process (or another one of that number), so nothing is done.

A lower priority gives way on the cores, not on Python's GIL: a background thread running Python
takes the GIL back at every 5 ms switch interval, so a recall beside it shares it (issue 28). So
a recall runs inside ``foreground()``, and the lexicon's scan and the texts worked out ahead
call ``give_way()`` between their slices: they wait while a recall is under way, at most
``GIVE_WAY_MAX_S`` a slice, so a stream of recalls slows them and never stops them. (The texts
worked out ahead run for tens of seconds at 100k memories; beside them a recall at an
assistant's pace took up to 151-241 ms, with the gate 34-41 ms, steady ~17:
``bench/recall_after_unlock.py``, dev.) Not the work that makes recall itself much cheaper once
done and takes a second or two (the saved lexicon's load, recall's preload, the int8 copy of the
vectors): holding it back kept recall on its slower path for longer. Measured with the saved lexicon's load gated too (``bench/scale.py --role
kept-read --n 100000``, 2 runs a side alternating, load 1.5-3.5, dev): 17-41 recalls fell in
that load instead of 16-18, at p50 4.5-7.7x steady recall instead of 2.7-5.4x.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator

BULK_NICENESS = 10
# A slice of background work waits this long at most for the recalls under way.
GIVE_WAY_MAX_S = 0.5

_under_way = 0  # foreground() calls in progress, all threads
_changed = threading.Condition(threading.Lock())


def background_priority() -> bool:
    """Lower this thread's priority; False when the platform or a sandbox does not allow it
    (the work then runs as before)."""
    if not sys.platform.startswith("linux"):
        return False
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + BULK_NICENESS)
    except OSError:
        return False
    return True


@contextlib.contextmanager
def foreground() -> Iterator[None]:
    """Around work a person or an assistant waits for (a recall): background slices wait."""
    global _under_way
    with _changed:
        _under_way += 1
    try:
        yield
    finally:
        with _changed:
            _under_way -= 1
            _changed.notify_all()


def give_way(max_s: float | None = None, cancel: threading.Event | None = None) -> None:
    """Between two slices of background work: wait while ``foreground()`` work is under way,
    at most ``max_s`` (``GIVE_WAY_MAX_S``), or until ``cancel`` is set."""
    end = time.monotonic() + (GIVE_WAY_MAX_S if max_s is None else max_s)
    with _changed:
        while _under_way and not (cancel is not None and cancel.is_set()):
            left = end - time.monotonic()
            if left <= 0:
                return
            _changed.wait(min(left, 0.05))
