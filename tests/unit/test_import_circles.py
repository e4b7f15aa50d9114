"""operator/gangsched has no import circle, core/ or elsewhere (issue 23): computed from every import, with ast.

Contract: module-level, function-level and TYPE_CHECKING imports all count; `from package import name` counts
as an import of the package and, when `name` is a module of it, of that module too; relative imports are
resolved. A circle is a strongly connected set of two or more modules of gangsched. A circle is broken by moving
the shared piece down or splitting a module (sim/request.py, whatif/lineup.py), never by hiding an import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import gangsched

SOURCE = Path(gangsched.__file__).parent.parent
PACKAGE = Path(gangsched.__file__).parent


def _name(path: Path) -> str:
    parts = path.relative_to(SOURCE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[: len(package) - node.level + 1]
            base = ".".join([*package, node.module] if node.module else package)
        yield base
        yield from (f"{base}.{alias.name}" for alias in node.names)


def _graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    paths = {_name(path): path for path in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found = {t for node in ast.walk(tree) for t in _targets(node, module, path.name == "__init__.py")}
        graph[module] = {t for t in found if t in paths and t != module}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of two or more modules (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
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
                        circles.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return circles


def test_the_package_has_no_import_circle() -> None:
    graph = _graph()
    assert len(graph) > 200, "every module of operator/gangsched is in the graph"
    assert _circles(graph) == []


def test_function_level_and_type_checking_imports_count() -> None:
    """The emulator's registry constructs the namespace controller, which calls it back: that is typed by
    sim/request.py's `RegistryCalls`, not by importing the registry (under TYPE_CHECKING or in a function)."""
    graph = _graph()
    assert "gangsched.sim.namespace_controller" in graph["gangsched.sim.registry"]
    assert "gangsched.sim.registry" not in graph["gangsched.sim.namespace_controller"]
    tree = ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a.b\ndef f():\n    from c import d\n"
    )
    assert {t for node in ast.walk(tree) for t in _targets(node, "m", False)} == {
        "typing",
        "typing.TYPE_CHECKING",
        "a.b",
        "c",
        "c.d",
    }


def test_a_circle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]
