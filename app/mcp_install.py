"""``kept mcp install`` and ``kept mcp doctor``: the exact entry each MCP client needs, and whether
an assistant can reach Kept. Layer: app (front end). Runs on: the main thread. Imports no
storage: it is text, JSON files and a socket check; the SDK only in ``launch`` (doctor starts
the entry as its client would).

Client shapes are those of docs/architecture.md#connecting-a-client: ``mcpServers`` for Claude
Desktop, Cursor and LM Studio; ``servers`` with ``"type": "stdio"`` for VS Code; for Claude Code a
``claude mcp add-json --scope user kept '<entry>'`` line (not ``claude mcp add -e KEY=V NAME``:
Claude Code 2.1's variadic ``-e`` swallows the server name, anthropics/claude-code #62332). The
command is always the absolute path of the installed ``kept`` (hosts start servers with a short
PATH), and the key goes in ``env``, never in ``args`` of ``kept mcp``.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from app.errors import ValidationError

log = logging.getLogger(__name__)

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
    """What ``write`` would refuse, said before anything happens (before pairing, which
    issues a new key and so ends the old one): a config that is not JSON, a file or folder
    this user cannot write, no runnable ``claude``."""
    if inst.path is not None:
        read_config(inst.path, inst.wrapper)
        path = inst.path.resolve() if inst.path.is_symlink() else inst.path
        folder = path.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if not os.access(folder, os.W_OK | os.X_OK) or (
                path.exists() and not os.access(path, os.W_OK)):
            raise ValidationError(f"Cannot write {path} (no permission); nothing was "
                                  "changed. Fix its permissions first.")
        return
    claude = shutil.which("claude")
    if claude is None:
        raise ValidationError("`claude` (Claude Code) is not on PATH; nothing was changed. "
                              "Run without --write and paste the line where `claude` runs.")
    try:
        done = subprocess.run([claude, "mcp", "--help"], capture_output=True, text=True,
                              timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ValidationError(f"`claude` cannot run here ({type(exc).__name__}); nothing was "
                              "changed.") from exc
    if done.returncode != 0:
        raise ValidationError("`claude mcp` does not run here; nothing was changed. Run "
                              "without --write and paste the line where `claude` runs.")


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
    servers[_name_in(servers, inst.entry)] = inst.entry  # in place: the order stays
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


def _name_in(servers: dict[str, object], entry: dict[str, object]) -> str:
    """The name to write under: the one already running ``kept mcp --agent`` this agent
    (replaced in place, whatever it was called), else ``kept``."""
    args = entry.get("args")
    agent = _agent_of(args) if isinstance(args, list) else None
    for name, old in servers.items():
        old_args = old.get("args") if isinstance(old, dict) else None
        if agent is not None and isinstance(old_args, list) and _agent_of(old_args) == agent:
            return name
    return SERVER_NAME


def _run_claude(inst: Install) -> Path:
    """``claude mcp remove --scope user kept`` (an old entry: ``add-json`` refuses to
    overwrite, "already exists"), then ``claude mcp add-json --scope user kept JSON``. A
    failing remove is "nothing to remove"; a failing add says Claude Code's own words (never
    the key)."""
    claude = shutil.which("claude")
    if claude is None:
        raise ValidationError("`claude` (Claude Code) is not on PATH; run the line above in "
                              "the terminal where it is.")
    subprocess.run([claude, "mcp", "remove", "--scope", "user", SERVER_NAME],
                   capture_output=True, text=True, timeout=60, check=False)
    argv = [claude, *claude_code_argv(inst.entry)[1:]]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        last = said[-1] if said else f"exit status {done.returncode}"
        key = inst.entry.get("env", {})
        secret = key.get("KEPT_AGENT_KEY") if isinstance(key, dict) else None
        if isinstance(secret, str) and secret:
            last = last.replace(secret, "<key>")
        raise ValidationError(f"claude mcp add-json failed: {last}")
    return Path.home() / ".claude.json"


def written(inst: Install, path: Path, had_file: bool) -> str:
    """What ``--write`` says once it wrote (the key is not shown: it is in the config)."""
    if inst.path is None:
        return ("Added Kept to Claude Code (user scope, ~/.claude.json); the key is in the "
                "entry. Check /mcp in a new Claude Code session.")
    bak = " (the old file is kept as .bak)" if had_file else ""
    return f"Written to {path}{bak}; the key is in the entry. {inst.after}"


def masked(inst: Install) -> str:
    """The snippet with the key hidden: what ``--write`` shows of what it wrote."""
    env = inst.entry.get("env")
    if not isinstance(env, dict) or "KEPT_AGENT_KEY" not in env:
        return snippet(inst)
    hidden = {**inst.entry, "env": {**env, "KEPT_AGENT_KEY": "<written, not shown>"}}
    return snippet(Install(inst.client, inst.path, inst.wrapper, hidden,
                           shlex.join(claude_code_argv(hidden)) if inst.command_line else None,
                           inst.after))


def find_entry(agent: str, home: Path | None = None, client: str | None = None
               ) -> tuple[str, Path, dict[str, object]] | None:
    """The first client config (``kept mcp install``'s files, and Claude Code's user file)
    whose servers run ``kept mcp --agent AGENT``: (client, file, entry); only ``client``'s
    when given. Read only."""
    home = home or Path.home()
    places = [(c, config_path(c, home)) for c in CLIENTS]
    places[CLIENTS.index("claude-code")] = ("claude-code", home / ".claude.json")
    for name, path in places:
        if client is not None and name != client:
            continue
        if path is None or not path.is_file():
            continue
        wrapper = "servers" if name == "vscode" else "mcpServers"
        try:
            servers = read_config(path, wrapper).get(wrapper, {})
        except ValidationError:
            continue
        for entry in servers.values() if isinstance(servers, dict) else ():
            args = entry.get("args") if isinstance(entry, dict) else None
            if isinstance(args, list) and _agent_of(args) == agent:
                return name, path, entry
    return None


def entry_vault(entry: dict[str, object]) -> Path | None:
    """The ``--vault`` an entry names (None: the default vault)."""
    args = entry.get("args")
    if isinstance(args, list) and "--vault" in args[:-1]:
        return Path(str(args[args.index("--vault") + 1]))
    return None


@dataclass(frozen=True, slots=True)
class Launch:
    """What starting an entry the way its client does gave."""
    tools: tuple[str, ...]    # tools/list's names (empty: it did not get that far)
    error: str | None         # why it did not start or answer; None: it did
    status: str | None        # the ``status`` tool's answer: None when it answered, else its
                              # error text (Kept closed, locked, key refused...)


def launch(entry: dict[str, object], timeout: float = 60.0) -> Launch:
    """Start ``entry`` as an MCP client does (its command, args and env over the SDK's
    default environment, stdio), handshake, ``tools/list``, call ``status``. Imports the SDK
    (``kept mcp doctor`` only)."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    command, args, env = entry.get("command"), entry.get("args"), entry.get("env")
    if not isinstance(command, str) or not isinstance(args, list):
        return Launch((), "the entry has no command or args", None)
    params = StdioServerParameters(
        command=command, args=[str(a) for a in args],
        env={str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else None)

    async def run() -> Launch:
        with anyio.fail_after(timeout):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
                await session.initialize()
                names = tuple(t.name for t in (await session.list_tools()).tools)
                answer = await session.call_tool("status", {})
                said = " ".join(getattr(c, "text", "") for c in answer.content).strip()
                return Launch(names, None, (said or "failed") if answer.is_error else None)
    try:
        return anyio.run(run)
    except TimeoutError:
        return Launch((), f"no answer within {timeout:.0f} s", None)
    except Exception as exc:  # the boundary: whatever stops the entry is the finding
        log.info("entry launch failed: %s", type(exc).__name__)
        return Launch((), _launch_error(exc), None)


def _launch_error(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError | PermissionError):
        return f"cannot start it ({type(exc).__name__})"
    return f"it did not answer as an MCP server ({type(exc).__name__})"


def _agent_of(args: list[object]) -> str | None:
    for i, a in enumerate(args[:-1]):
        if a == "--agent" and "mcp" in args[:i]:
            return str(args[i + 1])
    return None
