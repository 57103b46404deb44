"""``kept mcp install`` and ``kept mcp doctor``: the exact entry each MCP client needs, and whether
an assistant can reach Kept. Layer: app (front end). Runs on: the main thread. Imports no SDK,
no storage: it is pure text, JSON files and a socket check.

Client shapes are those of docs/architecture.md#connecting-a-client: ``mcpServers`` for Claude
Desktop, Cursor and LM Studio; ``servers`` with ``"type": "stdio"`` for VS Code; for Claude Code a
``claude mcp add-json --scope user kept '<entry>'`` line (not ``claude mcp add -e KEY=V NAME``:
Claude Code 2.1's variadic ``-e`` swallows the server name, anthropics/claude-code #62332). The
command is always the absolute path of the installed ``kept`` (hosts start servers with a short
PATH), and the key goes in ``env``, never in ``args`` of ``kept mcp``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from app.errors import ValidationError

CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode", "lm-studio")
KEY_PLACEHOLDER = "<key from: kept agents pair {agent}>"
SERVER_NAME = "kept"
_NAMES = {"claude-desktop": "Claude Desktop", "cursor": "Cursor", "lm-studio": "LM Studio"}


@dataclass(frozen=True, slots=True)
class Install:
    client: str
    path: Path | None       # the config file to merge into; None: a command to run
    wrapper: str            # "mcpServers" or "servers"
    entry: dict[str, object]
    command_line: str | None
    after: str              # what the person does next


def kept_executable() -> str:
    """The absolute path of the installed ``kept``: the frozen binary, the ``kept`` script this
    process was started as, the console script next to this interpreter, or the one on PATH."""
    if getattr(sys, "frozen", False):
        return str(Path(sys.executable).resolve())
    names = ("kept", "kept.exe")
    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    candidates = [started] if started is not None and started.name in names else []
    bin_dir = Path(sys.executable).parent
    candidates += [bin_dir / n for n in names]
    for c in candidates:
        if c.is_file():
            return str(c.absolute())
    found = shutil.which("kept")
    if found:
        return str(Path(found).absolute())
    raise ValidationError("Cannot find the installed `kept` command.",
                          hint="Install Kept (pip install .) so a `kept` executable exists.")


def config_path(client: str, home: Path | None = None) -> Path | None:
    """Where ``client`` keeps its servers (user scope); None for Claude Code (a command)."""
    home = home or Path.home()
    appdata = Path(os.environ.get("APPDATA") or home / "AppData/Roaming")
    if client == "claude-desktop":
        if sys.platform == "darwin":
            return home / "Library/Application Support/Claude/claude_desktop_config.json"
        if sys.platform == "win32":
            return appdata / "Claude/claude_desktop_config.json"
        return home / ".config/Claude/claude_desktop_config.json"
    if client == "cursor":
        return home / ".cursor/mcp.json"
    if client == "vscode":
        if sys.platform == "darwin":
            return home / "Library/Application Support/Code/User/mcp.json"
        if sys.platform == "win32":
            return appdata / "Code/User/mcp.json"
        return home / ".config/Code/User/mcp.json"
    if client == "lm-studio":
        return home / ".lmstudio/mcp.json"  # opened in-app: Program > Install > Edit mcp.json
    return None


def install(client: str, agent: str, key: str | None, *, kept: str | None = None,
            vault: Path | None = None, home: Path | None = None) -> Install:
    """The entry for ``client``; ``--vault`` only when ``vault`` is not the default folder."""
    if client not in CLIENTS:
        raise ValidationError(f"Unknown client {client!r}; one of {', '.join(CLIENTS)}.")
    kept = kept or kept_executable()
    args = ["mcp", "--agent", agent]
    if vault is not None and not _is_default_vault(vault):
        args = ["--vault", str(Path(vault).expanduser().absolute()), *args]
    env = {"KEPT_AGENT_KEY": key or KEY_PLACEHOLDER.format(agent=agent)}
    entry: dict[str, object] = {"command": kept, "args": args, "env": env}
    if client == "claude-code":
        entry = {"type": "stdio", **entry}
        line = shlex.join(claude_code_argv(entry))
        return Install(client, None, "", entry, line,
                       "Run this line in a terminal, then check /mcp in a new Claude Code "
                       "session.")
    if client == "vscode":
        return Install(client, config_path(client, home), "servers",
                       {"type": "stdio", **entry}, None,
                       "Reload VS Code; Kept's tools appear in Copilot's agent mode.")
    return Install(client, config_path(client, home), "mcpServers", entry, None,
                   f"Quit {_NAMES[client]} completely and reopen it.")


def _is_default_vault(vault: Path) -> bool:
    from app import bootstrap
    default = bootstrap.default_vault_dir()
    return Path(vault).expanduser().absolute() == default.expanduser().absolute()


def claude_code_argv(entry: dict[str, object]) -> list[str]:
    return ["claude", "mcp", "add-json", "--scope", "user", SERVER_NAME,
            json.dumps(entry, separators=(",", ":"))]


def snippet(inst: Install) -> str:
    if inst.command_line:
        return inst.command_line
    return json.dumps({inst.wrapper: {SERVER_NAME: inst.entry}}, indent=2)


def read_config(path: Path, wrapper: str) -> dict[str, object]:
    """The client's config as a dict ({} when there is none yet); ``ValidationError`` when it
    is not a JSON object or its ``wrapper`` is not one (nothing is written then)."""
    if not path.exists():
        return {}
    try:
        text = path.read_text("utf-8")
        loaded = json.loads(text) if text.strip() else {}
    except (ValueError, UnicodeDecodeError, OSError) as exc:
        raise ValidationError(f"{path} is not valid JSON (comments are not supported); "
                              "nothing was changed. Fix or move it first.") from exc
    if not isinstance(loaded, dict):
        raise ValidationError(f"{path} does not hold a JSON object; nothing was changed. "
                              "Fix or move it first.")
    if not isinstance(loaded.get(wrapper, {}), dict):
        raise ValidationError(f"\"{wrapper}\" in {path} is not a JSON object; nothing was "
                              "changed. Fix or move it first.")
    return loaded


def check_writable(inst: Install) -> None:
    """What ``write`` would refuse, said before anything happens (before pairing)."""
    if inst.path is not None:
        read_config(inst.path, inst.wrapper)
    elif shutil.which("claude") is None:
        raise ValidationError("`claude` (Claude Code) is not on PATH; nothing was changed. "
                              "Run without --write and paste the line where `claude` runs.")


def write(inst: Install) -> Path:
    """Merge the entry into the client's config under ``kept`` (other servers and keys
    untouched); the old file is kept as ``<name>.bak``. Written 0600 (it holds the agent key),
    atomically, into a symlink's target. Claude Code: runs its ``claude mcp add-json`` line."""
    if inst.path is None:
        return _run_claude(inst)
    path = inst.path.resolve() if inst.path.is_symlink() else inst.path
    data = read_config(path, inst.wrapper)
    servers = data.get(inst.wrapper)
    servers = dict(servers) if isinstance(servers, dict) else {}
    servers[SERVER_NAME] = inst.entry
    data[inst.wrapper] = servers
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        shutil.copy2(path, path.with_name(path.name + ".bak"))
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
    return path


def _run_claude(inst: Install) -> Path:
    claude = shutil.which("claude")
    if claude is None:
        raise ValidationError("`claude` (Claude Code) is not on PATH; run the line above in "
                              "the terminal where it is.")
    argv = [claude, *claude_code_argv(inst.entry)[1:]]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise ValidationError(f"claude mcp add-json failed: {said[-1] if said else done.returncode}",
                              hint=f"If Kept is already there: claude mcp remove --scope user "
                                   f"{SERVER_NAME}, then run this again.")
    return Path.home() / ".claude.json"


def find_entry(agent: str, home: Path | None = None
               ) -> tuple[str, Path, dict[str, object]] | None:
    """The first client config (``kept mcp install``'s files, and Claude Code's user file)
    whose servers run ``kept mcp --agent AGENT``: (client, file, entry). Read only."""
    home = home or Path.home()
    places = [(c, config_path(c, home)) for c in CLIENTS]
    places[CLIENTS.index("claude-code")] = ("claude-code", home / ".claude.json")
    for client, path in places:
        if path is None or not path.is_file():
            continue
        wrapper = "servers" if client == "vscode" else "mcpServers"
        try:
            servers = read_config(path, wrapper).get(wrapper, {})
        except ValidationError:
            continue
        for entry in servers.values() if isinstance(servers, dict) else ():
            args = entry.get("args") if isinstance(entry, dict) else None
            if isinstance(args, list) and _agent_of(args) == agent:
                return client, path, entry
    return None


def _agent_of(args: list[object]) -> str | None:
    for i, a in enumerate(args[:-1]):
        if a == "--agent" and "mcp" in args[:i]:
            return str(args[i + 1])
    return None
