"""``kept backup create|verify|restore|list`` and forgetting that reaches backups (issue 16,
SECURITY.md requirement 15): the forget plan counts the recorded backups that still hold what
goes; ``--remake-backups`` makes them again without it (a decrypted scan finds nothing), and
the report says so. With an owner running, ``kept backup create`` goes through it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.facade import Vault
from tests.app.cli.conftest import PW, kept_in_process, make_vault
from tests.app.services.forget.pagescan import scan_decrypted, scan_raw
from tests.inside import inside

CANARY = "Quokkacanary5521"
OWN = "backup password of its own"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _decrypted_hits(backup: Path, password: str, where: Path) -> list[str]:
    """Restore the backup into ``where`` and scan the database's decrypted pages."""
    r = kept_in_process(where, "backup", "restore", str(backup), str(where), password=password)
    assert r.returncode == 0, r.stderr
    v = Vault.open(where, password, threaded=False, load_model=False, use_chroma=False)
    try:
        key = bytes(v._opened.keys.db_key)
        assert inside(v).db.read(
            lambda c: c.execute("PRAGMA integrity_check").fetchone()[0]) == "ok"
    finally:
        v.lock()
    return scan_decrypted(where, key, CANARY)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return make_vault(tmp_path / "v", ("Ana moved to Lisbon", "Bruno likes green tea"))


def test_create_verify_restore_list(vault: Path, tmp_path: Path) -> None:
    target = tmp_path / "b.bak"
    r = kept_in_process(vault, "backup", "create", str(target))
    assert r.returncode == 0, r.stderr
    assert "Backed up 2 memories" in r.stdout and "vault's password" in r.stdout
    assert kept_in_process(vault, "backup", "create", str(target)).returncode == 2  # no overwrite
    r = kept_in_process(vault, "backup", "verify", str(target))
    assert r.returncode == 0 and "Backup OK" in r.stdout and "2 memories" in r.stdout, r.stderr
    r = kept_in_process(vault, "backup", "verify", str(target), password="wrong password")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "Wrong password" in r.stderr
    r = kept_in_process(vault, "backup", "restore", str(target), str(vault))
    assert r.returncode == 2 and "never overwrites" in r.stderr
    r = kept_in_process(vault, "backup", "list", "--json")
    assert [b["path"] for b in json.loads(r.stdout)] == [str(target)]
    new = tmp_path / "elsewhere"
    r = kept_in_process(vault, "backup", "restore", str(target), str(new))
    assert r.returncode == 0, r.stderr
    r = kept_in_process(new, "recall", "Lisbon", "--json")
    assert r.returncode == 0 and "Ana moved to Lisbon" in r.stdout
    # `kept restore ID` still un-archives a memory.
    assert kept_in_process(vault, "archive", "1").returncode == 0
    r = kept_in_process(vault, "restore", "1")
    assert r.returncode == 0 and "Restored memory 1" in r.stdout


def test_forget_reaches_backups(vault: Path, tmp_path: Path) -> None:
    old = tmp_path / "before-canary.bak"
    assert kept_in_process(vault, "backup", "create", str(old)).returncode == 0
    assert kept_in_process(vault, "remember", f"my locker code is {CANARY}").returncode == 0
    mine = tmp_path / "mine.bak"
    own = tmp_path / "own.bak"
    assert kept_in_process(vault, "backup", "create", str(mine)).returncode == 0
    r = kept_in_process(vault, "backup", "create", str(own), "--own-password",
                        env={"KEPT_BACKUP_PASSWORD": OWN})
    assert r.returncode == 0 and "its own password" in r.stdout, r.stderr
    # The scanner sees the canary in a backup made before the forget (it works).
    assert _decrypted_hits(mine, PW, tmp_path / "check-before")
    old_sha = _sha(old)

    # Without the flag and without a terminal: the plan names them, nothing is re-made.
    r = kept_in_process(vault, "forget", "Lisbon", "--yes")
    assert r.returncode == 0, r.stderr
    assert "still hold some of it (3)" in r.stdout  # Lisbon is in all three
    assert "still hold what was forgotten (not re-made)" in r.stdout

    r = kept_in_process(vault, "forget", CANARY, "--yes", "--remake-backups", "--json")
    assert r.returncode == 0, r.stderr
    plan_line, report_line = r.stdout.strip().splitlines()
    plan = json.loads(plan_line)["plan"]
    assert sorted(b["path"] for b in plan["backups"]) == sorted([str(mine), str(own)])
    out = json.loads(report_line)
    assert out["report"]["memories"] == 1
    assert sorted(b["path"] for b in out["backups"]) == sorted([str(mine), str(own)])
    assert all(b["ok"] and not b["vault_password"] for b in out["backups"])

    assert _sha(old) == old_sha  # made before the canary: left alone
    assert scan_raw([tmp_path], CANARY) == []
    assert _decrypted_hits(mine, PW, tmp_path / "r-mine") == []
    assert _decrypted_hits(own, OWN, tmp_path / "r-own") == []  # still its own password
    # No temp file beside the backups.
    assert not [p for p in tmp_path.iterdir() if ".kept-" in p.name]


def test_forget_without_backups_is_unchanged(vault: Path) -> None:
    r = kept_in_process(vault, "forget", "Lisbon", "--yes", "--json")
    assert r.returncode == 0, r.stderr
    plan_line, report_line = r.stdout.strip().splitlines()
    assert json.loads(plan_line)["plan"]["backups"] == []
    assert set(json.loads(report_line)) == {"report"}


@pytest.fixture
def owner(vault: Path) -> Iterator[object]:
    from app.ipc.server import OwnerServer
    v = Vault.open(vault, PW, load_model=False, use_chroma=False)
    server = OwnerServer(v)
    server.start()
    try:
        yield server
    finally:
        server.lock_vault()


def test_create_goes_through_the_owner(owner: object, vault: Path, tmp_path: Path) -> None:
    from app.errors import PasswordNeeded
    from app.ipc.client import RemoteVault
    target = tmp_path / "through-owner.bak"
    with pytest.raises(PasswordNeeded):
        RemoteVault.at(vault).backup(target)  # the person's decision: password first
    assert not target.exists()
    r = kept_in_process(vault, "backup", "create", str(target))
    assert r.returncode == 0, r.stderr
    r = kept_in_process(vault, "backup", "list", "--json")
    assert [b["path"] for b in json.loads(r.stdout)] == [str(target)]
    r = kept_in_process(vault, "backup", "verify", str(target))
    assert r.returncode == 0, r.stderr
