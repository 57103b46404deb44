"""``kept export`` (issue 16, item 3): the Markdown tree of the reference design (people,
projects, areas, resources, archives, a file per day) with facts, validity, sources and links;
one JSON file that follows docs/export.schema.json and holds everything; explicit confirmation,
a new or empty target, a second confirmation for cloud-synced folders, private modes; the
same through a running owner."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from app.api import MemoryQuery
from app.facade import Vault
from tests import ROOT
from tests.app.cli.conftest import PW, kept_in_process, run_cli
from tests.conftest import new_vault
from tests.inside import inside

SCHEMA = json.loads((ROOT / "docs" / "export.schema.json").read_text("utf-8"))
DAYS = {"2026-05-01", "2026-05-02", "2026-05-03", "2026-06-10"}
WIKI_LINK = re.compile(r"\[\[([^\]|]+)(?:\|[^\]]*)?\]\]")


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Sam's vault: turns on four days, consolidated (entities Sam and Ana, facts, Lisbon
    superseded by Porto, an open contradiction), a fact corrected (one superseded version
    in Sam's file), an episode archived, an assistant paired. Read-only for the tests."""
    from app.api import Turn
    from app.clock import FixedClock, parse_iso
    folder = tmp_path_factory.mktemp("export") / "vault"
    v = new_vault(folder, PW, load_model=False, threaded=False, use_chroma=False,
                  clock=FixedClock(parse_iso("2026-07-02T00:00:00Z")))
    try:
        v.import_turns([Turn(s, "Sam", text, parse_iso(at), ref) for s, text, at, ref in (
            ("may", "I live in Lisbon, near the river.", "2026-05-03T10:00:00Z", "a1"),
            ("may", "My sister Ana visits on Sundays.", "2026-05-03T10:01:00Z", "a2"),
            ("jun", "I moved to Porto last week!", "2026-06-10T10:00:00Z", "b1"),
            ("a", "I think my favorite film is Alien.", "2026-05-01T10:00:00Z", "x1"),
            ("b", "Honestly, I guess my favorite film is Heat.", "2026-05-02T10:00:00Z", "x2"),
        )])
        v.consolidate()
        v.correct(_find(v, "Ana is Sam's sister", "semantic"), "Ana is Sam's older sister")
        v.archive(_find(v, "I think my favorite film is Alien.", "episodic"))
        key = v.pair_agent("claude").value
        (folder.parent / "agent-key").write_text(key)
    finally:
        v.lock()
    yield folder


def _find(v: object, text: str, store: str) -> int:
    rows = v.page_memories(MemoryQuery(store=store)).rows  # type: ignore[attr-defined]
    [mid] = [r.id for r in rows if r.text == text]
    return int(mid)


def _counts(folder: Path) -> dict[str, object]:
    v = Vault.open(folder, PW, load_model=False, threaded=False, use_chroma=False)
    try:
        return inside(v).db.read(lambda c: {
            "by_store": dict(c.execute("SELECT store, count(*) FROM memory GROUP BY store")),
            "links": c.execute("SELECT count(*) FROM link").fetchone()[0],
            "history": c.execute("SELECT count(*) FROM history").fetchone()[0],
            "superseded": c.execute("SELECT count(*) FROM memory WHERE status = 'superseded'"
                                    ).fetchone()[0]})
    finally:
        v.lock()


def _private(top: Path) -> None:
    for p in [top, *top.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), (p, oct(mode))


def _no_partial(parent: Path) -> None:
    assert not [p.name for p in parent.iterdir() if p.name.endswith(".partial")]


# --- Markdown --------------------------------------------------------------------------------

def test_markdown_tree_has_people_days_facts_validity_sources_and_links(
        vault: Path, tmp_path: Path) -> None:
    out = tmp_path / "notes"
    r = kept_in_process(vault, "export", "--format", "markdown", str(out), "--yes")
    assert r.returncode == 0, r.stderr
    assert str(out) in r.stderr and "UNENCRYPTED" in r.stderr  # says where, before writing
    assert f"to {len(list(out.rglob('*.md')))} files in {out}" in r.stdout
    for folder in ("people", "projects", "areas", "resources", "archives", "daily"):
        assert (out / folder).is_dir()
    assert {p.stem for p in (out / "daily").iterdir()} == DAYS  # a file per day
    assert {p.name for p in (out / "people").iterdir()} == {"sam.md", "ana.md"}
    sam = (out / "people" / "sam.md").read_text("utf-8")
    current, _, rest = sam.partition("## Superseded facts")
    superseded, _, timeline = rest.partition("## Timeline")
    # The current fact, and the version it replaced marked as superseded, with validity.
    assert "- Ana is Sam's older sister\n  - current; valid from 2026-05-03" in current
    assert "confirmed by you" in current
    assert re.search(r"- ~~Ana is Sam's sister~~ \*\*\(superseded by memory \d+\)\*\*\n"
                     r"  - no longer current; valid from 2026-05-03", superseded)
    assert "Ana is Sam's older sister" not in superseded
    # Sources: the conversation ref and the day file of the turn it came from.
    assert "sources: conversation `a2`; [[daily/2026-05-03]]" in superseded
    porto = current.split("- Sam lives in Porto\n", 1)[1].split("\n- ", 1)[0]
    assert "valid from 2026-06-10" in porto and "conversation `b1`" in porto
    assert "replaces ~~Sam lives in Lisbon~~ (valid from 2026-05-03, ended 2026-06-10" in porto
    assert "[[daily/2026-05-03]] (2)" in timeline
    day = (out / "daily" / "2026-05-03.md").read_text("utf-8")
    assert "10:01 **Sam**: My sister Ana visits on Sundays." in day
    assert "about [[people/sam|Sam]], [[people/ana|Ana]]" in day
    assert "*(archived)*" in (out / "daily" / "2026-05-01.md").read_text("utf-8")
    assert "Most mentioned person: Sam" in (out / "TACIT.md").read_text("utf-8")
    # Every wiki link resolves to a file of the export.
    links = {t for p in out.rglob("*.md") for t in WIKI_LINK.findall(p.read_text("utf-8"))}
    assert {"people/sam", "people/ana", "index", "daily/2026-06-10"} <= links
    assert [t for t in links if not (out / f"{t}.md").is_file()] == []
    _private(out)
    _no_partial(tmp_path)


def test_an_interrupted_export_leaves_nothing(vault: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from app.services import export
    calls: list[str] = []

    def full(self: object, day: str) -> None:
        calls.append(day)
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(export._Markdown, "write_day", full)
    out = tmp_path / "notes"
    r = kept_in_process(vault, "export", "--format", "markdown", str(out), "--yes")
    assert r.returncode == 5 and calls, r.stderr
    assert list(tmp_path.iterdir()) == []  # no target, no partial sibling


# --- JSON ----------------------------------------------------------------------------------------

def test_json_follows_the_schema_and_holds_everything(vault: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from app.services import export
    monkeypatch.setattr(export, "PAGE", 4)  # several pages, as a big vault has
    out = tmp_path / "kept.json"
    r = kept_in_process(vault, "export", "--format", "json", str(out), "--yes")
    assert r.returncode == 0, r.stderr
    text = out.read_text("utf-8")
    doc = json.loads(text)
    jsonschema.Draft202012Validator(
        SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).validate(doc)
    _assert_round_trip(doc, _counts(vault))
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    _no_partial(tmp_path)
    # No secret: not the password, not the assistant's key (only its name and times).
    key = (vault.parent / "agent-key").read_text()
    assert PW not in text and key not in text
    assert [a["name"] for a in doc["assistants"]] == ["claude"]
    lisbon = [m for m in doc["memories"] if m["text"] == "Sam lives in Lisbon"][0]
    assert lisbon["status"] == "superseded" and lisbon["valid_until"] == "2026-06-10T10:00:00Z"
    porto = [m for m in doc["memories"] if m["id"] == lisbon["superseded_by"]][0]
    assert any(ln["dst"] == lisbon["id"] and ln["kind"] == "SUPERSEDES" for ln in porto["links"])
    assert {c["status"] for c in doc["contradictions"]} >= {"open", "auto"}
    auto = [c for c in doc["contradictions"] if c["status"] == "auto"][0]
    assert auto["resolution"]["kept"] == porto["id"]
    assert doc["settings"]["recall.context_budget"] == 4000


def _assert_round_trip(doc: dict[str, object], truth: dict[str, object]) -> None:
    memories = doc["memories"]
    assert isinstance(memories, list)
    by_store: dict[str, int] = {}
    for m in memories:
        by_store[m["store"]] = by_store.get(m["store"], 0) + 1
    assert by_store == truth["by_store"] == doc["counts"]["by_store"]  # type: ignore[index]
    assert sum(len(m["links"]) for m in memories) == truth["links"] > 0
    assert sum(len(m["history"]) for m in memories) == truth["history"] > 0
    assert sum(m["status"] == "superseded" for m in memories) == truth["superseded"] == 2
    assert len({m["id"] for m in memories}) == len(memories)  # no page read twice


def test_the_schema_refuses_what_it_does_not_describe() -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    assert not validator.is_valid({"format": "kept-export"})
    assert any("additional" in e.message.lower() for e in validator.iter_errors(
        {**dict.fromkeys(SCHEMA["required"], None), "secret_key": "x"}))


# --- confirmation and where it may go ---------------------------------------------------------

def test_no_confirmation_without_a_terminal_writes_nothing(vault: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for fmt, target in (("markdown", tmp_path / "new"), ("markdown", empty),
                        ("json", tmp_path / "kept.json")):
        r = kept_in_process(vault, "export", "--format", fmt, str(target))
        assert r.returncode == 3, r.stderr
        assert "not confirmed" in r.stderr and "--yes" in r.stderr
        assert str(target) in r.stderr  # it said where the files would go
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]
    assert list(empty.iterdir()) == []


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@contextlib.contextmanager
def _typed(monkeypatch: pytest.MonkeyPatch, answers: str) -> Iterator[None]:
    monkeypatch.setenv("KEPT_PASSWORD", PW)
    monkeypatch.setattr(sys, "stdin", _Terminal(answers))
    yield


def test_a_terminal_asks_and_a_cloud_folder_asks_twice(vault: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    box = tmp_path / "Dropbox" / "me"
    box.mkdir(parents=True)
    with _typed(monkeypatch, "no\n"):
        r = run_cli("--vault", str(vault), "export", "--format", "json", str(tmp_path / "a"))
    assert r.code == 3 and not (tmp_path / "a").exists()
    with _typed(monkeypatch, "export\n"):
        r = run_cli("--vault", str(vault), "export", "--format", "json", str(tmp_path / "a"))
    assert r.code == 0 and (tmp_path / "a").is_file(), r.err
    # Inside a Dropbox folder: a visible warning, and a second question.
    with _typed(monkeypatch, "export\nno\n"):
        r = run_cli("--vault", str(vault), "export", "--format", "json", str(box / "k.json"))
    assert r.code == 3 and list(box.iterdir()) == []
    assert "WARNING" in r.err and "Dropbox" in r.err
    with _typed(monkeypatch, "export\ncloud\n"):
        r = run_cli("--vault", str(vault), "export", "--format", "json", str(box / "k.json"))
    assert r.code == 0 and (box / "k.json").is_file(), r.err


def test_a_cloud_folder_needs_yes_cloud_in_scripts(vault: Path, tmp_path: Path) -> None:
    synced = tmp_path / "shared"
    (synced / ".stfolder").mkdir(parents=True)  # a Syncthing folder
    target = synced / "notes"
    r = kept_in_process(vault, "export", "--format", "markdown", str(target), "--yes")
    assert r.returncode == 3 and "Syncthing" in r.stderr and "--yes-cloud" in r.stderr
    assert not target.exists()
    r = kept_in_process(vault, "export", "--format", "markdown", str(target), "--yes",
                        "--yes-cloud")
    assert r.returncode == 0, r.stderr
    assert "WARNING" in r.stderr and (target / "index.md").is_file()


@pytest.mark.parametrize(("path", "service"), [
    ("/home/sam/Dropbox/notes", "Dropbox"),
    ("/home/sam/Dropbox (Personal)/notes", "Dropbox"),
    ("/Users/sam/OneDrive - Contoso/x", "OneDrive"),
    ("C:/Users/sam/OneDrive/x", "OneDrive"),
    ("/Users/sam/Library/Mobile Documents/com~apple~CloudDocs/x", "iCloud Drive"),
    ("/Users/sam/Library/CloudStorage/GoogleDrive-sam@example.org/My Drive/x", None),
    ("/home/sam/Google Drive/x", "Google Drive"),
    ("/home/sam/Nextcloud/x", "Nextcloud"),
    ("/home/sam/pCloud Drive/x", "pCloud"),
    ("/home/sam/Box/x", "Box"),
    ("/home/sam/Documents/kept-export", None),
])
def test_cloud_folders_are_recognised_by_path(path: str, service: str | None) -> None:
    from app.services.export import cloud_service
    found = cloud_service(Path(path))
    if service is None and "CloudStorage" in path:
        assert found is not None  # macOS's folder for every provider
    else:
        assert found == service


def test_a_non_empty_folder_an_existing_file_and_the_vault_folder_are_refused(
        vault: Path, tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "mine.txt").write_text("keep me")
    existing = tmp_path / "kept.json"
    existing.write_text("{}")
    for fmt, target, why in (("markdown", full, "not empty"), ("json", existing, "exists"),
                             ("markdown", vault / "export", "inside the vault"),
                             ("json", tmp_path / "no" / "such" / "x.json", "does not exist")):
        r = kept_in_process(vault, "export", "--format", fmt, str(target), "--yes")
        assert r.returncode == 2 and why in r.stderr, r.stderr
    assert [p.name for p in full.iterdir()] == ["mine.txt"]
    assert existing.read_text() == "{}" and not (vault / "export").exists()


# --- through a running owner ----------------------------------------------------------------------

def test_export_through_a_running_owner(vault: Path, tmp_path: Path) -> None:
    from app.errors import PasswordNeeded
    from app.ipc.client import RemoteVault
    from app.ipc.server import OwnerServer
    truth = _counts(vault)
    server = OwnerServer(Vault.open(vault, PW, load_model=False, use_chroma=False))
    server.start()
    try:
        # Every memory whole is the person's read: a connection must prove the password.
        with pytest.raises(PasswordNeeded):
            RemoteVault.at(vault).export_memories(MemoryQuery(status=None))
        refused = kept_in_process(vault, "export", "--format", "json", str(tmp_path / "x"),
                                  "--yes", password=None)
        assert refused.returncode == 2 and not (tmp_path / "x").exists()
        out = tmp_path / "kept.json"
        r = kept_in_process(vault, "export", "--format", "json", str(out), "--yes")
        assert r.returncode == 0, r.stderr
        notes = tmp_path / "notes"
        r = kept_in_process(vault, "export", "--format", "markdown", str(notes), "--yes")
        assert r.returncode == 0, r.stderr
    finally:
        server.lock_vault()
    doc = json.loads(out.read_text("utf-8"))
    jsonschema.validate(doc, SCHEMA)
    _assert_round_trip(doc, truth)
    assert {p.stem for p in (notes / "daily").iterdir()} == DAYS
    assert "~~Ana is Sam's sister~~" in (notes / "people" / "sam.md").read_text("utf-8")


def test_export_pages_stay_small(vault: Path) -> None:
    """Pages by id, never the whole vault: a page stops at ``limit`` memories, or earlier
    once its texts pass the budget (one message of the owner's socket)."""
    from storage import browse
    total = sum(_counts(vault)["by_store"].values())  # type: ignore[union-attr]
    v = Vault.open(vault, PW, load_model=False, threaded=False, use_chroma=False)
    try:
        seen: list[int] = []
        after = 0
        while page := v.export_memories(MemoryQuery(status=None), after=after, limit=3):
            assert len(page) <= 3
            seen += [int(r.memory.id) for r in page]
            after = seen[-1]
        assert seen == sorted(set(seen)) and len(seen) == total
        small = inside(v).db.read(lambda c: browse.export_page(
            c, store=None, status=None, entity_id=None, day=None, after=0, limit=100,
            budget=40))
        assert len(small) == 1  # at least one, never more than the budget allows
    finally:
        v.lock()
