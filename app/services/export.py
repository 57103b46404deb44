"""Exports the person can read (issue 16, item 3): ``kept export --format markdown DIR`` and
``--format json FILE``. Layer: app. Runs on: the caller's thread (the CLI's main thread).

Both read through ``VaultAPI`` only (in process, or through the owner's socket), page by page:
no step holds more than one page of memories (``VaultAPI.export_memories``), one entity's
list of names, or the list of days.

**Markdown** follows the PARA layout of the reference design (docs/memory-model.md#sources
000_b7cc1f21cb25004a.txt): one file per entity in ``people/``, ``companies/``, ``projects/``,
``areas/``, ``resources/`` and ``archives/`` (the entity's kind), a timeline file per day in
``daily/YYYY-MM-DD.md``, ``TACIT.md`` for procedures, preferences and patterns, ``facts.md``
for facts about no entity, ``agents/NAME.md`` per assistant with memories of its own (its
workspace, by day; issue 27 item 10), and ``index.md``. Links between files are wiki links
(``[[people/ana|Ana]]``, the path without ``.md``), which Obsidian and similar tools follow.

**JSON** is one object following ``docs/export.schema.json`` (``SCHEMA_VERSION``), written
incrementally: everything Kept holds about the person except secrets (no key, no password,
no assistant key, no vector).

Both are plaintext by design: the person confirms (``app/cli/transfer.py``, the window's
export dialog), the target must be new or empty, files are 0600 and folders 0700, and the
export is written under a temporary name next to the target and renamed into place at the
end, so an interrupted export leaves nothing behind. ``cloud_service`` names the sync service
a path belongs to, for the warning.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from app import words
from app.api import (
    LIVE,
    ContradictionItem,
    EntityRow,
    InboxStatus,
    MemoryQuery,
    MemoryRecord,
    Status,
    Store,
    VaultAPI,
)
from app.clock import to_iso
from app.errors import ValidationError

log = logging.getLogger(__name__)

__all__ = ["SCHEMA_VERSION", "ExportReport", "check_target", "cloud_service", "folder_of",
           "write_json", "write_markdown"]

SCHEMA_VERSION = 1
PAGE = 200
FILE_MODE = 0o600
DIR_MODE = 0o700
Format = Literal["markdown", "json"]

# entity kind -> folder (PARA: projects, areas, resources, archives; people and companies,
# which the reference keeps under areas/, get their own folders)
FOLDERS = {"person": "people", "company": "companies", "project": "projects", "area": "areas",
           "resource": "resources", "archive": "archives"}
# Setting keys never exported, whatever settings are declared later.
_SECRET_WORDS = ("key", "secret", "token", "password", "passphrase")


@dataclass(frozen=True, slots=True)
class ExportReport:
    path: str
    memories: int  # markdown: entries written (a fact about two people is in both files)
    files: int
    by_store: dict[str, int]
    links: int
    history: int


# --- where the export may go -----------------------------------------------------------------

# Folder names (case-insensitive) the sync clients use; a path inside one is uploaded.
_CLOUD_NAMES = {
    "dropbox": "Dropbox", "onedrive": "OneDrive", "icloud drive": "iCloud Drive",
    "iclouddrive": "iCloud Drive", "google drive": "Google Drive", "googledrive": "Google Drive",
    "my drive": "Google Drive", "nextcloud": "Nextcloud", "owncloud": "ownCloud",
    "pcloud": "pCloud", "pcloud drive": "pCloud", "pclouddrive": "pCloud", "box": "Box",
    "box sync": "Box", "mega": "MEGA", "megasync": "MEGA", "sync": "Sync.com",
    "yandex.disk": "Yandex Disk", "tresorit": "Tresorit",
}
_CLOUD_PREFIXES = (("dropbox (", "Dropbox"), ("onedrive - ", "OneDrive"),
                   ("onedrive-", "OneDrive"), ("googledrive-", "Google Drive"),
                   ("nextcloud-", "Nextcloud"), ("box-", "Box"))


def cloud_service(path: Path) -> str | None:
    """The sync service whose folder holds ``path`` (by path: a Dropbox, OneDrive, iCloud Drive
    (``Library/Mobile Documents``), Google Drive, Nextcloud, pCloud or Box folder, macOS's
    ``Library/CloudStorage``, or a Syncthing folder, marked by a ``.stfolder``), else None."""
    full = Path(os.path.abspath(Path(path).expanduser()))
    with contextlib.suppress(OSError, RuntimeError):
        full = full.resolve()
    parts = [p.casefold() for p in full.parts]
    for n, part in enumerate(parts):
        if n and parts[n - 1] == "library" and part in ("mobile documents", "cloudstorage"):
            return "iCloud Drive" if part == "mobile documents" else "a cloud storage provider"
        if part in _CLOUD_NAMES:
            return _CLOUD_NAMES[part]
        for prefix, name in _CLOUD_PREFIXES:
            if part.startswith(prefix):
                return name
    for folder in (full, *full.parents):
        with contextlib.suppress(OSError):
            if (folder / ".stfolder").exists():
                return "Syncthing"
    return None


def check_target(target: Path, fmt: Format, vault_folder: Path | None = None) -> Path:
    """The absolute target, or ``ValidationError`` (nothing written): markdown needs a new or
    empty folder, json a new file, both in an existing folder and outside the vault's folder
    (a plaintext copy there would defeat the vault's encryption at rest)."""
    full = Path(os.path.abspath(Path(target).expanduser()))
    if vault_folder is not None:
        vault = Path(os.path.abspath(vault_folder))
        if full == vault or vault in full.parents:
            raise ValidationError(f"{full} is inside the vault's folder: export somewhere else "
                                  "(the vault folder holds only encrypted files).")
    if not full.parent.is_dir():
        raise ValidationError(f"{full.parent} does not exist: create it first, or name "
                              "another place.")
    if fmt == "markdown":
        if full.exists() and not full.is_dir():
            raise ValidationError(f"{full} is a file: name a new or empty folder.")
        if full.is_dir() and any(full.iterdir()):
            raise ValidationError(f"{full} is not empty: name a new or empty folder (Kept "
                                  "does not write among other files).")
    elif full.exists() or full.is_symlink():
        raise ValidationError(f"{full} already exists: name a new file (Kept does not "
                              "overwrite it).")
    return full


# --- writing privately and atomically ---------------------------------------------------------

def _open_private(path: Path) -> IO[str]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 FILE_MODE)
    os.fchmod(fd, FILE_MODE)  # whatever the umask
    return os.fdopen(fd, "w", encoding="utf-8", newline="\n")


def _mkdir(path: Path) -> None:
    path.mkdir(mode=DIR_MODE)
    path.chmod(DIR_MODE)


@contextlib.contextmanager
def _staged(target: Path, is_dir: bool) -> Iterator[Path]:
    """A temporary sibling of ``target`` to write into, renamed onto ``target`` when the block
    ends normally and removed otherwise (an interrupted export leaves nothing)."""
    parent = target.parent
    if is_dir:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=parent))
        tmp.chmod(DIR_MODE)
    else:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=parent)
        os.close(fd)
        os.unlink(name)
        tmp = Path(name)
    try:
        yield tmp
        if is_dir:
            if target.is_dir():  # empty (checked before): rename replaces an empty folder
                target.rmdir()
            os.rename(tmp, target)
        else:
            # link + unlink: fails if the name was taken meanwhile (never overwrites).
            os.link(tmp, target)
            os.unlink(tmp)
    except BaseException:
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        raise


# --- reading page by page ---------------------------------------------------------------------

def _records(vault: VaultAPI, query: MemoryQuery) -> Iterator[MemoryRecord]:
    after = 0
    while True:
        page = vault.export_memories(query, after=after, limit=PAGE)
        if not page:
            return
        yield from page
        after = int(page[-1].memory.id)


def _iso(ts: float | None) -> str | None:
    return to_iso(ts) if ts is not None else None


def _day(ts: float) -> str:
    return (to_iso(ts) or "")[:10]


# --- markdown ---------------------------------------------------------------------------------

def _slug(name: str) -> str:
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return text[:60].strip("-")


def folder_of(e: EntityRow) -> str:
    return FOLDERS.get(e.kind, "resources")


def _entity_paths(entities: list[EntityRow]) -> dict[int, str]:
    """entity id -> its file (without .md), unique and stable: the slug of its name, with the
    id added when two names give one slug (or the name gives none)."""
    taken: set[str] = set()
    out: dict[int, str] = {}
    for e in sorted(entities, key=lambda e: int(e.id)):
        slug = _slug(e.name) or f"entity-{e.id}"
        path = f"{folder_of(e)}/{slug}"
        if path in taken:
            path = f"{path}-{e.id}"
        taken.add(path)
        out[int(e.id)] = path
    return out


def _md(text: str) -> str:
    """A memory's text on one Markdown line: no line breaks, no accidental link or heading."""
    text = " ".join(text.split())
    return text.replace("[[", "[\u200b[").replace("]]", "]\u200b]")


def _link(path: str, label: str) -> str:
    return f"[[{path}|{_md(label).replace('|', '/')}]]"


class _Markdown:
    def __init__(self, vault: VaultAPI, root: Path, now: float) -> None:
        self.vault = vault
        self.root = root
        self.now = now
        self.entities = vault.entities()
        self.paths = _entity_paths(self.entities)
        self.names = {int(e.id): e.name for e in self.entities}
        self.files = 0
        self.entries = 0  # memories written (a fact about two entities counts twice)
        self.days = {d for d, _n in vault.timeline_days(limit=1_000_000)}
        self.workspaces: list[tuple[str, str]] = []  # (assistant, its file) for the index

    def open(self, rel: str) -> IO[str]:
        self.files += 1
        return _open_private(self.root / f"{rel}.md")

    def entity_links(self, rec: MemoryRecord, skip: int | None = None) -> str:
        return ", ".join(_link(self.paths[int(e)], self.names[int(e)]) for e in rec.entities
                         if int(e) != skip and int(e) in self.paths)

    def fact(self, out: IO[str], rec: MemoryRecord, skip: int | None = None) -> None:
        """One fact (or procedure) with its validity, sources and links."""
        m = rec.memory
        self.entries += 1
        text = _md(m.text)
        status = m.status.value
        if status == "superseded":
            later = f" by memory {m.superseded_by}" if m.superseded_by else ""
            out.write(f"- ~~{text}~~ **(superseded{later})**\n")
        elif status == "archived":
            out.write(f"- {text} *(archived)*\n")
        else:
            out.write(f"- {text}\n")
        valid = f"valid from {_day(m.valid_from or m.occurred_at)}"
        if m.valid_until is not None:
            ended = "ended" if m.valid_until <= self.now else "until"
            valid += f", {ended} {_day(m.valid_until)}"
        state = {"active": "current", "superseded": "no longer current",
                 "archived": "archived"}.get(status, status)
        confirmed = ", confirmed by you" if m.user_validated else ""
        out.write(f"  - {state}; {valid}; learned {_day(m.created_at)}; "
                  f"confidence {m.confidence:.2f}{confirmed}; memory {m.id}\n")
        days = sorted({_day(ln.dst_occurred_at) for ln in rec.links
                       if ln.kind in ("DERIVED_FROM", "PROMOTED_FROM")
                       and ln.dst_store in ("episodic", "short_term")})
        sources = []
        if rec.refs:
            sources.append("conversation " + ", ".join(f"`{_md(r)}`" for r in rec.refs))
        sources += [f"[[daily/{d}]]" for d in days if d in self.days]
        if sources:
            out.write(f"  - sources: {'; '.join(sources)}\n")
        others = self.entity_links(rec, skip)
        if others:
            out.write(f"  - also about: {others}\n")
        for ln in rec.links:
            if ln.kind == "SUPERSEDES":
                # The version it replaced, here too: consolidation may not have linked the old
                # one to this entity, and facts.md leaves it to its successor.
                old = self.vault.get(int(ln.dst))
                until = f", ended {_day(old.valid_until)}" if old.valid_until else ""
                out.write(f"  - replaces ~~{_md(old.text)}~~ (valid from "
                          f"{_day(old.valid_from or old.occurred_at)}{until}; "
                          f"memory {old.id})\n")
        disputed = [f"memory {ln.dst}" for ln in rec.links if ln.kind == "CONTRADICTS"]
        if disputed:
            out.write(f"  - contradicts {', '.join(disputed)}\n")

    def write_entity(self, e: EntityRow) -> None:
        rel = self.paths[int(e.id)]
        with self.open(rel) as out:
            out.write(f"# {_md(e.name)}\n\n")
            kind = e.kind if e.kind != "archive" else words.entity_kind(
                e.kind, e.was_kind, e.ended_at, e.ended_how, now=self.now)  # issue 27 item 3
            out.write(f"A {kind}, mentioned in {e.mentions} "
                      f"memor{'y' if e.mentions == 1 else 'ies'}. [[index|All of Kept]]\n\n")
            if e.summary:
                out.write(f"## Summary\n\n{_md(e.summary)}\n\n")
            titles = ((Status.ACTIVE, "Current facts"), (Status.SUPERSEDED, "Superseded facts"),
                      (Status.ARCHIVED, "Archived facts"))
            for status, title in titles:
                q = MemoryQuery(store=Store.SEMANTIC, status=status, entity_id=int(e.id))
                first = True
                for rec in _records(self.vault, q):
                    if first:
                        out.write(f"## {title}\n\n")
                        first = False
                    self.fact(out, rec, skip=int(e.id))
                if not first:
                    out.write("\n")
            days: dict[str, int] = {}
            for rec in _records(self.vault, MemoryQuery(store=Store.EPISODIC, status=LIVE,
                                                        entity_id=int(e.id))):
                d = _day(rec.memory.occurred_at)
                days[d] = days.get(d, 0) + 1
            if days:
                out.write("## Timeline\n\n")
                for d in sorted(days):
                    out.write(f"- [[daily/{d}]] ({days[d]})\n")

    def write_day(self, day: str) -> None:
        with self.open(f"daily/{day}") as out:
            out.write(f"# {day}\n\n[[index|All of Kept]]\n\n")
            for rec in _records(self.vault, MemoryQuery(store=Store.EPISODIC, status=LIVE,
                                                        day=day)):
                m = rec.memory
                self.entries += 1
                when = (to_iso(m.occurred_at) or "")[11:16]
                who = f"**{_md(m.speaker)}**: " if m.speaker else ""
                mark = " *(archived)*" if m.status.value == "archived" else ""
                out.write(f"- {when} {who}{_md(m.text)}{mark}\n")
                details = []
                if m.session:
                    details.append(f"session `{_md(m.session)}`")
                if rec.refs:
                    details.append("conversation " + ", ".join(f"`{_md(r)}`" for r in rec.refs))
                details.append(f"memory {m.id}")
                about = self.entity_links(rec)
                if about:
                    details.append(f"about {about}")
                out.write(f"  - {'; '.join(details)}\n")

    def write_unfiled_facts(self) -> None:
        with self.open("facts") as out:
            out.write("# Facts about no one in particular\n\n[[index|All of Kept]]\n\n")
            none = True
            for rec in _records(self.vault, MemoryQuery(store=Store.SEMANTIC, status=None)):
                m = rec.memory
                replaced = m.status.value == "superseded" and m.superseded_by is not None
                if not rec.entities and not replaced:  # a replaced one shows at its successor
                    self.fact(out, rec)
                    none = False
            if none:
                out.write("(none)\n")

    def write_tacit(self) -> None:
        with self.open("TACIT") as out:
            out.write("# How you work\n\nProcedures and preferences Kept learned, and the "
                      "patterns it measured. [[index|All of Kept]]\n\n")
            first = True
            for rec in _records(self.vault, MemoryQuery(store=Store.PROCEDURAL, status=None)):
                if first:
                    out.write("## Procedures and preferences\n\n")
                    first = False
                self.fact(out, rec)
            # The measured patterns (implicit memories), paged too: ``insights()`` would
            # read a row of every memory to count tiers.
            heading = "## Patterns\n\n" if first else "\n## Patterns\n\n"
            for rec in _records(self.vault, MemoryQuery(store=Store.IMPLICIT, status=Status.ACTIVE)):
                out.write(heading)
                heading = ""
                self.entries += 1
                n = rec.memory.extra.get("sample_size")
                out.write(f"- {_md(rec.memory.text)}" + (f" (from {n})" if n else "") + "\n")

    def write_workspaces(self) -> None:
        """``agents/NAME.md`` per paired assistant holding memories of its own (issue 27 item
        10): its workspace (facts, events, habits in its scope), by day, newest first, paged
        (``VaultAPI.agent_memories``)."""
        taken: set[str] = set()
        for n, agent in enumerate(self.vault.agents()):
            page = self.vault.agent_memories(agent.name, None, PAGE)
            if not page.rows:
                continue
            rel = f"agents/{_slug(agent.name) or 'assistant'}"
            rel = f"{rel}-{n}" if rel in taken else rel  # "a.b" and "a-b" share a slug
            taken.add(rel)
            if not self.workspaces:
                _mkdir(self.root / "agents")
            self.workspaces.append((agent.name, rel))
            with self.open(rel) as out:
                out.write(f"# {_md(agent.name)}'s workspace\n\nWhat {_md(agent.name)} holds "
                          "of its own (only it and you see these; it also reads your "
                          "memories), newest first. [[index|All of Kept]]\n")
                day = ""
                while True:
                    for row in page.rows:
                        d = _day(row.occurred_at)
                        if d != day:
                            day = d
                            link = f" ([[daily/{d}]])" if d in self.days else ""
                            out.write(f"\n## {d}{link}\n\n")
                        self.entries += 1
                        when = (to_iso(row.occurred_at) or "")[11:16]
                        mark = " *(archived)*" if row.status.value == "archived" else ""
                        kind = {"semantic": "fact", "episodic": "event",
                                "procedural": "habit", "short_term": "turn"}.get(
                                    row.store.value, row.store.value)
                        out.write(f"- {when} {kind}: {_md(row.text)}{mark} "
                                  f"(memory {row.id})\n")
                    if page.next is None:
                        break
                    page = self.vault.agent_memories(agent.name, page.next, PAGE)

    def write_index(self, days: list[str]) -> None:
        with self.open("index") as out:
            out.write("# Kept\n\n"
                      f"Everything Kept holds, exported {to_iso(self.now)}, unencrypted. "
                      "Facts say when they were valid and where they came from; a struck-"
                      "through fact was superseded by a later one.\n\n"
                      "- [[TACIT|How you work]]\n- [[facts|Facts about no one in "
                      "particular]]\n\n")
            for kind, folder in FOLDERS.items():
                rows = [e for e in self.entities if e.kind == kind]
                if rows:
                    out.write(f"## {folder.capitalize()}\n\n")
                    for e in sorted(rows, key=lambda e: e.name.casefold()):
                        out.write(f"- {_link(self.paths[int(e.id)], e.name)}\n")
                    out.write("\n")
            if self.workspaces:
                out.write("## Assistants' workspaces\n\n")
                for name, rel in self.workspaces:
                    out.write(f"- {_link(rel, name)}\n")
                out.write("\n")
            if days:
                out.write("## Timeline\n\n")
                for d in days:
                    out.write(f"- [[daily/{d}]]\n")


def write_markdown(vault: VaultAPI, target: Path, *, now: float,
                   progress: Callable[[int, int], None] | None = None) -> ExportReport:
    """The PARA tree in ``target`` (new or empty; ``check_target`` first)."""
    target = Path(os.path.abspath(target))
    with _staged(target, is_dir=True) as root:
        for folder in (*FOLDERS.values(), "daily"):
            _mkdir(root / folder)
        md = _Markdown(vault, root, now)
        days = sorted(md.days)
        total = len(md.entities) + len(days) + 3
        done = 0
        for e in md.entities:
            md.write_entity(e)
            done += 1
            if progress is not None:
                progress(done, total)
        for day in days:
            md.write_day(day)
            done += 1
            if progress is not None:
                progress(done, total)
        md.write_unfiled_facts()
        md.write_tacit()
        md.write_workspaces()
        md.write_index(days)
        if progress is not None:
            progress(total, total)
        files = md.files
    log.info("markdown export: %d files", files)
    return ExportReport(str(target), md.entries, files, {}, 0, 0)


# --- JSON ---------------------------------------------------------------------------------------

def _memory_json(rec: MemoryRecord) -> dict[str, object]:
    m = rec.memory
    return {
        "id": int(m.id), "store": m.store.value, "status": m.status.value, "text": m.text,
        "occurred_at": _iso(m.occurred_at), "created_at": _iso(m.created_at),
        "valid_from": _iso(m.valid_from), "valid_until": _iso(m.valid_until),
        "superseded_by": None if m.superseded_by is None else int(m.superseded_by),
        "user_validated": m.user_validated, "confidence": m.confidence,
        "agent": m.agent, "context": m.context, "session": m.session, "speaker": m.speaker,
        "seq": m.seq, "ref": m.ref, "decay_class": m.decay_class,
        "scores": {"importance": m.scores.importance, "recency": m.scores.recency,
                   "frequency": m.scores.frequency, "emotional": m.scores.emotional,
                   "social": m.scores.social, "composite": m.scores.composite},
        "access_count": m.access_count, "last_accessed_at": _iso(m.last_accessed_at),
        "details": dict(m.extra),
        "refs": list(rec.refs),
        "entities": [int(e) for e in rec.entities],
        "links": [{"dst": int(ln.dst), "kind": ln.kind, "weight": ln.weight,
                   "created_at": _iso(ln.created_at)} for ln in rec.links],
        "history": [{"at": _iso(h.at), "action": h.action, "text": h.text, "detail": h.detail}
                    for h in rec.history],
        "read_by_assistants": [{"agent": r.agent, "via": r.via, "at": _iso(r.at)}
                               for r in rec.reads],
    }


def _contradiction_json(c: ContradictionItem) -> dict[str, object]:
    resolution: object = None
    if c.resolution:
        try:
            resolution = json.loads(c.resolution)
        except ValueError:
            resolution = c.resolution
    return {"id": c.id, "kind": c.kind, "a": int(c.a.id), "b": int(c.b.id),
            "reason": c.reason, "status": c.status, "resolution": resolution,
            "created_at": _iso(c.created_at),
            "run_id": None if c.run_id is None else int(c.run_id)}


def _contradictions(vault: VaultAPI) -> Iterator[dict[str, object]]:
    statuses: tuple[InboxStatus, ...] = ("open", "auto", "resolved")
    for status in statuses:
        page = vault.inbox_page(status, 0, 100)
        for n in range(page.pages):
            if n:
                page = vault.inbox_page(status, n, 100)
            for item in page.items:
                yield _contradiction_json(item)


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def write_json(vault: VaultAPI, target: Path, *, now: float,
               progress: Callable[[int, int], None] | None = None) -> ExportReport:
    """One JSON object (``docs/export.schema.json``) in the new file ``target``, written as it
    is read: only one page of memories is in memory at a time."""
    from app.settings import SETTINGS
    target = Path(os.path.abspath(target))
    status = vault.status()
    total = sum(status.totals.values())
    by_store: dict[str, int] = {}
    links = history = done = 0
    with _staged(target, is_dir=False) as tmp, _open_private(tmp) as out:
        entities = [{"id": int(e.id), "kind": e.kind, "name": e.name, "summary": e.summary,
                     "mentions": e.mentions} for e in vault.entities()]
        settings = {s.key: vault.setting(s.key) for s in SETTINGS
                    if not any(w in s.key.lower() for w in _SECRET_WORDS)}
        head = {
            "format": "kept-export", "schema_version": SCHEMA_VERSION,
            "exported_at": to_iso(now),
            "vault": {"id": status.vault_id, "schema_version": status.schema_version},
            "settings": settings,
            "assistants": [{"name": a.name, "paired_at": _iso(a.created_at),
                            "revoked_at": _iso(a.revoked_at),
                            "last_seen_at": _iso(a.last_seen_at)} for a in vault.agents()],
            "entities": entities,
            "pending_forgets": [{"id": p.id, "agent": p.agent,
                                 "memory_ids": [int(i) for i in p.memory_ids],
                                 "query": p.query, "reason": p.reason,
                                 "created_at": _iso(p.created_at), "status": p.status,
                                 "decided_at": _iso(p.decided_at)}
                                for p in vault.pending_forgets(None, limit=500)],
            "runs": [{"id": int(r.id), "kind": r.kind, "started_at": _iso(r.started_at),
                      "finished_at": _iso(r.finished_at), "status": r.status,
                      "counts": dict(r.report.counts) if r.report else {},
                      "undone_at": _iso(r.undone_at)} for r in vault.runs(limit=1000)],
        }
        out.write(_dump(head)[:-1])  # the object stays open: the long lists follow
        out.write(', "contradictions": [')
        contradictions = 0
        for c in _contradictions(vault):
            out.write((",\n" if contradictions else "\n") + _dump(c))
            contradictions += 1
        out.write('],\n"memories": [')
        count = 0
        for rec in _records(vault, MemoryQuery(status=None)):
            out.write((",\n" if count else "\n") + _dump(_memory_json(rec)))
            count += 1
            store = rec.memory.store.value
            by_store[store] = by_store.get(store, 0) + 1
            links += len(rec.links)
            history += len(rec.history)
            done += 1
            if progress is not None and done % PAGE == 0:
                progress(done, max(total, done))
        out.write("],\n")
        counts = {"memories": count, "by_store": by_store, "links": links, "history": history,
                  "entities": len(entities), "contradictions": contradictions}
        out.write(f'"counts": {_dump(counts)}}}\n')
        out.flush()
        os.fsync(out.fileno())
    if progress is not None:
        progress(max(total, done), max(total, done))
    return ExportReport(str(target), count, 1, by_store, links, history)
