"""Reservations re-checked before binding; a deleted PodGroup releases them at once (issue 13 item 8), against the
emulator over HTTP.

Setting of every test: 4 nodes of 8 GPUs; node-2 and node-3 are busy with default-scheduler pods (8 GPUs each,
created with spec.nodeName, as a DaemonSet controller or `kubectl run --overrides` would); a NonStrict gang `g` of
3 x 8 GPUs (minMember 3) reserves node-0 and node-1 and waits. Then the cluster changes under the reservation,
and the busy pods go, so that `g` can reach its quorum.

Oracles: the kubelet admits a pod only if it fits the node's allocatable and tolerates its taints
(pkg/kubelet/lifecycle/predicate.go `generalFilter`): a reservation bound over another pod would be rejected
(`OutOfnvidia.com/gpu`); kube-scheduler's NodeUnschedulable filter (pkg/scheduler/framework/plugins/
nodeunschedulable) keeps new pods off a cordoned node; Unreserve (pkg/scheduler/framework/interface.go
`ReservePlugin`) gives up a reservation that cannot be bound; scheduler-plugins' coscheduling Permit rejects the
waiting pods of a PodGroup that is not found at once (pkg/coscheduling/coscheduling.go, `PodGroupNotFound`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.models import keys
from gangsched.sim.serve import Cluster, running_cluster
from tests.integration.harness import (
    GPU,
    PG,
    bound,
    create,
    events_for,
    eventually,
    on_replica,
    pod,
    podgroup,
    pods,
    replica,
)

NODE = {"cpu": "32", "memory": "256Gi", GPU: "8", "pods": "110"}


@pytest.fixture
async def four() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=4, node_resources=NODE) as cluster:
        yield cluster


def other_scheduler_pod(name: str, node: str, *, gpu: int = 8) -> dict[str, Any]:
    """A pod bound by someone else: spec.nodeName set at creation, default scheduler."""
    obj = pod(name, gpu=gpu, scheduler="default-scheduler")
    obj["spec"]["nodeName"] = node
    return obj


def gpus_per_node(objs: dict[str, dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in objs.values():
        node = p["spec"].get("nodeName")
        if node and p.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
            gpu = sum(int(c["resources"].get("requests", {}).get(GPU, 0)) for c in p["spec"]["containers"])
            out[node] = out.get(node, 0) + gpu
    return out


async def reserved_nodes(op: Any) -> dict[str, str]:
    def read() -> dict[str, str]:
        out = {}
        for key in op.cluster.pods:
            held = op.cluster.reservation_of(key)
            if held is not None and not held[1]:
                out[key] = held[0]
        return out

    return on_replica(op, read)


async def g_holding(k: KubeClient, op: Any) -> dict[str, str]:
    """node-2 and node-3 busy, g reserving node-0 and node-1: the reservations by pod."""
    await create(k, other_scheduler_pod("busy-2", "node-2"), other_scheduler_pod("busy-3", "node-3"))
    await create(k, podgroup("g", min_member=3, mode="NonStrict"), *[pod(f"g-{i}", group="g", gpu=8) for i in range(3)])

    async def holding() -> dict[str, str] | None:
        got = await reserved_nodes(op)
        return got if sorted(got.values()) == ["node-0", "node-1"] else None

    return await eventually(holding, what="g reserving node-0 and node-1")


async def released_messages(k: KubeClient, name: str) -> list[str]:
    return [e["message"] for e in await events_for(k, name) if e["reason"] == "ReservationsReleased"]


async def g_bound(k: KubeClient) -> dict[str, str] | None:
    got = {n: node for n, node in bound(await pods(k)).items() if n.startswith("g-")}
    return got if len(got) == 3 else None


async def free_busy_nodes(k: KubeClient) -> None:
    for name in ("busy-2", "busy-3"):
        await k.delete(f"/api/v1/namespaces/default/pods/{name}")


async def test_a_cordoned_node_loses_its_reservation_and_the_gang_binds_elsewhere(four: Cluster) -> None:
    k = four.client
    async with replica(four.kubeconfig) as op:
        await g_holding(k, op)
        await k.patch("/api/v1/nodes/node-0", {"spec": {"unschedulable": True}})  # what kubectl cordon sets

        async def told() -> list[str]:
            return [m for m in await released_messages(k, "g") if "node-0" in m]

        assert await eventually(told, what="g told its reservation on node-0 moved") == [
            "reservation on node-0 released: node cordoned"
        ]
        await free_busy_nodes(k)
        placed = await eventually(lambda: g_bound(k), what="g bound")
        assert "node-0" not in placed.values()


async def test_a_deleted_node_loses_its_reservation(four: Cluster) -> None:
    k = four.client
    async with replica(four.kubeconfig) as op:
        await g_holding(k, op)
        await k.delete("/api/v1/nodes/node-0")

        async def told() -> list[str]:
            return [m for m in await released_messages(k, "g") if "node-0" in m]

        assert await eventually(told, what="g told its reservation on node-0 moved") == [
            "reservation on node-0 released: node deleted"
        ]
        await free_busy_nodes(k)
        placed = await eventually(lambda: g_bound(k), what="g bound")
        assert sorted(placed.values()) == ["node-1", "node-2", "node-3"]


async def test_another_schedulers_pod_on_a_reserved_node_never_over_commits_it(four: Cluster) -> None:
    """The Why: another scheduler's pod bound onto a reserved node led to 16 GPUs bound on an 8-GPU node."""
    k = four.client
    async with replica(four.kubeconfig) as op:
        await g_holding(k, op)
        await create(k, other_scheduler_pod("intruder", "node-0"))

        async def told() -> list[str]:
            return [m for m in await released_messages(k, "g") if "node-0" in m]

        assert await eventually(told, what="g told its reservation on node-0 moved") == [
            "reservation on node-0 released: insufficient nvidia.com/gpu (pods bound since)"
        ]
        await free_busy_nodes(k)
        placed = await eventually(lambda: g_bound(k), what="g bound")
        assert "node-0" not in placed.values()
        assert all(gpus <= 8 for gpus in gpus_per_node(await pods(k)).values()), gpus_per_node(await pods(k))


async def test_a_deleted_podgroup_releases_its_reservations_at_once(four: Cluster) -> None:
    """The Why: a deleted PodGroup kept its gang's reservations until the default waiting time (600 s)."""
    k = four.client
    async with replica(four.kubeconfig) as op:
        await g_holding(k, op)
        await k.delete(f"{PG}/namespaces/default/podgroups/g")
        await create(k, podgroup("h", min_member=2), *[pod(f"h-{i}", group="h", gpu=8) for i in range(2)])

        async def h_bound() -> dict[str, str] | None:
            got = {n: node for n, node in bound(await pods(k)).items() if n.startswith("h-")}
            return got if len(got) == 2 else None

        placed = await eventually(h_bound, what="h bound on the room g held")
        assert sorted(placed.values()) == ["node-0", "node-1"]
        assert await reserved_nodes(op) == {}
        assert await released_messages(k, "g") == [
            "2 reservations released: PodGroup default/g no longer exists (or is invalid)"
        ]

        async def waiting_for_podgroup() -> bool:
            objs = await pods(k)
            conditions = [
                c
                for i in range(3)
                for c in objs[f"g-{i}"]["status"].get("conditions", [])
                if c["type"] == "PodScheduled"
            ]
            return len(conditions) == 3 and all(c["reason"] == "WaitingForPodGroup" for c in conditions)

        await eventually(waiting_for_podgroup, what="g's pods waiting for a PodGroup")
        objs = await pods(k)
        assert not any(keys.KOORD_TIMEOUT in objs[f"g-{i}"]["metadata"].get("annotations", {}) for i in range(3))
        assert on_replica(op, lambda: op.cluster.gangs["default/g"].first_reserved) is None  # no waiting time runs
