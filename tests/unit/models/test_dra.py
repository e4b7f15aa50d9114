"""DRA objects (resource.k8s.io/v1) read into core/devices records, and status.allocation written back.

Oracle: the resource.k8s.io/v1 API types (k8s.io/api/resource/v1/types.go: ResourceSlice, DeviceClass,
ResourceClaim, AllocationResult), checked here against Kubernetes 1.37's own OpenAPI schema (kubernetes-validate,
strict: no unknown field): every fixture below and what `allocation_to_api` writes are valid objects.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import pytest

from gangsched.core import InvalidField
from gangsched.core.devices import (
    Allocator,
    AttrValue,
    CelCache,
    ClaimConfig,
    Constraint,
    DeviceResult,
    Inventory,
    OpaqueConfig,
)
from gangsched.models.dra import allocation_to_api, claim_from_api, device_class_from_api, slice_from_api

kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="the sim extra is not installed")
K8S = "1.37.0"
GPU = "gpu.example.com"

SLICE: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "node-1-gpu"},
    "spec": {
        "driver": GPU,
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
        "nodeName": "node-1",
        "devices": [
            {
                "name": f"gpu-{i}",
                "attributes": {
                    "model": {"string": "H100"},
                    "index": {"int": i},
                    "driverVersion": {"version": "570.86.15"},
                    "nvlink.example.com/clique": {"string": "rack-1"},
                    "mig": {"bool": False},
                },
                "capacity": {"memory": {"value": "80Gi"}},
            }
            for i in range(2)
        ],
    },
}
CLASS: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {
        "selectors": [{"cel": {"expression": f'device.driver == "{GPU}"'}}],
        "config": [{"opaque": {"driver": GPU, "parameters": {"sharing": "none"}}}],
    },
}
CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "train-0-gpus", "namespace": "ml"},
    "spec": {
        "devices": {
            "requests": [
                {
                    "name": "gpus",
                    "exactly": {
                        "deviceClassName": "gpu",
                        "count": 2,
                        "selectors": [
                            {"cel": {"expression": f'device.capacity["{GPU}"].memory.compareTo(quantity("80Gi")) >= 0'}}
                        ],
                    },
                },
                {
                    "name": "nic",
                    "firstAvailable": [
                        {"name": "fast", "deviceClassName": "nic-fast"},
                        {"name": "any", "deviceClassName": "nic", "allocationMode": "All"},
                    ],
                },
            ],
            "constraints": [{"requests": ["gpus"], "matchAttribute": "nvlink.example.com/clique"}],
            "config": [{"requests": ["gpus"], "opaque": {"driver": GPU, "parameters": {"mode": "exclusive"}}}],
        }
    },
}


@pytest.mark.parametrize("obj", [SLICE, CLASS, CLAIM], ids=["slice", "class", "claim"])
def test_the_fixtures_are_valid_objects(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, K8S, strict=True)


def test_a_slice_is_read_with_typed_attributes_and_exact_capacities() -> None:
    parsed = slice_from_api(SLICE)
    s = parsed.value
    assert (s.driver, s.pool, s.generation, s.slice_count, s.node_name) == (GPU, "node-1", 1, 1, "node-1")
    dev = s.devices[1]
    assert dev.attributes["index"] == AttrValue("int", 1)
    assert dev.attributes["driverVersion"] == AttrValue("version", "570.86.15")
    assert dev.attributes["nvlink.example.com/clique"] == AttrValue("string", "rack-1")
    assert dev.capacity["memory"] == Fraction(80 * 2**30)
    assert not parsed.unsupported


def test_fields_gangsched_does_not_evaluate_are_listed_not_ignored() -> None:
    obj = copy.deepcopy(SLICE)
    obj["spec"]["devices"][0]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    obj["spec"]["devices"][0]["attributes"]["cores"] = {"ints": [1, 2]}
    claim = copy.deepcopy(CLAIM)
    claim["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [{"operator": "Exists"}]
    assert slice_from_api(obj).unsupported == ("spec.devices[0].attributes.cores", "spec.devices[0].taints")
    assert claim_from_api(claim).unsupported == ("spec.devices.requests[0].exactly.tolerations",)


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("spec", "devices", 0, "attributes", "model"), {}, "spec.devices[0].attributes.model"),
        (("spec", "devices", 0, "attributes", "model"), {"string": 3}, "spec.devices[0].attributes.model.string"),
        (("spec", "devices", 0, "capacity", "memory", "value"), "lots", "spec.devices[0].capacity.memory.value"),
        (("spec", "driver"), "", "spec.driver"),
    ],
)
def test_bad_input_names_the_field(path: tuple[Any, ...], value: Any, field: str) -> None:
    obj = copy.deepcopy(SLICE)
    target: Any = obj
    for p in path[:-1]:
        target = target[p]
    target[path[-1]] = value
    with pytest.raises(InvalidField) as info:
        slice_from_api(obj)
    assert info.value.field == field


def test_a_claim_is_read_with_subrequests_constraints_and_config() -> None:
    info = claim_from_api(CLAIM).value
    c = info.claim
    assert c.key == "ml/train-0-gpus"
    gpus, nic = c.requests
    assert gpus.exactly is not None and gpus.exactly.count == 2 and gpus.exactly.device_class == "gpu"
    assert [(s.name, s.device_class, s.mode) for s in nic.first_available] == [
        ("fast", "nic-fast", "ExactCount"),
        ("any", "nic", "All"),
    ]
    assert c.constraints == (Constraint(("gpus",), "nvlink.example.com/clique"),)
    assert c.config == (ClaimConfig(("gpus",), OpaqueConfig(GPU, {"mode": "exclusive"})),)
    assert info.allocation is None and info.consumers == 0


def test_an_allocation_round_trips_and_is_a_valid_claim_status() -> None:
    """Allocate the fixture claim's GPU request on the fixture slice, write status.allocation, validate it
    against the real schema and read it back."""
    claim = claim_from_api(CLAIM).value.claim
    gpu_only = type(claim)(claim.key, claim.requests[:1], claim.constraints, claim.config)
    cls = device_class_from_api(CLASS).value
    alloc = Allocator(Inventory([slice_from_api(SLICE).value]), {cls.name: cls}, CelCache())
    results = alloc.allocate("node-1", {}, [gpu_only], set())
    assert results is not None
    result = results[0]
    assert result.devices == (
        DeviceResult("gpus", GPU, "node-1", "gpu-0"),
        DeviceResult("gpus", GPU, "node-1", "gpu-1"),
    )
    obj = copy.deepcopy(CLAIM)
    obj["status"] = {
        "allocation": allocation_to_api(result),
        "reservedFor": [{"resource": "pods", "name": "train-0", "uid": "1234"}],
    }
    kubernetes_validate.validate(obj, K8S, strict=True)
    back = claim_from_api(obj).value
    assert back.allocation is not None and back.allocation.devices == result.devices
    assert back.allocation.node_selector == result.node_selector and back.consumers == 1
    assert [c.source for c in result.config] == ["FromClass", "FromClaim"]
