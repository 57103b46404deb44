"""The Help menu's pages: keyboard shortcuts, the security summary in plain words, About.
Layer: ui. GUI thread.

One window per page, not modal: it can stay open beside the window while the person tries what
it says. The security summary says what docs/security.md promises, in the words a person uses.
"""

from __future__ import annotations

import html
import importlib.metadata as metadata
import re

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

SECURITY_SUMMARY = """
<h3>Everything stays on this computer, locked</h3>
<p>Your memories live in one vault file that is encrypted as a whole (SQLCipher, AES-256).
Nothing in it can be read without your password: not the words, not the search index, not the
dates. While Kept is open, the search index lives in memory only and is never written to disk.</p>
<h3>Only your password opens it</h3>
<p>Kept turns your password into the key with Argon2id, a method made to be slow for anyone
guessing. Kept cannot reset your password. A recovery code, shown once when you made the vault,
is the only other way in: keep it somewhere safe.</p>
<h3>Locked when you step away</h3>
<p>The window locks after a few idle minutes (Settings), and on Lock (Ctrl+L). Locking drops
every memory from the window and the key from memory.</p>
<h3>Nothing leaves unless you say so</h3>
<p>Kept sends nothing over the network and collects no statistics about you. Only if you set up
an AI endpoint in Settings does it send the words it needs there, after you agree; topics you
mark as never to send (passwords, ids, …) are never sent.</p>
<h3>Assistants see what you allow</h3>
<p>An assistant connects only with a key you gave it when pairing, only while Kept is open, and
sees its own memories and what you share. When it asks to forget something, you decide, in the
Inbox. Block it in Settings and it is refused from its next call on.</p>
<h3>Forgetting is for real</h3>
<p>Forget shows everything that will go (the memory, its earlier versions, what was learned from
it) and asks. Then it is removed from the vault file itself, not just hidden. Archived memories
are only set aside: the Archive keeps them until you restore or forget them.</p>
<h3>Backups and exports</h3>
<p>A backup is one encrypted file, checked after writing. An export is plain text that anyone
who can read your files can read: Kept says so and asks before writing one.</p>
"""

# Licences a package's metadata leaves out (read from the files it ships).
_KNOWN = {"sqlcipher3": "zlib (its SQLCipher: BSD-3-Clause)"}


def licences() -> list[tuple[str, str, str]]:
    """(package, version, licence) of each package Kept needs, from their installed
    metadata."""
    try:
        wanted = metadata.requires("kept") or []
    except metadata.PackageNotFoundError:
        return []
    out = []
    for req in wanted:
        if "extra ==" in req:
            continue
        name = re.split(r"[<>=!~; \[]", req, maxsplit=1)[0]
        try:
            meta = metadata.metadata(name)
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        text = (meta["License-Expression"] or meta["License"] or "").strip()
        if not text or len(text) > 80:  # missing, or a whole licence text pasted in
            classes = [c.split("::")[-1].strip() for c in meta.get_all("Classifier") or []
                       if c.startswith("License ::")]
            text = ", ".join(classes) or _KNOWN.get(name.lower(), "see the package")
        out.append((name, version, text))
    return out


def about_html(version: str) -> str:
    rows = "".join(f"<tr><td>{html.escape(n)}</td><td>{html.escape(v)}</td>"
                   f"<td>{html.escape(lic)}</td></tr>" for n, v, lic in licences())
    return (f"<h3>Kept {html.escape(version)}</h3>"
            "<p>A long-term memory for your AI assistant that you can see and control, kept "
            "on this computer and encrypted.</p>"
            "<p>The embedding model all-MiniLM-L6-v2: Apache-2.0. The DejaVu fonts: the "
            "Bitstream Vera licence (assets/fonts/LICENSE-DejaVu.txt).</p>"
            "<p>Built on:</p><table cellpadding='2'><tr><th align='left'>Package</th>"
            "<th align='left'>Version</th><th align='left'>Licence</th></tr>"
            f"{rows}</table>")


class HelpDialog(QDialog):
    """A page of help text; ``open_one`` shows the one of that title, made once."""

    def __init__(self, parent: QWidget, title: str, body_html: str) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setObjectName("help")
        self.resize(560, 520)
        self.body = QTextBrowser()
        self.body.setOpenExternalLinks(False)  # nothing here leaves the computer
        self.body.setHtml(body_html)  # our own text only, never memory text
        self.body.setAccessibleName(title)
        self.body.setTabChangesFocus(True)  # Tab reaches Close (ui/access.py)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        lay = QVBoxLayout(self)
        lay.addWidget(self.body)
        lay.addWidget(buttons)

    @classmethod
    def open_one(cls, parent: QWidget, title: str, body_html: str) -> HelpDialog:
        for dlg in parent.findChildren(HelpDialog):
            if dlg.windowTitle() == title:
                dlg.show()
                dlg.raise_()
                dlg.activateWindow()
                return dlg
        dlg = cls(parent, title, body_html)
        dlg.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dlg.show()
        return dlg
