"""DRA in the emulator with the real kubectl (issue 26 item 1): `gangsched sim serve --dra`'s cluster takes a
DeviceClass, a ResourceClaimTemplate and a pod by `kubectl apply`, the resourceclaim controller generates the pod's
claim, and a selector that does not compile is refused with kube-apiserver's message.

Oracles: kubernetes pkg/printers/internalversion/printers.go (ResourceSlice NAME NODE DRIVER POOL AGE,
ResourceClaim NAME STATE AGE with resourceClaimState "pending"); pkg/controller/resourceclaim/controller.go
handleClaim (generateName `<pod>-<claim>-`, pod
status.resourceClaimStatuses); pkg/apis/resource/validation/validation.go validateCELExpression and
validation_resourceclaim_test.go TestValidateClaim "CEL-compile-errors" (the message kubectl prints as
`The ResourceClaimTemplate "bad" is invalid: <field>: Invalid value: "<expr>": compilation failed: ERROR: ...`).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.kubectl_run import kubectl, kubectl_apply
from tests.integration.harness import eventually
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

DEVICE_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "h100"},
    "spec": {
        "selectors": [
            {"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}},
            {"cel": {"expression": 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0'}},
        ]
    },
}


def template(name: str, expression: str) -> dict[str, Any]:
    selectors = [{"cel": {"expression": expression}}]
    request = {"name": "gpus", "exactly": {"deviceClassName": "h100", "count": 8, "selectors": selectors}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "trainer", "namespace": "default"},
    "spec": {
        "schedulerName": "nobody",  # no scheduler: the claim is the controller's job alone
        "containers": [
            {"name": "main", "image": "registry.k8s.io/pause:3.9", "resources": {"claims": [{"name": "gpu"}]}}
        ],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "eight"}],
    },
}


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=1, node_resources="cpu=32,memory=256Gi,nvidia.com/gpu=8,pods=110", dra=True) as c:
        yield c


async def test_apply_class_template_pod_claim_generated_and_bad_selector_refused(cluster: Cluster) -> None:
    slices = (await kubectl(cluster, "get", "resourceslices")).split()
    assert slices[:5] == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]  # printers.go's resourceSliceColumnDefinitions
    assert slices[5:9] == ["node-0-gpu.nvidia.com", "node-0", "gpu.nvidia.com", "node-0"]
    good = 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA")'
    await kubectl_apply(cluster, DEVICE_CLASS, template("eight", good), POD)

    async def generated() -> str | None:
        out = await kubectl(cluster, "get", "resourceclaims", "-o", "name")
        prefix = "resourceclaim.resource.k8s.io/trainer-gpu-"
        return next((line for line in out.split() if line.startswith(prefix)), None)

    name = await eventually(generated, what="the pod's generated ResourceClaim")
    listing = (await kubectl(cluster, "get", "resourceclaims")).split()
    assert listing[:3] == ["NAME", "STATE", "AGE"] and listing[4] == "pending"  # printers.go resourceClaimState
    status = json.loads(
        await kubectl(cluster, "get", "pod", "trainer", "-o", "jsonpath={.status.resourceClaimStatuses}")
    )
    assert status == [{"name": "gpu", "resourceClaimName": name.split("/", 1)[1]}]

    bad = await asyncio.to_thread(
        subprocess.run,
        ["kubectl", f"--kubeconfig={cluster.kubeconfig}", "apply", "-f", "-"],
        input=json.dumps(template("bad", "device.attributes[true].someBoolean")),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0
    assert (
        'The ResourceClaimTemplate "bad" is invalid: '
        "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression: "
        'Invalid value: "device.attributes[true].someBoolean": compilation failed: ERROR: <input>:1:18: '
        "found no matching overload for '_[_]' applied to '(map(string, map(string, any)), bool)'"
    ) in bad.stderr, bad.stderr
