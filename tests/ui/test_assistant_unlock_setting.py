"""Settings > This device: "Let assistants unlock Kept with this device's keychain" (issue 26,
item 6), driven with key presses against a real demo vault and the in-memory keychain of
tests/conftest.py standing in for an allowlisted OS one."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.gui


def _loaded(qtbot: Any, view: Any) -> None:
    qtbot.waitUntil(lambda: view.save_btn.isEnabled() and view.keychain_available is not None,
                    timeout=20_000)


def _press_space(qtbot: Any, box: Any) -> None:
    box.setFocus()
    qtbot.keyClick(box, Qt.Key.Key_Space)


def test_off_by_default_said_plainly_and_needs_a_remembered_device(
        qtbot: Any, open_page: Any, window: Any, demo_vault: Any, monkeypatch: Any,
        _memory_keyring: Any) -> None:
    import storage.crypto
    monkeypatch.setattr(storage.crypto, "keyring_available", lambda: True)
    view = open_page("settings")
    _loaded(qtbot, view)
    box, note = view.assistant_unlock, view.assistant_unlock_note
    assert box.isVisible() and not box.isChecked()
    assert not box.isEnabled()  # not before "Remember on this device"
    # What it means, in plain words, before anyone ticks it.
    text = note.text()
    assert "Anyone who can run programs as you" in text and "Off by default" in text
    assert "Only on this device" in text
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=20_000):
        _press_space(qtbot, view.remember)
    qtbot.waitUntil(box.isEnabled, timeout=10_000)
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=20_000):
        _press_space(qtbot, box)
    assert box.isChecked() and demo_vault.assistant_unlock()
    assert demo_vault.setting("owner.assistant_unlock") is True
    assert any(u.startswith("assistant-unlock-v1:") for _s, u in _memory_keyring.items)
    assert "Assistants may now unlock" in view.keychain_status.text()
    # A page made anew shows it as stored.
    from ui.views.settings import SettingsView
    again = SettingsView(demo_vault, window.bridge)
    qtbot.addWidget(again)
    again.show()
    _loaded(qtbot, again)
    qtbot.waitUntil(again.assistant_unlock.isChecked, timeout=10_000)
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=20_000):
        _press_space(qtbot, again.assistant_unlock)
    assert not demo_vault.assistant_unlock()
    assert demo_vault.setting("owner.assistant_unlock") is False
    assert not any(u.startswith("assistant-unlock-v1:") for _s, u in _memory_keyring.items)


def test_forgetting_the_device_unticks_it(qtbot: Any, open_page: Any, window: Any,
                                         demo_vault: Any, monkeypatch: Any) -> None:
    import storage.crypto
    monkeypatch.setattr(storage.crypto, "keyring_available", lambda: True)
    demo_vault.remember_device()
    demo_vault.set_assistant_unlock(True)
    view = open_page("settings")
    _loaded(qtbot, view)
    qtbot.waitUntil(view.assistant_unlock.isChecked, timeout=10_000)
    assert view.assistant_unlock.isEnabled()
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=20_000):
        _press_space(qtbot, view.remember)
    qtbot.waitUntil(lambda: not view.assistant_unlock.isChecked(), timeout=10_000)
    assert not view.assistant_unlock.isEnabled()
    assert not demo_vault.assistant_unlock()


def test_hidden_without_a_keychain(qtbot: Any, open_page: Any) -> None:
    import keyring
    from keyring.backends import fail
    keyring.set_keyring(fail.Keyring())  # the autouse fixture restores the previous one
    view = open_page("settings")
    _loaded(qtbot, view)
    assert view.assistant_unlock.isHidden() and view.assistant_unlock_note.isHidden()
