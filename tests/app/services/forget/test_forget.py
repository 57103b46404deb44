"""Forget, correct, history, archive: SECURITY.md requirements 13 and 14, DESIGN 8."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
import sqlcipher3

from app.api import Turn
from app.clock import FixedClock, parse_iso
from app.facade import Vault
from app.services.recall import Filters
from storage import lifecycle
from tests.app.services.forget.pagescan import scan_decrypted, scan_raw
from tests.conftest import new_vault
from tests.inside import inside

# The real model, loaded once per session instead of once per vault (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("shared_model")

CANARY = "QuokkaCanary7731"
NOW = parse_iso("2026-06-01T12:00:00Z")


@pytest.fixture
def vault(vault_dir: Path, fast_kdf: object) -> Vault:
    v = new_vault(vault_dir, "pw-forget", threaded=False, clock=FixedClock(NOW), use_chroma=False)
    yield v
    v.lock()


def seed(v: Vault) -> dict[str, int]:
    """A canary in turn text, a speaker name, a fact, an entity name and summary, history."""
    turns = [
        Turn("s1", "Sam", f"My neighbour {CANARY} lent me a ladder", parse_iso("2026-05-01T10:00:00Z"), "r1"),
        Turn("s1", "Sam", "We painted the fence blue", parse_iso("2026-05-01T10:01:00Z"), "r2"),
        Turn("s2", CANARY, "I will need the ladder back on Friday", parse_iso("2026-05-03T10:00:00Z"), "r3"),
    ]
    v.import_turns(turns)
    from app.domain.memory import Draft, Store
    ep = {r[1]: r[0] for r in inside(v).db.read(lambda c: c.execute(
        "SELECT id, ref FROM memory WHERE store = 'episodic'").fetchall())}
    eps = inside(v).db.read(lambda c: c.execute(
        "SELECT m.id FROM memory m JOIN link l ON l.src = m.id WHERE m.store='episodic'"
        " ORDER BY m.id").fetchall())
    first_episode = eps[0][0]
    fact = v.remember(Draft(text=f"{CANARY} is Sam's neighbour", store=Store.SEMANTIC,
                            derived_from=(first_episode,),
                            extra={"subject": CANARY, "predicate": "neighbour_of",
                                   "object": "Sam"})).value
    other = v.remember(Draft(text="Sam likes blue", store=Store.SEMANTIC)).value

    def entity(conn: object) -> int:
        cur = conn.execute(  # type: ignore[attr-defined]
            "INSERT INTO entity (kind, name, name_key, summary, created_at, updated_at) "
            "VALUES ('person', ?, ?, ?, 1, 1)", (CANARY, CANARY.casefold(),
                                                 f"{CANARY} lends tools"))
        eid = int(cur.lastrowid)
        for mid in (first_episode, fact):
            conn.execute("INSERT INTO entity_mention VALUES (?, ?)", (eid, mid))  # type: ignore[attr-defined]
        return eid
    eid = inside(v).db.write_sync(entity)
    return {"episode": first_episode, "fact": fact, "other": other, "entity": eid, **ep}


def sql_hits(v: Vault, canary: str) -> list[str]:
    """Requirement 13(c): every column of every table, FTS5 shadow tables included."""
    hexes = [canary.encode().hex().upper(), canary.encode("utf-16-le").hex().upper()]

    def run(conn: object) -> list[str]:
        hits = []
        tables = [r[0] for r in conn.execute(  # type: ignore[attr-defined]
            "SELECT name FROM sqlite_master WHERE type='table'")]
        for t in tables:
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info(\"{t}\")")]  # type: ignore[attr-defined]
            for col in cols:
                q = (f"SELECT count(*) FROM \"{t}\" WHERE CAST(\"{col}\" AS TEXT) LIKE ? "
                     f"OR hex(\"{col}\") LIKE ? OR hex(\"{col}\") LIKE ?")
                n = conn.execute(q, (f"%{canary}%", f"%{hexes[0]}%", f"%{hexes[1]}%")).fetchone()[0]  # type: ignore[attr-defined]
                if n:
                    hits.append(f"{t}.{col}")
        return hits
    return inside(v).db.read(run)


def test_forget_leaves_no_trace(vault_dir: Path, fast_kdf: object, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Requirement 13 (a)-(f), through plan -> execute -> checkpoint -> lock."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    v = Vault.create(vault_dir, "pw-forget", kdf=fast_kdf, threaded=True, clock=FixedClock(NOW),
                     use_chroma=False).vault
    ids = seed(v)
    canary_vec = inside(v).embedder.embed_one(f"My neighbour {CANARY} lent me a ladder")
    assert sql_hits(v, CANARY), "the seed must be visible before forgetting"
    plan = v.forget_plan(query=CANARY)
    matched = {i.id for i in plan.items}
    assert ids["fact"] in matched and ids["episode"] in matched
    assert ids["other"] not in matched
    assert plan.entity_ids == () and plan.rows["entity"] == 1  # orphaned entity goes too
    report = v.forget(plan).value
    assert report.checkpoint_busy == 0
    # (c) SQL over all columns, (d) FTS MATCH, (e) vector top-k.
    assert sql_hits(v, CANARY) == []
    assert inside(v).db.read(lambda c: c.execute(
        "SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?",
        (f'"{CANARY}"',)).fetchone()[0]) == 0
    top = [i for i, _ in inside(v).index.search_exact(canary_vec, 50)]
    assert not set(top) & matched
    assert v.recall(CANARY, k=20, touch=False) == [] or all(
        h.id not in matched for h in v.recall(CANARY, k=20, touch=False))
    key = bytes(v._opened.keys.db_key)
    v.lock()
    # (a) raw bytes of every file, (b) decrypted pages of db and WAL, (f) temp and caches.
    assert scan_raw([vault_dir, tmpdir], CANARY) == []
    assert scan_decrypted(vault_dir, key, CANARY) == []


def _fts_residue(tmp_path: Path, secure_delete: bool) -> list[str]:
    """The same delete in a bare SQLCipher file, FTS5 secure-delete on or off."""
    folder = tmp_path / ("on" if secure_delete else "off")
    folder.mkdir()
    key = os.urandom(32)
    conn = sqlcipher3.connect(str(folder / "vault.db"), isolation_level=None)
    conn.execute("PRAGMA cipher_log_level = NONE")
    conn.execute(f"PRAGMA key = \"x'{key.hex()}'\"")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA secure_delete = ON")
    conn.execute("CREATE VIRTUAL TABLE memory_fts USING fts5(text, keys, tokenize='porter unicode61')")
    if secure_delete:
        conn.execute("INSERT INTO memory_fts(memory_fts, rank) VALUES ('secure-delete', 1)")
    for i in range(200):
        conn.execute("INSERT INTO memory_fts(rowid, text, keys) VALUES (?, ?, '')",
                     (i, f"filler words number {i} about gardens and kitchens"))
    conn.execute("INSERT INTO memory_fts(rowid, text, keys) VALUES (1000, ?, '')",
                 (f"secret {CANARY} here",))
    conn.execute("DELETE FROM memory_fts WHERE rowid = 1000")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return scan_decrypted(folder, key, CANARY)


def test_scanner_counter_test_finds_fts_residue_without_secure_delete(tmp_path: Path) -> None:
    """Requirement 13 counter-test: the scanner must see what FTS5 leaves without
    secure-delete, and see nothing with it."""
    assert _fts_residue(tmp_path, secure_delete=False) != []
    assert _fts_residue(tmp_path, secure_delete=True) == []


def test_cancel_changes_nothing_and_plan_counts_are_exact(vault_dir: Path, fast_kdf: object
                                                         ) -> None:
    """Requirement 14."""
    v = Vault.create(vault_dir, "pw-forget", kdf=fast_kdf, threaded=False,
                     clock=FixedClock(NOW), use_chroma=False).vault
    ids = seed(v)
    v.lock()
    sha = hashlib.sha256((vault_dir / "vault.db").read_bytes()).hexdigest()
    v = Vault.open(vault_dir, "pw-forget", threaded=False, clock=FixedClock(NOW), use_chroma=False)
    plan = v.forget_plan(ids=[ids["fact"]])
    assert [i.id for i in plan.items if i.role == "matched"] == [ids["fact"]]
    v.lock()  # cancelled: never executed
    assert hashlib.sha256((vault_dir / "vault.db").read_bytes()).hexdigest() == sha

    v = Vault.open(vault_dir, "pw-forget", threaded=False, clock=FixedClock(NOW), use_chroma=False)
    try:
        before = inside(v).db.read(lifecycle.table_counts)
        status_before = v.status().totals
        plan = v.forget_plan(ids=[ids["episode"]])
        roles = {i.id: i.role for i in plan.items}
        # The episode's source turn goes with it, and the fact derived only from it.
        assert roles[ids["episode"]] == "matched" and roles[ids["fact"]] == "derived"
        assert "source" in roles.values()
        report = v.forget(plan).value
        after = inside(v).db.read(lifecycle.table_counts)
        diff = {t: before[t] - after[t] for t in before if before[t] != after[t]}
        assert diff == plan.rows
        assert sum(diff.values()) == plan.total_rows == report.total_rows
        status_after = v.status().totals
        assert sum(status_before.values()) - sum(status_after.values()) == len(plan.items)
    finally:
        v.lock()


def test_keep_sources_and_outdated_plan(vault: Vault) -> None:
    ids = seed(vault)
    plan = vault.forget_plan(ids=[ids["episode"]], include_sources=False)
    assert all(i.store != "short_term" for i in plan.items)
    from app.domain.memory import Draft
    vault.remember(Draft(text="something new arrives meanwhile"))
    from app.services.forget import PlanOutdated
    with pytest.raises(PlanOutdated):
        vault.forget(plan)


def test_a_vector_made_after_the_plan_does_not_outdate_it(vault: Vault) -> None:
    """Issue 28: a remembered memory's vector follows the acknowledgement; a plan made in
    between still runs, and the vector that arrived goes with the memory."""
    ids = seed(vault)
    mid = ids["other"]
    db = inside(vault).db
    row = db.read(lambda c: c.execute("SELECT memory_id, model, dim, vec FROM vector "
                                      "WHERE memory_id = ?", (mid,)).fetchone())
    assert row is not None
    db.write_sync(lambda c: c.execute("DELETE FROM vector WHERE memory_id = ?", (mid,)))
    plan = vault.forget_plan(ids=[mid])
    db.write_sync(lambda c: c.execute(  # what the vector follower writes a moment later
        "INSERT INTO vector (memory_id, model, dim, vec) VALUES (?, ?, ?, ?)", row))
    vault.forget(plan)
    assert db.read(lambda c: c.execute("SELECT count(*) FROM vector WHERE memory_id = ?",
                                       (mid,)).fetchone()[0]) == 0
    assert db.read(lambda c: c.execute("SELECT count(*) FROM memory WHERE id = ?",
                                       (mid,)).fetchone()[0]) == 0


def test_forget_entity_takes_everything_about_them(vault: Vault) -> None:
    ids = seed(vault)
    plan = vault.forget_plan(entity=CANARY)
    assert plan.entity_ids == (ids["entity"],)
    names = {i.id for i in plan.items}
    assert {ids["episode"], ids["fact"]} <= names
    vault.forget(plan)
    assert inside(vault).db.read(
        lambda c: c.execute("SELECT count(*) FROM entity").fetchone()[0]) == 0
    assert sql_hits(vault, CANARY) == []


def test_correct_history_archive_restore(vault: Vault) -> None:
    from app.domain.memory import Draft, Store
    old = vault.remember(Draft(text="I live in Lisbon", store=Store.SEMANTIC)).value
    new = vault.correct(old, "I live in Porto").value
    hits = vault.recall("where do I live", k=5, touch=False)
    assert hits[0].id == new and hits[0].text == "I live in Porto"
    assert all(h.id != old for h in hits)
    m = vault.get(new)
    assert m.user_validated and m.confidence == 1.0
    h = vault.history(new)
    assert [v.text for v in h.versions] == ["I live in Lisbon", "I live in Porto"]
    assert [v.status for v in h.versions] == ["superseded", "active"]
    assert {"superseded", "corrected"} <= {e.action for e in h.entries}
    # Time travel: before the correction, the old version was believed.
    early = vault.recall("where do I live", k=5, touch=False,
                         filters=Filters(as_of=NOW - 1 + 1))
    assert any(x.id in (old, new) for x in early)
    vault.archive(new)
    assert all(x.id != new for x in vault.recall("where do I live", k=5, touch=False))
    assert any(x.id == new for x in vault.recall("where do I live", k=5, touch=False,
                                                 filters=Filters(include_archived=True)))
    vault.restore(new)
    assert vault.recall("where do I live", k=5, touch=False)[0].id == new
    with pytest.raises(Exception, match="already replaced"):
        vault.correct(old, "again")


def test_forgetting_a_corrected_memory_takes_its_old_versions(vault: Vault) -> None:
    from app.domain.memory import Draft, Store
    old = vault.remember(Draft(text=f"{CANARY} owes me ten euros", store=Store.SEMANTIC)).value
    new = vault.correct(old, "Nobody owes me money").value
    plan = vault.forget_plan(ids=[new])
    assert {i.id: i.role for i in plan.items} == {new: "matched", old: "version"}
    vault.forget(plan)
    assert sql_hits(vault, CANARY) == []


# --- the CLI acceptance ------------------------------------------------------------------------

def kept(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """In-process (tests/app/cli/conftest.py): each command unlocks and locks the vault as a
    process would, and the raw scan below reads the files it left."""
    from tests.app.cli.conftest import kept_in_process
    return kept_in_process(folder, *args, password="pw-forget-cli")


def test_cli_forget_acceptance(tmp_path: Path) -> None:
    folder = tmp_path / "v"
    assert kept(folder, "init", "--kdf-memory-mib", "64").returncode == 0
    turns = tmp_path / "t.jsonl"
    turns.write_text("\n".join(json.dumps(t) for t in [
        {"session": "a", "speaker": "Sam", "text": f"the alarm code is {CANARY}",
         "at": "2026-05-01T10:00:00Z", "ref": "x1"},
        {"session": "a", "speaker": "Sam", "text": "the plants need water on Sundays",
         "at": "2026-05-01T10:01:00Z", "ref": "x2"}]))
    assert kept(folder, "import", str(turns)).returncode == 0
    hit = json.loads(kept(folder, "recall", "alarm code", "--json").stdout)["hits"][0]
    assert CANARY in hit["text"]
    before = json.loads(kept(folder, "status", "--json").stdout)["totals"]
    r = kept(folder, "forget", "--id", str(hit["id"]), "--json")
    assert r.returncode == 3  # no terminal, no --yes: plan shown, nothing changed
    plan = json.loads(r.stdout)["plan"]
    assert json.loads(kept(folder, "status", "--json").stdout)["totals"] == before
    r = kept(folder, "forget", "--id", str(hit["id"]), "--yes", "--json")
    assert r.returncode == 0, r.stderr
    after = json.loads(kept(folder, "status", "--json").stdout)["totals"]
    assert sum(before.values()) - sum(after.values()) == plan["memories"] == 2
    hits = json.loads(kept(folder, "recall", CANARY, "--json").stdout)["hits"]
    assert all(CANARY not in h["text"] and "x1" not in h["refs"] for h in hits)
    assert scan_raw([folder], CANARY) == []
