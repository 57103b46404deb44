"""The sync folder contract over two real Syncthing instances on 127.0.0.1 (issue 29, "Tests
and targets", the loopback group; slow: each test starts its own instances, ~5-15 s).

Device A's copy of the folder is written by ``FolderWriter`` and device B's is read by
``FolderReader`` with real segments (real keys, certificates, AEAD); Syncthing moves the files
(``tests/sync_loopback/harness.py``: separate homes, discovery, relays, NAT, usage and crash
reporting and upgrades off, REST on 127.0.0.1 with an API key, a scan after each write).

- every segment arrives exactly once and in order, both ways at once, and nothing Syncthing
  does leaves 127.0.0.1 (every socket call under strace, and the sockets it holds);
- a partition (one side pauses the other) then heal: nothing crosses while paused, all of it
  after, in order;
- kill -9 of the receiving (or the sending) Syncthing mid-transfer: the partial
  ``.syncthing.*.tmp`` is ignored, the segment is applied once the restarted instance
  completes it;
- three instances, the writer and one reader cut off from each other: the segments reach the
  reader through the third, once and in order;
- a conflict copy made for real by two writers of one name (a device cloned from a backup) is
  never applied, and it proves the equivocation the reader then reports;
- ``.stversions`` (simple versioning on) holds a segment deleted on the other side, and the
  reader does not take it from there (it waits at the gap).

Syncthing comes from apt (``apt-get install -y syncthing``; 1.19 on Debian 12). Without it the
tests skip, except where ``KEPT_REQUIRE_SYNCTHING=1`` (``.ci/run``, which installs it).
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from app.sync.folder import FolderReader, FolderWriter, Scan, seq_name
from app.sync.keys import DeviceSecret
from app.sync.segments import Cursor, Segment
from tests.app.sync.devices import Devices, memory_op, two_devices
from tests.sync_loopback.harness import (
    Syncthing,
    loopback,
    needs_syncthing,
    network_calls,
    wait_connected,
    wait_for,
    wait_synced,
)

pytestmark = needs_syncthing()
ARRIVE_S = 60.0   # generous: a bound on a wait, not a speed target (bench/sync_syncthing.py)


def _rel(dev: DeviceSecret, seq: int) -> str:
    return f"v1/log/{dev.device_id}/{seq_name(seq)}"


def _write(node: Syncthing, writer: FolderWriter, ops: list[dict[str, Any]],
           dev: Devices) -> Segment:
    """Append one segment on ``node``'s copy and scan it, as Kept's sync job will."""
    seg = writer.append(ops, dev.key)
    node.scan(_rel(writer.device, seg.seq))
    return seg


def _reader(dev: Devices, node: Syncthing, me: DeviceSecret) -> FolderReader:
    return FolderReader(node.folder, me.device_id, dev.trust(), dev.keys, {})


class Collected:
    """Everything a reader yields over many scans, and what it reported on the way."""

    def __init__(self, reader: FolderReader) -> None:
        self.reader = reader
        self.segments: list[Segment] = []
        self.findings: list[str] = []
        self.last = Scan()

    def scan(self) -> int:
        self.last = self.reader.scan()
        self.segments += self.last.segments
        self.findings += [f.what for f in self.last.findings]
        return len(self.segments)

    def until(self, n: int, timeout: float = ARRIVE_S) -> None:
        wait_for(f"{n} segments", lambda: self.scan() >= n, timeout, 0.05)

    def numbers(self) -> list[Any]:
        return [op["n"] for seg in self.segments for op in seg.ops]


def _op(n: int | str) -> dict[str, Any]:
    return {**memory_op(f"memory {n}"), "n": n}


def _all_loopback(node: Syncthing) -> list[tuple[str, str]]:
    """The inet sockets ``node`` holds whose local or remote address is not loopback."""
    return [(loc, rem) for loc, rem in node.sockets()
            if not all(ipaddress.ip_address(a).is_loopback for a in (loc, rem) if a)]


def test_every_segment_arrives_once_in_order_and_nothing_leaves_loopback(
        tmp_path: Path) -> None:
    traced = shutil.which("strace") is not None
    if not traced and os.environ.get("KEPT_REQUIRE_STRACE") == "1":
        pytest.fail("strace is required here (KEPT_REQUIRE_STRACE=1)")
    dev, n = two_devices(), 25
    with loopback(tmp_path, traced=traced) as (a, b):
        wa = FolderWriter(a.folder, dev.founder, dev.vault_id, Cursor(dev.founder.device_id))
        wb = FolderWriter(b.folder, dev.other, dev.vault_id, Cursor(dev.other.device_id))
        at_b = Collected(_reader(dev, b, dev.other))      # B reads A's log
        at_a = Collected(_reader(dev, a, dev.founder))    # and A reads B's, at the same time
        for i in range(n):
            _write(a, wa, [_op(i)], dev)
            _write(b, wb, [_op(i), _op(i + 0.5)], dev)
            at_b.scan()
            at_a.scan()
        at_b.until(n)
        at_a.until(n)
        wait_synced([a, b])
        at_b.scan()
        at_a.scan()
        outside = {node.name: _all_loopback(node) for node in (a, b)}
        loaded = [node.get("/rest/config") for node in (a, b)]
    assert at_b.numbers() == list(range(n))
    assert at_a.numbers() == [x for i in range(n) for x in (i, i + 0.5)]
    for got in (at_b, at_a):
        assert [s.seq for s in got.segments] == list(range(1, n + 1))
        assert len({s.hash for s in got.segments}) == n
        # Syncthing pulls in random order, so a reader may wait at a gap; never anything else.
        assert set(got.findings) <= {"gap"}
    assert outside == {"a": [], "b": []}
    for config, node in zip(loaded, (a, b), strict=True):   # as Syncthing itself read it
        opts = config["options"]
        assert opts["listenAddresses"] == [f"tcp://127.0.0.1:{node.listen_port}"]
        assert not any(opts[k] for k in ("globalAnnounceEnabled", "localAnnounceEnabled",
                                         "relaysEnabled", "natEnabled",
                                         "crashReportingEnabled", "autoUpgradeIntervalH"))
        assert opts["urAccepted"] == -1
        assert config["gui"]["address"] == f"127.0.0.1:{node.api_port}"
        assert [d["addresses"] for d in config["devices"] if d["deviceID"] != node.device_id] \
            == [[f"tcp://127.0.0.1:{(b if node is a else a).listen_port}"]]
    if traced:
        for node in (a, b):
            assert node.trace is not None
            calls = network_calls(node.trace.read_text())
            assert calls.outside == [], (node.name, calls.outside[:10])
            # The parser sees what it must: the listener and the peer connection.
            assert f"bind 127.0.0.1:{node.listen_port}" in calls.loopback


def test_a_partition_then_heal(tmp_path: Path) -> None:
    dev = two_devices()
    with loopback(tmp_path) as (a, b):
        wa = FolderWriter(a.folder, dev.founder, dev.vault_id, Cursor(dev.founder.device_id))
        wb = FolderWriter(b.folder, dev.other, dev.vault_id, Cursor(dev.other.device_id))
        at_b, at_a = Collected(_reader(dev, b, dev.other)), Collected(_reader(dev, a, dev.founder))
        _write(a, wa, [_op(0)], dev)
        at_b.until(1)
        a.pause(b)
        wait_for("partition", lambda: not a.connected(b) and not b.connected(a), ARRIVE_S)
        for i in range(1, 6):
            _write(a, wa, [_op(i)], dev)
        for i in range(3):
            _write(b, wb, [_op(i)], dev)
        time.sleep(3)  # long enough for a connected pair to move them (bench: p95 < 1 s)
        assert at_b.scan() == 1 and at_a.scan() == 0
        assert not (b.folder / _rel(dev.founder, 2)).exists()
        a.resume(b)
        wait_connected([a, b])
        at_b.until(6)
        at_a.until(3)
        wait_synced([a, b])
        at_b.scan()
        at_a.scan()
    assert at_b.numbers() == list(range(6))
    assert at_a.numbers() == list(range(3))
    assert set(at_b.findings) | set(at_a.findings) <= {"gap"}


@pytest.mark.parametrize("victim", ["receiver", "sender"])
def test_kill_9_of_syncthing_mid_transfer(tmp_path: Path, victim: str) -> None:
    dev = two_devices()
    slow = {"maxRecvKbps": "256", "limitBandwidthInLan": "true"}  # KiB/s: a 1 MiB file ~4 s
    with loopback(tmp_path, options={"b": slow}) as (a, b):
        wa = FolderWriter(a.folder, dev.founder, dev.vault_id, Cursor(dev.founder.device_id))
        at_b = Collected(_reader(dev, b, dev.other))
        _write(a, wa, [_op(0)], dev)
        at_b.until(1)
        # Hex of random bytes compresses to about half (4 bits a character): 1.3 MB of JSON is
        # ~750 KB sealed, a 1 MiB file.
        big = [{**_op(i), "text": os.urandom(4096).hex()} for i in range(1, 160)]
        seg = _write(a, wa, big, dev)
        where = b.folder / "v1" / "log" / dev.founder.device_id

        def partial() -> list[Path]:
            return [p for p in where.iterdir() if p.name.startswith(".syncthing.")]

        wait_for("a partial download on B", lambda: bool(partial()), ARRIVE_S, 0.02)
        killed = b if victim == "receiver" else a
        killed.kill()
        temps = partial()
        assert temps and not (where / seq_name(2)).exists()
        assert at_b.scan() == 1 and at_b.last.ignored["temp"] == len(temps)
        assert at_b.last.findings == []
        killed.start()
        wait_connected([a, b])
        at_b.until(2)
        wait_synced([a, b])
        assert partial() == []
        sent = (a.folder / _rel(dev.founder, 2)).read_bytes()
    assert len(sent) == 1024 * 1024
    assert [s.hash for s in at_b.segments] == [at_b.segments[0].hash, seg.hash]
    assert at_b.segments[1].ops == big
    assert hashlib.sha256(sent).digest() == seg.hash
    assert set(at_b.findings) <= {"gap"}


def test_a_real_conflict_copy_is_never_applied(tmp_path: Path) -> None:
    """Two writers of one name: device A and a clone of it (its vault restored from a backup
    on another computer) both write sequence 1 while partitioned. Syncthing keeps one as the
    file and the other as ``<name>.sync-conflict-<date>-<time>-<device>``."""
    dev = two_devices()
    with loopback(tmp_path) as (a, b):
        a.pause(b)
        wait_for("partition", lambda: not a.connected(b) and not b.connected(a), ARRIVE_S)
        wa = FolderWriter(a.folder, dev.founder, dev.vault_id, Cursor(dev.founder.device_id))
        clone = FolderWriter(b.folder, dev.founder, dev.vault_id,
                             Cursor(dev.founder.device_id))
        mine = _write(a, wa, [_op("on A")], dev)
        theirs = _write(b, clone, [_op("on the clone")], dev)
        a.resume(b)
        wait_connected([a, b])
        where = [n.folder / "v1" / "log" / dev.founder.device_id for n in (a, b)]

        def conflict_on_both() -> bool:
            for node in (a, b):
                node.scan()
            return all(any(".sync-conflict-" in p.name for p in w.iterdir()) for w in where)

        wait_for("a conflict copy on both sides", conflict_on_both, ARRIVE_S, 0.5)
        wait_synced([a, b])
        at_b = _reader(dev, b, dev.other).scan()
        at_a = _reader(dev, a, dev.other).scan()
        names = sorted(p.name for p in where[1].iterdir())
        winner = hashlib.sha256((where[1] / seq_name(1)).read_bytes()).digest()
    assert len(names) == 2 and names[0] == seq_name(1)
    assert names[1].startswith(seq_name(1) + ".sync-conflict-")
    assert winner in (mine.hash, theirs.hash)
    for scan in (at_b, at_a):
        assert [s.hash for s in scan.segments] == [winner]   # the file, once; never the copy
        assert scan.ignored["conflict"] == 1
        assert [(f.what, f.seq, f.reason) for f in scan.findings] == \
            [("equivocation", 1, "conflict copy")]


def test_stversions_is_never_read(tmp_path: Path) -> None:
    dev = two_devices()
    with loopback(tmp_path, versioning={"b": {"type": "simple", "keep": "5"}}) as (a, b):
        wa = FolderWriter(a.folder, dev.founder, dev.vault_id, Cursor(dev.founder.device_id))
        at_b = Collected(_reader(dev, b, dev.other))
        for i in range(3):
            _write(a, wa, [_op(i)], dev)
        at_b.until(3)
        second = (a.folder / _rel(dev.founder, 2)).read_bytes()
        # Kept never deletes a segment; a person tidying the folder (or another tool) might.
        (a.folder / _rel(dev.founder, 2)).unlink()
        a.scan()
        kept = b.folder / ".stversions" / "v1" / "log" / dev.founder.device_id
        wait_for("the versioned copy on B", lambda: kept.is_dir() and any(kept.iterdir()),
                 ARRIVE_S)
        wait_synced([a, b])
        versions = sorted(kept.iterdir())
        fresh = _reader(dev, b, dev.other).scan()
        again = at_b.reader.scan()
    assert [p.name.split("~")[0] for p in versions] == [seq_name(2)]
    assert versions[0].read_bytes() == second
    assert at_b.numbers() == [0, 1, 2]
    assert [op["n"] for s in fresh.segments for op in s.ops] == [0]
    assert [(f.what, f.seq) for f in fresh.findings] == [("gap", 2)]
    assert again.segments == [] and again.findings == []


def test_a_device_cut_off_from_the_writer_gets_its_segments_through_a_third(
        tmp_path: Path) -> None:
    """Three instances: A and C cannot see each other (each paused the other); B sees both.
    Syncthing hands A's files to C from B's copy, and C's reader still gets each once, in
    order."""
    dev = two_devices()
    with loopback(tmp_path, names=("a", "b", "c")) as (a, b, c):
        a.pause(c)
        c.pause(a)
        wait_for("A and C apart", lambda: not a.connected(c) and not c.connected(a), ARRIVE_S)
        wa = FolderWriter(a.folder, dev.founder, dev.vault_id, Cursor(dev.founder.device_id))
        at_c = Collected(_reader(dev, c, dev.other))
        for i in range(8):
            _write(a, wa, [_op(i)], dev)
            at_c.scan()
        at_c.until(8)
        apart = not a.connected(c) and not c.connected(a)
    assert apart
    assert at_c.numbers() == list(range(8))
    assert set(at_c.findings) <= {"gap"}
