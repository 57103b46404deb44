"""The import edges between ``ui/``, ``app/`` and ``storage/`` (STYLE.md B1: ui -> app <-
storage). Every ``import`` in every module counts, at module level or inside a function or
``if TYPE_CHECKING:``, since a lazy import is an edge all the same.

Allowed:
- ``ui`` imports ``app`` (and ``ui``), never ``storage``: the composition root ``ui/main.py``
  reaches storage through ``app.bootstrap`` like the CLI; widgets never import a service
  (``app.services``): they call the facade;
- ``app`` imports ``storage`` in ``app/bootstrap.py`` only (the composition of one unlocked
  vault) and never ``ui``;
- ``storage`` imports from ``app`` only the modules it implements or reports with:
  ``app.domain``, ``app.errors``, ``app.api``, ``app.ports``, ``app.policy``, ``app.clock``,
  ``app.changes``, ``app.kdf`` (the one-derive-at-a-time gate the owner socket shares),
  ``app.threads`` (background threads' lower priority); never
  ``ui``;
- nothing in ``app`` or ``storage`` imports Qt.

``python -m tests.guards.test_layers [ROOT]`` prints the cross-layer edge table (counts per
(from-package, to-module)), for the closing note.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from tests import ROOT

PACKAGES = ("ui", "app", "storage")
COMPOSITION = "app/bootstrap.py"  # the one app module that imports storage
STORAGE_MAY_IMPORT = ("app.domain", "app.errors", "app.api", "app.ports", "app.policy",
                      "app.clock", "app.changes", "app.kdf", "app.threads")
QT = ("PySide6", "shiboken6")


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(root: Path, dotted: str) -> bool:
    base = root.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports(root: Path, path: Path) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import in ``path``; ``from a import b`` is ``a.b``
    when ``b`` is a module of the project, else ``a``; relative imports are resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = _module_name(root, path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                up = up[:len(up) - (node.level - 1)] if node.level > 1 else up
                base = ".".join([*up, base] if base else up)
            found = {f"{base}.{a.name}" if _is_module(root, f"{base}.{a.name}") else base
                     for a in node.names}
            for mod in sorted(found):  # one edge per statement and module
                yield node.lineno, mod


def sources(root: Path) -> Iterator[Path]:
    for pkg in PACKAGES:
        yield from sorted((root / pkg).rglob("*.py"))


def _top(module: str) -> str:
    return module.partition(".")[0]


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def violations(root: Path = ROOT) -> list[str]:
    out = []
    for path in sources(root):
        rel = path.relative_to(root).as_posix()
        layer = rel.partition("/")[0]
        for line, mod in imports(root, path):
            top = _top(mod)
            where = f"{rel}:{line} imports {mod}"
            if layer in ("app", "storage") and top in QT:
                out.append(f"{where}: no Qt below ui/")
            elif layer == "ui" and top == "storage":
                out.append(f"{where}: ui/ reaches storage through app.bootstrap only")
            elif layer == "ui" and _under(mod, ("app.services",)) and rel != "ui/main.py":
                out.append(f"{where}: ui/ calls services through the facade only")
            elif layer == "app" and top == "storage" and rel != COMPOSITION:
                out.append(f"{where}: only {COMPOSITION} imports storage")
            elif layer in ("app", "storage") and top == "ui":
                out.append(f"{where}: nothing below ui/ imports ui")
            elif layer == "storage" and top == "app" and not _under(mod, STORAGE_MAY_IMPORT):
                out.append(f"{where}: storage may import only {', '.join(STORAGE_MAY_IMPORT)}")
    return out


def edge_table(root: Path = ROOT) -> Counter[tuple[str, str]]:
    """Cross-layer import statements per (from, to): from is the package, or ``ui/main.py``
    and ``app/bootstrap.py`` (the composition roots) by name; to is the imported module."""
    table: Counter[tuple[str, str]] = Counter()
    roots = {"ui/main.py", COMPOSITION}
    for path in sources(root):
        rel = path.relative_to(root).as_posix()
        layer = rel.partition("/")[0]
        for _line, mod in imports(root, path):
            top = _top(mod)
            if top != layer and (top in PACKAGES or (top in QT and layer != "ui")):
                table[(rel if rel in roots else layer, mod)] += 1
    return table


def test_every_import_edge_is_allowed() -> None:
    found = violations()
    assert not found, "import edges against STYLE.md B1:\n" + "\n".join(found)


def test_the_checker_sees_lazy_relative_and_type_checking_imports(tmp_path: Path) -> None:
    """The guard would pass vacuously if it missed an import form: each of these is found."""
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "storage" / "repo.py").write_text("")
    (tmp_path / "app" / "services").mkdir()
    (tmp_path / "app" / "services" / "__init__.py").write_text("")
    (tmp_path / "app" / "services" / "lazy.py").write_text(
        "def f():\n    from storage import repo\n")
    (tmp_path / "app" / "typed.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import storage.repo\n")
    (tmp_path / "app" / "qt.py").write_text("from PySide6.QtCore import QObject\n")
    (tmp_path / "app" / "bootstrap.py").write_text("from storage import repo\n")
    (tmp_path / "ui" / "main.py").write_text("from storage.repo import x\n")
    (tmp_path / "ui" / "view.py").write_text("from app.services.recall import Filters\n")
    (tmp_path / "storage" / "up.py").write_text("from ..app import facade\nfrom app import api\n")
    (tmp_path / "app" / "facade.py").write_text("")
    (tmp_path / "app" / "api.py").write_text("")
    found = "\n".join(violations(tmp_path))
    assert "app/services/lazy.py:2 imports storage.repo" in found
    assert "app/typed.py:3 imports storage.repo" in found
    assert "app/qt.py:1 imports PySide6.QtCore" in found
    assert "ui/main.py:1 imports storage.repo" in found
    assert "ui/view.py:1 imports app.services.recall" in found
    assert "storage/up.py:1 imports app.facade" in found
    assert "imports app.api" not in found and "app/bootstrap.py:" not in found
    assert len(found.splitlines()) == 6, found


CLI_DATA_SERVICES = ("app.services.import_formats", "app.services.export", "app.services.backup")


def test_cli_groups_import_only_common() -> None:
    """``app/cli/`` (CONTRIBUTING, "A CLI command"): a command group imports, of ``app.cli``,
    only ``app.cli.common`` (so no import circle), and data in and out goes through
    ``app.transfer`` as the window's does, not through the services."""
    found = []
    for path in sorted((ROOT / "app" / "cli").glob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        group = path.name not in ("__init__.py", "__main__.py")
        for line, mod in imports(ROOT, path):
            if group and _under(mod, ("app.cli",)) and mod != "app.cli.common":
                found.append(f"{rel}:{line} imports {mod}: a group imports only app.cli.common")
            elif _under(mod, CLI_DATA_SERVICES):
                found.append(f"{rel}:{line} imports {mod}: the CLI calls app.transfer")
    assert not found, "\n".join(found)


def main(argv: list[str]) -> int:
    root = Path(argv[1]).resolve() if len(argv) > 1 else ROOT
    table = edge_table(root)
    for (src, dst), n in sorted(table.items()):
        print(f"{n:4d}  {src:<18} -> {dst}")
    print(f"{sum(table.values()):4d}  in all; violations: {len(violations(root))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
