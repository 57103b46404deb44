"""The pages the main window can show, by name: the one place to add a page. Layer: ui.

A page is a ``ui.views.page.Page`` subclass made as ``cls(vault, bridge)``; the navigation
tree names it with the key ``("page", name)``. Each module is imported when its page is first
opened (a page costs 10-40 ms to import, which would otherwise all fall between unlock and
the first window); a page that fails to import is a bug and raises, it never turns into a
silent "not available" page.
"""

from __future__ import annotations

import importlib

from ui.views.page import Page

# name -> (module, class)
PAGES: dict[str, tuple[str, str]] = {
    "inbox": ("ui.views.inbox", "InboxView"),
    "consolidation": ("ui.views.consolidation", "ConsolidationView"),
    "insights": ("ui.views.insights", "InsightsView"),
    "settings": ("ui.views.settings", "SettingsView"),
}


def page_class(name: str) -> type[Page]:
    """The class of page ``name``; KeyError for a name not listed here."""
    module, cls_name = PAGES[name]
    cls = getattr(importlib.import_module(module), cls_name)
    if not (isinstance(cls, type) and issubclass(cls, Page)):
        raise TypeError(f"{module}.{cls_name} is not a Page")
    return cls
