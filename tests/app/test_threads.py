"""Background threads run below the person's (app/threads.py; issue 25's import stall, issue
28's first seconds after unlock): the thread that asks is lowered, the threads it starts
inherit it, the rest of the process is not touched. Real OS threads and priorities."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from app.threads import BULK_NICENESS, background_priority

linux = pytest.mark.skipif(not sys.platform.startswith("linux"),
                           reason="per-thread niceness is Linux's; elsewhere nothing is done")


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@linux
def test_the_thread_that_asks_is_lowered_and_its_children_inherit_it() -> None:
    seen: dict[str, int | bool] = {}

    def child() -> None:
        seen["child"] = _nice()

    def bulk() -> None:
        seen["before"] = _nice()
        seen["lowered"] = background_priority()
        seen["after"] = _nice()
        t = threading.Thread(target=child)
        t.start()
        t.join()

    main_before = _nice()
    t = threading.Thread(target=bulk)
    t.start()
    t.join()
    assert seen["lowered"] is True
    assert seen["after"] == min(19, int(seen["before"]) + BULK_NICENESS)
    assert seen["child"] == seen["after"]
    assert _nice() == main_before  # the caller's thread (the window's, a recall's) unchanged
