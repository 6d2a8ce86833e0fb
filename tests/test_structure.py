"""The house rules a reader relies on: no import circles, short functions, teaching code apart.

Read from the source text (nothing is imported), so a broken module still gets a clear message.
"""
from __future__ import annotations

import ast
from pathlib import Path

from course import ROOT

MAX_FUNCTION_LINES = 60
PACKAGES = ("course", "solutions", "exercises")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _imports(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """The modules of the course that `path` imports (anywhere in the file, also inside
    functions and under TYPE_CHECKING, since a reader follows those too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import sub` imports pkg.sub when that is a module
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in known and t != name}
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, result = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return result


def test_no_import_circles():
    known = _sources()
    graph = {name: _imports(path, name, known) for name, path in known.items()}
    assert not _cycles(graph), f"import circles: {_cycles(graph)}"


def test_no_long_functions_in_course():
    long = []
    for path in sorted((ROOT / "course").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "functions over 60 lines (split them into named steps):\n" + "\n".join(long)


def test_teaching_code_never_imports_the_machinery():
    """solutions/ and exercises/ teach attention: they import torch and each other, never course/."""
    offenders = []
    for package in ("solutions", "exercises"):
        for path in sorted((ROOT / package).glob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
                offenders += [f"{package}/{path.name}: {n}" for n in names
                              if n.split(".")[0] == "course"]
    assert not offenders, offenders
