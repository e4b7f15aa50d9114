"""celpy raises the interpreter's recursion limit when its Environment is first built: build it before the tests
(hypothesis warns when the limit moves while one of its tests runs)."""

from __future__ import annotations

import pytest

import gangsched.core.devices.cel_runtime as cel_runtime


@pytest.fixture(scope="session", autouse=True)
def _cel_environment() -> None:
    cel_runtime.environment()
