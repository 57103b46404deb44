"""Real Syncthing instances on 127.0.0.1 only, for the sync loopback tests and
bench/sync_syncthing.py (issue 29, "Tests and targets").

Each instance has its own home (keys, config, database, log) under a scratch folder and one
shared folder "kept" that every instance lists with every other. Before the first start the
generated config is rewritten so that nothing can leave the machine:

- listen on ``tcp://127.0.0.1:<free port>`` only (no QUIC, so no STUN), peers dialled at
  their ``tcp://127.0.0.1:<port>`` (no "dynamic" address, so no discovery lookups);
- global discovery, local discovery (broadcast and multicast), relays, NAT traversal (UPnP,
  NAT-PMP), usage reporting, crash reporting, automatic upgrades and the browser all off;
- the GUI and REST API on ``127.0.0.1:<free port>`` with a random API key;
- the file-system watcher off and the periodic rescan at an hour: the caller scans after each
  write (``scan``), as Kept's sync job would, so timings do not depend on the watcher's delay.

The process runs with ``--no-restart`` (no monitor process: ``kill()`` is a kill -9 of
Syncthing itself), a scrubbed environment (its own HOME, no proxy variables) and, optionally,
under ``strace -f`` so a test can check every socket call (``network_calls``).

Driven through the REST API (https://docs.syncthing.net/dev/rest.html): ``scan``,
``completion``, ``pause``/``resume`` (a partition), ``connected``, ``wire_bytes``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FOLDER_ID = "kept"
START_TIMEOUT_S = 60.0
# Options that would reach beyond 127.0.0.1, and what they become (config version 36, 1.19).
OFFLINE_OPTIONS = {
    "globalAnnounceEnabled": "false",
    "localAnnounceEnabled": "false",
    "relaysEnabled": "false",
    "natEnabled": "false",
    "urAccepted": "-1",               # usage reporting declined for good
    "autoUpgradeIntervalH": "0",
    "crashReportingEnabled": "false",
    "startBrowser": "false",
    "stunKeepaliveStartS": "0",       # STUN off (it only runs for QUIC, which is not listened on)
    "announceLANAddresses": "false",
    "reconnectionIntervalS": "5",     # a healed partition reconnects in seconds, not a minute
    "setLowPriority": "false",
}
_SCRUB = re.compile(r"(?i)^(.*_proxy|ST[A-Z_]+)$")


def syncthing_path() -> str | None:
    return shutil.which("syncthing")


def needs_syncthing() -> list[Any]:
    """A test module's ``pytestmark``: the slow group, and skipped without Syncthing unless
    ``KEPT_REQUIRE_SYNCTHING=1`` (CI), where a missing Syncthing fails instead."""
    import pytest
    return [pytest.mark.slow,
            pytest.mark.skipif(syncthing_path() is None
                               and os.environ.get("KEPT_REQUIRE_SYNCTHING") != "1",
                               reason="syncthing not installed (apt-get install -y syncthing)")]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for(what: str, predicate: Callable[[], bool], timeout: float,
             interval: float = 0.05) -> float:
    """Poll ``predicate`` until it holds; returns the seconds it took. Raises TimeoutError."""
    start = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(interval)


# The local opener: never a proxy, whatever the environment says.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class Syncthing:
    """One instance. ``folder`` is its copy of the shared folder."""

    name: str
    home: Path
    folder: Path
    api_port: int = field(default_factory=free_port)
    listen_port: int = field(default_factory=free_port)
    api_key: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    device_id: str = ""
    proc: subprocess.Popen[bytes] | None = None
    trace: Path | None = None      # strace output when started with ``traced=True``

    # --- set up --------------------------------------------------------------------------
    def generate(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / ".stfolder").mkdir(exist_ok=True)
        subprocess.run([_binary(), "generate", f"--home={self.home}", "--no-default-folder",
                        "--skip-port-probing"], env=self._env(), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        me = ET.parse(self.home / "config.xml").getroot().find("device")
        assert me is not None
        self.device_id = me.attrib["id"]

    def configure(self, peers: list[Syncthing], versioning: dict[str, str] | None = None,
                  options: dict[str, str] | None = None) -> None:
        """Rewrite the generated config: 127.0.0.1 only, the peers, the shared folder."""
        path = self.home / "config.xml"
        tree = ET.parse(path)
        root = tree.getroot()
        gui = _child(root, "gui")
        gui.set("tls", "false")
        _child(gui, "address").text = f"127.0.0.1:{self.api_port}"
        _child(gui, "apikey").text = self.api_key
        opts = _child(root, "options")
        for el in opts.findall("listenAddress") + opts.findall("globalAnnounceServer"):
            opts.remove(el)
        ET.SubElement(opts, "listenAddress").text = f"tcp://127.0.0.1:{self.listen_port}"
        for key, value in {**OFFLINE_OPTIONS, **(options or {})}.items():
            _child(opts, key).text = value
        me = root.find("device")
        assert me is not None
        me.set("name", self.name)
        template = root.find("defaults/device")
        assert template is not None
        for peer in peers:
            dev = ET.fromstring(ET.tostring(template))
            dev.set("id", peer.device_id)
            dev.set("name", peer.name)
            _child(dev, "address").text = f"tcp://127.0.0.1:{peer.listen_port}"
            root.insert(list(root).index(gui), dev)
        folder = root.find("defaults/folder")
        assert folder is not None
        folder = ET.fromstring(ET.tostring(folder))
        folder.attrib.update({"id": FOLDER_ID, "label": FOLDER_ID, "path": str(self.folder),
                              "rescanIntervalS": "3600", "fsWatcherEnabled": "false"})
        for dev in folder.findall("device"):
            folder.remove(dev)
        for who in (self, *peers):
            ET.SubElement(folder, "device", {"id": who.device_id, "introducedBy": ""})
        if versioning:
            ver = _child(folder, "versioning")
            ver.set("type", versioning.pop("type", "simple"))
            for key, value in versioning.items():
                el = ET.Element("param", {"key": key, "val": value})
                ver.insert(0, el)
        root.insert(0, folder)
        tree.write(path, encoding="utf-8")

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not _SCRUB.match(k)}
        # STMONITORED: run Syncthing itself, not its monitor (which 1.19 starts even with
        # --no-restart when logging to a file): one process, so kill -9 hits Syncthing.
        env.update(HOME=str(self.home), STNOUPGRADE="1", STNORESTART="1",
                   STNODEFAULTFOLDER="1", STMONITORED="yes")
        return env

    # --- run -----------------------------------------------------------------------------
    def start(self, traced: bool = False) -> None:
        cmd = [_binary(), "serve", f"--home={self.home}", "--no-browser", "--no-restart",
               "--no-upgrade"]
        if traced:
            self.trace = self.home / "strace.txt"
            cmd = ["strace", "-f", "-qq", "-s", "128", "-e", "trace=%network",
                   "-o", str(self.trace), *cmd]
        with open(self.home / "syncthing.log", "ab") as log:
            self.proc = subprocess.Popen(cmd, env=self._env(), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT)
        wait_for(f"{self.name} REST API", self._answers, START_TIMEOUT_S, 0.2)

    def _answers(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"syncthing {self.name} exited with {self.proc.returncode}")
        try:
            return bool(self.get("/rest/system/status").get("myID") == self.device_id)
        except (OSError, ValueError):
            return False

    @property
    def pid(self) -> int:
        """Syncthing's own process id (the tracee's, under strace)."""
        assert self.proc is not None
        if self.trace is None:
            return self.proc.pid
        import psutil

        kids = psutil.Process(self.proc.pid).children()
        return kids[0].pid if kids else self.proc.pid

    def kill(self) -> None:
        """kill -9 of Syncthing itself, mid-whatever."""
        assert self.proc is not None
        os.kill(self.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.proc = None

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            self.post("/rest/system/shutdown")
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.proc = None

    # --- REST ----------------------------------------------------------------------------
    def _call(self, method: str, path: str, params: dict[str, str]) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        req = urllib.request.Request(f"http://127.0.0.1:{self.api_port}{path}{query}",
                                     method=method, headers={"X-API-Key": self.api_key})
        with _OPENER.open(req, timeout=60) as resp:
            body = resp.read()
        return json.loads(body) if body.strip() else None

    def get(self, path: str, **params: str) -> Any:
        return self._call("GET", path, params)

    def post(self, path: str, **params: str) -> Any:
        return self._call("POST", path, params)

    def scan(self, sub: str | None = None) -> None:
        """Rescan the folder (or one path in it); returns when the scan is done."""
        self.post("/rest/db/scan", folder=FOLDER_ID, **({"sub": sub} if sub else {}))

    def completion(self, peer: Syncthing) -> float:
        """How complete ``peer``'s copy of the folder is, as this instance knows it (%)."""
        return float(self.get("/rest/db/completion", folder=FOLDER_ID,
                              device=peer.device_id)["completion"])

    def folder_status(self) -> dict[str, Any]:
        status: dict[str, Any] = self.get("/rest/db/status", folder=FOLDER_ID)
        return status

    def connected(self, peer: Syncthing) -> bool:
        conns = self.get("/rest/system/connections")["connections"]
        return bool(conns.get(peer.device_id, {}).get("connected"))

    def pause(self, peer: Syncthing) -> None:
        self.post("/rest/system/pause", device=peer.device_id)

    def resume(self, peer: Syncthing) -> None:
        self.post("/rest/system/resume", device=peer.device_id)

    def wire_bytes(self, peer: Syncthing) -> int:
        """Bytes sent plus received on the connection to ``peer`` (TLS included)."""
        conn = self.get("/rest/system/connections")["connections"][peer.device_id]
        return int(conn["inBytesTotal"]) + int(conn["outBytesTotal"])

    # --- what it did on the network --------------------------------------------------------
    def sockets(self) -> list[tuple[str, str]]:
        """(local, remote) address of every inet socket the process holds now."""
        import psutil

        out = []
        for c in psutil.Process(self.pid).net_connections(kind="inet"):
            local = c.laddr.ip if c.laddr else ""
            remote = c.raddr.ip if c.raddr else ""
            out.append((local, remote))
        return out


def _binary() -> str:
    path = syncthing_path()
    if path is None:
        raise RuntimeError("syncthing is not installed (apt-get install -y syncthing)")
    return path


def _child(parent: ET.Element, tag: str) -> ET.Element:
    el = parent.find(tag)
    if el is None:
        el = ET.SubElement(parent, tag)
    return el


@contextmanager
def loopback(base: Path, names: tuple[str, ...] = ("a", "b"), traced: bool = False,
             versioning: dict[str, dict[str, str]] | None = None,
             options: dict[str, dict[str, str]] | None = None) -> Iterator[list[Syncthing]]:
    """Start one instance per name, every one sharing folder "kept" with every other, and
    wait until they are connected. ``versioning`` / ``options``: per instance name."""
    nodes = [Syncthing(n, base / f"home-{n}", base / f"folder-{n}") for n in names]
    for node in nodes:
        node.generate()
    for node in nodes:
        node.configure([p for p in nodes if p is not node],
                       dict((versioning or {}).get(node.name, {})),
                       (options or {}).get(node.name))
    try:
        for node in nodes:
            node.start(traced)
        wait_connected(nodes)
        yield nodes
    finally:
        for node in nodes:
            node.stop()


def wait_connected(nodes: list[Syncthing], timeout: float = 90.0) -> None:
    for node in nodes:
        for peer in nodes:
            if peer is not node:
                wait_for(f"{node.name} connected to {peer.name}",
                         lambda n=node, p=peer: n.connected(p), timeout, 0.2)


def wait_synced(nodes: list[Syncthing], timeout: float = 60.0) -> float:
    """Until every instance knows every other to be 100 % complete and needs nothing."""
    def done() -> bool:
        for node in nodes:
            status = node.folder_status()
            if status.get("needTotalItems", 1) or status.get("state") != "idle":
                return False
            if any(node.completion(p) < 100 for p in nodes if p is not node):
                return False
        return True

    return wait_for("folders in sync", done, timeout, 0.1)


# --- strace ----------------------------------------------------------------------------------
_ADDR = re.compile(r'sa_family=AF_INET6?, sin6?_port=htons\((\d+)\), '
                   r'(?:sin_addr=inet_addr\("([^"]+)"\)|sin6_flowinfo=[^,]+, '
                   r'inet_pton\(AF_INET6, "([^"]+)")')
_CALLS = ("connect", "sendto", "sendmsg", "sendmmsg", "bind")


@dataclass
class NetworkCalls:
    loopback: list[str] = field(default_factory=list)   # "bind 127.0.0.1:22000" ...
    outside: list[str] = field(default_factory=list)    # anything to or on another address


def network_calls(trace: str) -> NetworkCalls:
    """Every connect/send/bind with an inet address in an ``strace -f -e trace=%network``
    log, split by whether the address is loopback. (Unix and netlink sockets carry no inet
    address and stay on the machine.)"""
    out = NetworkCalls()
    for line in trace.splitlines():
        parts = line.split(None, 1)
        if len(parts) < 2:
            continue
        call = parts[1].split("(", 1)[0]
        if call not in _CALLS:
            continue
        for m in _ADDR.finditer(line):
            host = m.group(2) or m.group(3)
            where = f"{call} {host}:{m.group(1)}"
            # A wildcard bind (0.0.0.0, ::) listens on every interface: not loopback.
            is_loop = ipaddress.ip_address(host).is_loopback
            (out.loopback if is_loop else out.outside).append(where)
    return out
