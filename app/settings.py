"""Declared settings (Vorta style): key, type, default, label. Layer: app.
Values live in the encrypted database. README lists every key (tests/guards/test_guards.py
checks it), and something reads every key
(tests/app/services/consolidation/test_declared_used.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app import policy


@dataclass(frozen=True, slots=True)
class Setting:
    key: str
    type: type
    default: Any
    label: str


SETTINGS: tuple[Setting, ...] = (
    Setting("lock.idle_minutes", int, 5, "Lock after this many idle minutes"),
    Setting("owner.name", str, "",
            "Your name: 'I', 'me', 'user' and 'human' in any import are you"),
    Setting("owner.strict", bool, False,
            "Strict mode: programs on this computer read nothing without your password"),
    Setting("owner.assistant_unlock", bool, False,
            "Assistants may unlock an idle-locked `kept serve` from this device's keychain"),
    Setting("owner.ticket_minutes", int, 5,
            "Strict mode: minutes a terminal stays trusted after you type the password"),
    Setting("consolidation.heartbeat_minutes", int, 15, "Heartbeat interval (minutes)"),
    Setting("consolidation.interval_minutes", int, 240, "Consolidation interval (minutes)"),
    Setting("consolidation.decay_hour", int, 3, "Daily decay and archival (hour of day)"),
    Setting("consolidation.synthesis_weekday", int, 6, "Weekly synthesis day (0 = Monday)"),
    Setting("extraction.provider", str, "rules", "Fact extraction: rules or llm"),
    Setting("extraction.llm_base_url", str, "", "OpenAI-compatible endpoint (base URL)"),
    Setting("extraction.llm_model", str, "", "Model name at that endpoint"),
    Setting("extraction.cloud_consent", str, "", "Endpoint the person consented to send to"),
    Setting("extraction.redact", bool, True,
            "Redact names, emails, phones, amounts, health, addresses, ids and passwords"),
    Setting("privacy.never_send", str, "credentials,government_ids",
            "Never sent to an LLM endpoint (credentials, government_ids, finances, health, "
            "address)"),
    Setting("privacy.never_store", str, "",
            "Never stored at all (the same categories)"),
    Setting("backup.folder", str, "", "Scheduled backups: folder"),
    Setting("backup.schedule", str, "off", "Scheduled backups: off, daily or weekly"),
    Setting("backup.keep", int, 7, "Scheduled backups: keep the last N"),
    Setting("forget.request_days", int, 30,
            "An assistant's forget request expires after this many days unanswered"),
    Setting("recall.context_budget", int, policy.DEFAULT_CONTEXT_BUDGET,
            "Context budget (tokens)"),
    Setting("sync.journal", bool, False,
            "Sync: record this device's remembers and forgets as operations for other devices"),
    Setting("sync.folder", str, "",
            "Sync: the folder your sync tool shares between your devices (set by pairing)"),
)

BY_KEY = {s.key: s for s in SETTINGS}
