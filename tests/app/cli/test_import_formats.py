"""``kept import`` of the chats people have (issue 16, item 4): ChatGPT and Claude data
exports, Markdown/text notes, Kept's JSON Lines; detected from the content, streamed, checked
whole before anything is written.

The fixtures in tests/data/import/ are written in the shapes of the public descriptions that
``app/services/import_formats.py`` names:
- chatgpt_conversations.json: the ChatGPT ``conversations.json`` field reference
  (whychose.com/seo/chatgpt-conversations-json-format) and the format notes of
  ``mitkury/chatgpt-export-parser`` (docs/chatgpt-data-export-format.md): a ``mapping`` tree
  with a hidden system root, a custom-instructions message (``user_editable_context``), a
  regenerated answer (the node ``u1`` has children ``a1``, ``a1b``; the current branch goes
  through ``a1``, the first child, not the last), an assistant call to a tool
  (``recipient: "python"``) and the tool's message, a ``multimodal_text`` with an image part,
  a message with ``create_time: null``;
- claude_conversations.json: ``Sinity/polylogue`` docs/providers/claude-ai.md and public
  Claude-export types (``chat_messages``, ``sender`` human/assistant, ``created_at`` ISO,
  ``text`` and ``content`` blocks: text only, blocks only with tool_use/tool_result, both);
- notes/: Markdown with YAML front matter ``date:`` (a date, a quoted time with an offset),
  front matter without a date, a plain .txt, and files that are not notes (hidden, .rst).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import ROOT
from tests.app.cli.conftest import PW, hashes, make_vault, run_cli

DATA = ROOT / "tests" / "data" / "import"
CHATGPT = DATA / "chatgpt_conversations.json"
CLAUDE = DATA / "claude_conversations.json"
NOTES = DATA / "notes"
T = 1714550400.0  # 2024-05-01T08:00:00Z, the first ChatGPT conversation's create_time
GPT_A = "chatgpt:c0ffee00-0000-4000-8000-00000000000a:"
GPT_B = "chatgpt:c0ffee00-0000-4000-8000-00000000000b:"
CLAUDE_1 = "claude:5e55a000-0000-4000-8000-000000000001:"
CLAUDE_2 = "claude:5e55a000-0000-4000-8000-000000000002:"


@pytest.fixture
def lexical(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No model: embedding is not what these tests are about, and it keeps them fast."""
    monkeypatch.setenv("KEPT_MODEL_DIR", str(tmp_path / "no-model"))
    monkeypatch.setenv("KEPT_PASSWORD", PW)


@pytest.fixture
def vault(tmp_path: Path, lexical: None) -> Path:
    return make_vault(tmp_path / "vault")


def kept_import(vault: Path, path: Path) -> tuple[int, str, str]:
    r = run_cli("--vault", str(vault), "import", str(path))
    return r.code, r.out, r.err


def turns(vault: Path) -> list[tuple[str | None, str | None, str, float, str | None]]:
    """(session, speaker, text, occurred_at, ref) of every short-term turn, in the order
    written."""
    from app.domain.memory import Store
    from app.errors import NotFound
    from app.facade import Vault
    v = Vault.open(vault, PW, threaded=False, use_chroma=False, load_model=False)
    out = []
    try:
        misses = 0
        mid = 1
        while misses < 50:
            try:
                m = v.get(mid)
            except NotFound:
                misses += 1
            else:
                if m.store is Store.SHORT_TERM:
                    out.append((m.session, m.speaker, m.text, m.occurred_at, m.ref))
            mid += 1
    finally:
        v.lock()
    return out


def test_chatgpt_export_imports_the_current_branch_with_roles_times_titles(vault: Path) -> None:
    code, out, err = kept_import(vault, CHATGPT)
    assert code == 0, err
    assert "(Read as a ChatGPT export.)" in out
    assert "Imported 7 turns from 2 conversations; 0 already present." in out
    got = turns(vault)
    assert got == [
        ("Train to Porto", "user", "Which train goes from Lisbon to Porto?", T + 10, GPT_A + "u1"),
        ("Train to Porto", "assistant", "The Alfa Pendular, about three hours.", T + 20,
         GPT_A + "a1"),
        ("Train to Porto", "user", "Book me a seat near the window.", T + 40, GPT_A + "u2"),
        ("Train to Porto", "assistant", "Here is your seat map: window seat 42.", T + 50,
         GPT_A + "a2"),
        ("Train to Porto", "user", "Thanks!", T + 50, GPT_A + "u3"),  # no time: the previous
        ("Birthdays", "user", "Remind me: Ana's birthday is July 3.", 1717200005.0, GPT_B + "b1"),
        ("Birthdays", "assistant", "Noted: Ana's birthday is July 3.", 1717200009.0,
         GPT_B + "b2"),
    ]
    texts = " ".join(t[2] for t in got)
    # Not the other branch (the last child), the tool call, the tool, the hidden context.
    for absent in ("REGENERATED", "OTHER BRANCH", "book()", "booked", "Lisbon."):
        assert absent not in texts
    code, out, err = kept_import(vault, CHATGPT)
    assert code == 0, err
    assert "Imported 0 turns from 2 conversations; 7 already present." in out
    assert len(turns(vault)) == 7


def test_claude_export_imports_text_and_content_blocks(vault: Path) -> None:
    code, out, err = kept_import(vault, CLAUDE)
    assert code == 0, err
    assert "(Read as a Claude export.)" in out
    assert "Imported 5 turns from 2 conversations" in out
    assert turns(vault) == [
        ("Sourdough", "human", "How long should sourdough proof?", 1719856800.0,
         CLAUDE_1 + "m1"),
        # content blocks: the text ones only (not tool_use, not the tool_result's text)
        ("Sourdough", "assistant",
         "Usually 4 to 6 hours at room temperature.\nOr overnight in the fridge.", 1719856807.0,
         CLAUDE_1 + "m2"),
        # text and content both: once
        ("Sourdough", "human", "I'll try the fridge tonight.", 1719857040.0, CLAUDE_1 + "m3"),
        ("Claude 5e55a000", "human", "My dentist is Dr. Rui Costa.", 1719910800.0,
         CLAUDE_2 + "n1"),
        ("Claude 5e55a000", "assistant", "Got it.", 1719910803.0, CLAUDE_2 + "n2"),
    ]
    code, out, _err = kept_import(vault, CLAUDE)
    assert "Imported 0 turns" in out and "5 already present" in out


def test_notes_folder_dated_by_front_matter_or_file_time(vault: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    shutil.copytree(NOTES, notes)
    mtime = 1700000000.0  # 2023-11-14T22:13:20Z
    for name in ("groceries.txt", "trips/idea.md"):
        os.utime(notes / name, (mtime, mtime))
    code, out, err = kept_import(vault, notes)
    assert code == 0, err
    assert "Imported 4 turns from 4 conversations" in out
    got = sorted(turns(vault))
    assert [(s, sp, a) for s, sp, _t, a, _r in got] == [
        ("groceries.txt", "me", mtime),         # no front matter: the file's time
        ("idea.md", "me", mtime),               # front matter without a date
        ("lisbon.markdown", "me", 1723710600.0),  # date: "2024-08-15T10:30:00+02:00"
        ("porto.md", "me", 1714694400.0),       # date: 2024-05-03
    ]
    text = {s: t for s, _sp, t, _a, _r in got}
    assert text["porto.md"].startswith("# Porto trip\n\nStayed near Ribeira")
    assert "title:" not in text["porto.md"] and "---" not in text["idea.md"]
    assert text["lisbon.markdown"].startswith("[Lisbon map]")  # a note, though it starts '['
    assert all(r and r.startswith("note:") for *_x, r in got)
    # One note alone is the same note: nothing new.
    code, out, _err = kept_import(vault, notes / "porto.md")
    assert "Imported 0 turns from 1 conversation; 1 already present." in out
    code, out, _err = kept_import(vault, notes)
    assert "4 already present" in out


def test_kept_json_lines_unchanged_without_the_jsonl_name(vault: Path, tmp_path: Path) -> None:
    f = tmp_path / "turns.txt"  # detected by its content, not its name
    f.write_text(json.dumps({"session": "s1", "speaker": "Sam", "text": "I moved to Lisbon.",
                             "at": "2026-05-02T09:00:00Z", "ref": "m1"}) + "\n")
    code, out, err = kept_import(vault, f)
    assert code == 0, err
    assert "(Read as Kept JSON Lines.)" in out
    assert turns(vault) == [("s1", "Sam", "I moved to Lisbon.", 1777712400.0, "m1")]


def _conv(i: int, **over: object) -> dict[str, object]:
    base = json.loads(CHATGPT.read_text())[1]
    base = {**base, "conversation_id": f"conv-{i}", "id": f"conv-{i}", "title": f"Chat {i}"}
    base.update(over)
    return base


BAD_CHATGPT = {
    # (what, file bytes, what the one error line must name)
    "truncated": (lambda: json.dumps([_conv(1), _conv(2)])[:-40].encode(),
                  ["conversation 2 (byte ", "truncated"]),
    "wrong type deep inside": (
        lambda: json.dumps([_conv(1), _conv(2, mapping={
            **_conv(2)["mapping"],  # type: ignore[dict-item]
            "b2": {**_conv(2)["mapping"]["b2"],  # type: ignore[index]
                   "message": {**_conv(2)["mapping"]["b2"]["message"],  # type: ignore[index]
                               "create_time": "yesterday"}}})]).encode(),
        ["conversation 2 (byte ", "mapping['b2'].message", "'create_time' must be a number"]),
    "not UTF-8": (lambda: json.dumps([_conv(1)]).encode().replace(b"Remind", b"R\xffmind"),
                  ["byte ", "UTF-8"]),
    "text after the array": (lambda: json.dumps([_conv(1)]).encode() + b" []",
                             ["text after the end of the array"]),
    "a parent that is not there": (
        lambda: json.dumps([_conv(1), _conv(2, current_node="nowhere")]).encode(),
        ["conversation 2", "mapping['nowhere']", "not in 'mapping'"]),
}


@pytest.mark.parametrize("kind", sorted(BAD_CHATGPT))
def test_malformed_chatgpt_export_is_refused_whole_with_where(vault: Path, tmp_path: Path,
                                                              kind: str) -> None:
    make, names = BAD_CHATGPT[kind]
    f = tmp_path / "conversations.json"
    f.write_bytes(make())
    before = hashes(vault)
    code, _out, err = kept_import(vault, f)
    assert code == 2, err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "Nothing was imported" in lines[0], lines
    for name in names:
        assert name in lines[0], (name, lines[0])
    assert hashes(vault) == before  # conversation 1 was good, and was not written either


def test_byte_offset_names_where_the_conversation_starts(tmp_path: Path) -> None:
    from app.services.import_formats import scan
    from app.services.importer import ImportInvalid
    good = json.dumps(_conv(1))
    f = tmp_path / "conversations.json"
    bad = json.dumps(_conv(2, mapping=[], title="Caf\u00e9 \u2615"), ensure_ascii=False)
    text = "[" + good + ",\n  " + bad + "]"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(ImportInvalid) as exc:
        scan(f)
    at = len(text[:text.index(bad)].encode("utf-8"))
    assert at == len(good) + 5
    assert f"conversation 2 (byte {at:,})" in exc.value.user_message
    assert "'mapping' must be an object, not an array" in exc.value.user_message


def test_malformed_claude_and_notes_refused_whole(vault: Path, tmp_path: Path) -> None:
    conv = json.loads(CLAUDE.read_text())
    conv[1]["chat_messages"][1]["created_at"] = "not a time"
    f = tmp_path / "conversations.json"
    f.write_text(json.dumps(conv))
    notes = tmp_path / "notes"
    shutil.copytree(NOTES, notes)
    (notes / "bad.md").write_text("---\ndate: someday\n---\nhello\n")
    before = hashes(vault)
    code, _out, err = kept_import(vault, f)
    assert code == 2 and "conversation 2 (byte " in err and "chat_messages[1]" in err, err
    code, _out, err = kept_import(vault, notes)
    assert code == 2 and "bad.md: front matter 'date'" in err, err
    assert hashes(vault) == before


def test_window_read_import_reads_every_format() -> None:
    """``Vault.read_import`` (the window's Import) gets the new formats too."""
    from app.facade import Vault
    assert len(Vault.read_import(CHATGPT)) == 7
    assert len(Vault.read_import(CLAUDE)) == 5
    assert len(Vault.read_import(NOTES / "porto.md")) == 1


def test_zip_archive_is_named(vault: Path, tmp_path: Path) -> None:
    f = tmp_path / "export.zip"
    import zipfile
    with zipfile.ZipFile(f, "w") as z:
        z.write(CHATGPT, "conversations.json")
    code, _out, err = kept_import(vault, f)
    assert code == 2 and "unzip it" in err


# --- memory: the export is streamed ---------------------------------------------------------

def write_chatgpt_export(path: Path, megabytes: float, *, turns_per_conv: int = 40,
                         words: int = 60) -> int:
    """A generated ChatGPT export of about ``megabytes``, written conversation by
    conversation; returns the number of turns in it. Used by bench/import_formats.py too."""
    filler = " ".join(f"word{i % 97}" for i in range(words))
    target = int(megabytes * 1024 * 1024)
    n = written = 0
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("[")
        c = 0
        while written < target:
            mapping: dict[str, object] = {"root": {"id": "root", "message": None,
                                                   "parent": None, "children": ["m0"]}}
            parent = "root"
            for k in range(turns_per_conv):
                mid = f"m{k}"
                mapping[mid] = {"id": mid, "parent": parent,
                                "children": [f"m{k + 1}"] if k + 1 < turns_per_conv else [],
                                "message": {"id": mid, "author": {"role": ("user", "assistant")
                                                                  [k % 2]},
                                            "create_time": 1.7e9 + c * 1000 + k,
                                            "content": {"content_type": "text",
                                                        "parts": [f"c{c} t{k} {filler}"]},
                                            "metadata": {}, "recipient": "all"}}
                parent = mid
            conv = {"title": f"Chat {c}", "create_time": 1.7e9 + c * 1000,
                    "mapping": mapping, "current_node": parent, "id": f"conv-{c}"}
            chunk = ("," if c else "") + json.dumps(conv)
            fh.write(chunk)
            written += len(chunk)
            n += turns_per_conv
            c += 1
        fh.write("]")
    return n


_CHILD = textwrap.dedent("""
    import json, sys, threading, time
    from pathlib import Path
    import psutil
    from app.services.import_formats import scan, iter_turns
    path = Path(sys.argv[1])
    warm = Path(sys.argv[2])  # a small export first: imports and caches are not the file
    list(iter_turns(warm, scan(warm).format))
    proc = psutil.Process()
    base = proc.memory_info().rss
    peak = base
    stop = threading.Event()
    def watch():
        global peak
        while not stop.is_set():
            peak = max(peak, proc.memory_info().rss)
            time.sleep(0.005)
    threading.Thread(target=watch, daemon=True).start()
    plan = scan(path)
    n = sum(1 for _ in iter_turns(path, plan.format))
    stop.set()
    peak = max(peak, proc.memory_info().rss)
    print(json.dumps({"turns": n, "planned": plan.turns, "growth": peak - base}))
""")


def _peak_growth(path: Path) -> dict[str, int]:
    root = ROOT
    r = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(CHATGPT)],
                       capture_output=True,
                       text=True, cwd=root, timeout=600)
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))


@pytest.mark.parametrize("megabytes", [8, pytest.param(30, marks=pytest.mark.slow)])
def test_chatgpt_export_is_read_in_bounded_memory(tmp_path: Path, megabytes: int) -> None:
    """Both passes over a generated export, in a child process: peak RSS growth stays well
    below the file's size (a ``json.load`` of it costs several times the size)."""
    f = tmp_path / "conversations.json"
    n = write_chatgpt_export(f, megabytes)
    size = f.stat().st_size
    got = _peak_growth(f)
    assert got["turns"] == got["planned"] == n
    assert got["growth"] < size / 4, (got, size)  # measured: 1.5 MB at 2 MB and at 30 MB


# --- what is left out is said (issue 22 item 7) ---------------------------------------------

def test_every_skipped_chatgpt_message_is_counted_by_kind(vault: Path) -> None:
    """The fixture's custom instructions, the tool call and the tool's message and the system
    message: each named in the report, and the import goes on."""
    code, out, err = kept_import(vault, CHATGPT)
    assert code == 0, err
    lines = [line.strip() for line in out.splitlines()[1:]]
    assert lines == ["1 system messages skipped.", "1 custom instructions skipped.",
                     "1 assistant calls to tools skipped.", "1 tool messages skipped."], out


def test_an_export_of_images_only_says_so_instead_of_nothing(vault: Path, tmp_path: Path
                                                            ) -> None:
    conv = [{"id": "c1", "title": "Photos", "create_time": T, "current_node": "m2",
             "mapping": {
                 "root": {"id": "root", "message": None, "parent": None, "children": ["m1"]},
                 "m1": {"id": "m1", "parent": "root", "children": ["m2"], "message": {
                     "id": "m1", "author": {"role": "user"}, "create_time": T,
                     "content": {"content_type": "multimodal_text", "parts": [
                         {"content_type": "image_asset_pointer", "asset_pointer": "x"}]}}},
                 "m2": {"id": "m2", "parent": "m1", "children": [], "message": {
                     "id": "m2", "author": {"role": "user"}, "create_time": T + 1,
                     "content": {"content_type": "multimodal_text", "parts": [
                         {"content_type": "image_asset_pointer", "asset_pointer": "y"},
                         {"content_type": "image_asset_pointer", "asset_pointer": "z"}]}}}}}]
    f = tmp_path / "conversations.json"
    f.write_text(json.dumps(conv))
    code, out, err = kept_import(vault, f)
    assert code == 0, err
    assert "Imported 0 turns" in out
    assert "2 messages with images or files only skipped." in out, out


def test_links_in_a_notes_folder_are_skipped_and_named_whatever_they_point_to(
        vault: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    shutil.copytree(NOTES, notes)
    outside = tmp_path / "outside.md"
    outside.write_text("a note outside the folder")
    (notes / "dangling.md").symlink_to(tmp_path / "gone.md")
    (notes / "elsewhere.md").symlink_to(outside)
    (notes / "linked-dir").symlink_to(tmp_path)
    (notes / "empty.md").write_text("  \n")
    code, out, err = kept_import(vault, notes)
    assert code == 0, err  # one dangling link used to refuse the whole folder
    assert "Imported 4 turns from 4 conversations" in out
    assert "1 dangling links skipped: dangling.md." in out, out
    assert "2 links (Kept does not follow them) skipped: linked-dir/, elsewhere.md." in out
    assert "1 hidden files skipped: .hidden.md." in out
    assert "1 files that are not notes (.md, .markdown, .txt) skipped: readme.rst." in out
    assert "1 empty notes skipped: empty.md." in out
    assert "outside the folder" not in " ".join(t[2] for t in turns(vault))


def test_the_window_reports_what_it_skipped(tmp_path: Path) -> None:
    """``app.transfer.import_file`` (File > Import) carries the same counts."""
    from app.facade import Vault
    from app.transfer import import_file
    from storage.crypto import KdfParams
    v = Vault.create(tmp_path / "v", PW, kdf=KdfParams(m=65_536, t=3, p=4), load_model=False,
                     threaded=False, use_chroma=False).vault
    try:
        done = import_file(v, CHATGPT)
    finally:
        v.lock()
    kinds = {s.what: s.count for s in done.report.skipped}
    assert kinds.get("tool messages") == 1 and kinds.get("assistant calls to tools") == 1
