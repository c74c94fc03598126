"""The layout's rules that import-linter does not state: no import circle, small modules.

``lint-imports`` (contracts in ``pyproject.toml``) keeps the layers, the retrieval module's
independence, private modules and cycles between sibling packages. Two rules remain:
no module imports itself back through any chain, package faces included, and no source
module grows past about 300 lines (STYLE.md: split by role before it grows).
"""

from __future__ import annotations

from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("deployments", "serving", "flows", "tasks", "storage")
MIGRATIONS = ROOT / "storage" / "migrations" / "versions"
MAX_LINES = 320  # "about 300": room for a docstring, not for a second role


def _cycles(imports: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(imports):
        if start in index:
            continue
        work = [(start, iter(sorted(imports[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(imports.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_cycle_through_a_package_face() -> None:
    imports = {"a": {"a._x"}, "a._x": {"a._y"}, "a._y": {"a"}, "b": set()}
    assert _cycles(imports) == [["a", "a._x", "a._y"]]


def test_no_module_imports_itself_back() -> None:
    graph = grimp.build_graph(*PACKAGES)
    imports = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    assert _cycles(imports) == []


def test_no_source_module_is_over_about_300_lines() -> None:
    # A migration is a frozen record of one schema change, its length its SQL: not counted.
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if MIGRATIONS not in path.parents
    }
    assert len(sizes) > 100
    assert {path: n for path, n in sizes.items() if n > MAX_LINES} == {}
