"""Kept desktop UI (PySide6). The only layer that imports Qt."""
