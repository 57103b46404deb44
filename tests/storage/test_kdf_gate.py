"""One Argon2id derive at a time per process (issue 22 item 1, SECURITY.md requirement 26).

Two derives with 4 lanes in two threads hang for ever in ``cryptography`` (see
docs/upstream-argon2-threads.md); through ``app.kdf.KDF_GATE`` eight of them all return, local
derives (the person at the keyboard) go before a socket client's, a flood of remote ones is
refused at once instead of queueing, and a remote one still waiting when the owner stops gives
up. Real derives (64 MiB, t = 3, p = 4), real threads.
"""

from __future__ import annotations

import threading
import time

import pytest

from app.errors import PasswordBusy, VaultLocked
from app.kdf import KDF_GATE, KdfGate
from storage import crypto
from storage.crypto import KdfParams

PARAMS = KdfParams(m=65_536, t=3, p=4)


def _run(n: int, target: object) -> list[threading.Thread]:
    threads = [threading.Thread(target=target, args=(i,), daemon=True)  # type: ignore[arg-type]
               for i in range(n)]
    for t in threads:
        t.start()
    return threads


def test_eight_derives_with_four_lanes_in_eight_threads_all_return() -> None:
    out: dict[int, bytes] = {}

    def derive(i: int) -> None:
        out[i] = bytes(crypto.derive_kek(f"pw{i % 2}", PARAMS))

    before = KDF_GATE.derives
    for t in _run(8, derive):
        t.join(120)
        assert not t.is_alive(), "a derive hung"
    assert len(out) == 8 and KDF_GATE.derives - before == 8
    assert len({out[i] for i in (0, 2, 4, 6)}) == 1 != len({out[0], out[1]})  # right values


def test_local_derives_go_before_waiting_remote_ones() -> None:
    gate = KdfGate(max_remote=8)
    order: list[str] = []
    hold = threading.Event()

    def first() -> None:
        with gate.turn():
            hold.wait(10)

    def remote(i: int) -> None:
        with gate.remote(), gate.turn():
            order.append(f"remote{i}")

    def local(i: int) -> None:
        with gate.turn():
            order.append(f"local{i}")

    runner = threading.Thread(target=first)
    runner.start()
    while not gate._running:  # the gate is taken
        time.sleep(0.01)
    remotes = _run(3, remote)
    while gate.waiting < 3:
        time.sleep(0.01)
    locals_ = _run(2, local)
    while gate.waiting < 5:
        time.sleep(0.01)
    hold.set()
    for t in [runner, *remotes, *locals_]:
        t.join(10)
    assert order[:2] == ["local0", "local1"] or order[:2] == ["local1", "local0"]
    assert sorted(order[2:]) == ["remote0", "remote1", "remote2"]


def test_a_flood_of_remote_derives_is_refused_at_once_and_a_stop_releases_waiters() -> None:
    gate = KdfGate(max_remote=2, remote_wait_s=30)
    hold, stop = threading.Event(), threading.Event()
    results: dict[int, str] = {}

    def holder() -> None:
        with gate.turn():
            hold.wait(10)

    def remote(i: int) -> None:
        try:
            with gate.remote(stop), gate.turn():
                results[i] = "ran"
        except PasswordBusy:
            results[i] = "busy"
        except VaultLocked:
            results[i] = "stopped"

    t0 = threading.Thread(target=holder)
    t0.start()
    while not gate._running:
        time.sleep(0.01)
    waiting = _run(2, remote)
    while gate.waiting < 2:
        time.sleep(0.01)
    started = time.monotonic()
    extra = threading.Thread(target=remote, args=(9,))
    extra.start()
    extra.join(5)
    assert results[9] == "busy" and time.monotonic() - started < 1.0  # refused, not queued
    stop.set()  # the owner stops serving: the two waiting give up
    for t in waiting:
        t.join(5)
        assert not t.is_alive()
    assert results[0] == results[1] == "stopped"
    hold.set()
    t0.join(5)
    assert gate.waiting == 0


def test_a_remote_derive_that_waits_too_long_is_busy() -> None:
    gate = KdfGate(max_remote=2, remote_wait_s=0.3)
    hold = threading.Event()

    def holder() -> None:
        with gate.turn():
            hold.wait(10)

    t0 = threading.Thread(target=holder)
    t0.start()
    while not gate._running:
        time.sleep(0.01)
    with pytest.raises(PasswordBusy), gate.remote(), gate.turn():
        pass
    hold.set()
    t0.join(5)
    with gate.remote(), gate.turn():  # free again: it runs
        pass
    assert gate.derives == 2
