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
"""

from __future__ import annotations

import os
import sys
import threading

BULK_NICENESS = 10


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
