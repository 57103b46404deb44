"""Background threads run below the person's (app/threads.py; issue 25's import stall, issue
28's first seconds after unlock): the thread that asks is lowered, the threads it starts
inherit it, the rest of the process is not touched. Real OS threads and priorities."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from app.threads import BULK_NICENESS, background_priority, foreground, give_way

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


def test_background_slices_wait_for_the_recalls_under_way_and_never_for_good() -> None:
    started = time.monotonic()
    give_way(2.0)
    assert time.monotonic() - started < 0.2  # nothing under way: no wait

    waited: list[float] = []

    def slice_() -> None:
        t0 = time.monotonic()
        give_way(5.0)
        waited.append(time.monotonic() - t0)

    with foreground():
        with foreground():  # two at once, on any threads: both must end
            t = threading.Thread(target=slice_)
            t.start()
            time.sleep(0.3)
        time.sleep(0.2)
        assert t.is_alive()  # one still under way
    t.join(5)
    assert waited and 0.45 <= waited[0] < 3.0  # it went on as soon as the last one ended

    with foreground():  # a recall that never ends holds a slice back max_s at most
        t0 = time.monotonic()
        give_way(0.3)
        assert 0.25 <= time.monotonic() - t0 < 2.0
        cancel = threading.Event()
        cancel.set()
        t0 = time.monotonic()
        give_way(5.0, cancel)  # a lock ends the wait at once
        assert time.monotonic() - t0 < 0.5
