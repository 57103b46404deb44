"""``kept mcp install`` and ``kept mcp doctor`` (issue 14, item 5: connecting is one step).

Every test runs with a fresh HOME (tmp_path), so no real client config is read or touched. The
doctor is checked against no owner and against a real ``kept serve`` subprocess; the entry that
``install --write`` wrote is then started the way the client starts it (its command, args and
env) with the official MCP client, and its ``status`` tool answers.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from app import mcp_install
from app.facade import Vault
from tests import ROOT
from tests.app.cli.conftest import PW, make_vault, run_cli

JSON_CLIENTS = {"claude-desktop": "mcpServers", "cursor": "mcpServers",
                "lm-studio": "mcpServers", "vscode": "servers"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "APPDATA", "KEPT_AGENT_KEY",
                "KEPT_PASSWORD"):
        monkeypatch.delenv(var, raising=False)
    return h


def _install(*argv: str, vault: Path | None = None) -> tuple[int, str, str]:
    pre = ("--vault", str(vault)) if vault else ()
    r = run_cli(*pre, "mcp", "install", *argv)
    return r.code, r.out, r.err


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- the entries -----------------------------------------------------------------------------

@pytest.mark.parametrize("client", sorted(JSON_CLIENTS))
def test_json_client_entry_shape(client: str, home: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KEPT_AGENT_KEY", "kept_k1")
    code, out, err = _install("--client", client, "--agent", "ana")
    assert code == 0, err
    doc = json.loads(out)
    wrapper = JSON_CLIENTS[client]
    assert list(doc) == [wrapper] and list(doc[wrapper]) == ["kept"]
    entry = doc[wrapper]["kept"]
    keys = {"command", "args", "env"} | ({"type"} if client == "vscode" else set())
    assert set(entry) == keys
    if client == "vscode":
        assert entry["type"] == "stdio"
    assert entry["args"] == ["mcp", "--agent", "ana"]  # the default vault: no --vault
    assert entry["env"] == {"KEPT_AGENT_KEY": "kept_k1"}
    cmd = Path(entry["command"])
    assert cmd.is_absolute() and cmd.name == "kept" and os.access(cmd, os.X_OK)
    path = mcp_install.config_path(client)
    assert path is not None and path.is_relative_to(home) and str(path) in err


def test_claude_code_line_is_add_json_and_runs_as_written(home: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """``claude mcp add -e K=V NAME -- CMD`` fails in Claude Code 2.1 (its variadic ``-e``
    takes NAME as a second variable, anthropics/claude-code #62332), and the key placeholder
    was not quoted for the shell. The line is now ``add-json``, one quoted JSON entry, and
    ``--write`` runs exactly that argv."""
    code, out, _ = _install("--client", "claude-code", "--agent", "cc")
    assert code == 0
    argv = shlex.split(out.strip())
    assert argv[:6] == ["claude", "mcp", "add-json", "--scope", "user", "kept"]
    assert len(argv) == 7
    entry = json.loads(argv[6])
    assert set(entry) == {"type", "command", "args", "env"} and entry["type"] == "stdio"
    assert Path(entry["command"]).is_absolute()
    assert entry["args"] == ["mcp", "--agent", "cc"]
    assert entry["env"] == {"KEPT_AGENT_KEY": "<key from: kept agents pair cc>"}

    # --write runs `claude` (a stand-in that records its argv) with that entry and the key.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "claude-argv.json"
    fake = bin_dir / "claude"
    fake.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    f"open({str(log)!r}, 'w').write(json.dumps(sys.argv[1:]))\n")
    fake.chmod(0o700)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("KEPT_AGENT_KEY", "kept_k2")
    code, out, err = _install("--client", "claude-code", "--agent", "cc", "--write")
    assert code == 0, err
    ran = json.loads(log.read_text())  # the last call: add-json (after remove, issue 26)
    shown = shlex.split(out.strip())[1:]
    assert ran[:5] == shown[:5] and "kept_k2" not in out + err  # the key is not shown
    assert {**json.loads(ran[5]), "env": {}} == {**json.loads(shown[5]), "env": {}}
    assert json.loads(ran[-1])["env"] == {"KEPT_AGENT_KEY": "kept_k2"}


def test_claude_code_write_without_claude_changes_nothing(home: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    folder = make_vault(tmp_path / "v")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    monkeypatch.setenv("KEPT_PASSWORD", PW)
    code, out, err = _install("--client", "claude-code", "--pair", "--write", vault=folder)
    assert code == 2 and "`claude`" in err and "nothing was changed" in err and not out
    assert _agents(folder) == []  # refused before pairing


def test_command_is_the_absolute_kept_this_process_runs_as(home: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """Started as ``bin/kept`` from some folder (a pipx or venv script), the entry names that
    script by its absolute path, not another interpreter's neighbour."""
    script = tmp_path / "elsewhere" / "bin" / "kept"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o700)
    monkeypatch.chdir(tmp_path / "elsewhere")
    monkeypatch.setattr(sys, "argv", ["bin/kept", "mcp", "install"])
    assert mcp_install.kept_executable() == str(script)


def test_vault_only_when_not_default_and_absolute(home: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from app import bootstrap
    default = bootstrap.default_vault_dir()
    assert default.is_relative_to(home)
    code, out, _ = _install("--client", "cursor", vault=default)
    assert code == 0
    assert json.loads(out)["mcpServers"]["kept"]["args"] == ["mcp", "--agent", "cursor"]
    monkeypatch.chdir(tmp_path)
    code, out, _ = _install("--client", "cursor", vault=Path("my-vault"))
    assert json.loads(out)["mcpServers"]["kept"]["args"] == [
        "--vault", str(tmp_path / "my-vault"), "mcp", "--agent", "cursor"]


# --- --write ---------------------------------------------------------------------------------

def test_write_merges_keeps_other_servers_and_a_bak(home: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = mcp_install.config_path("cursor")
    assert path is not None
    path.parent.mkdir(parents=True)
    old = {"mcpServers": {"github": {"command": "/usr/bin/gh-mcp", "args": ["--x"]}},
           "other": {"keep": [1, 2]}}
    path.write_text(json.dumps(old))
    before = path.read_bytes()
    monkeypatch.setenv("KEPT_AGENT_KEY", "kept_k3")
    code, _, err = _install("--client", "cursor", "--write")
    assert code == 0, err
    new = json.loads(path.read_text())
    assert new["other"] == old["other"]
    assert new["mcpServers"]["github"] == old["mcpServers"]["github"]
    assert new["mcpServers"]["kept"]["env"] == {"KEPT_AGENT_KEY": "kept_k3"}
    assert path.with_name("mcp.json.bak").read_bytes() == before
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds the key
    # Again: the kept entry is replaced, not doubled; the rest stays.
    monkeypatch.setenv("KEPT_AGENT_KEY", "kept_k4")
    assert _install("--client", "cursor", "--write")[0] == 0
    again = json.loads(path.read_text())
    assert list(again["mcpServers"]) == ["github", "kept"]
    assert again["mcpServers"]["kept"]["env"] == {"KEPT_AGENT_KEY": "kept_k4"}


def test_write_vscode_keeps_inputs_and_creates_missing_file(home: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    monkeypatch.setenv("KEPT_AGENT_KEY", "kept_k5")
    path = mcp_install.config_path("vscode")
    assert path is not None and not path.exists()
    code, _, err = _install("--client", "vscode", "--write")
    assert code == 0 and ".bak" not in err  # a new file: nothing was backed up
    assert not path.with_name("mcp.json.bak").exists()
    path.write_text(json.dumps({"inputs": [{"id": "tok"}], "servers": {"x": {"url": "u"}}}))
    assert _install("--client", "vscode", "--write")[0] == 0
    doc = json.loads(path.read_text())
    assert doc["inputs"] == [{"id": "tok"}] and doc["servers"]["x"] == {"url": "u"}
    assert doc["servers"]["kept"]["type"] == "stdio"


def _agents(folder: Path) -> list[str]:
    v = Vault.open(folder, PW, load_model=False, threaded=False, use_chroma=False)
    try:
        return [a.name for a in v.agents()]
    finally:
        v.lock()


@pytest.mark.parametrize("text", ['{"mcpServers": {}, // mine\n}', "[1, 2]",
                                  '{"mcpServers": ["not", "an", "object"]}', "\xff\xfe"])
def test_malformed_config_refused_unchanged_nothing_paired(text: str, home: Path,
                                                           tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    folder = make_vault(tmp_path / "v")
    path = mcp_install.config_path("claude-desktop")
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_bytes(text.encode("utf-8", "surrogateescape") if text != "\xff\xfe"
                     else b"\xff\xfe{")
    before = _sha(path)
    monkeypatch.setenv("KEPT_PASSWORD", PW)
    code, out, err = _install("--client", "claude-desktop", "--pair", "--write", vault=folder)
    assert code == 2 and not out
    assert len([ln for ln in err.splitlines() if ln.strip()]) == 1 and str(path) in err
    assert _sha(path) == before and sorted(p.name for p in path.parent.iterdir()) == [path.name]
    assert _agents(folder) == []


def test_write_without_a_key_writes_nothing(home: Path) -> None:
    """A placeholder written into a real config would start an assistant that cannot connect."""
    code, _, err = _install("--client", "cursor", "--write")
    path = mcp_install.config_path("cursor")
    assert code == 2 and "--pair" in err
    assert path is not None and not path.exists()


# --- doctor ----------------------------------------------------------------------------------

def test_doctor_without_an_owner(home: Path, tmp_path: Path) -> None:
    folder = make_vault(tmp_path / "v")
    r = run_cli("--vault", str(folder), "mcp", "doctor", "--agent", "ana")
    assert r.code == 2 and "reachable: no" in r.out and "paired: yes" not in r.out


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KEPT_PASSWORD", "KEPT_AGENT_KEY")}
    env.update(PYTHONPATH=str(ROOT), **extra)
    return env


@pytest.fixture
def served(home: Path, tmp_path: Path) -> Iterator[Path]:
    from tests.app.ipc.test_owner import _wait_served
    folder = make_vault(tmp_path / "v", ("Ana moved to Lisbon in May",))
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "--vault", str(folder), "serve",
                             "--no-schedule"], cwd=ROOT, env=_env(KEPT_PASSWORD=PW), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_served(folder, proc)
        yield folder
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _doctor(agent: str, folder: Path | None, monkeypatch: pytest.MonkeyPatch,
            key: str | None) -> tuple[int, str]:
    if key is None:
        monkeypatch.delenv("KEPT_AGENT_KEY", raising=False)
    else:
        monkeypatch.setenv("KEPT_AGENT_KEY", key)
    pre = ("--vault", str(folder)) if folder else ()
    r = run_cli(*pre, "mcp", "doctor", "--agent", agent)
    return r.code, r.out


def test_doctor_against_kept_serve_then_the_written_entry_works(
        served: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = served
    # Unpaired, and paired with a wrong key: reachable and unlocked, not paired.
    code, out = _doctor("ana", folder, monkeypatch, "kept_nothing")
    assert code == 2 and "reachable: yes" in out and "unlocked: yes" in out
    assert "paired: no" in out
    code, out = _doctor("ana", folder, monkeypatch, None)
    assert code == 2 and "paired: unknown" in out

    # One step: pair through the owner (the password proves it's the person) and write.
    monkeypatch.setenv("KEPT_PASSWORD", PW)
    code, out, err = _install("--client", "cursor", "--agent", "ana", "--pair", "--write",
                              vault=folder)
    assert code == 0, err
    monkeypatch.delenv("KEPT_PASSWORD")
    entry = json.loads(mcp_install.config_path("cursor").read_text()  # type: ignore[union-attr]
                       )["mcpServers"]["kept"]
    assert entry["args"] == ["--vault", str(folder), "mcp", "--agent", "ana"]
    key = entry["env"]["KEPT_AGENT_KEY"]
    assert _doctor("ana", folder, monkeypatch, "kept_wrong")[0] == 2

    # With the key from the environment, and with no key and no --vault: found in the entry.
    code, out = _doctor("ana", folder, monkeypatch, key)
    assert code == 0 and "paired: yes" in out, out
    code, out = _doctor("ana", None, monkeypatch, None)
    assert code == 0 and f"vault: {folder}" in out and "mcp.json (cursor)" in out, out

    # The entry, started the way Cursor starts it, answers a tool call.
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def status() -> dict[str, object]:
        params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                       env={**entry["env"], "HOME": str(home)})
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            res = await s.call_tool("status", {})
            assert not res.is_error, res.content
            return res.structured_content  # type: ignore[return-value]

    assert anyio.run(status)

    # Revoked: paired no.
    monkeypatch.setenv("KEPT_PASSWORD", PW)
    assert run_cli("--vault", str(folder), "agents", "revoke", "ana").code == 0
    code, out = _doctor("ana", None, monkeypatch, None)
    assert code == 2 and "paired: no" in out
