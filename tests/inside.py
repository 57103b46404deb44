"""The tests' one way past the contract: ``inside(vault).db``, ``.clock``, ``.embedder``,
``.model_dir``, ``.index``, ``.lexicon``, ``.recall`` and ``.consolidation`` (``Internals`` in
app/facade.py). ``Vault`` itself shows only ``VaultAPI``; ``tests/guards/test_facade_fence.py``
checks that and that nothing in app/ or ui/ reaches in.

``db``, ``recall`` and ``consolidation`` raise ``VaultLocked`` once the vault is locked, as the
vault's own members do."""

from __future__ import annotations

from app.facade import Internals, Vault, internals


def inside(vault: object) -> Internals:
    """The parts behind an in-process ``Vault`` (typed loosely: fixtures hand out a
    ``VaultAPI``); a remote client has no inside."""
    assert isinstance(vault, Vault), f"inside() needs an in-process Vault, not {type(vault)}"
    return internals(vault)
