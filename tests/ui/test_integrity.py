"""The window when the background page self-test finds a damaged vault after unlock: it
locks, shows the damage in the unlock dialog, and no file changes (requirement 24)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def _biggest_unread_page_damage(folder: Path) -> None:
    """Flip bytes in a page the open path does not read: tried on copies at a few places in
    the middle of the file (what unlock reads moves with the schema: the saved lexicon's
    tables moved the old fixed offset onto one), the first copy that still opens wins."""
    import shutil

    from app.demo import DEMO_PASSWORD
    from app.errors import AppError
    from app.facade import Vault
    from tests.storage.helpers import flip_bytes
    size = (folder / "vault.db").stat().st_size
    for frac in (0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8):
        offset = int(size * frac) // 4096 * 4096 + 100
        trial = folder.with_name(folder.name + "-trial")
        shutil.rmtree(trial, ignore_errors=True)
        shutil.copytree(folder, trial)
        flip_bytes(trial / "vault.db", offset, 16)
        try:
            Vault.open(trial, DEMO_PASSWORD, use_chroma=False, load_model=False).lock()
        except AppError:
            continue
        finally:
            shutil.rmtree(trial, ignore_errors=True)
        flip_bytes(folder / "vault.db", offset, 16)
        return
    raise AssertionError("every page tried is read when the vault opens")


def test_damage_found_after_unlock_locks_the_window(qtbot: Any, qapp: Any, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import app.jobs
    from app.demo import DEMO_PASSWORD, create_demo_vault
    from app.errors import VaultCorrupt
    from app.facade import Vault
    from tests.storage.helpers import sha_tree
    from ui.main import Controller
    real_build = app.jobs.build_scheduler

    def build_unstarted(*args: Any, **kwargs: Any) -> Any:
        sched = real_build(*args, **kwargs)
        sched.start = lambda *a, **k: None
        return sched
    monkeypatch.setattr(app.jobs, "build_scheduler", build_unstarted)
    monkeypatch.setattr(qapp, "quit", lambda: None)
    folder = tmp_path / "vault"
    create_demo_vault(folder).lock()  # type: ignore[attr-defined]
    _biggest_unread_page_damage(folder)
    before = sha_tree(folder)
    vault = Vault.open(folder, DEMO_PASSWORD, use_chroma=False)  # background self-test
    controller = Controller(qapp, folder, demo=False)
    try:
        controller.show_main(vault)
        qtbot.waitUntil(lambda: controller.vault is None, timeout=30_000)
        assert vault.locked and controller.window is None
        assert controller.dialog is not None and controller.dialog.isVisible()
        assert controller.dialog.error.text().startswith(VaultCorrupt.user_message)
    finally:
        if controller.dialog is not None:
            controller.dialog.close()
            controller.dialog.deleteLater()
        controller.shutdown()
        if not vault.locked:
            vault.lock()
    assert sha_tree(folder) == before, "a file changed"
