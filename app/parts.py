"""What ``app/bootstrap.py`` composes for one unlocked vault and hands to the ``Vault`` facade.
Layer: app. A record only: it imports no storage module (the storage objects arrive as ports)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from app import ports
from app.clock import Clock

if TYPE_CHECKING:
    from app.services.agents import AgentService
    from app.services.browse import BrowseService
    from app.services.consolidation import ConsolidationService
    from app.services.context import ContextService
    from app.services.forget import ForgetService
    from app.services.ingest import IngestService
    from app.services.recall import RecallService


@dataclass(frozen=True, slots=True)
class Parts:
    """What ``app/bootstrap.py`` composed for one unlocked vault: the storage objects (as
    ports), the storage modules the facade itself reads through, and the services."""
    session: ports.KeySession
    clock: Clock
    index: ports.VectorIndex
    lexicon: ports.Lexicon
    embedder: ports.Embedder | None
    model_dir: Path | None
    rows: ports.MemoryRows
    lifecycle: ports.Lifecycle
    schema_version: Callable[[ports.Connection], str]
    ingest: IngestService
    recall: RecallService
    context: ContextService
    forget: ForgetService
    browse: BrowseService
    consolidation: ConsolidationService
    agents: AgentService
    # RAM copies to empty at lock, beside the index and lexicon (storage/recall_cache.py).
    drop_on_lock: tuple[Callable[[], None], ...] = ()
