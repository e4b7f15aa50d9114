"""External programs the tests drive (kubectl, openssl): found on PATH, or the test is skipped, or failed in CI.

`need_tool(name)` returns the program's path. When it is not on PATH the test is skipped with the reason, except
in CI (the environment variable CI is `true` or `1`, as GitHub Actions, GitLab CI and most runners set it):
there a missing program means a broken runner, and the test fails instead of passing silently as a skip.
"""

from __future__ import annotations

import os
import shutil

import pytest


def in_ci() -> bool:
    """Whether the tests run in CI (CI=true or CI=1)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def need_tool(name: str) -> str:
    """The path of program `name`; skips the test when it is missing, fails it when missing in CI."""
    path = shutil.which(name)
    if path is not None:
        return path
    reason = f"{name} is not installed (not found on PATH)"
    if in_ci():
        pytest.fail(f"{reason}; CI=true: the runner must provide it (tests that need it may not be skipped in CI)")
    pytest.skip(reason)
