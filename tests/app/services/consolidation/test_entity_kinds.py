"""Entities are typed (issue 23 item 4): a person, a pet, a place, an organisation, a project or
a work (a book, a film, a song), from the words around the name; the migration that allows the
new kinds keeps every entity, its id, scope, summary and mentions. Real vaults, real
consolidation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.clock import FixedClock, parse_iso
from app.services.extract import mentions
from tests.conftest import turns_vault

NOW = parse_iso("2026-05-01T00:00:00Z")


@pytest.mark.parametrize("text, name, kind", [
    ("My dog Biscuit loves the park", "Biscuit", "pet"),
    ("Pepper, our cat, knocked the plant over", "Pepper", "pet"),
    ("We moved to Lisbon last spring", "Lisbon", "place"),
    ("I grew up in Oaxaca", "Oaxaca", "place"),
    ("we walked along Harbour Street", "Harbour Street", "place"),
    ("I started at Northwind Labs today", "Northwind Labs", "company"),
    ("Joined Ironworks Gym on Monday", "Ironworks Gym", "company"),
    ("reading Project Hail Mary now", "Project Hail Mary", "work"),
    ("watched The Bear last night", "The Bear", "work"),
    ("my sister Ana is visiting", "Ana", "person"),
])
def test_names_are_typed_from_the_words_around_them(text: str, name: str, kind: str) -> None:
    assert mentions(text).get(name) == kind, mentions(text)


TURNS = [(f"s{n}", f"2026-04-{n + 1:02d}T10:00:00Z", "user", t) for n, t in enumerate([
    "took my dog Biscuit to the beach", "Biscuit ate my sock again",
    "my dog Biscuit is scared of the hoover", "we moved to Lisbon in March",
    "Lisbon is so sunny", "I love living in Lisbon", "reading Project Hail Mary at night",
    "finished Project Hail Mary, wow", "started Project Hail Mary's sequel? no such thing",
    "my friend Ana came over", "Ana brought wine", "Ana and I went running"])]


def test_consolidation_makes_typed_entities(tmp_path: Path, fast_kdf: Any,
                                           shared_model: None) -> None:
    v = turns_vault(tmp_path / "v", fast_kdf, "pw-kinds", TURNS)
    try:
        v.consolidate(now=NOW)
        kinds = {e.name: e.kind for e in v.entities()}
        assert kinds.get("Biscuit") == "pet" and kinds.get("Lisbon") == "place", kinds
        assert kinds.get("Ana") == "person", kinds
    finally:
        v.lock()


def test_the_migration_keeps_every_entity_and_allows_the_new_kinds(
        vault_dir: Path, fast_kdf: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import storage.migrations as migrations
    from app.facade import Vault
    from tests.inside import inside
    everything = migrations.migration_names
    monkeypatch.setattr(migrations, "migration_names",
                        lambda: [n for n in everything() if n < "0019"])
    v = Vault.create(vault_dir, "pw-mig", kdf=fast_kdf, threaded=False, use_chroma=False,
                     load_model=False, clock=FixedClock(NOW)).vault
    from app.domain.memory import Draft
    mid = int(v.remember(Draft("Biscuit chewed the sofa")).value)

    def old(c: Any) -> None:
        c.execute("INSERT INTO entity (id, kind, name, name_key, summary, created_at, "
                  "updated_at) VALUES (7, 'person', 'Biscuit', 'biscuit', 'a dog', ?, ?)",
                  (NOW, NOW))
        c.execute("INSERT INTO entity_mention (entity_id, memory_id) VALUES (7, ?)", (mid,))
    inside(v).db.write_sync(old)
    v.lock()
    monkeypatch.setattr(migrations, "migration_names", everything)
    v = Vault.open(vault_dir, "pw-mig", threaded=False, use_chroma=False, load_model=False,
                   clock=FixedClock(NOW))
    try:
        rows = inside(v).db.read(lambda c: c.execute(
            "SELECT id, kind, name, summary FROM entity").fetchall())
        assert [tuple(r) for r in rows] == [(7, "person", "Biscuit", "a dog")]
        assert inside(v).db.read(lambda c: c.execute(
            "SELECT memory_id FROM entity_mention WHERE entity_id = 7").fetchone())[0] == mid
        inside(v).db.write_sync(lambda c: c.execute("UPDATE entity SET kind = 'pet' WHERE id = 7"))
        assert inside(v).db.read(lambda c: c.execute(
            "SELECT kind FROM entity WHERE id = 7").fetchone())[0] == "pet"
    finally:
        v.lock()
