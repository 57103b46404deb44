"""Self-check and packaging files (STYLE.md B11): `kept self-check` and `kept-app --self-check`
exercise the real native parts; the desktop entry, AppStream data and PyInstaller spec agree
with each other and with pyproject.toml."""

from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
import tempfile
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

from tests import ROOT

PACKAGING = ROOT / "packaging"
APP_ID = "app.kept.Kept"


def _run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import sys; from app.cli import main; "
                           "sys.exit(main(sys.argv[1:]))", *args],
                          capture_output=True, text=True, timeout=180, cwd=ROOT,
                          env=env or _env())


def _env(**extra: str) -> dict[str, str]:
    # No real keychain here; name the "no backend" one so the result does not depend on it.
    return dict(os.environ, PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring", **extra)


def _leftovers() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("kept-selfcheck-*")}


def test_self_check_passes_and_leaves_nothing_behind() -> None:
    before = _leftovers()
    res = _run(["self-check", "--json"])
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["ok"] is True
    for name in ("sqlcipher", "argon2id", "chroma", "model"):
        assert checks[name]["ok"], checks[name]
    assert checks["sqlcipher"]["detail"].startswith("SQLCipher 4.")
    # No OS keychain: reported as off, not as a failure.
    assert checks["keyring"]["ok"] is False and checks["keyring"]["required"] is False
    assert _leftovers() == before


def test_self_check_without_a_model_reports_it_but_passes(tmp_path: Path) -> None:
    env = _env(KEPT_MODEL_DIR=str(tmp_path / "nothing"), HOME=str(tmp_path))
    res = _run(["self-check"], env=env)
    assert res.returncode == 0, res.stderr
    line = next(ln for ln in res.stdout.splitlines() if " model " in ln)
    assert line.startswith("off") and "semantic search is off" in line


def test_self_check_fails_by_name_when_a_required_part_is_broken(tmp_path: Path) -> None:
    # A frozen build that lost sqlcipher3's native module: shadow it with a broken one.
    (tmp_path / "sqlcipher3").mkdir()
    (tmp_path / "sqlcipher3" / "__init__.py").write_text("raise ImportError('no native lib')\n")
    env = _env(PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    res = _run(["self-check"], env=env)
    assert res.returncode == 1
    line = next(ln for ln in res.stdout.splitlines() if " sqlcipher " in ln)
    assert line.startswith("FAIL") and "no native lib" in line


def test_app_self_check_loads_the_qt_platform_plugin() -> None:
    res = subprocess.run([sys.executable, "-c", "import sys; from ui.main import main; "
                          "sys.exit(main(['--self-check']))"],
                         capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    qt = next(ln for ln in res.stdout.splitlines() if " qt " in ln)
    assert qt.startswith("ok") and "platform offscreen" in qt


def test_desktop_entry_and_appstream_data_agree() -> None:
    desktop = configparser.ConfigParser(interpolation=None)
    desktop.optionxform = str  # type: ignore[assignment,method-assign]
    desktop.read(PACKAGING / "linux" / f"{APP_ID}.desktop", encoding="utf-8")
    entry = desktop["Desktop Entry"]
    assert entry["Type"] == "Application" and entry["Name"] == "Kept"
    assert entry["Icon"] == APP_ID and entry["Terminal"] == "false"
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["scripts"]
    assert entry["Exec"].split()[0] in scripts
    assert entry["Categories"].endswith(";")

    meta = ET.parse(PACKAGING / "linux" / f"{APP_ID}.metainfo.xml").getroot()
    assert meta.get("type") == "desktop-application"
    assert meta.findtext("id") == APP_ID
    assert meta.find("launchable").text == f"{APP_ID}.desktop"  # type: ignore[union-attr]
    from app import __version__
    assert meta.find("releases/release").get("version") == __version__  # type: ignore[union-attr]
    ET.parse(ROOT / "assets" / "icons" / "kept.svg")  # the icon both name is well-formed


def test_pyinstaller_spec_names_files_that_exist() -> None:
    spec = (PACKAGING / "app.spec").read_text("utf-8")
    compile(spec, "app.spec", "exec")
    for rel in ("storage/migrations", "assets/fonts", "assets/icons",
                "packaging/kept_app.py", "packaging/kept_cli.py"):
        parts = rel.split("/")
        assert all(f'"{p}"' in spec for p in parts), rel
        assert (ROOT / rel).exists(), rel
    assert list((ROOT / "storage" / "migrations").glob("*.sql"))
    # The frozen entry points call the same mains as the console scripts.
    assert "from ui.main import main" in (PACKAGING / "kept_app.py").read_text("utf-8")
    assert "from app.cli import main" in (PACKAGING / "kept_cli.py").read_text("utf-8")
