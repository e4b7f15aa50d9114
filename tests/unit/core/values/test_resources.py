"""Quantities in canonical units, pod requests as Kubernetes computes them, RFC 3339 timestamps."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from gangsched.core.values.errors import InvalidField
from gangsched.core.values.resources import canonical, format_resources, parse_quantity
from gangsched.models.pod import pod_requests


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        pytest.param("cpu", "100m", 100, id="cpu-milli"),
        pytest.param("cpu", "1.5", 1500, id="cpu-decimal"),
        pytest.param("cpu", 2, 2000, id="cpu-int"),
        pytest.param("cpu", 0.25, 250, id="cpu-float"),
        pytest.param("cpu", "1u", 1, id="cpu-micro-ceils-to-1m"),
        pytest.param("cpu", "1e3", 1_000_000, id="cpu-exponent"),
        pytest.param("memory", "1Gi", 1 << 30, id="mem-Gi"),
        pytest.param("memory", "1.5Mi", 3 << 19, id="mem-fractional-Mi"),
        pytest.param("memory", "2k", 2000, id="mem-k"),
        pytest.param("memory", "1M", 10**6, id="mem-M"),
        pytest.param("memory", "1e3", 1000, id="mem-exponent"),
        pytest.param("memory", "100m", 1, id="mem-milli-ceils"),
        pytest.param("ephemeral-storage", "10Ti", 10 << 40, id="storage-Ti"),
        pytest.param("hugepages-2Mi", "4Mi", 4 << 20, id="hugepages"),
        pytest.param("nvidia.com/gpu", "8", 8, id="gpu"),
        pytest.param("pods", "110", 110, id="pods"),
        pytest.param("nvidia.com/gpu", "1k", 1000, id="extended-with-suffix"),
    ],
)
def test_canonical_units(name: str, value: Any, expected: int) -> None:
    assert canonical(name, value, field="f") == expected


@pytest.mark.parametrize(
    ("name", "value", "hint"),
    [
        pytest.param("cpu", "abc", "quantity", id="garbage"),
        pytest.param("cpu", "-1", "non-negative", id="negative"),
        pytest.param("memory", "1Gb", "quantity", id="bad-suffix"),
        pytest.param("memory", "", "quantity", id="empty"),
        pytest.param("cpu", True, "quantity", id="bool"),
        pytest.param("nvidia.com/gpu", "0.5", "whole units", id="fractional-extended"),
        pytest.param("nvidia.com/gpu", "500m", "whole units", id="milli-extended"),
    ],
)
def test_invalid_quantities_name_field_and_value(name: str, value: Any, hint: str) -> None:
    with pytest.raises(InvalidField) as err:
        canonical(name, value, field="spec.containers[0].resources.requests." + name)
    assert err.value.field == "spec.containers[0].resources.requests." + name
    assert err.value.value == value
    assert hint in str(err.value)


def test_parse_quantity_is_exact() -> None:
    assert parse_quantity("0.1", field="x") * 3 == Fraction(3, 10)


def _c(
    cpu: str | None = None, mem: str | None = None, *, limits: dict[str, str] | None = None, restart: str | None = None
) -> dict[str, Any]:
    req = {k: v for k, v in (("cpu", cpu), ("memory", mem)) if v is not None}
    c: dict[str, Any] = {"name": "x", "resources": {"requests": req}}
    if limits:
        c["resources"]["limits"] = limits
    if restart:
        c["restartPolicy"] = restart
    return c


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"containers": [_c("1", "1Gi"), _c("500m", "1Gi")]},
            {"cpu": 1500, "memory": 2 << 30},
            id="sum-of-containers",
        ),
        pytest.param({"containers": [_c("1")], "initContainers": [_c("3")]}, {"cpu": 3000}, id="init-max"),
        pytest.param(
            {"containers": [_c("2")], "initContainers": [_c("1"), _c("1500m")]},
            {"cpu": 2000},
            id="containers-exceed-init",
        ),
        pytest.param(
            {"containers": [_c("1")], "initContainers": [_c("500m", restart="Always"), _c("2")]},
            {"cpu": 2500},
            id="sidecar-adds-to-later-init",
        ),
        pytest.param(
            {"containers": [_c("1")], "initContainers": [_c("500m", restart="Always")]},
            {"cpu": 1500},
            id="sidecar-adds-to-containers",
        ),
        pytest.param({"containers": [_c("1")], "overhead": {"cpu": "250m"}}, {"cpu": 1250}, id="overhead"),
        pytest.param(
            {"containers": [_c(limits={"nvidia.com/gpu": "2"})]}, {"nvidia.com/gpu": 2}, id="limits-default-requests"
        ),
        pytest.param({"containers": [{"name": "x"}]}, {}, id="no-resources"),
    ],
)
def test_pod_requests(spec: dict[str, Any], expected: dict[str, int]) -> None:
    assert pod_requests(spec) == expected


def test_pod_requests_error_names_the_path() -> None:
    spec = {"containers": [_c("1"), _c("lots")]}
    with pytest.raises(InvalidField) as err:
        pod_requests(spec)
    assert err.value.field == "spec.containers[1].resources.requests.cpu"
    assert '"lots"' in str(err.value)


def test_format_resources() -> None:
    assert format_resources({"cpu": 500, "memory": 1 << 30, "nvidia.com/gpu": 8, "pods": 1}) == (
        "{cpu: 500m, memory: 1Gi, nvidia.com/gpu: 8}"
    )
