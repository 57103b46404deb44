"""Background consolidation (docs/memory-model.md#consolidation): episodes become facts with
provenance, duplicates merge, contradictions are resolved or sent to the inbox, habits become
procedures, implicit statistics are recomputed, memories decay, are promoted and archived (never
deleted), entity summaries are written. Layer: app. Runs on: a scheduler worker or a CLI/UI worker
thread.

Split along its seams:

- ``pipeline.py``: the steps, from one explicit table (a misspelt step is an error);
- ``extraction.py``: the rule and LLM extractors of the first step;
- ``inbox.py``: contradictions and review requests, resolved and reopened by the person;
- ``runlog.py``: the run log with inverse payloads, and undo;
- ``service.py``: ``ConsolidationService``, which composes them for the facade.

None of them runs SQL: the queries are in storage/consolidation_rows.py, storage/runlog.py
and storage/inbox.py, injected through the ``app.ports`` Protocols. The old import path
``from app.services.consolidation import X`` keeps working for every name below.
"""

from __future__ import annotations

from app.api import BatchFailure, CancelToken, ContradictionItem, InboxPage, RunReport
from app.ports import Scope
from app.services.consolidation.extraction import Extractor
from app.services.consolidation.inbox import RESOLVE_CHOICES
from app.services.consolidation.pipeline import BATCH, STEPS, Cancelled, scoring_defaults
from app.services.consolidation.runlog import RETRY, WATERMARK, RunLog
from app.services.consolidation.service import ConsolidationService

__all__ = ["BATCH", "RESOLVE_CHOICES", "RETRY", "STEPS", "WATERMARK", "BatchFailure",
           "CancelToken", "Cancelled", "ConsolidationService", "ContradictionItem",
           "Extractor", "InboxPage", "RunLog", "RunReport", "Scope", "scoring_defaults"]
