"""``python -m app.cli``: the ``kept`` command, as the console script runs it (tests and
benches start it so). Layer: app. Runs on: the main thread."""

import sys

from app.cli import main

sys.exit(main())
