"""Sync: one memory on every device (issue 29)."""
