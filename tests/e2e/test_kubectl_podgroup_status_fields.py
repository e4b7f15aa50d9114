"""PodGroup status fields as the ecosystem reads them (occupiedBy, placed tiers, Finished, Timeout) with the real
kubectl. Objects applied with `kubectl apply`, status read with `kubectl get -o jsonpath`, the operator in-process
against the emulator.

Oracles: kubernetes-sigs/scheduler-plugins pkg/controllers/podgroup_controller.go (`fillOccupiedObj`: occupiedBy is
"<namespace>/<owner name>" of the ownerReferences of the group's first pod, sorted, joined by ","; never cleared;
the phase is Finished once succeeded >= minMember) and apis/scheduling/v1alpha1/types.go (PodGroupFinished
"Finished", PodGroupTimeout "Timeout"); the network-topology PodGroup design of crds/podgroups.yaml (placedTier:
the lowest tier that holds the whole gang; placedGroupTier: the lowest tier that holds each data-parallel group of
networkTopology.groupSize members); Koordinator's gang-scheduling proposal (koordinator-sh/koordinator
docs/proposals/scheduling: a timed-out gang's pods carry `gang.scheduling.koordinator.sh/timeout=true` and the gang
"will not be scheduled anymore"; its PreFilter reads the timeout from that annotation).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.kubectl_run import kubectl
from tests.e2e.test_kubectl_late_topology_restart_mixed_sizes import NODE, all_on_nodes, apply, topology
from tests.integration.harness import eventually, pod, podgroup, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

UNITS = [
    {"layer": 2, "name": "leaf0", "children": ["unit0", "unit1"]},
    {"layer": 1, "name": "unit0", "parents": ["leaf0"], "children": ["n0", "n1"]},
    {"layer": 1, "name": "unit1", "parents": ["leaf0"], "children": ["n2", "n3"]},
]


async def jsonpath(cluster: Cluster, name: str, path: str) -> str:
    return await kubectl(cluster, "get", "podgroups.scheduling.x-k8s.io", name, "-o", f"jsonpath={path}")


@pytest.fixture
async def units() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=0, node_resources=NODE, topology=UNITS) as cluster:
        yield cluster


def owned(obj: dict[str, Any], owner: str, uid: str) -> dict[str, Any]:
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": uid}]
    return obj


async def test_occupied_by_tiers_and_message_then_tiers_cleared_with_the_pods(units: Cluster) -> None:
    """A gang of 4 in data-parallel groups of 2 (one 8-GPU member per node) fills both units: placedTier 2 (leaf0),
    placedGroupTier 1 (each group in one unit); occupiedBy names the pods' owner; the Running message is the
    Scheduled condition's. The pods deleted: both tiers go (a stale Tier was shown), occupiedBy stays."""
    async with replica(units.kubeconfig):
        await apply(units, topology(UNITS), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "trainer"}})
        uid = await kubectl(units, "get", "configmap", "trainer", "-o", "jsonpath={.metadata.uid}")
        net = {"mode": "hard", "highestTierAllowed": 2, "groupSize": 2}
        members = [owned(pod(f"dp-{i}", group="dp", gpu=8), "trainer", uid) for i in range(4)]
        await apply(units, podgroup("dp", min_member=4, networkTopology=net), *members)
        await eventually(lambda: all_on_nodes(units, "dp-", 4), what="dp bound")

        async def running() -> str | None:
            phase = await jsonpath(units, "dp", "{.status.phase}")
            return phase if phase == "Running" else None

        await eventually(running, what="dp Running")
        assert await jsonpath(units, "dp", "{.status.occupiedBy}") == "default/trainer"
        assert await jsonpath(units, "dp", "{.status.placedTier}") == "2"
        assert await jsonpath(units, "dp", "{.status.placedGroupTier}") == "1"
        message = await jsonpath(units, "dp", "{.status.message}")
        condition = await jsonpath(units, "dp", '{.status.conditions[?(@.type=="Scheduled")].message}')
        assert message == condition == "4 of 4 members bound (minMember 4); 4 running"
        await kubectl(units, "delete", "pods", "-l", "scheduling.x-k8s.io/pod-group=dp", "--wait=true")

        async def tiers_gone() -> bool:
            return (await jsonpath(units, "dp", "{.status.placedTier}{.status.placedGroupTier}")) == ""

        await eventually(tiers_gone, what="the tiers cleared once the pods are gone")
        assert await jsonpath(units, "dp", "{.status.occupiedBy}") == "default/trainer"


async def test_finished_with_the_scheduler_plugins_switch() -> None:
    need_tool("kubectl")
    async with (
        running_cluster(nodes=2, node_resources=NODE) as cluster,
        replica(cluster.kubeconfig, statusCompatibility="scheduler-plugins"),
    ):
        done = {"sim.gangsched.io/duration": "300ms"}  # the simulated kubelet ends them (Succeeded) after 300 ms
        short = [pod(f"short-{i}", group="short", gpu=8, annotations=done) for i in range(2)]
        await apply(cluster, podgroup("short", min_member=2), *short)

        async def finished() -> str | None:
            phase = await jsonpath(cluster, "short", "{.status.phase}")
            return phase if phase in ("Finished", "Succeeded") else None

        assert await eventually(finished, what="short done") == "Finished"
        assert await jsonpath(cluster, "short", "{.status.succeeded}") == "2"


async def test_timed_out_gang_still_timeout_after_an_operator_restart() -> None:
    need_tool("kubectl")
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        gang = [pod(f"late-{i}", group="late", gpu=8) for i in range(3)]  # room for 2 of 3
        async with replica(cluster.kubeconfig, identity="old"):
            await apply(cluster, podgroup("late", min_member=3, mode="NonStrict", scheduleTimeoutSeconds=2), *gang)

            async def timed_out() -> bool:
                return await jsonpath(cluster, "late", "{.status.phase}") == "Timeout"

            await eventually(timed_out, timeout=20, what="late Timeout")
        async with replica(cluster.kubeconfig, identity="new"):

            async def rewritten() -> str | None:  # the new leader's own message (it names the restart)
                text = await jsonpath(cluster, "late", "{.status.message}")
                return text if "before a restart" in text else None

            await eventually(rewritten, timeout=20, what="late's status written by the new operator")
            assert await jsonpath(cluster, "late", "{.status.phase}") == "Timeout"
            timeout = await jsonpath(cluster, "late", '{.status.conditions[?(@.type=="Timeout")].status}')
            assert timeout == "True"
