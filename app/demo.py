"""``kept demo``: a small living example vault. Layer: app. Runs on: the main thread.

The demo vault's password is "demo" (it holds only made-up memories)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from app.api import Turn, VaultAPI

DEMO_PASSWORD = "demo"

DEMO_TURNS = [
    ("s1", "Sam", "I just moved to Lisbon for the new job at Tidewater.", "2026-05-02T09:00:00Z"),
    ("s1", "assistant", "Congratulations! How is the apartment?", "2026-05-02T09:00:30Z"),
    ("s1", "Sam", "Small but bright. My sister Ana helped me paint it blue.", "2026-05-02T09:01:00Z"),
    ("s1", "Sam", "I'm allergic to cats, so no pets for now.", "2026-05-02T09:02:00Z"),
    ("s2", "Sam", "Ran 10 km along the river this morning, new personal best!", "2026-05-09T08:00:00Z"),
    ("s2", "Sam", "I usually run on Saturday mornings before coffee.", "2026-05-09T08:01:00Z"),
    ("s3", "Sam", "The Tidewater launch is on June 12; I'm nervous about the demo.", "2026-05-20T18:00:00Z"),
    ("s3", "Sam", "Ana's birthday is on July 3, remind me to get her a book.", "2026-05-20T18:02:00Z"),
    ("s4", "Sam", "I moved to Porto; the Lisbon flat was too expensive.", "2026-06-15T20:00:00Z"),
    ("s4", "Sam", "I think my favorite film is Alien.", "2026-06-15T20:05:00Z"),
    ("s5", "Sam", "My sister Ana got a new job in Braga.", "2026-06-22T19:00:00Z"),
    ("s5", "Sam", "Honestly, I guess my favorite film is Heat.", "2026-06-22T19:03:00Z"),
    ("s6", "Sam", "I went running by the river before breakfast.", "2026-06-27T07:30:00Z"),
    ("s7", "Sam", "I went running again, 12 km this time.", "2026-07-04T07:40:00Z"),
    ("s8", "Sam", "I went running with Ana, she was faster.", "2026-07-11T07:35:00Z"),
]
DEMO_QUERIES = ["Where does Sam live?", "When is Ana's birthday?", "What does Sam do on weekends?"]


def demo_turns() -> list[Turn]:
    from app.clock import parse_iso
    return [Turn(session=s, speaker=who, text=text, at=parse_iso(at), ref=f"{s}:{n}")
            for n, (s, who, text, at) in enumerate(DEMO_TURNS)]


def create_demo_vault(folder: Path, *, threaded: bool = False) -> VaultAPI:
    """Open the demo vault, creating it (with the demo conversation, consolidated) only if
    the folder holds none. It is filled once: what the person corrects or forgets in it stays
    that way across restarts (re-importing the turns on every start brought a forgotten
    memory back). ``reset_demo_vault`` is the explicit way back to the original."""
    from app import bootstrap
    from app.facade import Vault
    if bootstrap.vault_exists(folder):
        return Vault.open(folder, DEMO_PASSWORD, threaded=threaded, use_chroma=False)
    vault = Vault.create(folder, DEMO_PASSWORD, kdf=bootstrap.kdf_params(65_536, 3),
                         threaded=threaded, use_chroma=False).vault
    try:
        vault.import_turns(demo_turns())
        # A living example: facts, people, a habit, and one contradiction for the inbox.
        vault.consolidate(steps=("extract", "entities", "links", "similar", "procedures",
                                 "merge", "statistics", "synthesis"))
    except BaseException:
        vault.lock()
        raise
    return vault


def reset_demo_vault(folder: Path, *, threaded: bool = False) -> VaultAPI:
    """"Reset demo": delete the demo vault in ``folder`` and create it afresh; returns it open.

    Only a demo vault is deleted: the folder must open with the demo password (which also
    takes its owner lock, so a vault open elsewhere is refused with ``VaultBusy``). Anything
    else raises before a byte is touched."""
    import shutil

    from app import bootstrap
    from app.facade import Vault
    if bootstrap.vault_exists(folder):
        Vault.open(folder, DEMO_PASSWORD, load_model=False, threaded=False,
                   use_chroma=False).lock()
        shutil.rmtree(folder)
    return create_demo_vault(folder, threaded=threaded)


def run_demo(folder: Path | None, *, reset: bool = False) -> int:
    folder = folder or Path(tempfile.mkdtemp(prefix="kept-demo-")) / "vault"
    vault = reset_demo_vault(folder) if reset else create_demo_vault(folder)
    try:
        st = vault.status()
        print(f"Demo vault at {folder} (password: {DEMO_PASSWORD})")
        print(f"Memories: {st.totals}; semantic search: {'on' if st.semantic_search else 'off'}")
        for q in DEMO_QUERIES:
            print(f"\n> {q}")
            for h in vault.recall(q, k=3):
                who = f"{h.speaker}: " if h.speaker and h.store in ("episodic", "short_term") \
                    else ""
                print(f"  [{h.id}] {h.score:.3f} ({h.store}) {who}{h.text}")
    finally:
        vault.lock()
    print(f"\nTry: kept --vault {folder} recall \"Sam's sister\"   (password: {DEMO_PASSWORD})")
    return 0
