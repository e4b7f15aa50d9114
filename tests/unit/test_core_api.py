"""The core's API boundary (issue 23 item 2): every layer outside core imports it only through its exported names.

Contract checked here, over every import statement of operator/gangsched outside core/ (module-level,
function-level and TYPE_CHECKING ones alike: the whole syntax tree is walked, relative imports resolved):
- `from gangsched.core import name` and `from gangsched.core.<package> import name` only, and `name` is in that
  package's `__all__` (no star imports, no `import gangsched.core...` statements, no `from gangsched import core`);
- never a module below a package (`gangsched.core.<package>.<module>`).
The packages' side: each one's `__init__` has a docstring and an `__all__` whose names it defines, and every name
`gangsched.core` exports is exported by one of its packages. Tests and benchmarks are white-box: not checked.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import gangsched

ROOT = Path(gangsched.__file__).parent
CORE = "gangsched.core"
PACKAGES = sorted(p.name for p in (ROOT / "core").iterdir() if (p / "__init__.py").is_file())


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _outside_core() -> Iterator[Path]:
    for path in sorted(ROOT.rglob("*.py")):
        if path.relative_to(ROOT).parts[0] != "core":
            yield path


def _absolute(node: ast.ImportFrom, path: Path) -> str:
    """The module an ImportFrom names, relative imports resolved against the file's package."""
    if not node.level:
        return node.module or ""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def _exports(module: str) -> frozenset[str]:
    return frozenset(getattr(importlib.import_module(module), "__all__", ()))


def _violations(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    where = path.relative_to(ROOT.parent)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == CORE or alias.name.startswith(CORE + "."):
                    yield f"{where}:{node.lineno}: `import {alias.name}`: use `from {CORE}... import name`"
        elif isinstance(node, ast.ImportFrom):
            yield from _from_violations(node, _absolute(node, path), f"{where}:{node.lineno}")


def _from_violations(node: ast.ImportFrom, module: str, where: str) -> Iterator[str]:
    names = [alias.name for alias in node.names]
    if module == "gangsched" and "core" in names:
        yield f"{where}: `from gangsched import core`: import the names"
        return
    if module != CORE and not module.startswith(CORE + "."):
        return
    rest = module.split(".")[2:]
    if len(rest) > 1 or (rest and rest[0] not in PACKAGES):
        yield f"{where}: `{module}` is below a core package: import from {CORE} or {CORE}.<package>"
        return
    exported = _exports(module)
    for name in names:
        if name not in exported:
            yield f"{where}: `{name}` is not exported by `{module}` (its __all__)"


def test_layers_outside_core_import_only_exported_names() -> None:
    found = [v for path in _outside_core() for v in _violations(path)]
    assert not found, "imports of core that bypass its API:\n" + "\n".join(found)


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_says_its_job_and_exports_what_it_defines(package: str) -> None:
    module = importlib.import_module(f"{CORE}.{package}")
    assert module.__doc__ and len(module.__doc__.strip().splitlines()) >= 2, f"{package}: a few lines on its job"
    exported = getattr(module, "__all__", None)
    assert exported, f"{package} has no __all__"
    assert len(exported) == len(set(exported))
    missing = [name for name in exported if not hasattr(module, name)]
    assert not missing, f"{package}.__all__ names what it does not define: {missing}"


MAX_EXPORTS = 20  # issue 23 item 1: "a package exports at most ~20 public names"
# packages still over it, with their count today: to be split, never to grow; the list may only shrink
OVER_EXPORTS = {"devices": 29}


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_exports_at_most_twenty_names(package: str) -> None:
    count = len(_exports(f"{CORE}.{package}"))
    limit = OVER_EXPORTS.get(package, MAX_EXPORTS)
    assert count <= limit, f"core/{package} exports {count} names (limit {limit}): split it along its concepts"
    if package in OVER_EXPORTS:
        assert count > MAX_EXPORTS, f"core/{package} is down to {count}: remove it from OVER_EXPORTS"


def test_core_exports_only_names_its_packages_export() -> None:
    core = importlib.import_module(CORE)
    by_package = set().union(*(_exports(f"{CORE}.{package}") for package in PACKAGES))
    assert set(core.__all__) <= by_package, sorted(set(core.__all__) - by_package)
    assert all(hasattr(core, name) for name in core.__all__)


def _check(source: str, path: Path) -> list[str]:
    tree = ast.parse(source)
    return [
        v
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for v in _from_violations(node, _absolute(node, path), "x")
    ]


def test_the_check_catches_imports_that_bypass_the_api() -> None:
    path = ROOT / "runtime" / "operator.py"
    assert not _check("from gangsched.core import Plan\nfrom gangsched.core.memory import SchedulerState", path)
    assert _check("from gangsched.core.memory.plan import Plan", path)
    assert _check("from gangsched.core.memory import ClusterStoreNotThere", path)
    assert _check("from gangsched.core import PodCounts", path)  # exported by fit, not by core
    assert _check("def f() -> None:\n    from ..core.values.errors import InvalidField", path)
    assert _check("from gangsched import core", path)
    assert _check("from gangsched.core.memory import *", path)
