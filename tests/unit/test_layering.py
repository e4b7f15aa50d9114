"""The layers import downwards only, and the core stays pure (DESIGN.md, Layout)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "operator" / "gangsched"

# layer -> the gangsched layers it may import (besides itself)
ALLOWED = {
    "core": set(),
    "models": {"core"},
    "state": {"models", "core"},
    "k8s": {"models", "core"},
    "runtime": {"k8s", "state", "models", "core"},
    "handlers": {"runtime", "k8s", "state", "models", "core"},
}
CORE_FORBIDDEN = {"asyncio", "kopf", "kubernetes_asyncio", "aiohttp", "time", "random", "datetime", "os", "threading"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _modules(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_lower_layers(layer: str) -> None:
    offenders = []
    for path in _modules(layer):
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] != "gangsched" or len(parts) < 2:
                continue
            target = parts[1]
            if target != layer and target in ALLOWED and target not in ALLOWED[layer]:
                offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not offenders, offenders


def test_core_has_no_io_clock_or_randomness() -> None:
    offenders = []
    for path in _modules("core"):
        for name in _imports(path):
            if name.split(".")[0] in CORE_FORBIDDEN:
                offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not offenders, offenders


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text("import time\nfrom asyncio import sleep\nfrom gangsched.k8s import x\n")
    assert _imports(sample) == {"time", "asyncio", "gangsched.k8s"}
