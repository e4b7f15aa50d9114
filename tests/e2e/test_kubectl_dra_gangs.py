"""Gangs of DRA pods with the real kubectl (issue 26 items 2 and 3): gangsched allocates the pods' ResourceClaims
in the same decision as their placement, writes each claim's status.allocation and reservedFor before binding,
and allocates nothing for a gang that does not fit (saying which devices, `kubectl gang why` included).

Oracles: kubernetes pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go (Filter: a node whose
devices cannot satisfy the pod's claims is rejected; Reserve/PreBind: status.allocation and the pod in
status.reservedFor written before the Binding); pkg/kubelet (the emulator's kubelet starts a pod only when every
claim is allocated and reserved for it); staging/src/k8s.io/dynamic-resource-allocation/structured (the devices
chosen: a claim's devices all on the node the pod is bound to, no device in two claims).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.kubectl_run import kubectl, kubectl_apply
from tests.e2e.test_kubectl_gang_plugin import kubectl as plugin_kubectl
from tests.integration.harness import bound, eventually, get_podgroup, pod, podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

GPU_CLASS = "gpu.nvidia.com"  # the DeviceClass `gangsched sim serve --dra` publishes (sim/dra/driver.py)
NODE = "cpu=32,memory=256Gi,nvidia.com/gpu=8,pods=110"


def template(name: str, count: int = 8, selectors: list[str] | None = None, **devices: Any) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": GPU_CLASS, "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": exactly}], **devices}}},
    }


def dra_member(name: str, group: str, template_name: str) -> dict[str, Any]:
    obj = pod(name, group=group)
    obj["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    obj["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template_name}]
    return obj


async def claims(cluster: Cluster) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(await kubectl(cluster, "get", "resourceclaims", "-o", "json"))["items"]
    return items


@pytest.fixture
async def eight_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=8, node_resources=NODE, dra=True) as cluster:
        yield cluster


async def test_a_gang_of_8_pods_of_8_gpus_binds_whole_with_every_claim_allocated_and_reserved(
    eight_nodes: Cluster,
) -> None:
    k = eight_nodes.client
    async with replica(eight_nodes.kubeconfig):
        members = [dra_member(f"g-{i}", "g", "eight") for i in range(8)]
        await kubectl_apply(eight_nodes, template("eight"), podgroup("g", min_member=8), *members)

        async def placed() -> dict[str, str] | None:
            got = bound(await pods(k))
            return got if len(got) == 8 else None

        nodes = await eventually(placed, what="the gang bound whole")
        assert sorted(nodes.values()) == [f"node-{i}" for i in range(8)]  # 8 GPUs each: one pod per node
        items = await claims(eight_nodes)
        assert len(items) == 8
        seen: set[tuple[str, str]] = set()
        for claim in items:
            owner = claim["metadata"]["ownerReferences"][0]["name"]
            status = claim["status"]
            assert [r["name"] for r in status["reservedFor"]] == [owner]
            results = status["allocation"]["devices"]["results"]
            assert len(results) == 8 and {r["pool"] for r in results} == {nodes[owner]}
            terms = status["allocation"]["nodeSelector"]["nodeSelectorTerms"]
            assert terms[0]["matchFields"][0]["values"] == [nodes[owner]]
            devices = {(r["pool"], r["device"]) for r in results}
            assert not devices & seen  # no device in two claims
            seen |= devices

        async def running() -> bool | None:
            phases = [p["status"].get("phase") for p in (await k.get("/api/v1/namespaces/default/pods"))["items"]]
            return True if phases.count("Running") == 8 else None

        await eventually(running, what="the kubelet started every member (claims allocated and reserved)")
        events = json.loads(await kubectl(eight_nodes, "get", "events", "-o", "json"))["items"]
        assert not [e["message"] for e in events if e["type"] == "Warning"]  # (claims seen late only wait)


async def test_a_gang_that_does_not_fit_allocates_nothing_and_says_which_devices(eight_nodes: Cluster) -> None:
    k = eight_nodes.client
    async with replica(eight_nodes.kubeconfig):
        members = [dra_member(f"big-{i}", "big", "eight") for i in range(9)]  # 9 x 8 GPUs on 8 nodes of 8
        await kubectl_apply(eight_nodes, template("eight"), podgroup("big", min_member=9), *members)

        async def said() -> str | None:
            pg = await get_podgroup(k, "big")
            message: str = (pg or {}).get("status", {}).get("message", "")
            return message if "gpu.nvidia.com" in message else None

        message = await eventually(said, what="the PodGroup says which devices are missing")
        assert "needs 9 pods x {cpu: 1, memory: 1Gi} + 8 x gpu.nvidia.com (8 nodes have them free)" in message, message
        assert not bound(await pods(k))
        assert all("allocation" not in (c.get("status") or {}) for c in await claims(eight_nodes))
        why = await plugin_kubectl(eight_nodes, "gang", "why", "big-0")  # the kubectl plugin says the same
        assert "8 x gpu.nvidia.com (8 nodes have them free)" in why, why
