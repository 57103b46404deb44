"""The ``kept`` CLI against a real vault: in-process (``app.cli.main``, as a subprocess would
run it: the environment, a stdin that is no terminal, the exit code), with one real subprocess
for the entry point itself. tests/app/cli/test_bad_input.py runs more commands as subprocesses
where the process is the point (bytes in argv, a closed pipe)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import ROOT
from tests.app.cli.conftest import PW, kept_in_process

pytestmark = pytest.mark.usefixtures("shared_model")
kept = kept_in_process


def kept_subprocess(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, KEPT_PASSWORD=PW)
    return subprocess.run([sys.executable, "-m", "app.cli", "--vault", str(vault), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def initialised(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ``kept init`` per module; each test gets a copy (Argon2id once, not per test)."""
    folder = tmp_path_factory.mktemp("cli") / "vault"
    r = kept(folder, "init", "--kdf-memory-mib", "64")
    assert r.returncode == 0, r.stderr
    return folder


@pytest.fixture
def vault(initialised: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "vault"
    shutil.copytree(initialised, folder)
    return folder


def test_entry_point_in_a_fresh_process(vault: Path) -> None:
    """``python -m app.cli`` itself: the model found from KEPT_MODEL_DIR in a new process, the
    exit code of a refused command as the process's own."""
    r = kept_subprocess(vault, "status", "--json")
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert st["model_found"] is True and st["semantic_search"] is True
    r = kept_subprocess(vault, "remember", "x", "--store", "nowhere")
    assert r.returncode == 2 and "Unknown store" in r.stderr


def test_init_reports_kdf_and_status_json(vault: Path) -> None:
    r = kept(vault, "status", "--json")
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert len(st["vault_id"]) == 32
    assert st["kdf"] == {"alg": "argon2id", "version": 0x13, "m_kib": 65536, "t": 3, "p": 4}
    assert st["totals"]["episodic"] == 0
    from storage.migrations import migration_names
    assert st["schema_version"] == migration_names()[-1]
    assert st["model_found"] is True and st["semantic_search"] is True


def test_status_names_the_stores_as_the_window_does(vault: Path) -> None:
    """Issue 25 item 5 (plain words in the CLI too): the stores by their people-names, the
    counts those of ``--json``."""
    from app import words
    totals = json.loads(kept(vault, "status", "--json").stdout)["totals"]
    r = kept(vault, "status")
    assert r.returncode == 0, r.stderr
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("Memories")]
    said = dict(part.rsplit(" ", 1) for part in line.removeprefix("Memories").strip().split(", "))
    assert said == {words.store_name(k): str(v) for k, v in totals.items()}
    assert "Facts" in said and "Conversation" in said
    assert not any("_" in name or name.islower() for name in said), line


def test_missing_vault_is_named_before_any_password_prompt(tmp_path: Path) -> None:
    folder = tmp_path / "nowhere"
    r = kept(folder, "recall", "anything", password=None, input="")
    assert r.returncode == 2
    assert r.stderr.strip() == (f"kept: No vault at {folder}. Create one with `kept init`, or "
                                "name another folder with --vault.")
    assert not folder.exists()


def test_init_refuses_existing_vault(vault: Path) -> None:
    before = hashes(vault)
    r = kept(vault, "init", "--kdf-memory-mib", "64")
    assert r.returncode == 2
    assert "already exists" in r.stderr
    assert hashes(vault) == before


def test_init_with_default_kdf_calibrates_within_policy(tmp_path: Path) -> None:
    r = kept(tmp_path / "v", "init", "--recovery-code")
    assert r.returncode == 0, r.stderr
    assert "Recovery code" in r.stdout
    kf = json.loads((tmp_path / "v" / "vault.key.json").read_text())
    assert kf["kdf"]["m"] >= 65536 and kf["kdf"]["t"] >= 3 and kf["kdf"]["p"] == 4
    assert "wrap_recovery" in kf


def test_wrong_password_exit_2_one_line_nothing_changed(vault: Path) -> None:
    assert kept(vault, "remember", "a private thing").returncode == 0
    before = hashes(vault)
    r = kept(vault, "status", password="not the password")
    assert r.returncode == 2
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "Wrong password" in lines[0]
    assert hashes(vault) == before


def test_password_file_and_missing_password(vault: Path, tmp_path: Path) -> None:
    pwfile = tmp_path / "pw"
    pwfile.write_text(PW + "\n")
    assert kept(vault, "--password-file", str(pwfile), "status", password=None).returncode == 0
    r = kept(vault, "status", password=None, input="")
    assert r.returncode == 2 and "No password" in r.stderr


def test_passwd_rewraps_only(vault: Path) -> None:
    kept(vault, "remember", "something to keep")
    db_before = hashlib.sha256((vault / "vault.db").read_bytes()).hexdigest()
    r = kept(vault, "passwd", env={"KEPT_NEW_PASSWORD": "a brand new password"})
    assert r.returncode == 0, r.stderr
    assert hashlib.sha256((vault / "vault.db").read_bytes()).hexdigest() == db_before
    assert kept(vault, "status").returncode == 2
    assert kept(vault, "status", password="a brand new password").returncode == 0


def test_rotate_key_keeps_data(vault: Path) -> None:
    kept(vault, "remember", "the blue door")
    db_before = hashlib.sha256((vault / "vault.db").read_bytes()).hexdigest()
    assert kept(vault, "rotate-key").returncode == 0
    assert hashlib.sha256((vault / "vault.db").read_bytes()).hexdigest() != db_before
    r = kept(vault, "recall", "blue door", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["hits"][0]["text"] == "the blue door"


def test_remember_prints_id_and_recall_finds_it(vault: Path) -> None:
    r = kept(vault, "remember", "Ana's birthday is on July 3", "--store", "semantic",
             "--ref", "note-1")
    assert r.returncode == 0, r.stderr
    mid = int(r.stdout.strip())
    kept(vault, "remember", "I went running by the river", "--at", "2026-05-01T08:00:00Z")
    r = kept(vault, "recall", "when is Ana's birthday", "--json")
    hits = json.loads(r.stdout)["hits"]
    assert hits[0]["id"] == mid and hits[0]["store"] == "semantic"
    assert hits[0]["refs"] == ["note-1"]


def test_remember_rejects_unknown_store(vault: Path) -> None:
    r = kept(vault, "remember", "x", "--store", "nowhere")
    assert r.returncode == 2 and "Unknown store" in r.stderr


def _write_turns(path: Path, turns: list[dict[str, str]]) -> None:
    path.write_text("\n".join(json.dumps(t) for t in turns) + "\n")


TURNS = [
    {"session": "s1", "speaker": "Sam", "text": "I adopted a greyhound called Pixel",
     "at": "2026-03-01T10:00:00Z", "ref": "t1"},
    {"session": "s1", "role": "assistant", "text": "What a lovely name!",
     "at": "2026-03-01T10:00:10Z", "ref": "t2"},
    {"session": "s2", "speaker": "Sam", "text": "Pixel hates thunderstorms",
     "at": "2026-03-08T10:00:00Z", "ref": "t3"},
]


def test_import_is_idempotent_and_recall_returns_refs(vault: Path, tmp_path: Path) -> None:
    f = tmp_path / "turns.jsonl"
    _write_turns(f, TURNS)
    r = kept(vault, "import", str(f))
    assert r.returncode == 0, r.stderr
    assert "Imported 3 turns from 2 conversations" in r.stdout
    r = kept(vault, "import", str(f))
    assert "Imported 0 turns" in r.stdout and "3 already present" in r.stdout
    st = json.loads(kept(vault, "status", "--json").stdout)
    assert st["totals"]["short_term"] == 3 and st["totals"]["episodic"] == 3
    r = kept(vault, "recall", "what is the dog called", "--json", "--now",
             "2026-04-01T00:00:00Z")
    hits = json.loads(r.stdout)["hits"]
    assert hits[0]["refs"] == ["t1"]
    assert hits[0]["store"] == "episodic"


def test_import_malformed_reports_lines_and_writes_nothing(vault: Path, tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    lines = [json.dumps(TURNS[0]), "{not json", json.dumps({"session": "s", "text": "x"}),
             json.dumps(TURNS[2]), json.dumps({**TURNS[1], "at": "yesterday-ish"})]
    f.write_text("\n".join(lines) + "\n")
    before = hashes(vault)
    r = kept(vault, "import", str(f))
    assert r.returncode == 2
    assert "line 2" in r.stderr and "line 3" in r.stderr and "line 5" in r.stderr
    assert "line 1:" not in r.stderr and "line 4" not in r.stderr
    assert "Nothing was imported" in r.stderr
    assert hashes(vault) == before


def test_recall_batch_format(vault: Path, tmp_path: Path) -> None:
    f = tmp_path / "turns.jsonl"
    _write_turns(f, TURNS)
    kept(vault, "import", str(f))
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"qid": "a", "query": "thunderstorms"}) + "\n"
                 + json.dumps({"qid": "b", "query": "greyhound", "now": "2026-04-01T00:00:00Z"})
                 + "\n")
    r = kept(vault, "recall", "--batch", str(q), "--json")
    assert r.returncode == 0, r.stderr
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert [o["qid"] for o in out] == ["a", "b"]
    assert out[0]["hits"][0]["refs"] == ["t3"] and out[1]["hits"][0]["refs"] == ["t1"]
    assert set(out[0]["hits"][0]) == {"id", "store", "text", "score", "refs", "currency"}
    scores = [h["score"] for h in out[0]["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_context_and_explain(vault: Path, tmp_path: Path) -> None:
    f = tmp_path / "turns.jsonl"
    _write_turns(f, TURNS)
    kept(vault, "import", str(f))
    r = kept(vault, "context", "Pixel the dog", "--budget", "60", "--json")
    ctx = json.loads(r.stdout)
    assert ctx["used"] <= 60 and ctx["items"]
    assert all(isinstance(i["id"], int) for i in ctx["items"])
    hit = json.loads(kept(vault, "recall", "greyhound", "--json").stdout)["hits"][0]
    r = kept(vault, "explain", str(hit["id"]), "--query", "greyhound", "--json")
    ex = json.loads(r.stdout)
    assert ex["sources"][0]["ref"] == "t1" and ex["sources"][0]["store"] == "short_term"
    assert {"lexical", "dense", "relevance", "composite", "final"} <= set(ex["breakdown"])
    assert ex["routing"]["stores"] == ["short_term", "episodic"]  # salience routing (issue 27)
    said = kept(vault, "explain", str(hit["id"])).stdout
    assert f"Salience {ex['routing']['salience']:.2f} (" in said
    assert "kept as a conversation turn and an event." in said
    assert kept(vault, "explain", "999999").returncode == 4


def test_no_model_lexical_recall_still_works(vault: Path, tmp_path: Path) -> None:
    env = {"KEPT_MODEL_DIR": str(tmp_path / "nowhere"), "HOME": str(tmp_path)}
    kept(vault, "remember", "the spare key is under the flowerpot", env=env)
    r = kept(vault, "recall", "spare key", env=env)
    assert r.returncode == 0
    assert "semantic search is off" in r.stderr
    assert "flowerpot" in r.stdout
    st = json.loads(kept(vault, "status", "--json", env=env).stdout)
    assert st["model_found"] is False and st["semantic_search"] is False


def test_demo_runs(tmp_path: Path) -> None:
    r = kept(tmp_path / "demo", "demo", password=None)
    assert r.returncode == 0, r.stderr
    assert "Ana's birthday is July 3" in r.stdout  # the fact consolidation learned
    assert "(semantic)" in r.stdout
