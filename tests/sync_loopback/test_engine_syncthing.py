"""The sync engine over two real Syncthing instances on 127.0.0.1 (issue 29, "Tests and
targets"; slow: ~3-5 min on 2 shared cores).

Two real vaults of one synced vault (A the founder, B certified by it, as the engine tests
make them), each opened by its own owner process (``owner_proc.py``: real SQLCipher file,
real ONNX model, in-memory Chroma, a ``SyncEngine`` on the vault's folder, a REST scan of its
Syncthing after each tick that wrote a segment). Each vault's folder is a subfolder of its own
Syncthing instance's copy of the shared folder; one pair of instances serves the module, each
test a subfolder of its own (the kill -9 of Syncthing has its own pair).

- (a) 95 % of changes visible on the other device within 5 s (the receiver ticks every 50 ms);
- (b) a forget on A is erased on B within 15 s, its text in no list and no recall there;
- (c) a partition by pausing, writes on both sides, heal: equal state hashes;
- (d) kill -9 of an owner at random moments while both write and apply, restart: equal state
  hashes, every committed memory exactly once on both (more rounds:
  ``bench/sync_engine_syncthing.py --kill-rounds``);
- (e) kill -9 of the receiving Syncthing mid-transfer of a large segment, restart: equal
  state;
- (f) A's clock 10 minutes slow, or fast: equal state, and an edit made after seeing a
  version wins on both devices (its HLC stamp is later, whatever A's wall clock says).
"""

from __future__ import annotations

import base64
import os
import random
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.sync_loopback.harness import (
    Syncthing,
    loopback,
    needs_syncthing,
    wait_connected,
    wait_for,
    wait_synced,
)
from tests.sync_loopback.owners import OwnerProc, settle, start_pair

pytestmark = needs_syncthing()
VISIBLE_S = 5.0         # issue 29's target for a change
FORGET_S = 15.0         # issue 29's target for a forget
WAIT_S = 60.0           # a bound on a wait, not a target

Pair = tuple[OwnerProc, OwnerProc]


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Syncthing, Syncthing]]:
    with loopback(tmp_path_factory.mktemp("st")) as (a, b):
        yield a, b


@pytest.fixture
def owners(tmp_path: Path, nodes: tuple[Syncthing, Syncthing],
           request: pytest.FixtureRequest) -> Iterator[Callable[..., Pair]]:
    started: list[OwnerProc] = []

    def make(skew: float = 0.0) -> Pair:
        sub = f"t-{request.node.name}".replace("[", "-").replace("]", "")
        a, b = start_pair(tmp_path, *nodes, sub, {"a": skew})
        started.extend((a, b))
        return a, b
    yield make
    for o in started:
        o.stop()


def _texts(o: OwnerProc) -> dict[str, int]:
    texts: dict[str, int] = o.cmd("state")["texts"]
    return texts


def test_a_changes_visible_on_the_other_device_within_5_s(owners: Callable[..., Pair]
                                                           ) -> None:
    a, b = owners()
    lags: list[float] = []
    for i in range(30):
        src, dst = (a, b) if i % 2 == 0 else (b, a)
        text = f"Change {i}: Sam moved the meeting to room {100 + i}"
        sent = src.cmd("remember", text=text)["at"]
        seen = dst.cmd("until", present=[text], wait_s=WAIT_S)
        assert seen["met"], f"change {i} never arrived"
        lags.append(seen["at"] - sent)
    lags.sort()
    p95 = lags[int(0.95 * len(lags)) - 1]
    share = sum(x <= VISIBLE_S for x in lags) / len(lags)
    print(f"\nvisible after (s, {len(lags)} changes, load {os.getloadavg()[0]:.1f}): "
          f"p50 {statistics.median(lags):.2f} p95 {p95:.2f} max {lags[-1]:.2f} "
          f"within 5 s {share:.0%}")
    assert share >= 0.95
    assert settle((a, b))
    assert _texts(a) == _texts(b) and len(_texts(a)) == 30


def test_b_a_forget_on_a_is_erased_on_b_within_15_s(owners: Callable[..., Pair]) -> None:
    a, b = owners()
    gone = "Ana's test results came back on Tuesday"
    a.cmd("remember", text=gone)
    a.cmd("remember", text="Sam likes green tea")
    assert b.cmd("until", present=[gone, "Sam likes green tea"], wait_s=WAIT_S)["met"]
    assert any("Ana" in t for t in b.cmd("recall", q="Ana test results"))
    sent = a.cmd("forget", text=gone)
    assert sent["ids"] == 1
    seen = b.cmd("until", absent=[gone], wait_s=WAIT_S)
    lag = seen["at"] - sent["at"]
    print(f"\nforget erased on B after {lag:.2f} s (load {os.getloadavg()[0]:.1f})")
    assert seen["met"] and lag <= FORGET_S
    for o in (a, b):
        assert _texts(o) == {"Sam likes green tea": 1}
        assert not any("Ana" in t for t in o.cmd("recall", q="Ana test results"))
    settle((a, b))


def test_c_partition_by_pausing_then_heal(owners: Callable[..., Pair],
                                          nodes: tuple[Syncthing, Syncthing]) -> None:
    na, nb = nodes
    a, b = owners()
    a.cmd("remember", text="Before the partition: the boiler was serviced")
    assert b.cmd("until", present=["Before the partition: the boiler was serviced"],
                 wait_s=WAIT_S)["met"]
    na.pause(nb)
    try:
        wait_for("partition", lambda: not na.connected(nb) and not nb.connected(na), WAIT_S)
        on_a = [f"Written on A while apart {i}" for i in range(4)]
        on_b = [f"Written on B while apart {i}" for i in range(3)]
        for t in on_a:
            a.cmd("remember", text=t)
        for t in on_b:
            b.cmd("remember", text=t)
        a.cmd("forget", text="Before the partition: the boiler was serviced")
        # Long enough for a connected pair (p95 well under 1 s): nothing crosses.
        assert not b.cmd("until", present=on_a[:1], wait_s=3.0)["met"]
        assert not a.cmd("until", present=on_b[:1], wait_s=0.5)["met"]
    finally:
        na.resume(nb)
    wait_connected([na, nb])
    everything = on_a + on_b
    for o in (a, b):
        assert o.cmd("until", present=everything,
                     absent=["Before the partition: the boiler was serviced"],
                     wait_s=WAIT_S)["met"]
    settle((a, b))
    assert _texts(a) == _texts(b) == dict.fromkeys(everything, 1)


def test_d_kill_9_of_an_owner_mid_write_and_mid_apply(owners: Callable[..., Pair]) -> None:
    """Both owners remember and tick in a loop with random gaps; one of them is killed at a
    random moment (so in a write, an apply, or between), restarted, and finishes its loop."""
    a, b = owners()
    rng = random.Random(29)
    rounds, n = 3, 12
    expected: list[str] = []
    for r in range(rounds):
        victim, other = (a, b) if r % 2 == 0 else (b, a)
        for o in (a, b):
            o.send("loop", prefix=f"{o.name}{r}", n=n, seed=rng.randrange(1 << 30),
                   max_gap_ms=60)
            expected += [f"{o.name}{r}-{k} note of the loop" for k in range(n)]
        time.sleep(rng.uniform(0.2, 1.5))
        victim.kill()
        assert other.reply()["done"] == n
        victim.start()
        assert victim.cmd("loop", prefix=f"{victim.name}{r}", n=n, seed=r,
                          max_gap_ms=0)["done"] == n
    settle((a, b), timeout=WAIT_S)
    for o in (a, b):
        texts = _texts(o)
        assert sorted(texts) == sorted(expected), "a memory was lost"
        assert set(texts.values()) == {1}, "a memory was applied twice"
        assert set(o.acked) <= set(texts)
    print(f"\nkill -9 of an owner: {rounds} rounds, {len(expected)} memories, equal state "
          f"(load {os.getloadavg()[0]:.1f})")


def test_e_kill_9_of_syncthing_mid_transfer(tmp_path: Path) -> None:
    slow = {"maxRecvKbps": "256", "limitBandwidthInLan": "true"}  # KiB/s: 512 KiB in ~2 s
    with loopback(tmp_path / "st", options={"b": slow}) as (na, nb):
        a, b = start_pair(tmp_path, na, nb, "kill-st")
        try:
            a.cmd("remember", text="A small one first")
            assert b.cmd("until", present=["A small one first"], wait_s=WAIT_S)["met"]
            rng = random.Random(5)
            big = [f"Long note {i}: " + base64.b64encode(rng.randbytes(6000)).decode()
                   for i in range(60)]
            assert a.cmd("remember_many", texts=big)["written"] == 60

            def partial() -> bool:
                return any(p.name.startswith(".syncthing.") for p in b.folder.rglob("*"))

            wait_for("a partial download on B", partial, WAIT_S, 0.02)
            nb.kill()
            assert partial()
            b.cmd("tick")     # a partial file in the folder is no segment: nothing breaks
            assert "Long note 0" not in " ".join(_texts(b))
            nb.start()
            wait_connected([na, nb])
            assert b.cmd("until", present=big, wait_s=WAIT_S)["met"]
            wait_synced([na, nb])
            settle((a, b))
            assert _texts(a) == _texts(b) and set(_texts(b).values()) == {1}
            assert not partial()
        finally:
            a.stop()
            b.stop()


@pytest.mark.parametrize("skew", [-600.0, 600.0])
def test_f_clock_skew_of_10_minutes_on_one_owner(owners: Callable[..., Pair],
                                                 skew: float) -> None:
    a, b = owners(skew)
    # B writes, A (skewed) edits after seeing it; then the other way round.
    b.cmd("remember", text="Dentist on the 4th")
    assert a.cmd("until", present=["Dentist on the 4th"], wait_s=WAIT_S)["met"]
    a.cmd("correct", old="Dentist on the 4th", new="Dentist on the 5th")
    a.cmd("remember", text="Plumber on Monday")
    assert b.cmd("until", present=["Dentist on the 5th", "Plumber on Monday"],
                 wait_s=WAIT_S)["met"]
    b.cmd("correct", old="Plumber on Monday", new="Plumber on Tuesday")
    assert a.cmd("until", present=["Plumber on Tuesday"], wait_s=WAIT_S)["met"]
    for i in range(3):
        a.cmd("remember", text=f"From A {i}")
        b.cmd("remember", text=f"From B {i}")
    settle((a, b))
    want = {"Dentist on the 5th": 1, "Plumber on Tuesday": 1,
            **{f"From {w} {i}": 1 for w in "AB" for i in range(3)}}
    for o in (a, b):
        assert _texts(o) == want
        assert o.cmd("state")["questions"] == []   # edits after seeing: no conflict
    stamps = a.cmd("stamps")
    assert stamps == b.cmd("stamps")
    # Each edit is stamped after what it edits, though A's wall clock is 10 minutes off.
    assert stamps["Dentist on the 4th"] < stamps["Dentist on the 5th"]
    assert stamps["Plumber on Monday"] < stamps["Plumber on Tuesday"]
    # A stamps near its own clock when it is fast (+10 min); when slow, after the latest
    # stamp it has seen (B's, near the true time), not 10 minutes in the past.
    a_wall = int(stamps["Plumber on Monday"].split(".")[0]) / 1000
    assert abs(a_wall - (time.time() + max(skew, 0.0))) < 120
