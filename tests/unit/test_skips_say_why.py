"""Every skip in the suite says why: `pytest -rs` lists reasons, never a bare "skipped" or "could not import".

Checked statically over tests/: `pytest.skip(...)` has a message, `@pytest.mark.skip`/`skipif` and
`pytest.importorskip` have `reason=`. A skip that cannot say why should be a failure instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _reason_given(call: ast.Call, *, positional: bool) -> bool:
    for keyword in call.keywords:
        if keyword.arg in {"reason", "msg"}:
            return not (isinstance(keyword.value, ast.Constant) and not keyword.value.value)
    if positional and call.args:
        first = call.args[0]
        return not (isinstance(first, ast.Constant) and not first.value)
    return False


SKIPS = {"skip", "skipif", "importorskip"}


def _last_name(callee: ast.expr) -> str | None:
    if isinstance(callee, ast.Attribute):
        return callee.attr
    return callee.id if isinstance(callee, ast.Name) else None


def _skips_without_reason(source: str, name: str) -> list[str]:
    found: list[str] = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        decorators: list[ast.expr] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            decorators = node.decorator_list
        for decorator in decorators:  # a bare `@pytest.mark.skip` (not called) has no reason at all
            if _last_name(decorator) == "skip":
                found.append(f"{name}:{decorator.lineno}: @{ast.unparse(decorator)}")
        if not isinstance(node, ast.Call) or _last_name(node.func) not in SKIPS:
            continue
        callee = ast.unparse(node.func)
        if callee.endswith(("pytest.skip", "mark.skip")):  # the reason may be the first argument
            ok = _reason_given(node, positional=True)
        elif callee.endswith(("mark.skipif", "importorskip")):  # positional: conditions; the module, its minversion
            ok = _reason_given(node, positional=False)
        else:
            continue
        if not ok:
            found.append(f"{name}:{node.lineno}: {callee}(...) without a reason")
    return found


def test_every_skip_in_the_suite_says_why() -> None:
    sources = {path: path.read_text() for path in sorted(TESTS.rglob("*.py"))}
    found = [
        problem
        for path, source in sources.items()
        if "skip" in source  # parsing only the files that can skip keeps this test fast
        for problem in _skips_without_reason(source, str(path.relative_to(TESTS.parent)))
    ]
    assert found == []


def test_the_check_finds_skips_without_a_reason() -> None:
    source = """
import pytest

@pytest.mark.skip
def test_a(): ...

@pytest.mark.skip()
def test_b(): ...

@pytest.mark.skipif(True)
def test_c(): ...

def test_d():
    pytest.skip()
    pytest.importorskip("x")

@pytest.mark.skip(reason="fine")
@pytest.mark.skipif(True, reason="fine")
def test_e():
    pytest.skip("fine")
    pytest.importorskip("x", reason="fine")
"""
    lines = sorted(int(problem.split(":")[1]) for problem in _skips_without_reason(source, "t.py"))
    assert lines == [4, 7, 10, 14, 15]
