"""Writers at once through one owner (issue 14, tests 3): a headless ``kept serve``, two
assistants' ``kept mcp`` sessions and ``kept remember`` processes (the CLI through the
owner, no password) all writing together. Every acknowledged id is in the vault afterwards,
with its text and scope, and nobody saw an error. (The window as the owner is
tests/ui/test_assistants_window.py.)"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio

from app.facade import Vault
from tests.app.mcp.conftest import (
    PW,
    ROOT,
    child_env,
    kept_argv,
    mcp_params,
    mcp_session,
    seed_vault,
    serving,
    structured,
)

PER_ASSISTANT = 8   # at least; each assistant goes on writing until the CLI runs are done
CLI_RUNS = 2


def test_two_assistants_and_the_cli_write_at_once(tmp_path: Path) -> None:
    seeded = seed_vault(tmp_path / "v", ("a", "b"), {"global": ("Ana moved to Lisbon",)})
    acked: dict[int, tuple[str, str]] = {}  # id -> (scope, text), once acknowledged
    failures: list[str] = []
    cli_done: list[int] = []
    written = {"a": 0, "b": 0}

    async def assistant(name: str) -> None:
        async with mcp_session(mcp_params(seeded.folder, name, seeded.keys[name])) as (s, tools):
            i = 0
            while (i < PER_ASSISTANT or len(cli_done) < CLI_RUNS) and i < 500:
                text = f"{name} wrote note {i} about the move"
                res = await s.call_tool("remember", {"text": text, "session": f"{name}-s"})
                if res.is_error:
                    failures.append(f"{name}: {res.content}")
                    break
                acked[structured(tools, "remember", res)["id"]] = (name, text)
                written[name] = i + 1
                if i % 4 == 0:  # reads interleaved with the writes
                    structured(tools, "recall", await s.call_tool("recall",
                                                                  {"query": "the move"}))
                i += 1

    def cli(i: int) -> None:
        text = f"the person noted {i} from the terminal"
        r = subprocess.run([*kept_argv(), "--vault", str(seeded.folder), "remember", text],
                           cwd=ROOT, env=child_env(), text=True, capture_output=True,
                           timeout=120)
        if r.returncode != 0:
            failures.append(f"cli {i}: {r.returncode} {r.stderr}")
        else:
            acked[int(r.stdout.strip())] = ("global", text)
        cli_done.append(i)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(assistant, "a")
            tg.start_soon(assistant, "b")
            with anyio.fail_after(60):  # the CLI starts once both assistants are writing
                while min(written.values()) < 1 and not failures:
                    await anyio.sleep(0.02)
            for i in range(CLI_RUNS):
                tg.start_soon(anyio.to_thread.run_sync, cli, i)

    with serving(seeded.folder):
        anyio.run(main)

    assert failures == []
    assert min(written.values()) >= PER_ASSISTANT
    assert len(acked) == sum(written.values()) + CLI_RUNS  # no id given twice
    from app.api import MemoryQuery
    vault: Any = Vault.open(seeded.folder, PW, load_model=False, use_chroma=False)
    try:
        for mid, (scope, text) in acked.items():
            m = vault.get(mid)
            assert (m.agent, m.text) == (scope, text)
        assert vault.count_memories(MemoryQuery()) == len(acked) + 1
    finally:
        vault.lock()
