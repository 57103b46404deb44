"""kill -9 during remember (issue 28): the owner of the vault is killed while four callers
remember, or one caller remembers one at a time (group commits at ``synchronous=NORMAL``,
vectors made after the acknowledgement). After every kill: integrity_check ok, every
acknowledged memory is there with its text, and once the next unlock has made what was
pending, each has its vector in the vault and in the index. The one-caller runs set the
writer's fsync window to an hour: nothing acknowledged was fsynced by Kept, the OS alone kept
it (what a kill -9, unlike a power cut, leaves)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from app.facade import Vault
from storage.unlock import OpenVault
from tests.app.conftest import PW, share_embedder
from tests.inside import inside

CHILD = Path(__file__).with_name("remember_kill_child.py")


def _one_kill(folder: Path, round_: int, rng: random.Random, callers: int,
              sync_within: float | None) -> dict[int, str]:
    env = dict(os.environ, KEPT_PASSWORD=PW)
    args = [str(folder), str(round_), str(callers)]
    args += [] if sync_within is None else [str(sync_within)]
    proc = subprocess.Popen([sys.executable, str(CHILD), *args],
                            stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    lines = []
    try:
        ready = proc.stdout.readline()
        assert ready.strip() == "READY", ready
        lines.append(proc.stdout.readline())  # writing: kill at a random moment after
        time.sleep(rng.uniform(0.1, 1.0))
    finally:
        proc.send_signal(signal.SIGKILL)
    lines += proc.stdout.read().splitlines()
    proc.wait()
    acked: dict[int, str] = {}
    for line in lines:
        kind, _, rest = line.strip().partition(" ")
        if kind == "A" and rest:  # a line cut by the kill was never complete: not "A"
            mid, _, text = rest.partition(" ")
            if text.endswith("blue kettle"):
                acked[int(mid)] = text
    return acked


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize(("callers", "sync_within"), [(4, None), (1, 3600.0)],
                         ids=["four-callers", "one-caller-never-fsynced"])
def test_kill_9_during_remember_keeps_every_acknowledged_memory_and_its_vector(
        vault_dir: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch, callers: int,
        sync_within: float | None) -> None:
    kills = int(os.environ.get("KEPT_REMEMBER_KILLS", "8"))
    _kill_rounds(vault_dir, embedder, monkeypatch, kills, callers, sync_within)


@pytest.mark.timeout(300)
def test_kill_9_in_a_burst_of_one_callers_remembers_keeps_every_acknowledged_one(
        vault_dir: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default suite's one kill: an assistant's burst, one remember at a time, none of
    them fsynced by Kept before the kill."""
    _kill_rounds(vault_dir, embedder, monkeypatch, 1, 1, 3600.0)


def _kill_rounds(vault_dir: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch, kills: int,
                 callers: int, sync_within: float | None) -> None:
    from tests.conftest import new_vault
    share_embedder(monkeypatch, embedder)
    new_vault(vault_dir, PW, use_chroma=False).lock()
    rng = random.Random(28)
    acked: dict[int, str] = {}
    left_pending = 0  # vectors still to be made when the owner was killed
    for round_ in range(kills):
        got = _one_kill(vault_dir, round_, rng, callers, sync_within)
        assert got, "the child acknowledged nothing before the kill"
        acked.update(got)
        opened, _ = OpenVault.unlock(vault_dir, PW, threaded=False)  # as the kill left it
        try:
            left_pending += opened.db.read(lambda c: c.execute(
                "SELECT count(*) FROM vector_pending").fetchone()[0])
        finally:
            opened.lock()
        v = Vault.open(vault_dir, PW, use_chroma=False, threaded=False, verify="sync")
        try:
            db = inside(v).db
            assert db.read(lambda c: c.execute("PRAGMA integrity_check").fetchall()) == [("ok",)]
            texts = dict(db.read(lambda c: c.execute("SELECT id, text FROM memory").fetchall()))
            lost = {i: t for i, t in acked.items() if texts.get(i) != t}
            assert not lost, f"acknowledged memories lost: {sorted(lost)[:10]}"
            # The unlock makes every vector that was still to be made: an unthreaded vault
            # makes a few before open returns, and more than a batch when asked
            # (``make_vectors``, as ``kept import`` does; a threaded one on its own thread).
            assert v.make_vectors() == 0
            assert db.read(lambda c: c.execute(
                "SELECT count(*) FROM vector_pending").fetchone()[0]) == 0
            with_vector = {r[0] for r in db.read(lambda c: c.execute(
                "SELECT memory_id FROM vector").fetchall())}
            no_vector = sorted(set(acked) - with_vector)
            assert not no_vector, f"acknowledged memories without a vector: {no_vector[:10]}"
            index = inside(v).index
            assert all(i in index for i in acked)
        finally:
            v.lock()
    print({"kills": kills, "callers": callers, "acknowledged": len(acked),
           "vectors_left_by_kills": left_pending})
    assert len(acked) > kills
    assert left_pending > 0, "no kill left a vector to make: the unlock's rebuild went untested"
