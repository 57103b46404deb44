"""Kept's test suite. Test folders mirror the source tree (tests/app/cli tests app/cli/, ...);
guard tests, which check the whole project, are in tests/guards/."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the project folder (holds pyproject.toml)
