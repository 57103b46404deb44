"""Read the chats people already have, streamed, for ``kept import``. Layer: app. Pure (reads
files, no vault). Runs on: the caller's thread (the CLI's main thread; a worker in the window).

Formats, detected from the content (a ``.jsonl``/``.ndjson`` name is taken at its word, so the
bad-line rules of Kept's own format never change):

- **Kept JSON Lines**: one object a line, ``app/services/importer.py`` (README *Import format*).
- **ChatGPT data export** ``conversations.json`` (also ``conversations-NNN.json`` parts): a JSON
  array of conversations, each a message tree ``mapping`` {node id: {message, parent,
  children}} with ``current_node`` the leaf of the branch the person last saw. Followed: the
  field reference at whychose.com/seo/chatgpt-conversations-json-format ("follow current_node
  back to the synthetic root via each entry's parent") and the format notes of the
  ``mitkury/chatgpt-export-parser`` repository (docs/chatgpt-data-export-format.md: roles
  user/assistant/system/tool, ``create_time`` epoch seconds, ``parts`` strings or objects,
  ``recipient``, custom-instruction system messages). Read: the current branch only
  (``current_node`` up through ``parent``), then oldest first; roles ``user`` and
  ``assistant`` only (system and tool messages are skipped, and so are messages marked
  ``metadata.is_visually_hidden_from_conversation``, assistant messages addressed to a tool
  (``recipient`` other than ``all``) and content types other than ``text`` and
  ``multimodal_text``); the text is the string parts joined (image parts are objects and are
  left out; a message left empty is skipped); every message left out is counted by kind in
  the import's report ("3 messages with images or files only skipped"); the time is the message's ``create_time``, else
  the previous turn's, else the conversation's; the session is the conversation ``title``; the ref
  ``chatgpt:<conversation id>:<message id>``.
- **Claude data export** ``conversations.json``: a JSON array of conversations {``uuid``,
  ``name``, ``created_at``, ``chat_messages``: [{``uuid``, ``sender``, ``created_at``, ``text``,
  ``content``: [{``type``, ``text``}, ...]}]}. Followed: the ``Sinity/polylogue`` repository's
  docs/providers/claude-ai.md (ordered ``chat_messages``, ``sender``, ``content`` blocks of
  types text/tool_use/tool_result) and the TypeScript types of public Claude-export viewers
  (``sender: 'human' | 'assistant'``, ``created_at``/``updated_at`` ISO strings, ``text`` and
  ``content``). Read: messages in file order; senders ``human`` and ``assistant`` only; the
  text is the ``text`` blocks of ``content`` when there are any, else ``text``; the time is
  ``created_at`` (ISO 8601); the session is the conversation ``name``; the ref
  ``claude:<conversation uuid>:<message uuid>``.
- **Notes**: a Markdown or text file, or a folder of them (``.md``, ``.markdown``, ``.txt``,
  sub-folders included, hidden ones not; links to files or folders are never followed, and
  every file left out is named in the report). Each note is one turn of speaker ``me``; session =
  the file name; dated by a YAML front matter ``date:`` (a ``---`` block at the top; only that
  key is read) or else the file's modification time; ref ``note:`` + a hash of the text (an
  edited note imports as a new turn, an unchanged one never twice).

Streaming: a JSON array is cut into its elements by :class:`_ArrayReader` (the C ``json``
scanner on a growing window of the file), so only one conversation is in memory at a time.
Why not ``ijson``: it is not a dependency, its pure-Python backend is several times slower than
this, and its errors do not say at which byte the file broke.

Two passes (:func:`scan`, then :func:`iter_turns`): the first checks everything and counts,
keeping nothing; a malformed file is refused whole with where it broke (line, or conversation
number, byte offset and field) before the vault is even opened. The second pass reads the file
again and yields the same turns for :func:`import_batches`.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import re
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from app.api import CancelToken, ImportReport, Skipped, Turn, merge_skipped
from app.errors import ValidationError
from app.services.importer import ImportInvalid, LineError, parse_import, parse_line
from app.validation import MAX_TEXT, check_time, parse_time, validate_turn

Format = Literal["jsonl", "chatgpt", "claude", "notes"]
FORMAT_NAMES: dict[str, str] = {"jsonl": "Kept JSON Lines", "chatgpt": "a ChatGPT export",
                                "claude": "a Claude export", "notes": "notes"}
NOTE_SUFFIXES = (".md", ".markdown", ".txt")
NOTE_SPEAKER = "me"
MAX_ERRORS = 1000  # a first pass stops collecting here (the message shows the first 10)
CHUNK = 1 << 18  # bytes read at a time
# One conversation held in memory at most (characters); a bigger one is refused, so a file
# that never closes its first string cannot pull the whole file into RAM.
MAX_CONVERSATION = 256 << 20

@dataclass(frozen=True, slots=True)
class Skip:
    """One input left out on purpose: ``what`` in the plural words of the report, ``name``
    only for things a person can find by name (a file in a notes folder)."""
    what: str
    name: str = ""


Item = Turn | LineError | Skip
SHOWN_NAMES = 5  # names listed per kind of skip in a report


@dataclass(frozen=True, slots=True)
class ImportPlan:
    """What the first pass found: nothing is kept but counts (and the names of skipped
    files)."""

    path: Path
    format: Format
    turns: int
    sessions: int
    skipped: tuple[Skipped, ...] = ()


def _tally(skips: Iterable[Skip]) -> tuple[Skipped, ...]:
    counts: dict[str, int] = {}
    names: dict[str, list[str]] = {}
    for s in skips:
        counts[s.what] = counts.get(s.what, 0) + 1
        shown = names.setdefault(s.what, [])
        if s.name and len(shown) < SHOWN_NAMES:
            shown.append(s.name)
    return tuple(Skipped(what, n, tuple(names[what])) for what, n in counts.items())


# --- detection -----------------------------------------------------------------------------

def detect(path: Path) -> Format:
    if path.is_dir():
        return "notes"
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return "jsonl"
    try:
        with open(path, "rb") as fh:
            head = fh.read(64 * 1024)
    except OSError as exc:
        raise ValidationError(f"Cannot read {path}: {exc.strerror or exc}.") from exc
    if head.startswith(b"PK\x03\x04"):
        raise ValidationError(f"{path} is a zip archive: unzip it and import the "
                              "conversations.json inside.")
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    note_name = path.suffix.lower() in NOTE_SUFFIXES
    if not text:
        return "notes" if note_name else "jsonl"
    if text.startswith(b"["):
        if note_name and not re.match(rb"\[\s*[{\]]", text):
            return "notes"  # a note that starts with a [link]
        return _array_kind(path)
    if text.startswith(b"{"):
        first = text.split(b"\n", 1)[0]
        if note_name and not _is_json_object(first):
            return "notes"
        return "jsonl"
    if path.suffix.lower() == ".json":
        raise ValidationError(f"{path} is neither a JSON array (a ChatGPT or Claude export) "
                              "nor JSON Lines.")
    return "notes"


def _is_json_object(raw: bytes) -> bool:
    try:
        return isinstance(json.loads(raw), dict)
    except (ValueError, RecursionError):
        return False


def _array_kind(path: Path) -> Format:
    """ChatGPT or Claude, from the first conversation's keys."""
    with open(path, "rb") as fh:
        for item in _ArrayReader(fh):
            if isinstance(item, LineError):
                raise ImportInvalid([item])
            _i, _off, conv = item
            if isinstance(conv, dict) and "mapping" in conv:
                return "chatgpt"
            if isinstance(conv, dict) and "chat_messages" in conv:
                return "claude"
            raise ValidationError(
                f"{path} is a JSON array but not a ChatGPT or Claude export: its first element "
                "has neither 'mapping' nor 'chat_messages'.")
    return "chatgpt"  # an empty array: no conversations


# --- the passes ----------------------------------------------------------------------------

def scan(path: Path, fmt: Format | None = None) -> ImportPlan:
    """First pass: every turn checked (``validate_turn``), nothing kept but counts.
    ``ImportInvalid`` lists where the file broke."""
    fmt = fmt or detect(path)
    errors: list[LineError] = []
    skips: list[Skip] = []
    turns = 0
    sessions: set[str] = set()
    for item in _items(path, fmt):
        if isinstance(item, Skip):
            skips.append(item)
        elif isinstance(item, LineError):
            errors.append(item)
            if len(errors) >= MAX_ERRORS and fmt != "jsonl":  # JSON Lines: every line, as ever
                break
        else:
            turns += 1
            sessions.add(item.session)
    if errors:
        raise ImportInvalid(errors)
    return ImportPlan(path, fmt, turns, len(sessions), _tally(skips))


def iter_turns(path: Path, fmt: Format) -> Iterator[Turn]:
    """Second pass: the turns :func:`scan` counted. A problem here means the file changed
    between the passes; it stops the import (batches written so far stay, whole)."""
    for item in _items(path, fmt):
        if isinstance(item, LineError):
            raise ImportInvalid([item])
        if isinstance(item, Turn):
            yield item


def read_all(path: Path) -> list[Turn]:
    """Both passes into one list (the window's Import, small files)."""
    plan = scan(path)
    return list(iter_turns(path, plan.format))


def import_batches(plan: ImportPlan, write: Callable[[Sequence[Turn]], ImportReport], *,
                   batch: int = 256,
                   progress: Callable[[int, int], None] | None = None,
                   cancel: CancelToken | None = None) -> ImportReport:
    """The second pass, ``batch`` turns per ``write`` (``Vault.import_turns``: one
    transaction a batch, duplicates by (session, ref) skipped), so memory stays one batch.
    ``cancel``: checked after each ``write``; what was written stays (its ``turns`` then
    count fewer than ``plan.turns``), and importing the file again adds only the rest."""
    seen = added = skipped = 0
    chunk: list[Turn] = []
    left_out: tuple[Skipped, ...] = plan.skipped

    def flush() -> None:
        nonlocal seen, added, skipped, left_out
        r = write(chunk)
        seen += len(chunk)
        added += r.added
        skipped += r.skipped_duplicates
        left_out = merge_skipped(left_out, r.skipped)
        chunk.clear()
        if progress is not None:
            progress(seen, plan.turns)

    for turn in iter_turns(plan.path, plan.format):
        chunk.append(turn)
        if len(chunk) >= batch:
            flush()
            if cancel is not None and cancel.cancelled:
                break
    else:
        if chunk:
            flush()
    return ImportReport(turns=seen, added=added, skipped_duplicates=skipped,
                        sessions=plan.sessions, skipped=left_out)


def _items(path: Path, fmt: Format) -> Iterator[Item]:
    if fmt == "jsonl":
        return _jsonl(path)
    if fmt == "notes":
        return _notes(path)
    return _conversations(path, _chatgpt if fmt == "chatgpt" else _claude)


# --- Kept JSON Lines -----------------------------------------------------------------------

def _jsonl(path: Path) -> Iterator[Item]:
    try:
        fh = open(path, encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise ValidationError(f"Cannot read {path}: {exc.strerror or exc}.") from exc
    with fh:
        for number, raw in enumerate(fh, start=1):
            if number == 1:
                raw = raw.removeprefix("\ufeff")
            if not raw.strip():
                continue
            try:
                yield parse_line(raw, number)
            except ValueError as exc:
                yield LineError(number, str(exc))
            except ValidationError as exc:
                yield LineError(number, exc.user_message)


# --- JSON arrays, streamed -----------------------------------------------------------------

def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not allowed in JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_WS = re.compile(r"[ \t\r\n]*")


class _ArrayReader:
    """The elements of a top-level JSON array, one at a time: (index from 1, byte offset,
    value), or one ``LineError`` (with the byte offset) where the text stops being JSON.

    A window ``buf`` over the file: each element is parsed by ``raw_decode`` from where it
    starts; when the window ends inside it (the error is at the window's end, or is an
    unterminated string) the window grows, each time by twice as much, so an element of size n
    costs O(n) parsing in all."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.buf = ""
        self.pos = 0
        self.base = 0  # byte offset of buf[0]
        self.fed = 0  # bytes read so far
        self.eof = False
        self._mark = (0, 0)  # (pos, its byte offset): see offset()

    def offset(self, pos: int) -> int:
        """The byte offset of ``buf[pos]``, counted on from the last one asked for (elements
        come in order; counting from ``buf[0]`` each time would be quadratic)."""
        at, known = self._mark
        if pos < at:
            at, known = 0, self.base
        known += len(self.buf[at:pos].encode("utf-8"))
        self._mark = (pos, known)
        return known

    def _fill(self, size: int) -> LineError | None:
        """Drop what was consumed, read ``size`` more bytes."""
        if self.pos:
            self.base = self.offset(self.pos)
            self.buf = self.buf[self.pos:]
            self.pos = 0
            self._mark = (0, self.base)
        data = self.fh.read(size)
        pending = len(self.decoder.getstate()[0])
        try:
            self.buf += self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            at = self.fed - pending + exc.start
            return LineError(0, "not valid UTF-8 text", where=f"byte {at:,}")
        self.fed += len(data)
        self.eof = not data
        return None

    def _skip_ws(self) -> LineError | None:
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf) or self.eof:
                return None
            err = self._fill(CHUNK)
            if err:
                return err

    def _error(self, pos: int, message: str, index: int | None = None) -> LineError:
        where = f"byte {self.offset(pos):,}"
        if index is not None:
            where = f"conversation {index} ({where})"
        return LineError(0, message, where=where)

    def __iter__(self) -> Iterator[tuple[int, int, object] | LineError]:
        err = self._fill(CHUNK)
        if err is None and self.buf.startswith("\ufeff"):
            self.pos = 1
        err = err or self._skip_ws()
        if err:
            yield err
            return
        if self.buf[self.pos:self.pos + 1] != "[":
            yield self._error(self.pos, "expected '[' (a JSON array)")
            return
        self.pos += 1
        index = 0
        err = self._skip_ws()
        if err:
            yield err
            return
        if self.buf[self.pos:self.pos + 1] == "]":
            self.pos += 1
            yield from self._trailing()
            return
        while True:
            index += 1
            if not (yield from self._element(index)):
                return
            err = self._skip_ws()
            if err:
                yield err
                return
            c = self.buf[self.pos:self.pos + 1]
            if c == "]":
                self.pos += 1
                yield from self._trailing()
                return
            if c != ",":
                yield self._error(self.pos, "expected ',' or ']' after the element"
                                  if c else "the file ends inside the array (truncated?)",
                                  index)
                return
            self.pos += 1
            err = self._skip_ws()
            if err:
                yield err
                return

    def _element(self, index: int
                 ) -> Generator[tuple[int, int, object] | LineError, None, bool]:
        """Yields the element (or an error); returns True to go on, False to stop."""
        grow = CHUNK
        while True:
            start = self.pos
            try:
                value, end = _DECODER.raw_decode(self.buf, start)
            except json.JSONDecodeError as exc:
                more = exc.pos >= len(self.buf) - 16 or exc.msg.startswith("Unterminated string")
                if more and not self.eof:
                    if len(self.buf) - start > MAX_CONVERSATION:
                        yield self._error(start, "one conversation is larger than "
                                          f"{MAX_CONVERSATION >> 20} MB", index)
                        return False
                    err = self._fill(grow)
                    grow *= 2
                    if err:
                        yield err
                        return False
                    continue
                if more:  # and at the end of the file
                    yield self._error(start, f"the file ends inside it, at byte {self.fed:,} "
                                      "(truncated?)", index)
                else:
                    yield self._error(exc.pos, f"not JSON: {exc.msg}", index)
                return False
            except (ValueError, RecursionError) as exc:
                msg = str(exc) if isinstance(exc, ValueError) else "nested too deeply"
                yield self._error(start, f"not JSON: {msg}", index)
                return False
            if end >= len(self.buf) and not self.eof and not isinstance(value, (dict, list)):
                err = self._fill(grow)  # a number may go on in the next chunk
                if err:
                    yield err
                    return False
                continue
            yield index, self.offset(start), value
            self.pos = end
            return True

    def _trailing(self) -> Iterator[LineError]:
        err = self._skip_ws()
        if err:
            yield err
        elif self.pos < len(self.buf):
            yield self._error(self.pos, "text after the end of the array")


class _Bad(Exception):
    """A field that does not have the documented shape; ``where`` is its path."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where = where
        self.message = message


def _conversations(path: Path, read: Callable[[dict[str, object], int], list[Turn | Skip]]
                   ) -> Iterator[Item]:
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise ValidationError(f"Cannot read {path}: {exc.strerror or exc}.") from exc
    with fh:
        for item in _ArrayReader(fh):
            if isinstance(item, LineError):
                yield item
                return
            index, offset, conv = item
            here = f"conversation {index} (byte {offset:,})"
            try:
                if not isinstance(conv, dict):
                    raise _Bad("", f"not a JSON object but {_kind(conv)}")
                turns = read(conv, index)
                for t in turns:
                    if isinstance(t, Skip):
                        continue
                    try:
                        validate_turn(t)
                    except ValidationError as exc:
                        raise _Bad(f"message '{t.ref.rsplit(':', 1)[1][:40]}'",
                                   exc.user_message) from exc
            except _Bad as bad:
                yield LineError(0, bad.message,
                                where=f"{here}, {bad.where}" if bad.where else here)
                continue
            yield from turns


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "true/false", int: "a number", float: "a number", str: "text",
            list: "an array", dict: "an object"}.get(type(value), type(value).__name__)


def _get(obj: dict[str, object], key: str, types: tuple[type, ...], where: str,
         *, required: bool = True) -> object:
    value = obj.get(key)
    if value is None:
        if required:
            raise _Bad(where, f"'{key}' is missing")
        return None
    if not isinstance(value, types) or isinstance(value, bool) and bool not in types:
        want = " or ".join(sorted({_kind(t()) for t in types}))
        raise _Bad(where, f"'{key}' must be {want}, not {_kind(value)}")
    return value


# ChatGPT content types that are not something said, in the words of the report.
_CONTENT_KINDS = {"user_editable_context": "custom instructions",
                  "code": "code ChatGPT ran", "execution_output": "outputs of code ChatGPT ran",
                  "tether_browsing_display": "web browsing results",
                  "tether_quote": "quotes from web pages", "system_error": "error messages",
                  "thoughts": "reasoning notes", "reasoning_recap": "reasoning notes"}


def _chatgpt(conv: dict[str, object], index: int) -> list[Turn | Skip]:
    cid = _get(conv, "conversation_id", (str,), "", required=False) \
        or _get(conv, "id", (str,), "")
    mapping = _get(conv, "mapping", (dict,), "")
    assert isinstance(mapping, dict) and isinstance(cid, str)
    title = _get(conv, "title", (str,), "", required=False)
    session = str(title).strip() if title else f"ChatGPT {cid[:8]}"
    conv_time = _get(conv, "create_time", (int, float), "", required=False)
    node = _get(conv, "current_node", (str,), "", required=not not mapping)
    branch: list[tuple[str, dict[str, object]]] = []
    seen: set[str] = set()
    while node is not None:
        assert isinstance(node, str)
        if node in seen:
            raise _Bad(f"mapping['{node[:40]}']", "the 'parent' links go round in a circle")
        seen.add(node)
        entry = mapping.get(node)
        if not isinstance(entry, dict):
            raise _Bad(f"mapping['{node[:40]}']", "this node is not in 'mapping'"
                       if entry is None else f"a node must be an object, not {_kind(entry)}")
        branch.append((node, entry))
        node = _get(entry, "parent", (str,), f"mapping['{node[:40]}']", required=False)
    turns: list[Turn] = []
    skips: list[Skip] = []
    for node_id, entry in reversed(branch):
        where = f"mapping['{node_id[:40]}'].message"
        msg = _get(entry, "message", (dict,), where, required=False)
        if msg is None:
            continue  # the tree's root: no message, nothing said
        assert isinstance(msg, dict)
        author = _get(msg, "author", (dict,), where)
        assert isinstance(author, dict)
        role = _get(author, "role", (str,), where + ".author")
        if role not in ("user", "assistant"):
            skips.append(Skip(f"{role} messages" if role in ("system", "tool")
                              else "messages from other authors"))
            continue
        meta = _get(msg, "metadata", (dict,), where, required=False) or {}
        assert isinstance(meta, dict)
        if meta.get("is_visually_hidden_from_conversation") is True:
            skips.append(Skip("hidden messages (instructions ChatGPT does not show)"))
            continue
        if role == "assistant" and msg.get("recipient", "all") != "all":
            # a call to a tool (python, browser), not a reply to the person
            skips.append(Skip("assistant calls to tools"))
            continue
        content = _get(msg, "content", (dict,), where)
        assert isinstance(content, dict)
        ctype = _get(content, "content_type", (str,), where + ".content", required=False)
        if ctype not in (None, "text", "multimodal_text"):
            skips.append(Skip(_CONTENT_KINDS.get(str(ctype))
                              or f"messages of type {str(ctype)[:40]!r} (not text)"))
            continue
        parts = _get(content, "parts", (list,), where + ".content", required=False) or []
        assert isinstance(parts, list)
        text = "\n".join(p for p in parts if isinstance(p, str)).strip()
        if not text:
            skips.append(Skip("messages with images or files only" if parts
                              else "empty messages"))
            continue
        at = _get(msg, "create_time", (int, float), where, required=False)
        if at is None:
            at = turns[-1].at if turns else conv_time
        if at is None:
            raise _Bad(where, "'create_time' is missing (and the conversation has none)")
        try:
            at = check_time(at, "'create_time'")
        except ValidationError as exc:
            raise _Bad(where, exc.user_message) from exc
        mid = _get(msg, "id", (str,), where, required=False) or node_id
        turns.append(Turn(session=session, speaker=str(role), text=text, at=float(at),
                          ref=f"chatgpt:{cid}:{mid}", line=index))
    return [*turns, *skips]


def _claude(conv: dict[str, object], index: int) -> list[Turn | Skip]:
    cid = _get(conv, "uuid", (str,), "")
    assert isinstance(cid, str)
    name = _get(conv, "name", (str,), "", required=False)
    session = str(name).strip() if name else f"Claude {cid[:8]}"
    messages = _get(conv, "chat_messages", (list,), "")
    assert isinstance(messages, list)
    turns: list[Turn | Skip] = []
    for n, msg in enumerate(messages):
        where = f"chat_messages[{n}]"
        if not isinstance(msg, dict):
            raise _Bad(where, f"a message must be an object, not {_kind(msg)}")
        sender = _get(msg, "sender", (str,), where)
        if sender not in ("human", "assistant"):
            turns.append(Skip("messages from other senders"))
            continue
        blocks = _get(msg, "content", (list,), where, required=False) or []
        assert isinstance(blocks, list)
        pieces = []
        for b, block in enumerate(blocks):
            if not isinstance(block, dict):
                raise _Bad(f"{where}.content[{b}]", f"a block must be an object, not "
                           f"{_kind(block)}")
            if block.get("type") == "text":
                piece = _get(block, "text", (str,), f"{where}.content[{b}]", required=False)
                if piece:
                    pieces.append(str(piece))
        text = "\n".join(pieces).strip()
        if not text:
            text = str(_get(msg, "text", (str,), where, required=False) or "").strip()
        if not text:
            turns.append(Skip("messages with attachments or tool use only"
                              if blocks or msg.get("attachments") or msg.get("files")
                              else "empty messages"))
            continue
        created = _get(msg, "created_at", (str,), where)
        try:
            at = parse_time(created, "'created_at'")
        except ValidationError as exc:
            raise _Bad(where, exc.user_message) from exc
        mid = _get(msg, "uuid", (str,), where)
        turns.append(Turn(session=session, speaker=str(sender), text=text, at=at,
                          ref=f"claude:{cid}:{mid}", line=index))
    return turns


# --- notes ---------------------------------------------------------------------------------

_FRONT_END = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
_DATE = re.compile(r"^date[ \t]*:[ \t]*(.*?)[ \t]*$", re.MULTILINE)


def _note_files(path: Path) -> tuple[list[tuple[Path, str]], list[Skip]]:
    """The notes under ``path`` (sorted), and what was left out, by name: links (to files
    or folders, dangling or not: Kept reads what is in the folder, never where a link points),
    hidden files and folders, files that are not notes."""
    if not path.is_dir():
        return [(path, path.name)], []
    found: list[tuple[Path, str]] = []
    skips: list[Skip] = []
    for root, dirs, files in os.walk(path):
        here = Path(root)
        kept_dirs = []
        for d in sorted(dirs):
            shown = (here / d).relative_to(path).as_posix() + "/"
            if (here / d).is_symlink():
                skips.append(Skip("links (Kept does not follow them)", shown))
            elif d.startswith("."):
                skips.append(Skip("hidden folders", shown))
            else:
                kept_dirs.append(d)
        dirs[:] = kept_dirs
        for name in sorted(files):
            p = here / name
            shown = p.relative_to(path).as_posix()
            if p.is_symlink():
                skips.append(Skip("dangling links" if not p.exists()
                                  else "links (Kept does not follow them)", shown))
            elif name.startswith("."):
                skips.append(Skip("hidden files", shown))
            elif Path(name).suffix.lower() not in NOTE_SUFFIXES:
                skips.append(Skip("files that are not notes (.md, .markdown, .txt)", shown))
            else:
                found.append((p, shown))
    return found, skips


def _notes(path: Path) -> Iterator[Item]:
    files, skips = _note_files(path)
    if path.is_dir() and not files:
        raise ValidationError(f"No notes in {path}: no .md, .markdown or .txt files.")
    yield from skips
    for p, shown in files:
        try:
            turn = _note(p)
        except _Bad as bad:
            yield LineError(0, bad.message, where=shown)
            continue
        except OSError as exc:
            raise ValidationError(f"Cannot read {p}: {exc.strerror or exc}.") from exc
        if turn is None:
            yield Skip("empty notes", shown)
        else:
            yield turn


def _note(p: Path) -> Turn | None:
    st = p.stat()
    if st.st_size > 4 * MAX_TEXT + 64 * 1024:  # more characters than a memory holds
        raise _Bad("", f"a note is at most {MAX_TEXT:,} characters")
    raw = p.read_bytes()
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise _Bad("", f"not valid UTF-8 text (byte {exc.start:,})") from exc
    at = st.st_mtime
    first, _, rest = text.partition("\n")
    if first.rstrip() == "---":
        end = _FRONT_END.search(rest)
        if end is not None:
            front, text = rest[:end.start()], rest[end.end():]
            date = _DATE.search(front)
            if date and date.group(1).strip("'\""):
                try:
                    at = parse_time(date.group(1).strip("'\""), "front matter 'date'")
                except ValidationError as exc:
                    raise _Bad("", exc.user_message) from exc
    body = text.strip()
    if not body:
        return None
    turn = Turn(session=p.name, speaker=NOTE_SPEAKER, text=body, at=at,
                ref="note:" + hashlib.sha256(body.encode("utf-8")).hexdigest()[:32])
    try:
        validate_turn(turn)
    except ValidationError as exc:
        raise _Bad("", exc.user_message) from exc
    return turn


def read_import(path: Path) -> list[Turn]:
    """Every turn of an import file, checked, as one list: Kept's JSON Lines read by
    ``parse_import`` (bytes that are not UTF-8 are reported with their line number: a strict
    decode would stop at the first with no line to name); the other formats
    (this module, detected from the content) read in two passes.
    ``kept import`` streams instead (``import_formats.import_batches``)."""
    if detect(path) != "jsonl":
        return read_all(path)
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            return parse_import(fh)
    except OSError as exc:
        raise ValidationError(f"Cannot read {path}: {exc.strerror or exc}.") from exc
