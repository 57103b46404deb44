"""``--tune FIELD=VALUE`` for benchmark scripts: override ``RecallTuning`` fields of a vault
for an experiment (numbers become floats, anything else stays text)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import storage  # noqa: F401  (first: onnxruntime telemetry off)


def parse(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in pairs:
        key, _, value = kv.partition("=")
        out[key] = float(value) if value.replace(".", "", 1).lstrip("-").isdigit() else value
    return out


def apply(vault: Any, tune: dict[str, Any]) -> None:
    if tune:
        vault._recall.tuning = replace(vault._recall.tuning, **tune)
