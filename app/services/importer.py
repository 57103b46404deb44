"""Parse ``kept import`` files: conversation turns, one JSON object a line. Layer: app. Pure.
(The other formats, ChatGPT and Claude exports and notes: ``app/services/import_formats.py``.)

Every line is validated completely before anything is written (every field, by the same
``check_*`` rules as ``Vault.validate_draft``): any malformed line means nothing is imported,
and every problem is reported with its line number. What the checks stop (issue 11, item 4):
lone surrogates (``"\\ud800"`` in JSON, or bytes that are not UTF-8) that crashed the tokenizer
or SQLite, and times whose UTC date is outside the years 1 to 9999 that crashed date handling,
both after the first batches had been committed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from app.api import Turn
from app.domain.memory import Store
from app.errors import ValidationError
from app.validation import check_string, check_text, parse_time, validate_turn

MAX_LINE = 1_000_000  # characters; a text of MAX_TEXT characters fits even \u-escaped


@dataclass(frozen=True, slots=True)
class LineError:
    line: int
    message: str
    where: str = ""  # other formats (``import_formats``): "conversation 3 (byte 1,204), ..."

    @property
    def place(self) -> str:
        return self.where or f"line {self.line}"


class ImportInvalid(ValidationError):
    exit_code = 2

    def __init__(self, errors: list[LineError]) -> None:
        self.errors = errors
        shown = "; ".join(f"{e.place}: {e.message}" for e in errors[:10])
        more = f" (and {len(errors) - 10} more)" if len(errors) > 10 else ""
        what = "problem(s)" if any(e.where for e in errors) else "malformed line(s)"
        super().__init__(f"Nothing was imported: {len(errors)} {what}: {shown}{more}")


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not allowed")


def _utf8(raw: str) -> None:
    """A line read with ``errors="surrogateescape"`` holds a lone surrogate where the file
    had a byte that is not UTF-8."""
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"not valid UTF-8 text (character {exc.start + 1:,})") from exc


def parse_line(raw: str, number: int) -> Turn:
    if len(raw) > MAX_LINE:
        raise ValueError("line is longer than 1,000,000 characters")
    _utf8(raw)
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
    if not speaker.strip():
        raise ValueError("'speaker' is empty")
    session, ref = str(obj["session"]), str(obj["ref"])
    text = check_text(str(obj["text"]), "'text'")
    at = parse_time(str(obj["at"]), "'at'")
    store = Store.EPISODIC
    if obj.get("store") is not None:
        try:
            store = Store.parse(check_string(obj["store"], "'store'"))
            if store is Store.WORKING:
                raise ValueError
        except ValueError as exc:
            raise ValueError(f"unknown store {obj['store'][:40]!r}") from exc
    turn = Turn(session=session, speaker=speaker.strip(), text=text, at=at, ref=ref,
                store=store, line=number)
    validate_turn(turn)
    return turn


def parse_import(lines: Iterable[str]) -> list[Turn]:
    turns: list[Turn] = []
    errors: list[LineError] = []
    for number, raw in enumerate(lines, start=1):
        if number == 1:
            raw = raw.removeprefix("\ufeff")  # a byte-order mark some editors write
        if not raw.strip():
            continue
        try:
            turns.append(parse_line(raw, number))
        except ValueError as exc:
            errors.append(LineError(number, str(exc)))
        except ValidationError as exc:
            errors.append(LineError(number, exc.user_message))
    if errors:
        raise ImportInvalid(errors)
    return turns
