"""The sync journal on a real vault (issue 29, step 2): off by default and silent; on, a
remember becomes a memory.create and a forget a content-free forget that also purges the
journal."""

from __future__ import annotations

from typing import Any

from app.domain.memory import Draft, Store
from app.facade import Vault
from app.sync.merge import fold
from app.sync.ops import Forget, Gid, MemoryCreate, parse_ops
from tests.app.conftest import remember
from tests.inside import inside

SYNC_TABLES = ("sync_gids", "sync_ops", "sync_forgotten", "sync_clock")


def _counts(v: Vault) -> dict[str, int]:
    return inside(v).db.read(lambda c: {t: c.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                                        for t in SYNC_TABLES})


def _journal(v: Vault) -> Any:
    j = v._sync_journal()
    assert j is not None
    return j


def test_off_by_default_nothing_is_journaled(vault: Vault) -> None:
    assert vault.setting("sync.journal") is False
    mid = remember(vault, "Sam moved to Lisbon")
    vault.forget(vault.forget_plan(ids=[mid]))
    assert _counts(vault) == dict.fromkeys(SYNC_TABLES, 0)
    assert vault._sync_journal() is None


def test_remember_and_forget_write_ops_and_the_forget_carries_no_content(vault: Vault) -> None:
    vault.set_setting("sync.journal", True)
    gone = remember(vault, "Ana's test results came back on Tuesday")
    kept = remember(vault, "Sam likes green tea", Store.SEMANTIC, session="s1", ref="r1")
    again = vault.remember(Draft(text="Sam likes green tea", store=Store.SEMANTIC,
                                 session="s1", ref="r1"))
    assert again.value == kept  # saved before: no second op
    journal = _journal(vault)
    ops = parse_ops(journal.unsent())
    assert [o.kind for o in ops] == ["memory.create", "memory.create"]
    assert [o.seq for o in ops] == [1, 2] and ops[0].hlc < ops[1].hlc
    first, second = (o.body for o in ops)
    assert isinstance(first, MemoryCreate) and isinstance(second, MemoryCreate)
    assert first.text == "Ana's test results came back on Tuesday" and first.store == "episodic"
    assert (second.store, second.session, second.ref) == ("semantic", "s1", "r1")
    gids = journal.gids_of([gone, kept])
    assert gids == {gone: first.gid, kept: second.gid} and first.gid != second.gid

    vault.forget(vault.forget_plan(ids=[gone]))
    after = parse_ops(journal.unsent())
    # The unsent create of what went is gone from the journal; a forget of its gid remains.
    assert [o.kind for o in after] == ["memory.create", "forget"]
    forget = after[1].body
    assert isinstance(forget, Forget) and forget.gids == (first.gid,)
    assert after[1].to_dict()["body"] == {"gids": [first.gid]}
    assert journal.forgotten() == {first.gid}
    assert not journal.should_write(ops[0])  # a replay of the create is never written again
    assert journal.should_write(ops[1])
    dump = inside(vault).db.read(lambda c: repr([tuple(r) for t in SYNC_TABLES
                                                 for r in c.execute(f"SELECT * FROM {t}")]))
    assert "Ana" not in dump and "Tuesday" not in dump
    # Another device folding everything this one ever wrote holds only what stayed.
    state = fold([*ops, *after])
    assert set(state.items) == {second.gid} and state.forgotten == {first.gid}


def test_sent_ops_leave_the_journal_and_the_clock_survives_a_new_journal(vault: Vault) -> None:
    vault.set_setting("sync.journal", True)
    remember(vault, "Dentist on the 4th")
    journal = _journal(vault)
    (op,) = parse_ops(journal.unsent())
    journal.mark_sent([op.id])
    assert journal.unsent() == []
    vault._sync = None  # as after a restart: everything is read back from the vault
    remember(vault, "Dentist moved to the 5th")
    (nxt,) = parse_ops(_journal(vault).unsent())
    assert nxt.device == op.device and nxt.seq == op.seq + 1 and nxt.hlc > op.hlc
    assert _journal(vault).device() == op.device


def test_a_memory_derived_from_a_forgotten_one_is_not_journaled(vault: Vault) -> None:
    vault.set_setting("sync.journal", True)
    src = remember(vault, "Long call with Ana about her move")
    journal = _journal(vault)
    (g,) = journal.gids_of([src]).values()
    journal.record_forget([Gid(g)])  # forgotten on another device, applied here
    derived = remember(vault, "Summary of the call", derived_from=(src,))
    assert journal.gids_of([derived]) == {}  # never named, never sent
    assert journal.record_create(vault.get(derived), (src,)) is None
    # The unsent create of the source went with the forget; only the forget is left.
    assert [o.kind for o in parse_ops(journal.unsent())] == ["forget"]


def test_a_memory_the_op_schema_cannot_carry_is_still_remembered(
        vault: Vault, caplog: Any) -> None:
    vault.set_setting("sync.journal", True)
    trigger = "when " + "the kettle boils " * 100  # longer than an op's label allows
    mid = vault.remember(Draft(text="Make green tea", store=Store.PROCEDURAL,
                               extra={"kind": "procedure", "trigger": trigger})).value
    assert vault.get(mid).extra["trigger"] == trigger  # saved, and no error
    assert _journal(vault).unsent() == [] and _journal(vault).gids_of([mid]) == {}
    assert "not journaled" in caplog.text and "kettle" not in caplog.text
