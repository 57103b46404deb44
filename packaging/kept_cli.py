"""Frozen-build entry point of the ``kept`` command (PyInstaller runs this file as a script)."""

import sys

from app.cli import main

sys.exit(main())
