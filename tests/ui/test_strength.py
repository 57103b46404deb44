"""The password strength meter (ui/dialogs/unlock.py): a common password or one word with
digits or symbols added is weak whatever its characters, random characters and phrases of
several words are valued by what guessing them costs, and the bar is red, amber or green."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ui import theme
from ui.dialogs.unlock import strength, strength_color


def word(password: str) -> str:
    return strength(password)[1].partition(" (")[0]


@pytest.mark.parametrize("password", ["password1", "Password1!", "p4ssw0rd", "123456",
                                      "sunshine2024", "Dragon!!", "abc123"])
def test_a_common_password_with_digits_or_symbols_is_very_weak(password: str) -> None:
    bits, said = strength(password)
    assert bits < 28 and said.startswith("very weak (a "), (password, bits, said)


@pytest.mark.parametrize("password", ["porto", "Porto1987!", "mississippi99", "Tr0ub4dor&3",
                                      "Summer2025", "lantern#42"])
def test_one_dictionary_like_word_with_digits_or_symbols_is_weak(password: str) -> None:
    bits, said = strength(password)
    assert bits < 45 and "(one word" in said, (password, bits, said)


def test_random_letters_are_not_taken_for_a_word() -> None:
    """"xkqzwvbt" has no vowels to speak of: valued as 8 random lower-case letters."""
    bits, said = strength("xkqzwvbt")
    assert 35 <= bits < 45 and said == "weak"


@pytest.mark.parametrize(("password", "expect"), [
    ("Porto-Lisbon7", "weak"),                   # two words and a digit, not 85 random bits
    ("kept-vault", "weak"),
    ("correct horse battery staple", "strong"),  # four words: ~74 bits, not 130
    ("river otter lantern 42", "strong"),
    ("zx8#Kq2!pL9v", "strong"),                  # random characters keep their full value
    ("a walk along the river at dawn, then coffee", "very strong"),
])
def test_phrases_count_their_words_and_random_strings_their_characters(
        password: str, expect: str) -> None:
    assert word(password) == expect, strength(password)


def test_longer_phrases_are_stronger() -> None:
    bits = [strength(p)[0] for p in ("otter", "otter lantern", "otter lantern river",
                                     "otter lantern river basket")]
    assert bits == sorted(bits) and len(set(bits)) == 4


def test_meter_is_red_amber_or_green_by_strength(qtbot: Any, tmp_path: Path) -> None:
    from PySide6.QtGui import QColor, QPalette

    from ui.dialogs.unlock import UnlockDialog
    dlg = UnlockDialog(tmp_path / "new", create=True)
    qtbot.addWidget(dlg)
    seen = {}
    for password in ("password1", "kept-vault-2026", "river otter lantern 42"):
        dlg.password.setText(password)
        bits = strength(password)[0]
        seen[password] = dlg.meter.palette().color(QPalette.ColorRole.Highlight)
        assert seen[password] == QColor(strength_color(bits))
        assert dlg.meter.format() == word(password)
    assert [c.name() for c in seen.values()] == [theme.STRENGTH_WEAK, theme.STRENGTH_FAIR,
                                                 theme.STRENGTH_GOOD]
    dlg.password.setText("password1")
    assert dlg.meter_note.text() == "A common password with digits or symbols."
    assert not dlg.meter_note.isHidden()
    dlg.password.setText("river otter lantern 42")
    assert dlg.meter_note.isHidden()
