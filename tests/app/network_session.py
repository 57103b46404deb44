"""A whole Kept session in one process, for tests/app/test_network_native.py (run under strace
with a fresh HOME, never imported by pytest). Layer: tests.

    python -B tests/app/network_session.py IDLE_SECONDS

Creates the vault in the default folder (under $HOME) and imports turns, locks it, unlocks it
the way the window does (threaded, Chroma's index built in RAM), recalls, consolidates, idles
with the scheduler running for IDLE_SECONDS (native libraries phone home a few seconds after
they load, so the idle is what catches them). Prints one JSON line of facts showing the session
really ran. Nothing in here turns telemetry off: that is the code's job.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import storage.vector  # noqa: E402
from app.clock import SystemClock  # noqa: E402
from app.facade import Vault  # noqa: E402
from app.jobs import Jobs, build_scheduler, shutdown  # noqa: E402
from app.services.importer import parse_import  # noqa: E402
from storage.crypto import KdfParams  # noqa: E402
from storage.paths import default_vault_dir  # noqa: E402
from tests.inside import inside  # noqa: E402

PW = "network session"
LINES = [
    json.dumps({"session": "s1", "speaker": "Anna", "text": text, "ref": f"s1:{n}",
                "at": f"2026-05-{10 + n:02d}T18:00:00Z"})
    for n, text in enumerate(["We booked the train to Porto for the summer",
                              "My brother Tom starts his new job on Monday",
                              "I moved to Lisbon last spring",
                              "The cat knocked the plant off the shelf again"])
]


def main(idle: float) -> dict[str, object]:
    storage.vector.CHROMA_MIN_ROWS = 1  # build Chroma's in-RAM index even for a few rows
    folder = default_vault_dir()
    first = Vault.create(folder, PW, kdf=KdfParams(m=65_536, t=3, p=4)).vault
    try:
        added = first.import_turns(parse_import(LINES)).value.added
    finally:
        first.lock()
    vault = Vault.open(folder, PW)  # threaded, Chroma, background self-test: like the window
    semantic = inside(vault).embedder is not None
    jobs = Jobs(vault, SystemClock())
    sched = None
    try:
        top = vault.recall("where is the summer trip going")[0].text
        vault.consolidate()
        chroma = inside(vault).index.wait_ready(60)
        sched = build_scheduler(jobs, vault.setting)
        sched.start()
        time.sleep(idle)
        again = vault.recall("Tom's new job", touch=False)[0].text
    finally:
        if sched is not None:
            shutdown(sched, jobs)
        vault.lock()
    from opentelemetry.trace import get_tracer_provider  # Chroma imports OpenTelemetry

    from app.bootstrap import keyring_available  # the window asks at unlock and in Settings
    keyring_available()
    return {"keychain_probed": True, "added": added, "top": top, "again": again, "chroma": chroma,
            "semantic": semantic, "folder": str(folder),
            "otel_provider": type(get_tracer_provider()).__name__,
            "telemetry_modules": sorted(m for m in ("posthog", "huggingface_hub")
                                        if m in sys.modules)}


if __name__ == "__main__":
    print(json.dumps(main(float(sys.argv[1]))))
