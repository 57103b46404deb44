"""kept-app names the system libraries Qt's X11 plugin lacks instead of letting Qt abort."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ui.main import debian_package, missing_xcb_libraries

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("soname", "package"), [
    ("libxcb-icccm.so.4", "libxcb-icccm4"),
    ("libxcb-keysyms.so.1", "libxcb-keysyms1"),
    ("libxcb-cursor.so.0", "libxcb-cursor0"),
    ("libxkbcommon-x11.so.0", "libxkbcommon-x11-0"),
    ("libxcb-render-util.so.0.0.0", "libxcb-render-util0"),
])
def test_debian_package_names(soname: str, package: str) -> None:
    assert debian_package(soname) == package


def _fake_ldd(folder: Path, missing: list[str]) -> None:
    script = folder / "ldd"
    lines = "".join(f"echo '\t{m} => not found'\n" for m in missing)
    script.write_text("#!/bin/sh\necho '\tlibc.so.6 => /lib/libc.so.6 (0x0)'\n" + lines)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_missing_libraries_are_found_only_for_xcb(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_ldd(tmp_path, ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"])
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    found = missing_xcb_libraries()
    assert found[:2] == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
    assert len(found) == len(set(found))  # each named once
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    assert missing_xcb_libraries() == []


def test_app_exits_2_with_the_packages_to_install(tmp_path: Path) -> None:
    _fake_ldd(tmp_path, ["libxcb-icccm.so.4"])
    env = dict(os.environ, PATH=f"{tmp_path}{os.pathsep}{os.environ['PATH']}",
               QT_QPA_PLATFORM="xcb", DISPLAY=":99", HOME=str(tmp_path))
    res = subprocess.run([sys.executable, "-c", "import sys; from ui.main import main; "
                          "sys.exit(main([]))"], capture_output=True, text=True,
                         timeout=120, cwd=ROOT, env=env)
    assert res.returncode == 2
    assert "libxcb-icccm.so.4" in res.stderr and "apt-get install libxcb-icccm4" in res.stderr
    assert "Aborted" not in res.stderr and "could not" not in res.stderr.lower()
