"""Kept: domain and services. Layer: app (pure Python, never imports Qt)."""

__version__ = "0.1.0"
