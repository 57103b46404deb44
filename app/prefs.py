"""The window's preferences on this computer: the vaults opened lately and the theme.
Layer: app. No Qt.

Kept's own settings live inside the vault; these cannot (they are needed before any vault is
unlocked, and they are about this computer, not about the person's memories). They hold no
memory content: folder paths and a theme name, in ``window.json`` in the user's config folder
(``app.bootstrap.config_dir``), written whole through a temporary file, readable by the user
only. A missing or damaged file reads as "nothing yet"; nothing here is worth refusing to start.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

Theme = Literal["system", "light", "dark"]
THEMES: tuple[Theme, ...] = ("system", "light", "dark")
RECENT_MAX = 8


@dataclass(slots=True)
class Prefs:
    recent: list[str] = field(default_factory=list)  # vault folders, the last opened first
    theme: Theme = "system"

    @staticmethod
    def path() -> Path:
        from app.bootstrap import config_dir
        return config_dir() / "window.json"

    @classmethod
    def load(cls) -> Prefs:
        try:
            doc = json.loads(cls.path().read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls()
        if not isinstance(doc, dict):
            return cls()
        recent = [str(p) for p in doc.get("recent", []) if isinstance(p, str)][:RECENT_MAX]
        theme = doc.get("theme")
        return cls(recent, cast(Theme, theme) if theme in THEMES else "system")

    def save(self) -> None:
        """Written whole (a temporary file renamed over it); a failure to write is ignored:
        a preference is never worth an error."""
        path = self.path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = path.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"recent": self.recent, "theme": self.theme}, fh, indent=1)
            os.replace(tmp, path)
        except OSError:
            pass

    def opened(self, folder: Path) -> None:
        """``folder`` was just opened: first in the recent list (once)."""
        text = str(folder.expanduser().absolute())
        self.recent = [text, *[p for p in self.recent if p != text]][:RECENT_MAX]

    def last_vault(self) -> Path | None:
        return Path(self.recent[0]) if self.recent else None
