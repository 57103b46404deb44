"""The embedding model in words, for the window's status bar and ``kept status`` (issue 28: the
window says which model is in use). Layer: app, pure (no Qt, no I/O). The ids are the ones
``storage/embedder.py`` writes beside each vector."""

from __future__ import annotations

from collections.abc import Mapping

from app.api import VaultStatus

_NAMES = {
    "all-MiniLM-L6-v2": "all-MiniLM-L6-v2 (full precision)",
    "all-MiniLM-L6-v2-int8": "all-MiniLM-L6-v2 (int8)",
}
NOT_FOUND = "no embedding model found"


_SHORT = {"all-MiniLM-L6-v2": "MiniLM full precision", "all-MiniLM-L6-v2-int8": "MiniLM int8"}


def model_name(model_id: str) -> str:
    return _NAMES.get(model_id, model_id)


def short_name(model_id: str) -> str:
    """For the status bar: ``MiniLM int8``."""
    return _SHORT.get(model_id, model_id)


def model_line(st: VaultStatus) -> str:
    """``all-MiniLM-L6-v2 (int8), installed with Kept, computed in int8``, or why semantic
    search is off."""
    if st.semantic_search and st.model:
        where = f", {st.model_source}" if st.model_source else ""
        how = f", computed in {st.model_compute}" if st.model_compute else ""
        return f"{model_name(st.model)}{where}{how}"
    return f"semantic search off: {st.model_problem or NOT_FOUND}"


def vectors_line(by_model: Mapping[str, int]) -> str:
    """``1,200 made by all-MiniLM-L6-v2 (full precision), 30 by ... (int8)``; empty if none."""
    parts = [f"{n:,} by {model_name(m)}" for m, n in sorted(by_model.items()) if n]
    return ("made " + ", ".join(parts)) if parts else ""
