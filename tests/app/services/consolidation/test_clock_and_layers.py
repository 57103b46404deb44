"""Issue 13 for consolidation: every date it writes comes from the vault's injected clock
(``time.time()`` dated review requests, stored LLM replies and undone runs by the wall
clock, whatever clock the vault was given), its services run no SQL and import no storage,
and the SQLite variable chunk is named in one place."""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from app import ports
from app.api import Turn
from app.clock import parse_iso
from app.facade import Vault
from tests import ROOT
from tests.app.services.consolidation.fake_llm import FakeLlm, facts_reply, llm_vault, raw
from tests.inside import inside

NOW = parse_iso("2031-03-04T05:06:07Z")  # far from the wall clock on any test machine
PW = "pw-clock"
PACKAGE = ROOT / "app" / "services" / "consolidation"


@pytest.fixture
def vault(vault_dir: Path, fast_kdf: object, fake: FakeLlm) -> Iterator[Vault]:
    v = llm_vault(vault_dir, PW, fast_kdf, NOW, fake)
    yield v
    if not v.locked:
        v.lock()


def _one(v: Vault, sql: str) -> object:
    return inside(v).db.read(lambda c: c.execute(sql).fetchone()[0])


def test_review_requests_llm_replies_and_undo_are_dated_by_the_vault_clock(
        vault: Vault, fake: FakeLlm) -> None:
    vault.import_turns([Turn("s", "Sam", "I live in Lisbon now.",
                             parse_iso("2026-06-01T10:00:00Z"), "t1")])
    episode = int(_one(vault, "SELECT id FROM memory WHERE store = 'episodic'"))  # type: ignore[call-overload]
    fake.script(facts_reply([{"subject": "Sam", "predicate": "lives_in", "object": "Lisbon",
                              "statement": "Sam lives in Lisbon", "category": "place",
                              "confidence": 0.9, "store": "semantic", "change": False,
                              "source_ids": [episode]}]))
    vault.consolidate(steps=("extract",))
    vault.import_turns([Turn("s", "Sam", "Forget where I live.",
                             parse_iso("2026-06-02T10:00:00Z"), "t2")])
    fake.script(facts_reply([], deletes=[{"memory_id": None, "statement": "Sam lives in Lisbon",
                                          "reason": "user asked"}]))
    vault.consolidate(steps=("extract",))
    (item,) = vault.contradictions()
    assert item.kind == "review" and item.created_at == NOW

    vault.import_turns([Turn("s", "Sam", "My favorite book is Dune.",
                             parse_iso("2026-06-03T10:00:00Z"), "b1")])
    fake.script(raw("this is not json"), raw('{"facts": [{"subject": 7}]}'))
    run = vault.consolidate(steps=("extract",)).value
    assert _one(vault, "SELECT count(*) FROM llm_reply") == 2
    assert _one(vault, "SELECT min(at) FROM llm_reply") == NOW
    assert _one(vault, "SELECT max(at) FROM llm_reply") == NOW

    vault.undo_run(run.run_id)
    assert _one(vault, f"SELECT undone_at FROM run WHERE id = {int(run.run_id)}") == NOW


# --- layering ----------------------------------------------------------------------------

def _sources() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(PACKAGE.glob("*.py"))}


def test_the_consolidation_services_run_no_sql_and_import_no_storage() -> None:
    sources = _sources()
    assert {"pipeline.py", "inbox.py", "runlog.py", "service.py"} <= set(sources)
    for name, text in sources.items():
        assert ".execute(" not in text and ".executemany(" not in text, name
        assert "time.time(" not in text, name  # dates come from the injected clock
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("storage"), (name, node.module)
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("storage") for a in node.names), name


def test_the_pipeline_dispatches_from_its_step_table() -> None:
    text = _sources()["pipeline.py"]
    assert 'getattr(self, f"_step_' not in text
    from app.services.consolidation.pipeline import STEP_LIST, STEPS, Pipeline, job_steps
    assert tuple(inspect.signature(Pipeline.__init__).parameters)[1:] == (
        "db", "clock", "index", "ingest", "rows", "runlog", "inbox")
    assert STEPS == ("extract", "entities", "links", "similar", "outcomes", "procedures",
                     "merge", "summaries", "statistics", "decay", "scores", "synthesis")
    # Each step carries its schedule: the jobs' step lists are read from the one list.
    assert all(s.jobs for s in STEP_LIST)
    assert job_steps("heartbeat") == ("extract", "entities", "links")
    assert job_steps("consolidation") == ("extract", "entities", "links", "similar",
                                          "outcomes", "procedures", "merge", "summaries",
                                          "statistics")
    assert job_steps("decay") == ("decay", "scores")
    assert job_steps("synthesis") == ("statistics", "synthesis")
    with pytest.raises(ValueError):
        job_steps("hourly")


@pytest.mark.parametrize(("module", "protocol"), [
    ("storage.consolidation_rows", ports.ConsolidationRows),
    ("storage.runlog", ports.RunLogRows),
    ("storage.inbox", ports.InboxRows),
    ("storage.agents", ports.AgentRows),
])
def test_storage_modules_have_every_function_of_their_port(module: str,
                                                           protocol: type) -> None:
    import importlib
    mod = importlib.import_module(module)
    wanted = [n for n, v in vars(protocol).items()
              if not n.startswith("_") and (callable(v) or isinstance(v, property))]
    assert wanted
    for name in wanted:
        assert hasattr(mod, name), f"{module} lacks {name}"
        spec = getattr(protocol, name)
        if callable(spec):
            want = list(inspect.signature(spec).parameters)[1:]  # without self
            assert list(inspect.signature(getattr(mod, name)).parameters) == want, name


def test_the_sqlite_variable_chunk_is_named_once() -> None:
    from storage.batching import SQL_VARIABLES
    assert SQL_VARIABLES < 999  # SQLite's historical limit of bound parameters
    literal = re.compile(r"range\(0, len\([^)]*\), \d+\)|_chunk\w*\([^)]*, \d+\)|"
                         r"def _?chunk\w*\([^)]*= *\d+|_CHUNK = \d+")
    for folder in ("storage", "app"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "batching.py":
                continue
            assert not literal.search(path.read_text()), path
