"""A RuntimeClass's pod overhead, end to end with the real kubectl: the emulator admits pods as kube-apiserver's
RuntimeClass plugin does and gangsched counts the overhead as kube-scheduler does (issue 22 item 15c).

Oracles: plugin/pkg/admission/runtimeclass/admission.go (setOverhead copies overhead.podFixed into
spec.overhead; setScheduling merges scheduling.nodeSelector into the pod's); kube-scheduler's NodeResourcesFit,
pkg/scheduler/framework/plugins/noderesources/fit.go computePodResourceRequest (and
k8s.io/component-helpers/resource PodRequests): "If Overhead is being utilized, add to the total requests for
the pod". A node with room for the containers' requests but not for requests + overhead does not fit.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.sim.cluster import node_manifest
from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, eventually, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

RUNTIME_CLASS = {
    "apiVersion": "node.k8s.io/v1",
    "kind": "RuntimeClass",
    "metadata": {"name": "kata"},
    "handler": "kata",
    "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
    "scheduling": {"nodeSelector": {"runtime": "kata"}},
}


def vm_pod(name: str, *, runtime_class: str | None = "kata") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "gangsched",
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": {"cpu": "1"}}}],
    }
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=0, node_resources="cpu=1,memory=4Gi,pods=110") as c:
        yield c


async def add_node(cluster: Cluster, name: str, cpu: str, address: str) -> None:
    manifest = node_manifest(name, resources={"cpu": cpu, "memory": "4Gi"}, labels={"runtime": "kata"}, address=address)
    await cluster.client.create("/api/v1/nodes", manifest)
    await cluster.client.patch(f"/api/v1/nodes/{name}/status", {"status": manifest["status"]})


async def scheduled_condition(cluster: Cluster, name: str) -> str | None:
    pod = (await pods(cluster.client)).get(name) or {}
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return str(condition.get("message") or "") or None
    return None


async def test_a_node_with_room_for_the_requests_but_not_the_overhead_does_not_fit(cluster: Cluster) -> None:
    await add_node(cluster, "small", "1", "10.250.0.2")  # exactly the containers' 1 CPU
    await kubectl(cluster, "apply", "-f", "-", input=json.dumps(RUNTIME_CLASS))
    assert "kata" in await kubectl(cluster, "get", "runtimeclasses")
    async with replica(cluster.kubeconfig):
        await kubectl(cluster, "apply", "-f", "-", input=json.dumps(vm_pod("vm")))
        created = (await pods(cluster.client))["vm"]["spec"]
        assert created["overhead"] == {"cpu": "250m", "memory": "120Mi"}  # set by admission
        assert created["nodeSelector"] == {"runtime": "kata"}
        message = await eventually(lambda: scheduled_condition(cluster, "vm"), what="vm reported unschedulable")
        assert "cpu" in message, message
        assert "vm" not in bound(await pods(cluster.client))

        await add_node(cluster, "big", "2", "10.250.0.3")  # room for 1 CPU + 250m

        async def placed() -> str | None:
            return bound(await pods(cluster.client)).get("vm")

        assert await eventually(placed, what="vm bound once a node has room for the overhead") == "big"

        await kubectl(cluster, "apply", "-f", "-", input=json.dumps(vm_pod("plain", runtime_class=None)))

        async def plain() -> str | None:
            return bound(await pods(cluster.client)).get("plain")

        assert await eventually(plain, what="a pod without overhead bound") == "small"  # 1 CPU fits exactly
