"""The one JSON form of everything sync signs, seals, hashes or compares (issue 29).
Layer: app (below ``ops`` and ``keys``, which both re-export it). Runs on: any thread.

Sorted keys, no spaces, UTF-8 as is, and no NaN or infinity (JSON has none: a float that is not
a number is refused here rather than written as a token another reader would reject).
"""

from __future__ import annotations

import json
from typing import Any


def canonical_text(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def canonical_bytes(data: Any) -> bytes:
    """What is signed or sealed: ``canonical_text`` in UTF-8."""
    return canonical_text(data).encode("utf-8")
