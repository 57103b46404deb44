#!/usr/bin/env python3
"""The shape of the code (issue 24, "Measured"). Prints JSON.

    python bench/code_metrics.py            # this tree
    python bench/code_metrics.py PATH       # another checkout (e.g. an older commit's archive)

- ``public_any``: public functions and methods (and ``__init__``) of app/, storage/, ui/ whose
  annotations mention ``Any``, of all public ones;
- ``import_circles``: groups of modules of app/, storage/, ui/ that import each other, directly
  or through others (every import counts: top level, inside functions, under TYPE_CHECKING);
- ``largest_modules`` and ``longest_functions``: lines, the top five;
- ``operations``: the members of ``VaultAPI`` by how they travel (read from their ``@op``
  marks; absent before issue 24).
Reads the source (``ast``); of the project it imports only ``storage`` (as every bench script
does: onnxruntime's telemetry off in it and its children; tests/app/test_network_native.py).
"""

from __future__ import annotations

import ast
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import storage  # noqa: E402,F401  (onnxruntime telemetry off, as in every bench script)

PACKAGES = ("app", "storage", "ui")


def _files(root: Path) -> dict[str, Path]:
    """Module name -> file, for every module of the packages."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _public_any(trees: dict[str, ast.Module]) -> tuple[int, int]:
    hits = total = 0

    def visit(node: ast.AST, public: bool) -> None:
        nonlocal hits, total
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                if public and (not child.name.startswith("_") or child.name == "__init__"):
                    total += 1
                    a = child.args
                    notes = [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)
                             if x.annotation is not None]
                    notes += [x.annotation for x in (a.vararg, a.kwarg)
                              if x is not None and x.annotation is not None]
                    if child.returns is not None:
                        notes.append(child.returns)
                    hits += any("Any" in ast.unparse(n) for n in notes)
            elif isinstance(child, ast.ClassDef):
                visit(child, public and not child.name.startswith("_"))
    for tree in trees.values():
        visit(tree, True)
    return hits, total


def _imports(name: str, tree: ast.Module, modules: set[str]) -> set[str]:
    """The project modules ``name`` imports (a name imported from a package that is itself a
    module counts as that module)."""
    out = set()
    package = name if name in modules and any(m.startswith(name + ".") for m in modules) \
        else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            # A name that is a submodule counts as that module; any other name counts as
            # the module it is taken from.
            subs = [f"{base}.{a.name}" for a in node.names]
            targets = [t for t in subs if t in modules]
            if len(targets) < len(subs):
                targets.append(base)
        else:
            continue
        for t in targets:
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def _operations(trees: dict[str, ast.Module]) -> dict[str, int]:
    tree = trees.get("app.api")
    counts: Counter[str] = Counter()
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.ClassDef) and node.name == "VaultAPI":
            for item in node.body:
                for dec in getattr(item, "decorator_list", []):
                    if isinstance(dec, ast.Call) and ast.unparse(dec.func) == "op":
                        counts[ast.unparse(dec.args[0]).removeprefix("Access.").lower()] += 1
                        counts["agent"] += any(k.arg == "agent" and ast.unparse(k.value) == "True"
                                               for k in dec.keywords)
    return dict(sorted(counts.items()))


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    files = _files(root)
    trees = {name: ast.parse(path.read_text("utf-8")) for name, path in files.items()}
    modules = set(files)
    graph = {name: _imports(name, tree, modules) for name, tree in trees.items()}
    hits, total = _public_any(trees)
    functions = sorted(
        ((n.end_lineno or n.lineno) - n.lineno + 1, f"{files[name].relative_to(root)}:{n.name}")
        for name, tree in trees.items() for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))[::-1]
    sizes = sorted(((len(p.read_text("utf-8").splitlines()), str(p.relative_to(root)))
                    for p in files.values()), reverse=True)
    print(json.dumps({
        "root": str(root),
        "public_any": {"with_any": hits, "public": total},
        "import_circles": _circles(graph),
        "largest_modules": [{"lines": n, "module": m} for n, m in sizes[:5]],
        "longest_functions": [{"lines": n, "function": f} for n, f in functions[:5]],
        "operations": _operations(trees),
    }, indent=1))


if __name__ == "__main__":
    main()
