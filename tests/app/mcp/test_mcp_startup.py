"""``kept mcp`` stays a thin process (issue 14, item 3: "no model, no database in that process").

The official SDK client spawns the same ``app.cli.main`` the ``kept`` script runs, wrapped so
the child writes its ``sys.modules`` to a file when it exits. The session does the handshake,
``tools/list`` and a ``recall`` through a real in-process owner (``OwnerServer``), then closes.
``sys.modules`` only grows, so the names at exit are a superset of those loaded when the
handshake and ``tools/list`` were answered. Start-up time itself is measured in bench/ipc.py
(no wall-clock assertions here)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests import ROOT
from tests.app.cli.conftest import PW, make_vault
from tests.app.mcp.conftest import TOOLS

# The heavy native parts of Kept: the model, the database driver, the index, the GUI, the KDF.
HEAVY = ("numpy", "onnxruntime", "sqlcipher3", "chromadb", "PySide6", "argon2", "tokenizers")

# The child: what the ``kept`` console script does, plus the dump at exit.
CHILD = """import atexit, json, sys
def dump():
    with open(sys.argv[1], "w") as f:
        json.dump(sorted(sys.modules), f)
atexit.register(dump)
from app.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.fixture
def owner(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    from app.facade import Vault
    from app.ipc.server import OwnerServer
    folder = make_vault(tmp_path / "v", ("Ana moved to Lisbon in May",))
    vault = Vault.open(folder, PW, load_model=False, use_chroma=False)
    key = vault.pair_agent("bench").value
    server = OwnerServer(vault)
    server.start()
    try:
        yield folder, key
    finally:
        server.lock_vault()


def _run(folder: Path, key: str | None, dump: Path) -> list[str]:
    env = {k: os.environ[k] for k in ("HOME", "PATH") if k in os.environ}
    env["PYTHONPATH"] = str(ROOT)
    if key is not None:
        env["KEPT_AGENT_KEY"] = key
    params = StdioServerParameters(
        command=sys.executable, cwd=str(ROOT), env=env,
        args=["-c", CHILD, str(dump), "--vault", str(folder), "mcp", "--agent", "bench"])

    async def session() -> list[str]:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            assert {t.name for t in (await s.list_tools()).tools} == TOOLS
            res = await s.call_tool("recall", {"query": "Lisbon"})
            return [m["text"] for m in (res.structured_content or {}).get("memories", [])] \
                if not res.is_error else [f"error: {res.content[0].text}"]  # type: ignore[union-attr]

    texts = anyio.run(session)
    loaded: list[str] = json.loads(dump.read_text())
    return [*texts, *loaded]


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in HEAVY]


def test_kept_mcp_loads_no_model_and_no_database(owner: tuple[Path, str],
                                                 tmp_path: Path) -> None:
    folder, key = owner
    out = _run(folder, key, tmp_path / "modules.json")
    assert "Ana moved to Lisbon in May" in out  # the tool call really went through the owner
    assert "mcp.server" in out and "app.ipc.client" in out  # the dump is of the real process
    assert _heavy(out) == []


def test_kept_mcp_with_kept_closed_loads_nothing_heavy(tmp_path: Path) -> None:
    folder = make_vault(tmp_path / "v")  # no owner: the tool answers with a readable error
    out = _run(folder, "kept_wrong", tmp_path / "modules.json")
    assert out[0].startswith("error: ") and "Kept is not running" in out[0], out[0]
    assert _heavy(out) == []
