"""Every count a consolidation run's report can hold, and every change kind its undo counts, has
words a person reads (issue 25): the window's run list, its Undo question and `kept consolidate` /
`kept undo` all say them from the one table in app/words.py. The keys are read from the source
(``rl.counts["key"]``, the merge step's counters, ``rl.change(conn, "kind", ...)``), so a step
that starts counting something new fails here until it has words."""

from __future__ import annotations

import re
from pathlib import Path

from app import words

ROOT = Path(__file__).resolve().parents[2]
COUNT = re.compile(r"""\brl\.counts\[([^\]]+)\]""")  # a key, or "a" if ... else "b"
LITERAL = re.compile(r"""["']([a-z_]+)["']""")
# The merge step counts through a variable: its tuples name the keys ("facts_merged", ...).
MERGE_COUNTER = re.compile(r"""\(\s*\w+\s*,\s*\w+\s*,\s*["']([a-z_]+_merged)["']\s*\)""")
CHANGE = re.compile(r"""\brl\.change\(\s*conn\s*,\s*["']([a-z_]+)["']""")


def _source() -> str:
    return "\n".join(p.read_text(encoding="utf-8")
                     for d in ("app", "storage") for p in sorted((ROOT / d).rglob("*.py")))


def test_every_run_count_key_has_words() -> None:
    src = _source()
    keys = ({k for inside in COUNT.findall(src) for k in LITERAL.findall(inside)}
            | set(MERGE_COUNTER.findall(src)))
    assert {"facts_created", "sequence_links", "facts_merged"} <= keys  # the scan finds them
    assert not keys - set(words.RUN_COUNT_WORDS), "run counts without words"
    text = words.run_counts(dict.fromkeys(keys, 3))
    assert "_" not in text and "3 facts learned" in text


def test_every_undo_change_kind_has_words() -> None:
    kinds = set(CHANGE.findall(_source())) | {"created", "watermark"}
    assert {"link", "status", "contradiction"} <= kinds
    assert not kinds - set(words.UNDO_CHANGE_WORDS), "undo change kinds without words"
    text = words.undo_text(4, dict.fromkeys(kinds, 2), done=True)
    assert text.startswith("Run 4 undone: removed ") and "_" not in text
    assert "2 memories it made" in text
    assert "put back" in text


def test_cli_and_window_say_a_run_the_same_way() -> None:
    from app.cli import consolidation as cli
    src = Path(cli.__file__).read_text(encoding="utf-8")
    assert "words.run_counts(" in src and "words.undo_text(" in src
    assert "replace('_', ' ')" not in src
