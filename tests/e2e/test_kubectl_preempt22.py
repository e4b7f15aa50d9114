"""Issue 22's preemption items (2-5) end to end with the real kubectl: objects applied with `kubectl apply`,
outcomes read with `kubectl get`, the operator in-process against the emulator (three nodes of 8 GPUs).

Oracles, cited per test: kube-scheduler's DefaultPreemption (pkg/scheduler/framework/preemption/preemption.go,
pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go) and Koordinator's coscheduling job
preemption (pkg/scheduler/plugins/coscheduling/core/preemption.go).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.test_kubectl_preempt13 import NODE, PRIORITY_CLASSES, all_on_nodes, apply, events, gang, node_names
from tests.integration.harness import eventually, pod, podgroup, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e


@pytest.fixture
async def three() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=3, node_resources=NODE) as cluster:
        yield cluster


async def _holding(cluster: Cluster, name: str, text: str) -> bool:
    from tests.e2e.kubectl_run import kubectl

    got = await kubectl(cluster, "get", "podgroup", name, "-o", "jsonpath={.status.conditions[*].message}")
    return text in got


async def test_item3_a_plain_pod_reclaims_lower_priority_reservations(three: Cluster) -> None:
    """Item 3. kube-scheduler's preemption takes a lower-priority pod waiting in Permit as a victim and rejects it
    instead of evicting it (pkg/scheduler/framework/preemption/preemption.go, `prepareCandidate`:
    `fh.GetWaitingPod(victim.UID)` ... `Reject`), for any preemptor pod: a pod without a gang takes a
    lower-priority NonStrict gang's reservations as a 1-member gang does, and nothing running is evicted."""
    async with replica(three.kubeconfig):
        await apply(three, *PRIORITY_CLASSES)
        await apply(three, *gang("slow", 4, pc="best-effort", mode="NonStrict", scheduleTimeoutSeconds=600))
        await eventually(lambda: _holding(three, "slow", "holding 3 of minMember 4"), what="slow holds 3 nodes")
        await apply(three, pod("urgent", gpu=8, priority_class="guarantee"))
        await eventually(lambda: all_on_nodes(three, "urgent", 1), what="urgent bound on a reclaimed node")
        assert "reservations released for higher-priority pod default/urgent" in await events(
            three, "ReservationsReleased"
        )
        assert "Preempted by" not in await events(three, "Preempted")  # no running pod was evicted


async def test_item4_a_high_priority_nonstrict_gang_preempts(three: Cluster) -> None:
    """Item 4. Koordinator evaluates a gang's pending pods together in its job preemption whatever its mode
    (pkg/scheduler/plugins/coscheduling/core/preemption.go, `preempt`: "In gang mode: all pending pods in the same
    gang are evaluated together"; NonStrict pods reach it through PostFilter as Strict ones do): a NonStrict gang
    that cannot reach its quorum preempts as a Strict one does, whole victim gangs first."""
    async with replica(three.kubeconfig):
        await apply(three, *PRIORITY_CLASSES)
        await apply(three, *(pod(f"cheap-{i}", gpu=8, priority_class="best-effort") for i in range(3)))
        await eventually(lambda: all_on_nodes(three, "cheap-", 3), what="cheap bound")
        await apply(three, *gang("ns", 2, pc="guarantee", mode="NonStrict", scheduleTimeoutSeconds=600))
        await eventually(lambda: all_on_nodes(three, "ns-", 2), timeout=30, what="ns bound after preempting")
        assert len(await node_names(three, "cheap-")) == 1
        assert "Preempted by gang default/ns" in await events(three, "Preempted")


async def test_item5_a_late_member_of_a_satisfied_gang_preempts(three: Cluster) -> None:
    """Item 5. A late member of a satisfied gang schedules as an ordinary pod, so it preempts as one: kube-scheduler's
    DefaultPreemption (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go, `SelectVictimsOnNode`)
    as a pod without a gang does here (Koordinator's coscheduling PostFilter hands a pod of a gang that was once
    satisfied to the next PostFilter plugin, DefaultPreemption: pkg/scheduler/plugins/coscheduling/core/core.go)."""
    async with replica(three.kubeconfig):
        await apply(three, *PRIORITY_CLASSES)
        members = [pod(f"sat-{i}", group="sat", gpu=8, priority_class="guarantee") for i in range(2)]
        await apply(three, podgroup("sat", min_member=2), *members)
        await eventually(lambda: all_on_nodes(three, "sat-", 2), what="sat bound")
        await apply(three, pod("cheap", gpu=8, priority_class="best-effort"))
        await eventually(lambda: all_on_nodes(three, "cheap", 1), what="cheap bound on the last node")
        await apply(three, pod("sat-2", group="sat", gpu=8, priority_class="guarantee"))
        await eventually(lambda: all_on_nodes(three, "sat-", 3), timeout=30, what="late member bound")
        assert not await node_names(three, "cheap")
        assert "Preempted by pod default/sat-2" in await events(three, "Preempted")
