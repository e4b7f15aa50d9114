"""More DRA gangs with the real kubectl (issue 26 items 2 and 3): a PodGroup-level shared claim, a matchAttribute
clique constraint, a gang mixing DRA and extended-resource pods, a claim allocated by another scheduler, a
selector that fails at run time, and preemption that frees devices.

Oracles: kubernetes pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go (Filter, Reserve,
PreBind; a PodGroup's claim reserved for the PodGroup, 1.37 DRAWorkloadResourceClaims); the structured allocator
(staging/src/k8s.io/dynamic-resource-allocation/structured: matchAttribute, devices of allocated claims skipped,
CEL runtime errors reported); pkg/controller/resourceclaim/controller.go (a deleted pod's claim released, so its
devices are free again); pkg/scheduler/framework/preemption (victims whose removal makes the preemptor fit).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import priority_class
from tests.e2e.kubectl_run import kubectl, kubectl_apply
from tests.e2e.test_kubectl_dra_gangs import NODE, claims, dra_member, template
from tests.integration.harness import bound, eventually, get_podgroup, pod, podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NATIVE = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups"
CLIQUE = "gpu.nvidia.com/cliqueID"


@pytest.fixture
async def two_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=2, node_resources=NODE, dra=True) as cluster:
        yield cluster


@pytest.fixture
async def plain_nodes() -> AsyncIterator[Cluster]:
    """Four nodes with nvidia.com/gpu as an extended resource; the tests publish their own slices."""
    need_tool("kubectl")
    async with running_cluster(nodes=4, node_resources=NODE) as cluster:
        yield cluster


def gpu_slice(node: str, cliques: list[str]) -> dict[str, Any]:
    devices = [
        {"name": f"gpu-{i}", "attributes": {"cliqueID": {"string": c}, "type": {"string": "gpu"}}}
        for i, c in enumerate(cliques)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpus"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.nvidia.com"},
    "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]},
}


async def bound_whole(cluster: Cluster, n: int) -> dict[str, str]:
    async def placed() -> dict[str, str] | None:
        got = bound(await pods(cluster.client))
        return got if len(got) == n else None

    return await eventually(placed, what=f"{n} pods bound")


async def test_a_podgroup_level_claim_is_allocated_once_and_reserved_for_the_podgroup(two_nodes: Cluster) -> None:
    k = two_nodes.client
    shared = [{"name": "shared", "resourceClaimTemplateName": "one"}]
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "npg"}}
    group["spec"] = {"schedulingPolicy": {"gang": {"minCount": 2}}, "resourceClaims": shared}
    async with replica(two_nodes.kubeconfig):
        await kubectl_apply(two_nodes, template("one", count=1))
        await k.create(NATIVE, group)
        members = []
        for i in range(2):
            member = pod(f"npg-{i}")
            member["spec"]["schedulingGroup"] = {"podGroupName": "npg"}
            member["spec"]["resourceClaims"] = shared
            members.append(member)
        await kubectl_apply(two_nodes, *members)
        nodes = await bound_whole(two_nodes, 2)
        assert len(set(nodes.values())) == 1  # one device of one node: every member where it is
        (claim,) = await claims(two_nodes)
        assert claim["metadata"]["ownerReferences"][0]["kind"] == "PodGroup"
        reserved = claim["status"]["reservedFor"]
        assert [(r["resource"], r["name"]) for r in reserved] == [("podgroups", "npg")]
        assert len(claim["status"]["allocation"]["devices"]["results"]) == 1


async def test_a_match_attribute_clique_constraint_fits_the_one_node_whose_gpus_share_a_clique(
    plain_nodes: Cluster,
) -> None:
    """node-0 and node-1 split their 8 GPUs over two cliques, node-2 has all 8 in one: a pod asking 8 GPUs with
    matchAttribute cliqueID can only go to node-2."""
    split = ["a"] * 4 + ["b"] * 4
    slices = [gpu_slice("node-0", split), gpu_slice("node-1", split), gpu_slice("node-2", ["c"] * 8)]
    clique = template("clique", constraints=[{"requests": ["gpus"], "matchAttribute": CLIQUE}])
    async with replica(plain_nodes.kubeconfig):
        await kubectl_apply(plain_nodes, GPU_CLASS, *slices, clique)
        await kubectl_apply(plain_nodes, podgroup("c", min_member=1), dra_member("c-0", "c", "clique"))
        assert await bound_whole(plain_nodes, 1) == {"c-0": "node-2"}
        (claim,) = await claims(plain_nodes)
        assert {r["pool"] for r in claim["status"]["allocation"]["devices"]["results"]} == {"node-2"}


async def test_a_gang_mixing_dra_and_extended_resource_pods_binds_whole(plain_nodes: Cluster) -> None:
    """Nodes 2 and 3 publish their GPUs as DRA devices only (their nvidia.com/gpu taken out of the allocatable):
    the DRA members land there, the extended-resource members on nodes 0 and 1."""
    for node in ("node-2", "node-3"):
        status = {"status": {"allocatable": {"nvidia.com/gpu": "0"}, "capacity": {"nvidia.com/gpu": "0"}}}
        await kubectl(plain_nodes, "patch", "node", node, "--subresource=status", "-p", json.dumps(status))
    slices = [gpu_slice(node, ["c"] * 8) for node in ("node-2", "node-3")]
    async with replica(plain_nodes.kubeconfig):
        await kubectl_apply(plain_nodes, GPU_CLASS, *slices, template("eight"))
        members = [dra_member(f"m-{i}", "m", "eight") for i in range(2)]
        members += [pod(f"m-{i}", group="m", gpu=8) for i in range(2, 4)]
        await kubectl_apply(plain_nodes, podgroup("m", min_member=4), *members)
        nodes = await bound_whole(plain_nodes, 4)
        assert {nodes["m-0"], nodes["m-1"]} == {"node-2", "node-3"}
        assert {nodes["m-2"], nodes["m-3"]} == {"node-0", "node-1"}


async def test_a_claim_allocated_by_another_scheduler_keeps_its_devices(two_nodes: Cluster) -> None:
    """Every GPU of node-0 allocated to a claim gangsched did not write: the gang of one goes to node-1."""
    results = [
        {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "node-0", "device": f"gpu-{i}"} for i in range(8)
    ]
    other = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "theirs", "namespace": "default"},
        "spec": {
            "devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8}}]}
        },
    }
    await kubectl_apply(two_nodes, other)
    status = {"status": {"allocation": {"devices": {"results": results}}}}
    await kubectl(
        two_nodes, "patch", "resourceclaim", "theirs", "--subresource=status", "--type=merge", "-p", json.dumps(status)
    )
    async with replica(two_nodes.kubeconfig):
        await kubectl_apply(two_nodes, template("eight"), podgroup("g", min_member=1), dra_member("g-0", "g", "eight"))
        assert await bound_whole(two_nodes, 1) == {"g-0": "node-1"}


async def test_a_selector_failing_at_run_time_is_reported_and_the_operator_goes_on(two_nodes: Cluster) -> None:
    k = two_nodes.client
    bad = template("bad", selectors=['device.attributes["gpu.nvidia.com"].noSuchAttribute == "x"'])
    async with replica(two_nodes.kubeconfig) as operator:
        await kubectl_apply(two_nodes, bad, podgroup("b", min_member=1), dra_member("b-0", "b", "bad"))
        error = "CEL runtime error: no such key: noSuchAttribute"

        async def reported() -> str | None:
            pg = await get_podgroup(k, "b")
            message: str = (pg or {}).get("status", {}).get("message", "")
            return message if error in message else None

        await eventually(reported, what="the PodGroup names the selector's error")
        described = await kubectl(two_nodes, "describe", "pod", "b-0")
        assert error in described  # the pod's condition and its Warning event
        await kubectl_apply(two_nodes, template("eight"), podgroup("g", min_member=1), dra_member("g-0", "g", "eight"))
        assert (await bound_whole(two_nodes, 1)).keys() == {"g-0"}
        assert operator.health()["leader"] is not None


async def test_preemption_frees_the_devices_of_a_lower_priority_gang(two_nodes: Cluster) -> None:
    """Two low-priority pods hold every GPU; a high-priority gang of two evicts them, and binds once their claims
    are released by the resourceclaim controller."""
    async with replica(two_nodes.kubeconfig):
        await kubectl_apply(two_nodes, priority_class("low", 10), priority_class("high", 1000), template("eight"))
        low = [dra_member(f"low-{i}", "low", "eight") for i in range(2)]
        for member in low:
            member["spec"]["priorityClassName"] = "low"
        await kubectl_apply(two_nodes, podgroup("low", min_member=2), *low)
        await bound_whole(two_nodes, 2)
        high = [dra_member(f"high-{i}", "high", "eight") for i in range(2)]
        for member in high:
            member["spec"]["priorityClassName"] = "high"
        await kubectl_apply(two_nodes, podgroup("high", min_member=2), *high)

        async def preempted() -> dict[str, str] | None:
            got = bound(await pods(two_nodes.client))
            return got if set(got) == {"high-0", "high-1"} else None

        nodes = await eventually(preempted, what="the high-priority gang bound in place of the low one")
        assert sorted(nodes.values()) == ["node-0", "node-1"]
