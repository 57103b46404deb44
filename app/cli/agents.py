"""The assistant commands of ``kept`` (issue 14): ``kept mcp`` (the stdio MCP server),
``kept mcp install``, ``kept mcp doctor`` and ``kept agents pair|list|revoke``. Layer: app
(headless front end). Runs on: the main thread. ``kept mcp`` stays a thin process: nothing
here imports the model, SQLCipher or the facade when it starts.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from app.cli.common import (
    Subcommands,
    int_in,
    open_vault,
    print_json,
    printable,
    vault_dir,
    when,
)
from app.errors import AppError, ValidationError


def add_parsers(sub: Subcommands) -> None:
    from app.mcp_install import CLIENTS
    s = sub.add_parser("mcp", help="MCP server for an assistant (stdio); install, doctor")
    s.add_argument("--agent", help="the assistant's name, as paired (kept agents pair NAME)")
    s.add_argument("--http", metavar="PORT", type=lambda t: int_in(t, 0, 65535, "--http"),
                   help="serve Streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio "
                        "(clients send the key from KEPT_AGENT_KEY as a bearer token; 0: any "
                        "free port)")
    s.set_defaults(fn=cmd_mcp)
    mcp = s.add_subparsers(dest="mcp_command")
    i = mcp.add_parser("install", help="show (or --write) the config entry for a client")
    i.add_argument("--client", required=True, choices=CLIENTS)
    i.add_argument("--agent", dest="install_agent",
                   help="the assistant's name (default: the client's name)")
    i.add_argument("--pair", action="store_true",
                   help="pair the assistant now (opens the vault) and put its key in the entry")
    i.add_argument("--write", action="store_true",
                   help="merge the entry into the client's config file (a .bak is kept)")
    i.set_defaults(fn=cmd_mcp_install)
    d = mcp.add_parser("doctor", help="is Kept reachable, unlocked, the assistant paired?")
    d.add_argument("--agent", dest="doctor_agent", required=True)
    d.add_argument("--client", dest="doctor_client", choices=CLIENTS,
                   help="check this client's entry (default: the first that runs the agent)")
    d.set_defaults(fn=cmd_mcp_doctor)

    s = sub.add_parser("agents", help="assistants paired with Kept")
    a = s.add_subparsers(dest="agents_command", required=True)
    p = a.add_parser("pair", help="pair an assistant; prints its key once")
    p.add_argument("name")
    p.set_defaults(fn=cmd_agents_pair)
    p = a.add_parser("list", help="paired assistants")
    p.set_defaults(fn=cmd_agents_list)
    p = a.add_parser("revoke", help="revoke an assistant's key")
    p.add_argument("name")
    p.set_defaults(fn=cmd_agents_revoke)
    p = a.add_parser("reads", help="what an assistant read (recall, context, explain), newest "
                     "first")
    p.add_argument("name")
    p.add_argument("--limit", type=lambda t: int_in(t, 1, 1000, "--limit"), default=50)
    p.add_argument("--json", action="store_true", help="one JSON object a line")
    p.set_defaults(fn=cmd_agents_reads)


def _folder(args: argparse.Namespace) -> Path | None:
    return vault_dir(args) if args.vault else None


def cmd_mcp(args: argparse.Namespace) -> int:
    if not args.agent:
        raise ValidationError("Say which assistant this is: kept mcp --agent NAME.")
    if args.http is not None:
        from app.agent_scope import check_agent_name
        check_agent_name(args.agent)
        from app.mcp_http import serve_http
        return serve_http(args.agent, _folder(args), os.environ.get("KEPT_AGENT_KEY"),
                          args.http)
    from app.mcp_launch import run
    return run(args.agent, _folder(args))


def cmd_mcp_install(args: argparse.Namespace) -> int:
    from app import mcp_install
    from app.agent_scope import check_agent_name
    agent = args.install_agent or args.client
    check_agent_name(agent)
    key = os.environ.get("KEPT_AGENT_KEY") or None
    if args.write and not (key or args.pair):
        raise ValidationError("--write needs the assistant's key: add --pair (or set "
                              "KEPT_AGENT_KEY); nothing was written.")
    inst = mcp_install.install(args.client, agent, key, vault=_folder(args))
    if args.write:
        mcp_install.check_writable(inst)  # a broken file or no `claude`: before pairing
    if args.pair:
        vault = open_vault(args, load_model=False)
        try:
            key = vault.pair_agent(agent).value
        finally:
            vault.lock()
        inst = mcp_install.install(args.client, agent, key, vault=_folder(args))
    if args.write:  # the key goes into the config, not onto the terminal (issue 26)
        had = inst.path is not None and inst.path.exists()
        path = mcp_install.write(inst)
        print(mcp_install.masked(inst))
        print(mcp_install.written(inst, path, had), file=sys.stderr)
    else:
        print(mcp_install.snippet(inst))
        where = f" into {inst.path}, under \"{inst.wrapper}\"" if inst.path else ""
        print(f"Add this{where}. {inst.after}", file=sys.stderr)
    if not key:
        print(f"Then replace the key placeholder: {_kept(args)} agents pair {agent}",
              file=sys.stderr)
    print(f"Check it with: {_kept(args)} mcp doctor --agent {agent} --client {args.client}",
          file=sys.stderr)
    return 0


def _kept(args: argparse.Namespace, folder: Path | None = None) -> str:
    """``kept``, with ``--vault F`` when the vault is not the default one: the start of a
    line that works as printed."""
    import shlex

    from app import bootstrap
    folder = folder or _folder(args)
    if folder is None or folder.expanduser().absolute() == \
            bootstrap.default_vault_dir().expanduser().absolute():
        return "kept"
    return f"kept --vault {shlex.quote(str(folder.expanduser().absolute()))}"


def cmd_mcp_doctor(args: argparse.Namespace) -> int:
    """Entry, vault, launch, reachable, unlocked, paired, one line each, and a fix line that
    works as printed. The entry is the client config that runs ``kept mcp --agent NAME``
    (``--client``'s only, when given); it is started as its client starts it (command, args,
    env) and answers ``tools/list`` and ``status``. The key: KEPT_AGENT_KEY, else the entry's.
    Exit 0 only when an assistant would work."""
    from app import bootstrap, mcp_install
    from app.agent_scope import check_agent_name
    from app.errors import AgentNotPaired, OwnerNotRunning, VaultLocked
    from app.ipc.client import RemoteVault, owner_running
    agent = args.doctor_agent
    check_agent_name(agent)
    key, folder, ok = os.environ.get("KEPT_AGENT_KEY"), _folder(args), True
    found = mcp_install.find_entry(agent, client=args.doctor_client)
    client = args.doctor_client or (found[0] if found else None)
    default = bootstrap.default_vault_dir()
    launched: mcp_install.Launch | None = None
    if found is None:
        where = f"{client}'s config" if client else "no client config"
        print(f"entry: none: {where} runs `kept mcp --agent {agent}`.")
        ok = False
    else:
        client, path, entry = found
        env = entry.get("env")
        key = key or (env.get("KEPT_AGENT_KEY") if isinstance(env, dict) else None)
        named = mcp_install.entry_vault(entry) or default
        if folder is not None and named.expanduser().absolute() != \
                folder.expanduser().absolute():
            print(f"entry: {path} ({client}) uses the vault {named}, not {folder}.")
            ok = False
        folder = folder or named
        command = str(entry.get("command"))
        usable = os.path.isfile(command) and os.access(command, os.X_OK)
        print(f"entry: {path} ({client}) runs {command}"
              + ("" if usable else ": not found."))
        ok = ok and usable
        if usable:
            launched = mcp_install.launch(entry)
            if launched.error is not None:
                print(f"launch: no: {launched.error}.")
                ok = False
            else:
                print(f"launch: yes, as {client} starts it; tools/list: "
                      f"{len(launched.tools)} tools")
    folder = folder or default
    fix = (f"Fix: {_kept(args, folder)} mcp install --client {client or 'claude-desktop'} "
           f"--agent {agent} --pair --write"
           + ("" if client else "   (or --client " + ", ".join(
               c for c in mcp_install.CLIENTS if c != "claude-desktop") + ")"))
    print(f"vault: {folder}" + (" (the default)" if folder == default else ""))
    if not owner_running(folder):
        print("reachable: no. Kept is not running for this vault, or it is locked: open and "
              f"unlock Kept, or run: {_kept(args, folder)} serve")
        if not ok:
            print(fix)
        return 2
    print("reachable: yes")
    try:
        with RemoteVault.at(folder, timeout=10) as remote:
            locked = remote.session().locked
    except (VaultLocked, OwnerNotRunning):
        locked = True
    print("unlocked: " + ("no. Unlock Kept." if locked else "yes"))
    if locked:
        return 2
    if not key or key.startswith("<"):
        print("paired: unknown: no key found (or set KEPT_AGENT_KEY).")
        print(fix)
        return 2
    try:
        with RemoteVault.at(folder, agent=agent, key=key, timeout=10) as remote:
            remote.status()
    except AgentNotPaired:
        print(f"paired: no. The key is not {agent}'s current key, or {agent} was revoked.")
        print(fix)
        return 2
    except AppError as exc:
        print(f"paired: unknown: {exc.user_message}")
        return 2
    print(f"paired: yes, as {agent}")
    if launched is not None and launched.error is None:
        if launched.status is None:
            print("call: yes, the entry's status tool answered")
        else:
            print(f"call: no: {launched.status}")
            ok = False
    if not ok:
        print(fix)
    return 0 if ok else 2


def cmd_agents_pair(args: argparse.Namespace) -> int:
    from app.agent_scope import check_agent_name
    check_agent_name(args.name)
    vault = open_vault(args, load_model=False)
    try:
        key = vault.pair_agent(args.name).value
    finally:
        vault.lock()
    print(key)
    from app.mcp_install import CLIENTS
    print(f"Paired {args.name}. The key above is shown once: write the client's entry with "
          f"KEPT_AGENT_KEY=<key> {_kept(args)} mcp install --client {CLIENTS[0]} --agent "
          f"{args.name} --write (or --client {', '.join(CLIENTS[1:])}).", file=sys.stderr)
    return 0


def cmd_agents_list(args: argparse.Namespace) -> int:
    vault = open_vault(args, load_model=False)
    try:
        rows = vault.agents()
    finally:
        vault.lock()
    for a in rows:
        state = f"revoked {when(a.revoked_at)}" if a.revoked_at else "paired"
        print(f"{a.name}\t{state}\tsince {when(a.created_at)}\tlast seen {when(a.last_seen_at)}")
    return 0


def cmd_agents_revoke(args: argparse.Namespace) -> int:
    vault = open_vault(args, load_model=False)
    try:
        vault.revoke_agent(args.name)
    finally:
        vault.lock()
    print(f"Revoked {args.name}: its key opens nothing now.")
    return 0


def cmd_agents_reads(args: argparse.Namespace) -> int:
    """What assistant NAME was told: each memory it read, when and how, newest first."""
    from dataclasses import asdict

    from app.agent_scope import check_agent_name
    check_agent_name(args.name)
    vault = open_vault(args, load_model=False)
    try:
        reads = vault.agent_reads(args.name, args.limit)
    finally:
        vault.lock()
    for r in reads:
        if args.json:
            print_json(asdict(r))
        else:
            print(printable(f"{when(r.at)}\t{r.via}\t[{r.memory_id}] {r.store}: {r.text}"))
    if not reads and not args.json:
        print(f"{args.name} has read nothing that is still in Kept.", file=sys.stderr)
    return 0
