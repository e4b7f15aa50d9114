"""Reservations and nominations re-checked when their node or PodGroup changes, end to end with the real kubectl: a node
holding a NonStrict gang's reservations is cordoned, tainted or deleted (`kubectl cordon`, `kubectl taint`, `kubectl
delete node`), another scheduler's pod is created bound onto a reserved node, a PodGroup is deleted (`kubectl delete
podgroup`); outcomes read with `kubectl get`; a preemptor's nominated node is cordoned. The operator runs in-process
against the emulator.

Setting: 4 nodes of 8 GPUs; node-2 and node-3 run default-scheduler pods (8 GPUs each, spec.nodeName set at
creation); NonStrict gang `g` (3 x 8 GPUs, minMember 3) reserves node-0 and node-1 and waits for room.

Oracles (cited in tests/unit/core/cycle/test_reservations.py and tests/integration/test_operator_reservations.py):
the kubelet's admission (pkg/kubelet/lifecycle/predicate.go `generalFilter`: resources, host ports, node affinity,
taints) rejects what would over-commit a node; kube-scheduler's NodeUnschedulable and TaintToleration filters;
Unreserve (pkg/scheduler/framework/interface.go `ReservePlugin`); scheduler-plugins' coscheduling Permit
(`PodGroupNotFound`: rejected at once).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import priority_class
from tests.e2e.kubectl_run import kubectl, kubectl_apply
from tests.integration.harness import eventually, pod, podgroup, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

GPU = "nvidia.com/gpu"
NODE = {"cpu": "32", "memory": "256Gi", GPU: "8", "pods": "110"}


@pytest.fixture
async def four() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=4, node_resources=NODE) as cluster:
        yield cluster


def bound_elsewhere(name: str, node: str) -> dict[str, Any]:
    """A default-scheduler pod bound at creation (spec.nodeName), as a DaemonSet's or a static pod would be."""
    obj = pod(name, gpu=8, scheduler="default-scheduler")
    obj["spec"]["nodeName"] = node
    return obj


async def placements(cluster: Cluster) -> dict[str, tuple[str, int]]:
    """pod -> (node, GPUs requested) of every bound pod that has not finished, from `kubectl get pods -o json`."""
    out = {}
    for p in json.loads(await kubectl(cluster, "get", "pods", "-o", "json"))["items"]:
        node = p["spec"].get("nodeName")
        if node and p["status"].get("phase") not in ("Succeeded", "Failed"):
            gpus = sum(int(c["resources"].get("requests", {}).get(GPU, 0)) for c in p["spec"]["containers"])
            out[p["metadata"]["name"]] = (node, gpus)
    return out


async def gang_bound(cluster: Cluster, prefix: str, n: int) -> dict[str, str] | None:
    got = {name: node for name, (node, _) in (await placements(cluster)).items() if name.startswith(prefix)}
    return got if len(got) == n else None


async def events(cluster: Cluster, reason: str) -> str:
    return await kubectl(
        cluster, "get", "events", "--field-selector", f"reason={reason}", "-o", "custom-columns=M:.message"
    )


async def g_holding_two(cluster: Cluster) -> None:
    await kubectl_apply(cluster, bound_elsewhere("busy-2", "node-2"), bound_elsewhere("busy-3", "node-3"))
    await kubectl_apply(
        cluster,
        podgroup("g", min_member=3, mode="NonStrict", scheduleTimeoutSeconds=600),
        *[pod(f"g-{i}", group="g", gpu=8) for i in range(3)],
    )

    async def holding() -> bool:
        return "holding 2 of minMember 3" in await kubectl(
            cluster, "get", "podgroups.scheduling.x-k8s.io", "g", "-o", "jsonpath={.status.conditions[*].message}"
        )

    await eventually(holding, what="g holding node-0 and node-1")


@pytest.mark.parametrize(
    ("command", "why"),
    [
        pytest.param(("cordon", "node-0"), "node cordoned", id="kubectl-cordon"),
        pytest.param(
            ("taint", "nodes", "node-0", "node.kubernetes.io/not-ready:NoSchedule"),
            "node tainted node.kubernetes.io/not-ready:NoSchedule",
            id="kubectl-taint-not-ready",
        ),
        pytest.param(("delete", "node", "node-0"), "node deleted", id="kubectl-delete-node"),
    ],
)
async def test_reservations_move_off_a_node_that_no_longer_takes_them(
    four: Cluster, command: tuple[str, ...], why: str
) -> None:
    async with replica(four.kubeconfig):
        await g_holding_two(four)
        await kubectl(four, *command)

        async def told() -> bool:
            return f"reservation on node-0 released: {why}" in await events(four, "ReservationsReleased")

        await eventually(told, what="g told its reservation moved off node-0")
        await kubectl(four, "delete", "pod", "busy-2", "busy-3")
        placed = await eventually(lambda: gang_bound(four, "g-", 3), what="g bound")
        assert sorted(placed.values()) == ["node-1", "node-2", "node-3"]


async def test_another_schedulers_pod_on_a_reserved_node_never_over_commits_it(four: Cluster) -> None:
    """The issue's case: 16 GPUs bound on an 8-GPU node. The intruder and the busy pods' deletion come through one
    watch, in order: whenever g reaches its quorum, the intruder is already charged to node-0."""
    async with replica(four.kubeconfig):
        await g_holding_two(four)
        await kubectl_apply(four, bound_elsewhere("intruder", "node-0"))
        await kubectl(four, "delete", "pod", "busy-2", "busy-3")
        placed = await eventually(lambda: gang_bound(four, "g-", 3), what="g bound")
        per_node: dict[str, int] = {}
        for node, gpus in (await placements(four)).values():
            per_node[node] = per_node.get(node, 0) + gpus
        assert max(per_node.values()) <= 8, per_node
        assert sorted(placed.values()) == ["node-1", "node-2", "node-3"]
        assert "reservation on node-0 released: insufficient nvidia.com/gpu" in await events(
            four, "ReservationsReleased"
        )


async def test_kubectl_delete_podgroup_releases_its_reservations_at_once(four: Cluster) -> None:
    """The issue's case: the deleted PodGroup's gang kept its reservations until the default waiting time (3 s
    here), then its pods were marked timed out. A probe gang that times out after 3 s of waiting, started after
    the deletion, tells when that default waiting time is surely over (no sleep)."""
    async with replica(four.kubeconfig, defaultWaitSeconds=3):
        await g_holding_two(four)
        await kubectl(four, "delete", "podgroups.scheduling.x-k8s.io", "g")
        await kubectl_apply(four, podgroup("h", min_member=2), *[pod(f"h-{i}", group="h", gpu=8) for i in range(2)])
        placed = await eventually(lambda: gang_bound(four, "h-", 2), what="h bound on the room g held")
        assert sorted(placed.values()) == ["node-0", "node-1"]
        probe = [pod(f"p-{i}", cpu="20") for i in range(2)]  # only one fits on node-0: p holds 1 of 2, times out
        for p in probe:
            p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "p"
            p["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "node-0"}
        await kubectl_apply(four, podgroup("p", min_member=2, mode="NonStrict", scheduleTimeoutSeconds=3), *probe)

        async def probe_timed_out() -> bool:
            phase = await kubectl(four, "get", "podgroups.scheduling.x-k8s.io", "p", "-o", "jsonpath={.status.phase}")
            return phase == "Timeout"

        await eventually(probe_timed_out, what="the probe gang timed out (3 s after the deletion at least)")

        async def waiting() -> bool:
            reasons = await kubectl(
                four,
                "get",
                "pods",
                "g-0",
                "g-1",
                "g-2",
                "-o",
                'jsonpath={range .items[*]}{.status.conditions[?(@.type=="PodScheduled")].reason}{"\\n"}{end}',
            )
            return reasons.split() == ["WaitingForPodGroup"] * 3

        await eventually(waiting, what="g's pods waiting for their PodGroup")
        annotations = await kubectl(four, "get", "pods", "g-0", "g-1", "g-2", "-o", "jsonpath={.items[*].metadata}")
        assert "gang.scheduling.koordinator.sh/timeout" not in annotations
        timeouts = await kubectl(
            four,
            "get",
            "events",
            "--field-selector",
            "reason=GangTimeout",
            "-o",
            "custom-columns=N:.involvedObject.name",
        )
        assert timeouts.split()[1:] == ["p"]  # (the header, then the probe only)
        assert "2 reservations released: PodGroup default/g no longer exists" in await events(
            four, "ReservationsReleased"
        )


async def test_kubectl_cordon_of_a_nominated_node_moves_the_nomination(four: Cluster) -> None:
    """A preemptor nominated on the node its victim is leaving: that node is cordoned; the nomination is given up
    (NominationLost) and the preemptor binds elsewhere, never on the cordoned node."""
    priority_classes = [priority_class(n, v) for n, v in (("best-effort", 0), ("guarantee", 1000))]
    slow = {"sim.gangsched.io/termination-delay": "5s"}  # the victims take 5 s to go (grace period 30 s)
    async with replica(four.kubeconfig):
        await kubectl_apply(four, *priority_classes)
        await kubectl_apply(
            four, *(pod(f"cheap-{i}", gpu=8, priority_class="best-effort", annotations=slow) for i in range(4))
        )
        await eventually(lambda: gang_bound(four, "cheap-", 4), what="cheap bound on every node")
        await kubectl_apply(
            four, podgroup("high", min_member=1), pod("high-0", group="high", gpu=8, priority_class="guarantee")
        )

        async def nominated() -> str | None:
            out = await kubectl(four, "get", "pod", "high-0", "-o", "jsonpath={.status.nominatedNodeName}")
            return out.strip() or None

        node = await eventually(nominated, what="high-0 nominated")
        await kubectl(four, "cordon", node)

        async def told() -> bool:
            return f"nomination on {node} released: node cordoned" in await events(four, "NominationLost")

        await eventually(told, what="high told its nomination moved")
        placed = await eventually(lambda: gang_bound(four, "high-", 1), timeout=40, what="high bound elsewhere")
        assert placed["high-0"] != node
