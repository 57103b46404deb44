"""Guard: ``app.facade.Vault`` shows the contract and nothing else (issue 24, item 3).

- Its public members (names without a leading ``_``, on the class and on an open instance) are
  exactly ``VaultAPI``'s plus the constructors ``CONSTRUCTORS``. The parts behind a vault (its
  database, clock, embedder, model folder, vector index, lexicon, recall and consolidation
  services) are private; tests and benchmarks reach them through ``app.facade.internals``
  (``tests/inside.py`` for tests).
- Nothing in ``app/`` (outside ``app/facade.py``) or ``ui/`` calls ``internals(`` or imports
  ``internals`` / ``Internals``: front ends and services go through the contract.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterable
from pathlib import Path

from app.api import VaultAPI
from app.facade import Vault
from app.ports import KdfParams
from tests import ROOT

# Public on Vault, not in VaultAPI: how a vault comes to be (app/bootstrap.py composes it).
CONSTRUCTORS = frozenset({"create", "open"})
FENCED = ("internals", "Internals")
CALL = re.compile(r"\binternals\s*\(")


def _public(names: Iterable[str]) -> set[str]:
    return {n for n in names if not n.startswith("_")}


def _assigned_public(cls: type) -> set[str]:
    """``self.x = ...`` with a public ``x`` anywhere in ``cls``'s own source."""
    out = set()
    for sub in ast.walk(ast.parse(inspect.getsource(cls))):
        targets = (sub.targets if isinstance(sub, ast.Assign)
                   else [sub.target] if isinstance(sub, ast.AnnAssign | ast.AugAssign) else [])
        for t in targets:
            for leaf in ast.walk(t):
                if (isinstance(leaf, ast.Attribute) and isinstance(leaf.value, ast.Name)
                        and leaf.value.id == "self" and not leaf.attr.startswith("_")):
                    out.add(leaf.attr)
    return out


def reaches_in(source: str) -> list[str]:
    """Where ``source`` calls ``internals(`` or imports the fence's names."""
    found = [f"line {source.count(chr(10), 0, m.start()) + 1}: internals("
             for m in CALL.finditer(source)]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "app.facade":
            found += [f"line {node.lineno}: imports {a.name}" for a in node.names
                      if a.name in FENCED]
        elif isinstance(node, ast.Attribute) and node.attr in FENCED:
            found.append(f"line {node.lineno}: .{node.attr}")
    return found


def test_vault_public_members_are_the_contract_and_its_constructors() -> None:
    contract = _public(dir(VaultAPI))
    assert len(contract) > 40
    assert not contract & CONSTRUCTORS
    assert _public(dir(Vault)) == contract | CONSTRUCTORS, (
        "Vault's public members differ from VaultAPI's: add the operation to the contract "
        "(app/api.py), or make the member private and reach it through app.facade.internals")


def test_vault_sets_no_public_attribute() -> None:
    assert _assigned_public(Vault) == set()


def test_an_open_vault_has_no_public_attribute(vault_dir: Path, fast_kdf: KdfParams) -> None:
    v = Vault.create(vault_dir, "pw-fence", kdf=fast_kdf, load_model=False, threaded=False,
                     use_chroma=False).vault
    try:
        assert isinstance(v, Vault)
        assert _public(vars(v)) == set()
    finally:
        v.lock()


def test_nothing_in_app_or_ui_reaches_inside() -> None:
    offenders = {}
    for top in ("app", "ui"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if path == ROOT / "app" / "facade.py":
                continue
            found = reaches_in(path.read_text("utf-8"))
            if found:
                offenders[str(path.relative_to(ROOT))] = found
    assert offenders == {}, (
        "app.facade.internals is for tests and benchmarks; front ends and services go through "
        f"VaultAPI: {offenders}")


def test_the_guard_sees_a_reach_inside() -> None:
    assert reaches_in("from app.facade import Vault, internals\nx = internals(v).db\n") == [
        "line 2: internals(", "line 1: imports internals"]
    assert reaches_in("import app.facade as f\nT = f.Internals\n") == ["line 2: .Internals"]
    assert reaches_in("from app.facade import Vault\nv.recall(q)\n") == []
    assert _assigned_public(_Leaky) == {"db", "index"}


class _Leaky:
    def __init__(self) -> None:
        self._fine = 1
        self.db = 2
        self.index: int = 3
