"""``kept mcp install`` and ``kept mcp doctor``: the exact entry each MCP client needs, and whether
an assistant can reach Kept. Layer: app (front end). Runs on: the main thread. Imports no SDK,
no storage: it is pure text and a socket check.

Client shapes are those of ../shared/MCP.md section 4: ``mcpServers`` for Claude Desktop,
Cursor and LM Studio; ``servers`` with ``"type": "stdio"`` for VS Code; a ``claude mcp add``
line for Claude Code (options before the name, ``--`` before the command). The command is
always the absolute path of the installed ``kept`` (hosts start servers with a short PATH), and
the key goes in ``env``, never in ``args`` (process listings show args).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from app.errors import ValidationError

CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode", "lm-studio")
KEY_PLACEHOLDER = "<key from: kept agents pair {agent}>"


@dataclass(frozen=True, slots=True)
class Install:
    client: str
    path: Path | None       # the config file to merge into; None: a command to run
    wrapper: str            # "mcpServers" or "servers"
    entry: dict[str, object]
    command_line: str | None
    after: str              # what the person does next


def kept_executable() -> str:
    """The absolute path of the installed ``kept``: the frozen binary, the console script next
    to this interpreter, or the one on PATH."""
    if getattr(sys, "frozen", False):
        return str(Path(sys.executable).resolve())
    here = Path(sys.executable).parent / "kept"
    if here.exists():
        return str(here.absolute())
    found = shutil.which("kept")
    if found:
        return str(Path(found).absolute())
    raise ValidationError("Cannot find the installed `kept` command.",
                          hint="Install Kept (pip install .) so a `kept` executable exists.")


def config_path(client: str, home: Path | None = None) -> Path | None:
    home = home or Path.home()
    if client == "claude-desktop":
        if sys.platform == "darwin":
            return home / "Library/Application Support/Claude/claude_desktop_config.json"
        if sys.platform == "win32":
            return Path(os.environ.get("APPDATA", home)) / "Claude/claude_desktop_config.json"
        return home / ".config/Claude/claude_desktop_config.json"
    if client == "cursor":
        return home / ".cursor/mcp.json"
    if client == "vscode":
        if sys.platform == "darwin":
            return home / "Library/Application Support/Code/User/mcp.json"
        if sys.platform == "win32":
            return Path(os.environ.get("APPDATA", home)) / "Code/User/mcp.json"
        return home / ".config/Code/User/mcp.json"
    if client == "lm-studio":
        return home / ".lmstudio/mcp.json"  # opened in-app: Program > Install > Edit mcp.json
    return None  # claude-code: a command


def install(client: str, agent: str, key: str | None, *, kept: str | None = None,
            vault: Path | None = None, home: Path | None = None) -> Install:
    if client not in CLIENTS:
        raise ValidationError(f"Unknown client {client!r}; one of {', '.join(CLIENTS)}.")
    kept = kept or kept_executable()
    args = ["mcp", "--agent", agent]
    if vault is not None:
        args = ["--vault", str(vault.absolute()), *args]
    env = {"KEPT_AGENT_KEY": key or KEY_PLACEHOLDER.format(agent=agent)}
    entry: dict[str, object] = {"command": kept, "args": args, "env": env}
    restart = "Quit {} completely and reopen it."
    if client == "claude-code":
        line = " ".join(["claude", "mcp", "add", "--scope", "user", "-e",
                         f"KEPT_AGENT_KEY={env['KEPT_AGENT_KEY']}", "kept", "--",
                         _quote(kept), *(_quote(a) for a in args)])
        return Install(client, None, "", entry, line, "Run this line, then /mcp in a session.")
    if client == "vscode":
        return Install(client, config_path(client, home), "servers",
                       {"type": "stdio", **entry}, None,
                       "Reload VS Code; Kept's tools appear in Copilot's agent mode.")
    name = {"claude-desktop": "Claude Desktop", "cursor": "Cursor", "lm-studio": "LM Studio"}
    return Install(client, config_path(client, home), "mcpServers", entry, None,
                   restart.format(name[client]))


def _quote(s: str) -> str:
    import shlex
    return shlex.quote(s)


def snippet(inst: Install) -> str:
    if inst.command_line:
        return inst.command_line
    return json.dumps({inst.wrapper: {"kept": inst.entry}}, indent=2)


def write(inst: Install) -> Path:
    """Merge the entry into the client's config (other servers and keys untouched); the old
    file is kept as ``.bak``. The file is written 0600: it holds the agent key."""
    if inst.path is None:
        raise ValidationError(f"{inst.client} is configured with a command; run it instead.")
    path = inst.path
    data: dict[str, object] = {}
    if path.exists():
        try:
            loaded = json.loads(path.read_text("utf-8") or "{}")
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValidationError(f"{path} is not valid JSON; fix or move it first.") from exc
        if not isinstance(loaded, dict):
            raise ValidationError(f"{path} does not hold a JSON object; fix or move it first.")
        data = loaded
        shutil.copy2(path, path.with_suffix(path.suffix + ".bak"))
    servers = data.get(inst.wrapper)
    if not isinstance(servers, dict):
        servers = {}
    servers["kept"] = inst.entry
    data[inst.wrapper] = servers
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
    return path
