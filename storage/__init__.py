"""Kept storage layer: SQLCipher, keys, vectors, embedder. Never imports Qt.

Importing this package turns off onnxruntime's telemetry for the whole process
(docs/security.md#18-no-network-unless-you-opt-in). The onnxruntime wheel carries a native telemetry
client: a process that loads the model wrote a persistent device id and events (executable path, OS,
CPU, RAM) to ``~/.cache/Microsoft/DeveloperTools/.onnxruntime/`` and a session file to the temp
folder, then resolved Microsoft's collector host a few seconds later to upload them. Python's
``socket`` never sees it; ``onnxruntime.disable_telemetry_events()`` does not stop it;
``ORT_DISABLE_TELEMETRY=1`` in the environment before the runtime initialises does (0 sockets, no
file; tests/app/test_network_native.py runs a session under strace to check). Every path to
onnxruntime in Kept (the embedder, the CLI, the window, frozen builds, benchmarks, test children)
imports ``storage`` first, and child processes inherit the variable. Set, not defaulted: a value
left in the environment must not turn the upload back on.

A relative ``KEPT_MODEL_DIR`` (README's commands use ``../shared/...``) is made absolute here,
against the folder the process started in, so that child processes started from another
folder (the CLI's, the tests') find the same model instead of silently losing semantic search.
"""

import os

os.environ["ORT_DISABLE_TELEMETRY"] = "1"
if os.environ.get("KEPT_MODEL_DIR") and not os.path.isabs(
        os.path.expanduser(os.environ["KEPT_MODEL_DIR"])):
    os.environ["KEPT_MODEL_DIR"] = os.path.abspath(os.environ["KEPT_MODEL_DIR"])
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
