"""``kept mcp install --pair --write`` and ``kept mcp doctor`` run twice in a row for every
client kind (issue 26, item 7): the second run replaces the entry in place (Claude Code too),
the key is never printed when it was written, the old key stops working and the new one
works; doctor starts the entry exactly as the client would (its command, args and env, the
SDK's stdio client), lists its tools, calls ``status`` through it, names the vault, and a fix
line it prints works as printed.

Fresh HOME per test. A real ``kept serve`` (real SQLCipher vault). Claude Code cannot run here
(no network, no account), so ``claude`` is a small real script on PATH that records its
arguments and keeps ``~/.claude.json`` the way ``claude mcp add-json``/``remove`` do,
including refusing to add a name that exists ("already exists"), which is what broke the
second run before."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from app import mcp_install
from tests.app.cli.conftest import PW, run_cli
from tests.app.mcp.test_install_doctor import _install, home, served  # noqa: F401

FAKE_CLAUDE = r'''
import json, os, sys
home = os.environ["HOME"]
with open(os.path.join(home, "claude-argv.jsonl"), "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\n")
path = os.path.join(home, ".claude.json")
conf = json.load(open(path)) if os.path.exists(path) else {}
servers = conf.setdefault("mcpServers", {})
a = sys.argv[1:]
if a[:2] == ["mcp", "--help"]:
    print("Usage: claude mcp [options] [command]")
    sys.exit(0)
if a[:2] == ["mcp", "add-json"] and a[2:4] == ["--scope", "user"] and len(a) == 6:
    if a[4] in servers:
        print(f"MCP server {a[4]} already exists in user config", file=sys.stderr)
        sys.exit(1)
    servers[a[4]] = json.loads(a[5])
elif a[:2] == ["mcp", "remove"] and a[2:4] == ["--scope", "user"] and len(a) == 5:
    if a[4] not in servers:
        print(f"No user-scoped MCP server found with name: {a[4]}", file=sys.stderr)
        sys.exit(1)
    del servers[a[4]]
else:
    print("error: unknown command", file=sys.stderr)
    sys.exit(2)
json.dump(conf, open(path, "w"))
print(f"Done: {a[1]} {a[4]}")
'''


def _fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "claude"
    fake.write_text(f"#!{sys.executable}\n{FAKE_CLAUDE}")
    fake.chmod(0o700)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def _config(client: str, home: Path) -> tuple[Path, str]:  # noqa: F811
    if client == "claude-code":
        return home / ".claude.json", "mcpServers"
    path = mcp_install.config_path(client)
    assert path is not None
    return path, "servers" if client == "vscode" else "mcpServers"


def _doctor(monkeypatch: pytest.MonkeyPatch, *argv: str) -> tuple[int, str]:
    monkeypatch.delenv("KEPT_AGENT_KEY", raising=False)
    monkeypatch.delenv("KEPT_PASSWORD", raising=False)
    r = run_cli(*argv)
    return r.code, r.out


CLIENT_KINDS = [
    "cursor", "claude-code",
    pytest.param("claude-desktop", marks=pytest.mark.slow),
    pytest.param("vscode", marks=pytest.mark.slow),
    pytest.param("lm-studio", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("client", CLIENT_KINDS)
def test_install_and_doctor_twice(client: str, served: Path, home: Path,  # noqa: F811
                                  tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = served
    _fake_claude(tmp_path, monkeypatch)
    path, wrapper = _config(client, home)
    path.parent.mkdir(parents=True, exist_ok=True)
    other = {"command": "/usr/bin/other-mcp", "args": ["--x"]}
    path.write_text(json.dumps({wrapper: {"other": other}, "theme": "dark"}))
    keys = []
    for round_ in (1, 2):
        monkeypatch.setenv("KEPT_PASSWORD", PW)
        code, out, err = _install("--client", client, "--agent", "ana", "--pair", "--write",
                                  vault=folder)
        assert code == 0, (round_, err)
        doc = json.loads(path.read_text())
        servers = doc[wrapper]
        assert list(servers) == ["other", "kept"] and servers["other"] == other, servers
        entry = servers["kept"]
        key = entry["env"]["KEPT_AGENT_KEY"]
        assert key.startswith("kept_")
        keys.append(key)
        # The key went into the config only: not on the terminal.
        assert key not in out and key not in err
        assert "<written, not shown>" in out
        # The success message does not ask to run what already ran.
        assert "Run this line" not in err and "Added" in err or "Written to" in err
        assert f"kept --vault {folder} mcp doctor --agent ana --client {client}" in err
        if client != "claude-code":
            assert doc["theme"] == "dark"
        # Doctor: the entry started as the client starts it, without the key in our env.
        code, dout = _doctor(monkeypatch, "mcp", "doctor", "--agent", "ana", "--client", client)
        assert code == 0, dout
        assert f"vault: {folder}" in dout
        assert "launch: yes" in dout and "tools/list:" in dout
        assert "call: yes" in dout and "paired: yes, as ana" in dout
        assert "Fix:" not in dout
    assert keys[0] != keys[1]
    if client == "claude-code":
        ran = [json.loads(line) for line in
               (home / "claude-argv.jsonl").read_text().splitlines()]
        adds = [a for a in ran if a[:2] == ["mcp", "add-json"]]
        removes = [a for a in ran if a[:2] == ["mcp", "remove"]]
        assert len(adds) == 2 and len(removes) == 2
        # Each add is preceded by its remove (the second run replaces, never "exists").
        assert all(ran[i - 1][:2] == ["mcp", "remove"]
                   for i, a in enumerate(ran) if a[:2] == ["mcp", "add-json"])
        assert ran[0] == ["mcp", "--help"]  # checked before pairing


def test_doctor_fix_line_works_as_printed(served: Path, home: Path,  # noqa: F811
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    folder = served
    monkeypatch.setenv("KEPT_PASSWORD", PW)
    assert _install("--client", "cursor", "--agent", "ana", "--pair", "--write",
                    vault=folder)[0] == 0
    assert run_cli("--vault", str(folder), "agents", "revoke", "ana").code == 0
    code, out = _doctor(monkeypatch, "mcp", "doctor", "--agent", "ana")
    assert code == 2 and "paired: no" in out
    [fix] = [ln for ln in out.splitlines() if ln.startswith("Fix: ")]
    assert "NAME" not in fix and "--vault" in fix
    argv = shlex.split(fix[len("Fix: "):])
    assert argv[0] == "kept"
    monkeypatch.setenv("KEPT_PASSWORD", PW)
    r = run_cli(*argv[1:])
    assert r.code == 0, r.err
    code, out = _doctor(monkeypatch, "mcp", "doctor", "--agent", "ana")
    assert code == 0 and "call: yes" in out, out


def test_doctor_without_an_entry_names_a_real_client(served: Path, home: Path,  # noqa: F811
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = _doctor(monkeypatch, "--vault", str(served), "mcp", "doctor", "--agent", "zed")
    assert code == 2 and "entry: none" in out
    [fix] = [ln for ln in out.splitlines() if ln.startswith("Fix: ")]
    assert f"kept --vault {served} mcp install --client claude-desktop --agent zed" in fix
    assert "NAME" not in fix


def test_second_install_refused_before_pairing_keeps_the_working_key(
        served: Path, home: Path, tmp_path: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code gone from PATH on the second run: refused before pairing, so the key that
    the first run wrote still opens Kept."""
    folder = served
    _fake_claude(tmp_path, monkeypatch)
    monkeypatch.setenv("KEPT_PASSWORD", PW)
    assert _install("--client", "claude-code", "--agent", "cc", "--pair", "--write",
                    vault=folder)[0] == 0
    key = json.loads((home / ".claude.json").read_text())["mcpServers"]["kept"]["env"][
        "KEPT_AGENT_KEY"]
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    code, out, err = _install("--client", "claude-code", "--agent", "cc", "--pair", "--write",
                              vault=folder)
    assert code == 2 and "nothing was changed" in err
    monkeypatch.setenv("KEPT_AGENT_KEY", key)
    monkeypatch.delenv("KEPT_PASSWORD")
    r = run_cli("--vault", str(folder), "mcp", "doctor", "--agent", "cc")
    assert "paired: yes, as cc" in r.out, r.out
