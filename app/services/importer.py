"""Parse ``kept import`` files: conversation turns, one JSON object a line. Layer: app. Pure.

Every line is validated before anything is written; any malformed line means nothing is
imported, and every problem is reported with its line number.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from app.clock import parse_iso
from app.domain.memory import Store
from app.errors import ValidationError
from app.facade import Turn

MAX_LINE = 1_000_000


@dataclass(frozen=True, slots=True)
class LineError:
    line: int
    message: str


class ImportInvalid(ValidationError):
    exit_code = 2

    def __init__(self, errors: list[LineError]) -> None:
        self.errors = errors
        shown = "; ".join(f"line {e.line}: {e.message}" for e in errors[:10])
        more = f" (and {len(errors) - 10} more)" if len(errors) > 10 else ""
        super().__init__(f"Nothing was imported: {len(errors)} malformed line(s): {shown}{more}")


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not allowed")


def parse_line(raw: str, number: int) -> Turn:
    if len(raw) > MAX_LINE:
        raise ValueError("line is longer than 1,000,000 characters")
    try:
        obj = json.loads(raw, parse_constant=_reject_constant)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    speaker = obj.get("speaker", obj.get("role"))
    fields = {"session": obj.get("session"), "speaker/role": speaker, "text": obj.get("text"),
              "at": obj.get("at"), "ref": obj.get("ref")}
    missing = [k for k, v in fields.items() if v is None or v == ""]
    if missing:
        raise ValueError("missing " + ", ".join(missing))
    for k in ("session", "text", "at", "ref"):
        if not isinstance(obj[k], (str, int)) or isinstance(obj[k], bool):
            raise ValueError(f"'{k}' must be a string")
    if not isinstance(speaker, str):
        raise ValueError("'speaker' must be a string")
    if not str(obj["text"]).strip():
        raise ValueError("'text' is empty")
    try:
        at = parse_iso(str(obj["at"]))
    except ValueError as exc:
        raise ValueError("'at' is not an ISO 8601 time") from exc
    store = Store.EPISODIC
    if obj.get("store") is not None:
        try:
            store = Store.parse(str(obj["store"]))
            if store is Store.WORKING:
                raise ValueError
        except ValueError as exc:
            raise ValueError(f"unknown store {obj['store']!r}") from exc
    return Turn(session=str(obj["session"]), speaker=speaker.strip(), text=str(obj["text"]).strip(),
                at=at, ref=str(obj["ref"]), store=store, line=number)


def parse_import(lines: Iterable[str]) -> list[Turn]:
    turns: list[Turn] = []
    errors: list[LineError] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            turns.append(parse_line(raw, number))
        except ValueError as exc:
            errors.append(LineError(number, str(exc)))
    if errors:
        raise ImportInvalid(errors)
    return turns
