"""Frozen-build entry point of the desktop app (PyInstaller runs this file as a script)."""

import sys

from ui.main import main

sys.exit(main())
