"""An in-process faulty transport between two devices' views of the sync folder (issue 29, item
4): what Syncthing or a cloud folder does on a bad day, seeded and fast, for tests.
Layer: app (file copies between two local folders; no network). Runs on: the test's thread.

Each ``step()`` looks at device A's folder and copies files that are new or changed to device B's
folder, with, per file and step, a chance to:
- **delay / drop**: keep it back (it arrives in a later step; ``drain()`` delivers everything
  held back, as a sync tool does in the end);
- **reorder**: files of one step go in a random order;
- **duplicate**: copy it again later (same bytes);
- **partial**: leave a partial download (the sync tool's temp name) and, sometimes, a truncated
  file under the final name, replaced by the whole file in a later step (tools that write in
  place);
- **conflict**: add a conflict copy named as Syncthing, Dropbox or Nextcloud name them, holding
  an older file's bytes;
- **replay**: copy an old log file of A under the name of a later sequence that A has not
  written yet (replaced when A writes it);
- ``tamper(name)``: flip one byte of a delivered file.

It only ever writes into B's folder and never deletes a file.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from app.sync.folder import seq_name


@dataclass(frozen=True)
class Faults:
    drop: float = 0.3
    duplicate: float = 0.2
    partial: float = 0.2
    conflict: float = 0.15
    replay: float = 0.15


CONFLICT_NAMES = (
    "{name}.sync-conflict-20261126-101010-ABCDEF7",        # Syncthing
    "{name} (Sam's conflicted copy 2026-11-26)",            # Dropbox
    "{name} (conflicted copy 2026-11-26 101010)",           # Nextcloud
)
TEMP_NAMES = (".syncthing.{name}.tmp", "~syncthing~{name}.tmp", ".{name}.~3fa2")


class FaultyTransport:
    def __init__(self, src: Path, dst: Path, seed: int, faults: Faults = Faults()) -> None:
        self.src, self.dst, self.faults = src, dst, faults
        self.rng = random.Random(seed)
        self.delivered: dict[str, bytes] = {}   # relative path -> bytes B holds from A
        self.held: set[str] = set()              # dropped this step; comes later
        self.truncated: set[str] = set()         # final names holding a partial file
        self.log: list[tuple[str, str]] = []     # (fault, relative path) for failure messages

    def _source_files(self) -> dict[str, bytes]:
        out = {}
        for p in sorted(self.src.rglob("*")):
            if p.is_file() and not p.name.startswith(".tmp-"):
                out[p.relative_to(self.src).as_posix()] = p.read_bytes()
        return out

    def _put(self, rel: str, data: bytes) -> None:
        dest = self.dst / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)

    def step(self) -> None:
        f, rng = self.faults, self.rng
        files = self._source_files()
        todo = [r for r, d in files.items() if self.delivered.get(r) != d or r in self.truncated]
        rng.shuffle(todo)
        for rel in todo:
            data = files[rel]
            name = rel.rsplit("/", 1)[-1]
            folder = rel[:-len(name)]
            if rng.random() < f.partial:
                self._put(folder + rng.choice(TEMP_NAMES).format(name=name),
                          data[:rng.randrange(1, len(data))])
                if rng.random() < 0.5 and rel not in self.delivered:
                    self._put(rel, data[:rng.randrange(1, len(data))])
                    self.truncated.add(rel)
                self.log.append(("partial", rel))
                continue
            if rng.random() < f.drop:
                self.held.add(rel)
                self.log.append(("drop", rel))
                continue
            self._deliver(rel, data)
            if rng.random() < f.duplicate:
                self._put(rel, data)
                self.log.append(("duplicate", rel))
            if rng.random() < f.conflict and self.delivered:
                old = rng.choice(sorted(self.delivered))
                self._put(folder + rng.choice(CONFLICT_NAMES).format(name=name),
                          self.delivered[old])
                self.log.append(("conflict", rel))
        if rng.random() < f.replay:
            self._replay(files)

    def _deliver(self, rel: str, data: bytes) -> None:
        self._put(rel, data)
        self.delivered[rel] = data
        self.held.discard(rel)
        self.truncated.discard(rel)

    def _replay(self, files: dict[str, bytes]) -> None:
        logs = sorted(r for r in self.delivered if "/log/" in r)
        if not logs:
            return
        old = self.rng.choice(logs)
        folder, _, name = old.rpartition("/")
        target = f"{folder}/{seq_name(int(name) + self.rng.randrange(1, 4))}"
        if target not in files and target not in self.delivered:
            self._put(target, self.delivered[old])
            self.truncated.add(target)  # A's real file replaces it when it exists
            self.log.append(("replay", target))

    def drain(self) -> None:
        """Deliver every file of A as it is now (the sync tool catches up)."""
        for rel, data in self._source_files().items():
            if self.delivered.get(rel) != data or rel in self.truncated:
                self._deliver(rel, data)

    def tamper(self, rel: str, at: int | None = None) -> None:
        path = self.dst / rel
        data = bytearray(path.read_bytes())
        i = self.rng.randrange(len(data)) if at is None else at
        data[i] ^= 0x01
        path.write_bytes(bytes(data))
        self.log.append(("tamper", rel))
