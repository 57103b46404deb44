"""SECURITY.md requirement 17: a hypothesis state machine over the real vault.

Rules: add, correct, forget, lock, unlock, change password, restart. After every step the
visible content equals the model and forgotten ids are never visible again. By default one
written sequence through every rule and a few derandomised sequences; 500 random sequences in
the slow group.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from app.domain.memory import Draft, Store
from app.errors import NotFound, WrongKey
from app.facade import Vault
from storage.crypto import KdfParams
from tests.inside import inside

KDF = KdfParams(m=65_536, t=3, p=4)
words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", min_size=3, max_size=30).map(
    lambda s: s.strip() or "blank")


class VaultMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="kept-sm-"))
        self.folder = self.tmp / "vault"
        self.password = "first password"
        self.vault: Vault | None = None
        self.model: dict[int, str] = {}
        self.forgotten: set[int] = set()

    @initialize()
    def create(self) -> None:
        self.vault = Vault.create(self.folder, self.password, kdf=KDF, threaded=False,
                                  load_model=False, use_chroma=False).vault

    def teardown(self) -> None:
        if self.vault is not None and not self.vault.locked:
            self.vault.lock()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def unlocked(self) -> bool:
        return self.vault is not None and not self.vault.locked

    @precondition(lambda self: self.unlocked())
    @rule(text=words, store=st.sampled_from([Store.EPISODIC, Store.SEMANTIC,
                                             Store.PROCEDURAL]))
    def add(self, text: str, store: Store) -> None:
        assert self.vault is not None
        mid = self.vault.remember(Draft(text=text, store=store)).value
        assert mid not in self.forgotten and mid not in self.model
        self.model[mid] = text

    @precondition(lambda self: self.unlocked() and self.model)
    @rule(data=st.data(), text=words)
    def correct(self, data: st.DataObject, text: str) -> None:
        self.correct_one(data.draw(st.sampled_from(sorted(self.model))), text)

    def correct_one(self, old: int, text: str) -> None:
        assert self.vault is not None
        new = self.vault.correct(old, text).value
        del self.model[old]
        self.model[new] = text

    @precondition(lambda self: self.unlocked() and self.model)
    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        self.forget_one(data.draw(st.sampled_from(sorted(self.model))))

    def forget_one(self, mid: int) -> None:
        assert self.vault is not None
        plan = self.vault.forget_plan(ids=[mid])
        self.vault.forget(plan)
        for item in plan.items:  # earlier versions of it go too
            self.model.pop(item.id, None)
            self.forgotten.add(item.id)

    @precondition(lambda self: self.unlocked())
    @rule()
    def lock(self) -> None:
        assert self.vault is not None
        self.vault.lock()

    @precondition(lambda self: not self.unlocked())
    @rule(wrong=st.booleans())
    def unlock(self, wrong: bool) -> None:
        if wrong:
            with pytest.raises(WrongKey):
                Vault.open(self.folder, self.password + "x", threaded=False, load_model=False)
        self.vault = Vault.open(self.folder, self.password, threaded=False, load_model=False,
                                use_chroma=False)

    @precondition(lambda self: self.unlocked())
    @rule(new=st.sampled_from(["second password", "third password", "first password"]))
    def change_password(self, new: str) -> None:
        assert self.vault is not None
        self.vault.change_password(self.password, new)
        self.password = new

    @precondition(lambda self: self.unlocked())
    @rule()
    def restart(self) -> None:
        """The process goes away and a new one opens the vault."""
        assert self.vault is not None
        self.vault.lock()
        self.vault = Vault.open(self.folder, self.password, threaded=False, load_model=False,
                                use_chroma=False)

    @invariant()
    def visible_equals_model(self) -> None:
        if not self.unlocked():
            return
        assert self.vault is not None
        rows = inside(self.vault).db.read(lambda c: c.execute(
            "SELECT id, text FROM memory WHERE status = 'active'").fetchall())
        assert dict(rows) == self.model
        for mid in list(self.forgotten)[:5]:
            with pytest.raises(NotFound):
                self.vault.get(mid)


def test_every_rule_in_one_sequence() -> None:
    """Default suite: one written sequence that takes every rule (a wrong password, a
    correction then a forget of its chain, a restart after a password change), with the
    invariant checked after each step as the machine does."""
    m = VaultMachine()
    try:
        m.create()
        steps = [
            lambda: m.add("lisbon flat", Store.EPISODIC),
            lambda: m.add("allergic to cats", Store.SEMANTIC),
            lambda: m.add("run on saturdays", Store.PROCEDURAL),
            lambda: m.correct_one(min(m.model), "porto flat"),
            m.lock,
            lambda: m.unlock(wrong=True),
            lambda: m.change_password("second password"),
            m.restart,
            lambda: m.forget_one(max(m.model)),  # the correction, and what it corrected
            lambda: m.add("new job in braga", Store.EPISODIC),
            m.lock,
            lambda: m.unlock(wrong=False),
            lambda: m.forget_one(min(m.model)),
        ]
        for step in steps:
            step()
            m.visible_equals_model()
        assert len(m.forgotten) == 3 and len(m.model) == 2
    finally:
        m.teardown()


def test_state_machine_short() -> None:
    """Default suite: a few sequences, derandomised (the same ones every run)."""
    run = VaultMachine.TestCase
    run.settings = settings(max_examples=3, stateful_step_count=10, deadline=None,
                            derandomize=True, database=None,
                            suppress_health_check=list(HealthCheck))
    run().runTest()


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_state_machine_500() -> None:
    run = VaultMachine.TestCase
    run.settings = settings(max_examples=500, stateful_step_count=8, deadline=None,
                            suppress_health_check=list(HealthCheck))
    run().runTest()
