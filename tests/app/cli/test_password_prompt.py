"""A terminal asked for a password is told which one (issue 26): the vault's, by folder."""

from __future__ import annotations

import getpass
import io
from pathlib import Path

import pytest

from tests.app.cli.conftest import PW, make_vault, run_cli


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_prompt_names_the_vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = make_vault(tmp_path / "work vault")
    asked: list[str] = []

    def typed(prompt: str = "") -> str:  # the person at the terminal
        asked.append(prompt)
        return PW
    monkeypatch.delenv("KEPT_PASSWORD", raising=False)
    monkeypatch.setattr(getpass, "getpass", typed)
    monkeypatch.setattr("sys.stdin", Terminal())
    r = run_cli("--vault", str(folder), "agents", "list")
    assert r.code == 0, r.err
    assert asked == [f"Password for vault “{folder}”: "]
