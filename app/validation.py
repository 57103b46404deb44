"""Input validation: pure and cheap, the same limits on every path (issue 11, item 4).
Layer: app. Imports nothing from storage, so the CLI can refuse bad arguments before loading
SQLCipher (``kept self-check`` must still run when a native part is broken)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.domain.memory import Store
from app.errors import ValidationError

if TYPE_CHECKING:
    from app.api import Turn

# A memory's text, whether remembered, corrected, edited or imported.
MAX_TEXT = 100_000
# Short labels: speaker, session, ref, agent, context.
MAX_LABEL = 1_000
# Times are kept as epoch seconds but read back as calendar dates (date words, ISO output, date
# ranges), so a time is accepted only if its UTC date is in datetime's years 1 to 9999.
# "9999-12-31T23:59:59-14:00" is valid ISO 8601 and is year 10000 in UTC: it used to pass and
# crash later.
_TIME_MIN = -62_135_596_800.0  # 0001-01-01T00:00:00Z
# 9999-12-31T23:59:59.999Z: a float this close to year 10000 is only a few microseconds
# precise, and datetime rounds 23:59:59.99999 up into year 10000.
_TIME_MAX = 253_402_300_799.999
# The shortest new password Kept accepts (the CLI's --allow-weak lifts it), on every path that
# sets one: create, change, recovery. Argon2id makes each guess slow; length does the rest.
MIN_PASSWORD_LENGTH = 8


def password_too_short(password: str) -> bool:
    """True when a new password is shorter than ``MIN_PASSWORD_LENGTH`` characters."""
    return len(password) < MIN_PASSWORD_LENGTH


def check_string(value: object, what: str, *, limit: int = MAX_LABEL) -> str:
    """``value`` as a string that SQLite, the tokenizer and a UTF-8 terminal all accept:
    no lone surrogates (JSON ``"\\ud800"``, or non-UTF-8 bytes decoded with surrogateescape),
    at most ``limit`` characters."""
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be text.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(f"{what} is not valid UTF-8 text (a lone surrogate at "
                              f"character {exc.start + 1:,}).") from exc
    if len(value) > limit:
        raise ValidationError(f"{what} is longer than {limit:,} characters.")
    return value


def check_text(value: object, what: str = "The memory text") -> str:
    """A memory's text: stripped, not empty, at most ``MAX_TEXT`` characters, valid UTF-8."""
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        raise ValidationError(f"{what} is empty.")
    return check_string(text, what, limit=MAX_TEXT)


def check_time(ts: object, what: str = "The time") -> float:
    """Epoch seconds whose UTC date is in the years 1 to 9999."""
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) \
            or not _TIME_MIN <= ts <= _TIME_MAX:  # also refuses NaN
        raise ValidationError(f"{what} is not a time between the years 1 and 9999 (UTC).")
    return float(ts)


def parse_time(text: object, what: str = "The time") -> float:
    """ISO 8601 text (a naive time is UTC) to epoch seconds, in the years 1 to 9999 UTC."""
    from app.clock import parse_iso
    if not isinstance(text, str):
        raise ValidationError(f"{what} must be an ISO 8601 time written as text.")
    shown = text if len(text) <= 40 else text[:37] + "..."
    try:
        ts = parse_iso(text)
    except (ValueError, OverflowError) as exc:
        raise ValidationError(f"{what} is not an ISO 8601 time: {shown!r}.") from exc
    return check_time(ts, f"{what} {shown!r}")


def validate_turn(t: Turn) -> None:
    """Every field of an import turn, as ``validate_draft`` checks a memory."""
    check_string(t.session, "'session'")
    if not t.session:
        raise ValidationError("'session' is empty.")
    check_string(t.speaker, "'speaker'")
    check_text(t.text, "'text'")
    check_string(t.ref, "'ref'")
    check_time(t.at, "'at'")
    if t.store is Store.WORKING:
        raise ValidationError("'store' cannot be working memory.")
