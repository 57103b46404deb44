"""SECURITY.md requirement 18: no network unless opted in.

A full session (create, remember, import, recall, context, explain, consolidate, forget, lock,
reopen with the Chroma index, recall, lock) makes no non-loopback connection and no DNS lookup:
in this process under the conftest guard (with every attempt recorded, in case a library
swallowed the guard's exception), and in a fresh interpreter that has no conftest, with
``socket`` patched to record and refuse. Native code bypasses Python's ``socket``:
tests/app/test_network_native.py watches a session's system calls under strace instead.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import storage.vector
from app.clock import FixedClock
from app.domain.memory import Draft, Store
from app.facade import Vault
from app.services.importer import parse_import
from tests.app.conftest import PW, T0, share_embedder
from tests.inside import inside

ROOT = Path(__file__).resolve().parents[2]

IMPORT_LINES = [
    json.dumps({"session": "s1", "speaker": "Anna", "text": text, "ref": f"s1:{n}",
                "at": f"2026-05-{10 + n:02d}T18:00:00Z"})
    for n, text in enumerate(["We booked the train to Porto for the summer",
                              "My brother Tom starts his new job on Monday",
                              "The cat knocked the plant off the shelf again"])
]


def run_session(vault_dir: Path, kdf: Any, clock: Any) -> dict[str, Any]:
    """The whole product path, headless. Returns a few facts to check it really ran."""
    v = Vault.create(vault_dir, PW, kdf=kdf, threaded=False, clock=clock,
                     use_chroma=True).vault
    try:
        a = v.remember(Draft(text="My passport expires in March 2027", store=Store.SEMANTIC))
        v.remember(Draft(text="To reset the router, hold the button for ten seconds",
                         store=Store.PROCEDURAL))
        rep = v.import_turns(parse_import(IMPORT_LINES)).value
        hits = v.recall("when does my passport expire")
        ctx = v.context("what happened in May 2026")
        v.explain(a.value, "passport")
        v.consolidate()
        plan = v.forget_plan(query="cat knocked the plant")
        v.forget(plan)
    finally:
        v.lock()
    v = Vault.open(vault_dir, PW, threaded=False, use_chroma=True, clock=clock)
    try:
        ready = inside(v).index.wait_ready(60)
        again = v.recall("train to Porto", touch=False)
    finally:
        v.lock()
    return {"added": rep.added, "top": int(hits[0].id), "passport": int(a.value),
            "context_items": len(ctx.items), "forgot": len(plan.memory_ids),
            "chroma": ready, "porto": again[0].text}


def test_guard_from_conftest_is_installed() -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        with pytest.raises(OSError) as e:
            s.connect(("192.0.2.1", 80))
        assert type(e.value).__name__ == "NetworkRefused"
        with pytest.raises(OSError) as e2:
            s.connect_ex(("192.0.2.1", 80))
        assert type(e2.value).__name__ == "NetworkRefused"
        with pytest.raises(OSError) as e3:
            socket.create_connection(("192.0.2.1", 443), timeout=1)
        assert type(e3.value).__name__ == "NetworkRefused"
    finally:
        s.close()
    # Loopback stays usable (local IPC, test servers).
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        client.connect(server.getsockname())
    finally:
        client.close()
        server.close()


def _is_local(host: object) -> bool:
    return host in (None, "", "localhost", "127.0.0.1", "::1") or (
        isinstance(host, (str, bytes)) and str(host).startswith("/"))


def test_full_session_in_process_makes_no_connection(
        vault_dir: Path, fast_kdf: Any, embedder: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    share_embedder(monkeypatch, embedder)
    monkeypatch.setattr(storage.vector, "CHROMA_MIN_ROWS", 1)
    monkeypatch.delenv("ANONYMIZED_TELEMETRY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    attempts: list[tuple[str, str]] = []
    guarded_connect, guarded_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_gai, real_sendto = socket.getaddrinfo, socket.socket.sendto

    def connect(self: socket.socket, address: Any) -> Any:
        if not (isinstance(address, tuple) and _is_local(address[0])) and \
                not isinstance(address, (str, bytes)):
            attempts.append(("connect", repr(address)))
        return guarded_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if not (isinstance(address, tuple) and _is_local(address[0])) and \
                not isinstance(address, (str, bytes)):
            attempts.append(("connect_ex", repr(address)))
        return guarded_connect_ex(self, address)

    def getaddrinfo(host: Any, *a: Any, **k: Any) -> Any:
        if not _is_local(host):
            attempts.append(("getaddrinfo", repr(host)))
            raise OSError("DNS refused by the test")
        return real_gai(host, *a, **k)

    def sendto(self: socket.socket, data: bytes, *a: Any) -> Any:
        attempts.append(("sendto", repr(a[-1] if a else None)))
        return real_sendto(self, data, *a)
    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "sendto", sendto)

    out = run_session(vault_dir, fast_kdf, FixedClock(T0))
    assert attempts == []
    assert out["added"] == 3 and out["top"] == out["passport"]
    assert out["context_items"] > 0 and out["forgot"] >= 1 and out["chroma"] is True
    assert out["porto"] == "We booked the train to Porto for the summer"


CHILD = r"""
import json, socket, sys
attempts = []

def _local(host):
    return host in (None, "", "localhost", "127.0.0.1", "::1")

def _refuse(kind, target):
    attempts.append([kind, repr(target)])
    raise OSError("network refused by the requirement 18 test")

def connect(self, address):
    if isinstance(address, (str, bytes)) or (isinstance(address, tuple) and _local(address[0])):
        return _real_connect(self, address)
    _refuse("connect", address)

def connect_ex(self, address):
    if isinstance(address, (str, bytes)) or (isinstance(address, tuple) and _local(address[0])):
        return _real_connect_ex(self, address)
    _refuse("connect_ex", address)

def getaddrinfo(host, *a, **k):
    if _local(host):
        return _real_gai(host, *a, **k)
    _refuse("getaddrinfo", host)

_real_connect, _real_connect_ex = socket.socket.connect, socket.socket.connect_ex
_real_gai = socket.getaddrinfo
socket.socket.connect = connect
socket.socket.connect_ex = connect_ex
socket.getaddrinfo = getaddrinfo

if sys.argv[1] == "control":
    try:
        socket.create_connection(("example.invalid", 443), timeout=1)
    except OSError:
        pass
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.connect(("192.0.2.1", 80))
    except OSError:
        pass
    s.close()
    print(json.dumps({"attempts": attempts}))
    sys.exit(0)

from pathlib import Path
import storage.vector
from app.clock import FixedClock
from storage.crypto import KdfParams
from tests.app.test_network import run_session
storage.vector.CHROMA_MIN_ROWS = 1
out = run_session(Path(sys.argv[2]), KdfParams(m=65_536, t=3, p=4), FixedClock(float(sys.argv[3])))
import chromadb  # noqa: the session really used Chroma in this interpreter
print(json.dumps({"attempts": attempts, "session": out,
                  "conftest": "tests.conftest" in sys.modules}))
"""


def _child(tmp_path: Path, *args: str) -> dict[str, Any]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT), HOME=str(work), TMPDIR=str(work))
    env.pop("ANONYMIZED_TELEMETRY", None)     # the code must turn telemetry off, not the env
    r = subprocess.run([sys.executable, "-c", CHILD, *args], cwd=work, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    return dict(json.loads(r.stdout.strip().splitlines()[-1]))


def test_recorder_catches_connections_and_dns(tmp_path: Path) -> None:
    out = _child(tmp_path, "control")
    kinds = [a[0] for a in out["attempts"]]
    assert "connect" in kinds and "getaddrinfo" in kinds


def test_full_session_in_fresh_interpreter_makes_no_connection(tmp_path: Path) -> None:
    out = _child(tmp_path, "session", str(tmp_path / "vault"), str(T0))
    assert out["attempts"] == []
    assert out["conftest"] is False                 # no test guard in that interpreter
    s = out["session"]
    assert s["added"] == 3 and s["top"] == s["passport"] and s["chroma"] is True
    assert s["forgot"] >= 1 and s["context_items"] > 0


def test_chroma_index_built_with_telemetry_off(embedder: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """``Settings(anonymized_telemetry=False)`` is passed by the code itself (the environment
    variable the conftest sets is removed here), and Chroma's default embedding function,
    which downloads a model, is never created."""
    import chromadb
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

    monkeypatch.delenv("ANONYMIZED_TELEMETRY", raising=False)
    monkeypatch.setattr(storage.vector, "CHROMA_MIN_ROWS", 1)
    seen: list[Any] = []
    real = chromadb.EphemeralClient

    def ephemeral(settings: Any = None, **kw: Any) -> Any:
        seen.append(settings)
        return real(settings=settings, **kw)
    monkeypatch.setattr(chromadb, "EphemeralClient", ephemeral)
    made: list[str] = []
    real_init = ONNXMiniLM_L6_V2.__init__

    def ef_init(self: Any, *a: Any, **k: Any) -> None:
        made.append("ef")
        real_init(self, *a, **k)
    monkeypatch.setattr(ONNXMiniLM_L6_V2, "__init__", ef_init)
    idx = storage.vector.VectorIndex(use_chroma=True)
    mat = embedder.embed(["one memory", "another memory", "a third one"])
    idx.load(np.arange(1, 4), mat)
    try:
        idx.start_chroma_build()
        assert idx.wait_ready(60)
        assert len(seen) == 1 and seen[0] is not None
        assert seen[0].anonymized_telemetry is False
        assert idx._client.get_settings().anonymized_telemetry is False
        assert made == []
        assert idx.search(mat[1], 1)[0][0] == 2
    finally:
        idx.close()
