"""What a forget takes and what it leaves (issue 11, items 6 and 7).

Item 6: a version chain is followed only toward what is derived solely from what goes;
everything else it touches is listed as staying, with a reason. Item 7: a name that appears
only in a session name, a ref or an agent field is matched too, so nothing of it is left in
the decrypted pages.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.api import Turn
from app.clock import FixedClock, parse_iso
from app.domain.memory import Draft, Store
from app.facade import Vault
from storage import lifecycle
from tests.app.services.forget.pagescan import scan_decrypted
from tests.conftest import new_vault
from tests.inside import inside

# The real model, loaded once per session instead of once per vault (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("shared_model")

NOW = parse_iso("2026-06-01T12:00:00Z")
NAME = "Zorblax"


@pytest.fixture
def vault(vault_dir: Path, fast_kdf: object) -> Iterator[Vault]:
    v = new_vault(vault_dir, "pw-scope", threaded=False, clock=FixedClock(NOW), use_chroma=False)
    yield v
    if not v.locked:
        v.lock()


def ids_of(v: Vault, text: str, store: str) -> int:
    row = inside(v).db.read(lambda c: c.execute(
        "SELECT id FROM memory WHERE text = ? AND store = ?", (text, store)).fetchone())
    assert row is not None, (text, store)
    return int(row[0])


def moved(v: Vault) -> dict[str, int]:
    """Sam lived in Lisbon, then moved to Porto: imported and consolidated through the real
    path, so 'Sam lives in Porto' supersedes 'Sam lives in Lisbon'."""
    v.import_turns([
        Turn("s1", "Sam", "I live in Lisbon", parse_iso("2026-03-01T10:00:00Z"), "r1"),
        Turn("s2", "Sam", "I moved to Porto last month", parse_iso("2026-05-01T10:00:00Z"),
             "r2")])
    v.consolidate()
    ids = {
        "lisbon_turn": ids_of(v, "I live in Lisbon", "short_term"),
        "lisbon_episode": ids_of(v, "I live in Lisbon", "episodic"),
        "porto_turn": ids_of(v, "I moved to Porto last month", "short_term"),
        "porto_episode": ids_of(v, "I moved to Porto last month", "episodic"),
        "lisbon_fact": ids_of(v, "Sam lives in Lisbon", "semantic"),
        "porto_fact": ids_of(v, "Sam lives in Porto", "semantic"),
    }
    old = v.get(ids["lisbon_fact"])
    assert old.status.value == "superseded" and old.superseded_by == ids["porto_fact"]
    assert old.valid_until is not None
    return ids


def counts_match(v: Vault, plan: object) -> None:
    """Requirement 14: the plan's rows are exactly the row-count difference."""
    before = inside(v).db.read(lifecycle.table_counts)
    report = v.forget(plan).value
    after = inside(v).db.read(lifecycle.table_counts)
    diff = {t: before[t] - after[t] for t in before if before[t] != after[t]}
    assert diff == plan.rows  # type: ignore[attr-defined]
    assert report.total_rows == plan.total_rows  # type: ignore[attr-defined]


def test_forget_by_query_keeps_the_present(vault: Vault) -> None:
    ids = moved(vault)
    plan = vault.forget_plan(query="Lisbon")
    going = {i.id for i in plan.items}
    assert going == {ids["lisbon_turn"], ids["lisbon_episode"], ids["lisbon_fact"]}
    staying = {i.id: i for i in plan.staying}
    for key in ("porto_fact", "porto_episode", "porto_turn"):
        assert ids[key] in staying, key
        assert staying[ids[key]].reason, key
    assert "newer version" in staying[ids["porto_fact"]].reason
    assert not set(staying) & going
    counts_match(vault, plan)
    assert vault.get(ids["porto_fact"]).status.value == "active"
    assert vault.get(ids["porto_episode"]).text == "I moved to Porto last month"
    assert vault.get(ids["porto_turn"]).text == "I moved to Porto last month"
    assert vault.forget_plan(query="Lisbon").items == ()


def test_forget_the_move_by_id_keeps_the_older_fact(vault: Vault) -> None:
    ids = moved(vault)
    plan = vault.forget_plan(ids=[ids["porto_episode"]])
    roles = {i.id: i.role for i in plan.items}
    assert roles == {ids["porto_episode"]: "matched", ids["porto_turn"]: "source",
                     ids["porto_fact"]: "derived"}
    staying = {i.id: i.reason for i in plan.staying}
    assert ids["lisbon_fact"] in staying and "current again" in staying[ids["lisbon_fact"]]
    assert ids["lisbon_episode"] in staying
    counts_match(vault, plan)
    # Nothing replaces it any more: it is current again, as before the move was learned.
    fact = vault.get(ids["lisbon_fact"])
    assert fact.status.value == "active" and fact.superseded_by is None
    assert fact.valid_until is None
    assert [e.action for e in vault.history(ids["lisbon_fact"]).entries] == ["created"]
    assert ids["lisbon_fact"] in {h.id for h in vault.recall("where does Sam live", k=10,
                                                             touch=False)}


def test_a_typed_correction_outlives_what_it_corrected(vault: Vault) -> None:
    """A correction the person typed is its own source: forgetting the old version, or the
    turn the old version came from, leaves it. The query decides when it says the word too."""
    ids = moved(vault)
    new = vault.correct(ids["porto_fact"], "Sam lives in Braga").value
    plan = vault.forget_plan(ids=[ids["porto_episode"]])
    going = {i.id for i in plan.items}
    assert ids["porto_fact"] in going and new not in going
    assert "typed correction" in {i.id: i.reason for i in plan.staying}[new]
    counts_match(vault, plan)
    assert vault.get(new).status.value == "active"

    other = vault.remember(Draft(text="The spare key is under the blue pot",
                                 store=Store.SEMANTIC)).value
    fixed = vault.correct(other, "The spare key is with the neighbour").value
    assert {i.id for i in vault.forget_plan(ids=[other]).items} == {other}
    plan = vault.forget_plan(query="spare key")  # both versions say it
    assert {i.id for i in plan.items} == {other, fixed}
    # Forgetting the correction still takes the version it replaced (one memory's history).
    plan = vault.forget_plan(ids=[fixed])
    assert {i.id: i.role for i in plan.items} == {fixed: "matched", other: "version"}


def test_a_name_only_in_session_ref_or_agent_is_forgotten(vault: Vault, vault_dir: Path
                                                         ) -> None:
    vault.import_turns([
        Turn(f"{NAME}-chat", "Sam", "The boiler makes a noise", parse_iso("2026-05-01T10:00:00Z"),
             "t1"),
        Turn("s2", "Sam", "The plants need water", parse_iso("2026-05-02T10:00:00Z"),
             f"msg-{NAME.lower()}-2"),
        Turn("s3", "Sam", "Nothing else happened", parse_iso("2026-05-03T10:00:00Z"), "t3")])
    by_agent = vault.remember(Draft(text="prefers green tea", agent=NAME.upper(), ref="x9")).value
    kept_one = vault.remember(Draft(text="likes long walks", agent="helper", ref="x10")).value
    vault.consolidate()
    plan = vault.forget_plan(query=NAME)
    reasons = {i.id: i.reason for i in plan.items}
    assert reasons[by_agent] == "agent"
    assert {"session name", "ref"} <= set(reasons.values())
    assert ids_of(vault, "Nothing else happened", "episodic") not in reasons
    assert kept_one not in reasons
    vault.forget(plan)
    assert vault.forget_plan(query=NAME).items == ()
    for hit in vault.recall("boiler plants water tea", k=20, touch=False):
        assert all(NAME.lower() not in r.lower() for r in hit.refs), hit.refs
    key = bytes(vault._opened.keys.db_key)
    vault.lock()
    assert scan_decrypted(vault_dir, key, NAME) == []


def test_name_scan_of_decrypted_pages(vault_dir: Path, fast_kdf: object) -> None:
    """Requirement 13(b) for the fields of item 7, on the vault folder itself."""
    v = Vault.create(vault_dir, "pw-scope", kdf=fast_kdf, threaded=False,
                     clock=FixedClock(NOW), use_chroma=False).vault
    v.import_turns([Turn(f"{NAME}-chat", "Sam", "The boiler makes a noise",
                         parse_iso("2026-05-01T10:00:00Z"), f"{NAME}-1"),
                    Turn("s2", "Ana", "The plants need water", parse_iso("2026-05-02T10:00:00Z"),
                         "t2")])
    v.remember(Draft(text="prefers green tea", agent=NAME, ref=f"{NAME}-ref"))
    v.consolidate()
    key = bytes(v._opened.keys.db_key)
    v.forget(v.forget_plan(query=NAME))
    assert v.forget_plan(query=NAME).items == ()
    v.lock()
    assert scan_decrypted(vault_dir, key, NAME) == []


def test_default_agent_and_like_wildcards_match_nothing_extra(vault: Vault) -> None:
    """'global' is the built-in agent, not a name the person gave: forgetting 'glob' must not
    list every memory. And '%' or '_' in a query are characters, not wildcards."""
    a = vault.remember(Draft(text="the cat sleeps", store=Store.SEMANTIC,
                             extra={"subject": "axb", "object": "cat"})).value
    assert vault.forget_plan(query="glob").items == ()
    assert vault.forget_plan(query="a_b").items == ()
    assert vault.forget_plan(query="%").items == ()
    assert {i.id for i in vault.forget_plan(query="axb").items} == {a}


def test_metadata_matches_fold_case_beyond_ascii(vault: Vault) -> None:
    vault.import_turns([Turn("Zoë-chat", "Sam", "The boiler makes a noise",
                             parse_iso("2026-05-01T10:00:00Z"), "t1")])
    plan = vault.forget_plan(query="ZOË")
    assert {i.reason for i in plan.items if i.role == "matched"} == {"session name"}
    assert len(plan.items) == 2  # the turn and its episode


def test_dialog_lists_what_stays_with_reasons(qtbot: object, vault_dir: Path,
                                              fast_kdf: object) -> None:
    """The forget dialog shows the staying memories, each with its reason under it."""
    from PySide6.QtCore import QThreadPool
    from PySide6.QtWidgets import QWidget

    from ui.dialogs.forget import GROUP_ROLE, ForgetDialog
    v = Vault.create(vault_dir, "pw-scope", kdf=fast_kdf, threaded=True,
                     clock=FixedClock(NOW), use_chroma=False).vault
    try:
        ids = moved(v)
        host = QWidget()
        qtbot.addWidget(host)  # type: ignore[attr-defined]
        dlg = ForgetDialog(v, None, host, ids=[ids["porto_episode"]])
        qtbot.waitUntil(lambda: dlg.plan is not None, timeout=20_000)  # type: ignore[attr-defined]
        tops = {dlg.tree.topLevelItem(i).data(0, GROUP_ROLE): dlg.tree.topLevelItem(i)
                for i in range(dlg.tree.topLevelItemCount())}
        assert tops["derived"].text(0) == "a fact learned only from it"
        assert tops["derived"].child(0).text(0).endswith("Sam lives in Porto")
        stays = tops["staying"]
        assert stays.text(0) == "What stays, and why"
        lines = {stays.child(i).text(0): stays.child(i).child(0).text(0)
                 for i in range(stays.childCount())}
        lisbon = "Fact: Sam lives in Lisbon"
        assert "current again" in lines[lisbon]
        assert all(lines.values())
        dlg.reject()
    finally:
        QThreadPool.globalInstance().waitForDone(20_000)
        v.lock()
