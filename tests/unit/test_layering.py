"""The layers are enforced by import-linter's contracts (pyproject.toml `[tool.importlinter]`, docs/architecture.md
"Layers").

Contract of these tests:
- the contracts hold on the tree as it is (`make lint-imports` runs the same check);
- they are not vacuous: a copy of the package given one violation per contract (relative and absolute imports,
  our packages and standard-library or third-party modules, in core, models, state, k8s, runtime and sim) breaks
  every one of them, each naming the offending import;
- every package of gangsched falls under a contract, so a new one cannot slip past them unnoticed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "operator" / "gangsched"

# one violation per contract, as new modules (no existing file is edited: the check reads every file of the package)
VIOLATIONS = {
    "core/_probe.py": "from ..k8s import client\nimport socket\n",  # relative import; I/O in core
    "core/values/_probe.py": "from gangsched.core.cycle import scheduler\n",  # a value importing the cycle
    "models/_probe.py": "from gangsched.state import cache\n",
    "state/_probe.py": "import aiohttp\n",
    "k8s/_probe.py": "import gangsched.runtime.operator\n",
    "runtime/_probe.py": "from gangsched.handlers import main\n",
    "sim/_probe.py": "from gangsched.k8s import fence\n",
    "handlers/_probe.py": "import gangsched.demo\n",
    "plugin/_probe.py": "from gangsched.state import cache\n",
    "whatif/_probe.py": "from gangsched.runtime import operator\n",
}
EXPECTED_BROKEN = {
    "layers": [
        "gangsched.runtime._probe -> gangsched.handlers.main",
        "gangsched.k8s._probe -> gangsched.runtime.operator",
    ],
    "core-packages": ["gangsched.core.values._probe -> gangsched.core.cycle.scheduler"],
    "core-pure": ["gangsched.core._probe -> gangsched.k8s.client"],
    "core-no-io": ["gangsched.core._probe -> socket"],
    "models-on-core": ["gangsched.models._probe -> gangsched.state.cache"],
    "state-no-io": ["gangsched.state._probe -> aiohttp"],
    "k8s-below-runtime": ["gangsched.k8s._probe -> gangsched.runtime.operator"],
    "operator-without-sim": ["gangsched.handlers._probe -> gangsched.demo"],
    "sim-independent": ["gangsched.sim._probe -> gangsched.k8s.fence"],
    "plugin-read-only": ["gangsched.plugin._probe -> gangsched.state.cache"],
    "whatif-on-core": ["gangsched.whatif._probe -> gangsched.runtime.operator"],
}


def _contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _lint_imports(cwd: Path, source_root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports as `make lint-imports` runs it, on the package found under `source_root`."""
    env = {**os.environ, "PYTHONPATH": str(source_root), "COLUMNS": "400", "NO_COLOR": "1"}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())",
            "--no-cache",
            "--no-logo",
        ],
        check=False,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_contracts_hold() -> None:
    result = _lint_imports(ROOT, ROOT / "operator")
    assert result.returncode == 0, result.stdout + result.stderr
    for contract in _contracts():
        assert f"{contract['name']} KEPT" in result.stdout, result.stdout


def test_a_violation_of_each_contract_fails(tmp_path: Path) -> None:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    copy = tmp_path / "operator" / "gangsched"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for relative, source in VIOLATIONS.items():
        (copy / relative).write_text(source)

    result = _lint_imports(tmp_path, tmp_path / "operator")

    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    names = {contract["id"]: contract["name"] for contract in _contracts()}
    assert set(EXPECTED_BROKEN) == set(names), "a contract without a violation here, or a violation without a contract"
    broken = {cid for cid, name in names.items() if f"{name} BROKEN" in output}
    assert broken == set(EXPECTED_BROKEN), output
    for cid, imports in EXPECTED_BROKEN.items():
        for line in imports:
            assert line in output, f"{cid}: {line!r} not reported\n{output}"


def test_every_package_is_under_a_contract() -> None:
    packages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    layers = next(c for c in _contracts() if c["id"] == "layers")["layers"]
    layered = {name.strip() for layer in layers for name in layer.split("|")}
    apart = [
        m
        for c in _contracts()
        if c["id"] in ("sim-independent", "plugin-read-only", "whatif-on-core")
        for m in c["source_modules"]
    ]
    assert packages == layered | {module.removeprefix("gangsched.") for module in apart}
