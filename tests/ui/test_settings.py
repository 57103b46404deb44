"""The Settings page against a real demo vault; the keychain is the in-memory backend from
tests/conftest.py unless a test swaps it."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt

pytestmark = pytest.mark.gui

NEW_PASSWORD = "correct horse battery staple"


def _loaded(qtbot: Any, view: Any) -> None:
    qtbot.waitUntil(lambda: view.save_btn.isEnabled() and view.keychain_available is not None,
                    timeout=20_000)


def _click_box(qtbot: Any, box: Any) -> None:
    """Click a check box on its indicator (its centre may lie past the label's end)."""
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=QPoint(8, box.height() // 2))


def _key_file(vault: Any) -> bytes:
    from storage.crypto import KEY_FILE
    return (vault.folder / KEY_FILE).read_bytes()


def test_form_shows_the_stored_settings(qtbot: Any, open_page: Any, demo_vault: Any) -> None:
    view = open_page("settings")
    _loaded(qtbot, view)
    assert view.provider.currentData() == demo_vault.setting("extraction.provider") == "rules"
    assert view.heartbeat.value() == demo_vault.setting("consolidation.heartbeat_minutes")
    assert view.interval.value() == demo_vault.setting("consolidation.interval_minutes")
    assert view.idle_minutes.value() == demo_vault.setting("lock.idle_minutes")
    assert view.redact.isChecked() is demo_vault.setting("extraction.redact") is True
    assert not view.dirty()


def test_save_auto_lock_minutes(qtbot: Any, open_page: Any, window: Any,
                                demo_vault: Any) -> None:
    view = open_page("settings")
    _loaded(qtbot, view)
    assert window.idle_timer.interval() == 5 * 60_000
    view.idle_minutes.setValue(12)
    view.heartbeat.setValue(30)
    assert view.dirty()
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=10_000) as blocker:
        qtbot.mouseClick(view.save_btn, Qt.MouseButton.LeftButton)
    assert blocker.args[0].settings
    assert demo_vault.setting("lock.idle_minutes") == 12
    assert demo_vault.setting("consolidation.heartbeat_minutes") == 30
    assert window.idle_timer.interval() == 12 * 60_000
    assert "Saved" in view.save_status.text()
    qtbot.waitUntil(lambda: not view.dirty(), timeout=10_000)


def test_cloud_endpoint_needs_consent_for_exactly_that_url(qtbot: Any, open_page: Any,
                                                          window: Any, demo_vault: Any) -> None:
    view = open_page("settings")
    _loaded(qtbot, view)
    view.provider.setCurrentIndex(view.provider.findData("llm"))
    view.base_url.setText("https://api.openai.com/v1/")
    view.model_name.setText("gpt-4o-mini")
    assert view.consent.isVisible() and not view.consent.isChecked()
    assert view.consent_warning.isVisible()
    warning = view.consent_warning.text()
    assert "sees every snippet" in warning and "30 days" in warning
    # Without consent: an inline error, nothing written.
    qtbot.mouseClick(view.save_btn, Qt.MouseButton.LeftButton)
    assert "consent" in view.save_status.text()
    assert demo_vault.setting("extraction.provider") == "rules"
    assert demo_vault.setting("extraction.cloud_consent") == ""

    _click_box(qtbot, view.consent)
    assert view.consent.isChecked()
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=10_000):
        qtbot.mouseClick(view.save_btn, Qt.MouseButton.LeftButton)
    assert demo_vault.setting("extraction.provider") == "llm"
    assert demo_vault.setting("extraction.llm_base_url") == "https://api.openai.com/v1/"
    assert demo_vault.setting("extraction.cloud_consent") == "https://api.openai.com/v1"
    from app.services.llm import LlmConfig, check_consent
    check_consent(LlmConfig(demo_vault.setting("extraction.llm_base_url"), "m",
                            consent=demo_vault.setting("extraction.cloud_consent")))

    # Another endpoint starts unticked: consent never carries over.
    view.base_url.setText("https://api.example.com/v1")
    assert not view.consent.isChecked()
    view.base_url.setText("https://api.openai.com/v1")
    assert view.consent.isChecked()


def test_loopback_endpoint_needs_no_consent(qtbot: Any, open_page: Any, window: Any,
                                            demo_vault: Any) -> None:
    view = open_page("settings")
    _loaded(qtbot, view)
    view.provider.setCurrentIndex(view.provider.findData("llm"))
    view.base_url.setText("http://127.0.0.1:11434/v1")
    assert view.consent.isHidden() and view.consent_warning.isHidden()
    assert "nothing leaves" in view.endpoint_note.text()
    qtbot.mouseClick(view.save_btn, Qt.MouseButton.LeftButton)
    assert "model" in view.save_status.text()  # inline: the model name is missing
    view.model_name.setText("llama3.1:8b")
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=10_000):
        qtbot.mouseClick(view.save_btn, Qt.MouseButton.LeftButton)
    assert demo_vault.setting("extraction.llm_model") == "llama3.1:8b"
    assert demo_vault.setting("extraction.cloud_consent") == ""


def test_wrong_old_password_shows_inline_and_changes_nothing(
        qtbot: Any, open_page: Any, demo_vault: Any, monkeypatch: Any) -> None:
    import ui.errors
    popups: list[Any] = []
    monkeypatch.setattr(ui.errors, "show_error", lambda *a: popups.append(a))
    view = open_page("settings")
    _loaded(qtbot, view)
    before = _key_file(demo_vault)
    # Pure validation first: no vault call for a mismatch.
    qtbot.keyClicks(view.old_pw, "demo")
    qtbot.keyClicks(view.new_pw, NEW_PASSWORD)
    qtbot.keyClicks(view.repeat_pw, NEW_PASSWORD + "!")
    qtbot.mouseClick(view.pw_btn, Qt.MouseButton.LeftButton)
    assert "differ" in view.pw_status.text()
    view.old_pw.clear()
    view.repeat_pw.clear()
    qtbot.keyClicks(view.old_pw, "not the password")
    qtbot.keyClicks(view.repeat_pw, NEW_PASSWORD)
    qtbot.mouseClick(view.pw_btn, Qt.MouseButton.LeftButton)
    assert not view.pw_btn.isEnabled()  # off the GUI thread: busy meanwhile
    qtbot.waitUntil(lambda: view.pw_btn.isEnabled(), timeout=20_000)
    assert "Wrong password" in view.pw_status.text()
    assert popups == []
    assert _key_file(demo_vault) == before
    assert view.new_pw.text() == NEW_PASSWORD  # kept, so the person can fix the old one


def test_password_change(qtbot: Any, open_page: Any, window: Any, demo_vault: Any) -> None:
    view = open_page("settings")
    _loaded(qtbot, view)
    before = _key_file(demo_vault)
    qtbot.keyClicks(view.old_pw, "demo")
    qtbot.keyClicks(view.new_pw, NEW_PASSWORD)
    qtbot.keyClicks(view.repeat_pw, NEW_PASSWORD)
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=20_000):
        qtbot.mouseClick(view.pw_btn, Qt.MouseButton.LeftButton)
    assert "Password changed" in view.pw_status.text()
    assert _key_file(demo_vault) != before
    assert view.old_pw.text() == view.new_pw.text() == view.repeat_pw.text() == ""


def test_keychain_option_hidden_with_the_fail_backend(qtbot: Any, open_page: Any) -> None:
    import keyring
    from keyring.backends import fail
    keyring.set_keyring(fail.Keyring())  # the autouse fixture restores the previous one
    view = open_page("settings")
    _loaded(qtbot, view)
    assert view.keychain_available is False
    assert view.remember.isHidden()
    assert "not available" in view.keychain_note.text()
    assert "no secure system keychain" in view.keychain_note.text()


def test_keychain_option_remembers_the_device(qtbot: Any, open_page: Any, window: Any,
                                              demo_vault: Any, monkeypatch: Any,
                                              _memory_keyring: Any) -> None:
    # The in-memory backend stands in for an allowlisted OS keychain.
    import storage.crypto
    monkeypatch.setattr(storage.crypto, "keyring_available", lambda: True)
    view = open_page("settings")
    _loaded(qtbot, view)
    assert view.remember.isVisible() and not view.remember.isChecked()
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=20_000):
        _click_box(qtbot, view.remember)
    assert demo_vault.status().remember_device
    assert _memory_keyring.items  # a device key went to the keychain, nowhere else
    assert "without the password" in view.keychain_status.text()
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=20_000):
        _click_box(qtbot, view.remember)
    assert not demo_vault.status().remember_device


def test_forget_request_days_saved(qtbot: Any, open_page: Any, window: Any,
                                   demo_vault: Any) -> None:
    """Issue 26: how long an assistant's forget request waits is the person's to set."""
    view = open_page("settings")
    _loaded(qtbot, view)
    assert view.request_days.value() == demo_vault.setting("forget.request_days") == 30
    view.request_days.setValue(7)
    with qtbot.waitSignal(window.bridge.changes_applied, timeout=10_000):
        qtbot.mouseClick(view.save_btn, Qt.MouseButton.LeftButton)
    assert demo_vault.setting("forget.request_days") == 7
