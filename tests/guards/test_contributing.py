"""The written guides name real places: CONTRIBUTING.md and docs/*.md against the code.

Fails when a guide drifts from the tree:
- a backticked repository path (`app/...`, `storage/...`, `ui/...`, `tests/...`, `docs/...`,
  `bench/...`, `packaging/...`, `assets/...`, `README.md`, ...) that does not exist, alone or
  as a word of a backticked command;
- a `path.py:Symbol` or a dotted `module.Symbol` (`app.facade.Vault`, `app.cli:main`) whose
  module has no such top-level name (or class member, for `Class.member`), read with `ast`:
  nothing is imported, so no Qt and no native library is loaded;
- a Markdown link to a file that does not exist, or to a heading anchor that none of its
  headings makes (GitHub's rule: lower case, punctuation dropped, spaces to hyphens);
- a citation `docs/<file>.md#anchor`, in a guide or in the code (app/, storage/, ui/), whose
  anchor is gone;
- one of the recipes of CONTRIBUTING.md missing, or naming fewer than three places.

Templates are not places: a path with `<`, `*`, `NNNN` or `...` in it is skipped.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from tests import ROOT

GUIDES = (ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md")))
RECIPES = ("An operation", "An MCP tool", "A CLI command", "An import format",
           "A consolidation step", "A page", "A migration")
TOP_DIRS = ("app", "storage", "ui", "tests", "docs", "bench", "packaging", "assets")
TOP_FILES = ("README.md", "CONTRIBUTING.md", "pyproject.toml")
PACKAGES = ("app", "storage", "ui", "tests")
# Backticked words that look like modules and are not: names of things outside the code.
NOT_CODE = frozenset({"app.kept.vault"})  # the keychain service name (storage/crypto.py)

FENCE = re.compile(r"^```.*?^```", re.M | re.S)
TICKED = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
_TOPS, _PACKAGES = "|".join(TOP_DIRS), "|".join(PACKAGES)
PATH = re.compile(rf"^(?:{_TOPS})/[\w./-]*(?::[A-Za-z_][\w.]*)?$")
DOTTED = re.compile(rf"^(?:{_PACKAGES})(?:\.\w+)+(?::[A-Za-z_][\w.]*)?$")
TEMPLATE = ("<", "*", "NNNN", "...", "{")
CITED = re.compile(r"docs/([\w-]+\.md)#([\w-]+)")


def citation_problem(doc: str, anchor: str) -> str | None:
    dest = ROOT / "docs" / doc
    if not dest.exists():
        return f"no docs/{doc}"
    return None if anchor in anchors(dest) else f"no heading of docs/{doc} makes #{anchor}"


def _prose(path: Path) -> str:
    """The guide without its fenced blocks (diagrams and commands to copy, not references)."""
    return FENCE.sub("", path.read_text("utf-8"))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: inline markup dropped, lower case, every character but
    letters, digits, spaces, hyphens and underscores dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@functools.cache
def anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(_prose(path)):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return frozenset(out)


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text("utf-8"), filename=str(path))


def _names(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """Names a module or class body defines: functions, classes, assignments, imports."""
    out: dict[str, ast.stmt] = {}
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        out[name.id] = node
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target,
                                                                          ast.Name):
            out[node.target.id] = node
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                out[(alias.asname or alias.name).split(".")[0]] = node
        elif isinstance(node, ast.If | ast.Try):  # if TYPE_CHECKING:, try: import ...
            out.update(_names(node.body))
            out.update(_names(node.orelse))
    return out


def symbol_problem(path: Path, symbol: str) -> str | None:
    """None when ``symbol`` (``name`` or ``Class.member``) is defined in the module."""
    body = _tree(path).body
    parts = symbol.split(".")
    for n, part in enumerate(parts):
        found = _names(body).get(part)
        if found is None:
            where = ".".join(parts[:n]) or path.relative_to(ROOT).as_posix()
            return f"{where} has no {part!r}"
        if n < len(parts) - 1:
            if not isinstance(found, ast.ClassDef):
                return f"{'.'.join(parts[:n + 1])} is not a class"
            body = found.body
    return None


def _module_file(dotted: str) -> Path | None:
    base = ROOT.joinpath(*dotted.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def dotted_problem(token: str) -> str | None:
    """``app.facade.Vault``, ``app.transfer``, ``app.cli:main``: the longest prefix that is a
    module, then the rest as a symbol of it."""
    name, _, after = token.partition(":")
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module = _module_file(".".join(parts[:cut]))
        if module is not None:
            rest = ".".join(parts[cut:] + ([after] if after else []))
            return symbol_problem(module, rest) if rest else None
    return f"no module {parts[0]}.{parts[1] if len(parts) > 1 else ''}"


def path_problem(token: str) -> str | None:
    rel, _, symbol = token.partition(":")
    target = ROOT / rel
    if not target.exists():
        return "does not exist"
    if symbol:
        if target.suffix != ".py":
            return "a symbol of a file that is not Python"
        return symbol_problem(target, symbol)
    return None


def problems_of(token: str) -> list[str]:
    """What is wrong with the places one backticked text names: the text itself, or the
    words of a command (paths anywhere, a dotted module after ``-m``)."""
    if any(t in token for t in TEMPLATE):
        return []
    words = token.split()
    out = []
    for i, word in enumerate(words):
        word = word.rstrip(",;")
        if word in NOT_CODE:
            continue
        cited = CITED.fullmatch(word)
        if cited:
            why = citation_problem(*cited.groups())
        elif PATH.match(word):
            why = path_problem(word)
        elif word in TOP_FILES:
            why = None if (ROOT / word).exists() else "does not exist"
        elif DOTTED.match(word) and (len(words) == 1 or (i > 0 and words[i - 1] == "-m")):
            why = dotted_problem(word)
        else:
            continue
        if why:
            out.append(f"`{word}`: {why}")
    return out


def _where(guide: Path) -> str:
    return guide.relative_to(ROOT).as_posix()


def test_every_backticked_place_exists() -> None:
    found = []
    for guide in GUIDES:
        for token in TICKED.findall(_prose(guide)):
            found += [f"{_where(guide)}: {p}" for p in problems_of(token)]
    assert not found, "guides name places that are not there:\n" + "\n".join(found)


def test_every_link_reaches_a_file_and_a_heading() -> None:
    found = []
    for guide in GUIDES:
        for target in LINK.findall(_prose(guide)):
            if re.match(r"^[a-z]+:", target):  # https:, mailto:
                continue
            file, _, anchor = target.partition("#")
            dest = (guide.parent / file).resolve() if file else guide
            if not dest.exists():
                found.append(f"{_where(guide)}: ({target}): no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                found.append(f"{_where(guide)}: ({target}): no heading makes #{anchor}")
    assert not found, "\n".join(found)


def test_code_citations_of_the_docs_have_their_anchors() -> None:
    found = []
    for package in ("app", "storage", "ui"):
        for source in sorted((ROOT / package).rglob("*.py")):
            for doc, anchor in CITED.findall(source.read_text("utf-8")):
                why = citation_problem(doc, anchor)
                if why:
                    found.append(f"{source.relative_to(ROOT)}: {why}")
    assert not found, "citations of the docs that lead nowhere:\n" + "\n".join(found)


def _sections(text: str) -> dict[str, str]:
    """CONTRIBUTING.md's ``## `` sections by heading."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_every_recipe_is_there_and_names_its_places() -> None:
    sections = _sections(_prose(ROOT / "CONTRIBUTING.md"))
    found = []
    for recipe in RECIPES:
        heading = next((h for h in sections if h.startswith(recipe)), None)
        if heading is None:
            found.append(f"no recipe {recipe!r} (a '## {recipe} ...' heading)")
            continue
        places = {w for token in TICKED.findall(sections[heading])
                  for w in token.split() if PATH.match(w)}
        if len(places) < 3:
            found.append(f"{heading!r} names {len(places)} place(s): {sorted(places)}")
    assert not found, "\n".join(found)


def test_the_operation_table_is_the_marks() -> None:
    """docs/architecture.md lists every operation with its mark; the marks decide
    (``app/operations.py``), so the table follows them. Importing ``app.api`` loads the
    standard library only."""
    from app.api import VaultAPI
    from app.operations import operations

    want = {}
    for name, o in operations(VaultAPI).items():
        flags = (["agent"] if o.agent else []) + ([f"tool {o.tool}"] if o.tool else []) \
            + (["slow"] if o.slow else [])
        want[name] = (o.access.name, ", ".join(flags))
    text = _prose(ROOT / "docs" / "architecture.md")
    table = text.split("The operations as marked today:", 1)[1].split("\n\n", 2)[1]
    have = {}
    for row in table.splitlines()[2:]:
        names, access, flags = (c.strip() for c in row.strip("|").split("|"))
        for name in TICKED.findall(names):
            have[name] = (access, flags.replace("`", ""))
    assert have == want


def test_the_checker_sees_what_it_must() -> None:
    """The checks would pass vacuously if they missed a form; each of these is caught."""
    assert problems_of("app/no_such_module.py")
    assert problems_of("app/facade.py:NoSuchThing")
    assert problems_of("app/facade.py:Vault.no_such_method")
    assert not problems_of("app/facade.py:Vault.lock")
    assert problems_of("app.facade.NoSuchThing")
    assert not problems_of("app.facade.Vault")
    assert not problems_of("app.cli:main")
    assert problems_of("python -m tests.no_such_test")
    assert problems_of(".venv/bin/python bench/no_such_bench.py")
    assert not problems_of("ui/views/<name>.py")
    assert problems_of("docs/security.md#no-such-heading")
    assert not problems_of("docs/security.md#20-auto-lock-and-memory-hygiene")
    assert slug("20. Auto-lock and memory hygiene") == "20-auto-lock-and-memory-hygiene"
    assert slug("The `kept mcp` server") == "the-kept-mcp-server"
