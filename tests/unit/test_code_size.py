"""Size limits of the scheduling core: no module in core/ over 500 lines, no function over 60 lines.

Measured with ast: a module's length is its line count, a function's is `end_lineno - lineno + 1` of its
definition (decorators excluded, nested functions counted in their own right as well)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "operator" / "gangsched" / "core"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60

MODULES = sorted(CORE.rglob("*.py"))  # core/topology/ too


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_the_core_has_modules() -> None:
    assert len(MODULES) > 10, CORE


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(CORE)) for p in MODULES])
def test_module_and_function_sizes(path: Path) -> None:
    text = path.read_text()
    lines = len(text.splitlines())
    assert lines <= MAX_MODULE_LINES, f"core/{path.relative_to(CORE)} has {lines} lines (limit {MAX_MODULE_LINES})"
    long = [
        f"{f.name} (line {f.lineno}): {f.end_lineno - f.lineno + 1} lines"
        for f in _functions(ast.parse(text))
        if f.end_lineno is not None and f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"core/{path.relative_to(CORE)}: functions over {MAX_FUNCTION_LINES} lines: {long}"
