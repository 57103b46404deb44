"""Batches of bound parameters: the one place that knows SQLite's variable limit.
Layer: storage. Runs on: any thread (pure helpers).

SQLite refuses a statement with more host parameters than SQLITE_MAX_VARIABLE_NUMBER (999
before SQLite 3.32, 32,766 since; a build may lower it). Every ``IN (?, ?, ...)`` over a list
of ids is therefore issued in chunks of :data:`SQL_VARIABLES`, which stays under the oldest
limit with room for the few other parameters a statement binds beside the list.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

SQL_VARIABLES = 500  # ids bound in one statement; under SQLite's historical limit of 999


def chunks(items: Sequence[T], n: int = SQL_VARIABLES) -> Iterator[list[T]]:
    """``items`` in consecutive lists of at most ``n`` (none for an empty sequence)."""
    for i in range(0, len(items), n):
        yield list(items[i:i + n])


def marks(n: int) -> str:
    """``?,?,...`` with ``n`` placeholders, for ``IN (...)``."""
    return ",".join("?" * n)
