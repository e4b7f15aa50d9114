"""Pods alone, late members and NonStrict gangs preempt, and a victim gang a PodDisruptionBudget would cut short is not
chosen, end to end with the real kubectl: objects applied with `kubectl apply`, outcomes read with `kubectl get`, the
operator in-process against the emulator (three nodes of 8 GPUs).

Oracles, cited per test: kube-scheduler's DefaultPreemption (pkg/scheduler/framework/preemption/preemption.go,
pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go) and Koordinator's coscheduling job
preemption (pkg/scheduler/plugins/coscheduling/core/preemption.go).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.sim.faults import parse_rule_spec
from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.kubectl_run import kubectl, kubectl_apply
from tests.e2e.test_kubectl_preempt_wait_reclaim_refusal_alone import (
    NODE,
    PRIORITY_CLASSES,
    all_on_nodes,
    events,
    gang,
    node_names,
)
from tests.integration.harness import eventually, on_replica, pod, podgroup, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e


@pytest.fixture
async def three() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=3, node_resources=NODE) as cluster:
        yield cluster


async def _holding(cluster: Cluster, name: str, text: str) -> bool:
    got = await kubectl(
        cluster, "get", "podgroups.scheduling.x-k8s.io", name, "-o", "jsonpath={.status.conditions[*].message}"
    )
    return text in got


async def test_a_plain_pod_reclaims_lower_priority_reservations(three: Cluster) -> None:
    """Item 3. kube-scheduler's preemption takes a lower-priority pod waiting in Permit as a victim and rejects it
    instead of evicting it (pkg/scheduler/framework/preemption/preemption.go, `prepareCandidate`:
    `fh.GetWaitingPod(victim.UID)` ... `Reject`), for any preemptor pod: a pod without a gang takes a
    lower-priority NonStrict gang's reservations as a 1-member gang does, and nothing running is evicted."""
    async with replica(three.kubeconfig):
        await kubectl_apply(three, *PRIORITY_CLASSES)
        await kubectl_apply(three, *gang("slow", 4, pc="best-effort", mode="NonStrict", scheduleTimeoutSeconds=600))
        await eventually(lambda: _holding(three, "slow", "holding 3 of minMember 4"), what="slow holds 3 nodes")
        await kubectl_apply(three, pod("urgent", gpu=8, priority_class="guarantee"))
        await eventually(lambda: all_on_nodes(three, "urgent", 1), what="urgent bound on a reclaimed node")
        assert "reservations released for higher-priority pod default/urgent" in await events(
            three, "ReservationsReleased"
        )
        assert "Preempted by" not in await events(three, "Preempted")  # no running pod was evicted


async def test_a_high_priority_nonstrict_gang_preempts(three: Cluster) -> None:
    """Item 4. Koordinator evaluates a gang's pending pods together in its job preemption whatever its mode
    (pkg/scheduler/plugins/coscheduling/core/preemption.go, `preempt`: "In gang mode: all pending pods in the same
    gang are evaluated together"; NonStrict pods reach it through PostFilter as Strict ones do): a NonStrict gang
    that cannot reach its quorum preempts as a Strict one does, whole victim gangs first."""
    async with replica(three.kubeconfig):
        await kubectl_apply(three, *PRIORITY_CLASSES)
        await kubectl_apply(three, *(pod(f"cheap-{i}", gpu=8, priority_class="best-effort") for i in range(3)))
        await eventually(lambda: all_on_nodes(three, "cheap-", 3), what="cheap bound")
        await kubectl_apply(three, *gang("ns", 2, pc="guarantee", mode="NonStrict", scheduleTimeoutSeconds=600))
        await eventually(lambda: all_on_nodes(three, "ns-", 2), timeout=30, what="ns bound after preempting")
        assert len(await node_names(three, "cheap-")) == 1
        assert "Preempted by gang default/ns" in await events(three, "Preempted")


async def test_a_late_member_of_a_satisfied_gang_preempts(three: Cluster) -> None:
    """Item 5. A late member of a satisfied gang schedules as an ordinary pod, so it preempts as one: kube-scheduler's
    DefaultPreemption (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go, `SelectVictimsOnNode`)
    as a pod without a gang does here (Koordinator's coscheduling PostFilter hands a pod of a gang that was once
    satisfied to the next PostFilter plugin, DefaultPreemption: pkg/scheduler/plugins/coscheduling/core/core.go)."""
    async with replica(three.kubeconfig):
        await kubectl_apply(three, *PRIORITY_CLASSES)
        members = [pod(f"sat-{i}", group="sat", gpu=8, priority_class="guarantee") for i in range(2)]
        await kubectl_apply(three, podgroup("sat", min_member=2), *members)
        await eventually(lambda: all_on_nodes(three, "sat-", 2), what="sat bound")
        await kubectl_apply(three, pod("cheap", gpu=8, priority_class="best-effort"))
        await eventually(lambda: all_on_nodes(three, "cheap", 1), what="cheap bound on the last node")
        await kubectl_apply(three, pod("sat-2", group="sat", gpu=8, priority_class="guarantee"))
        await eventually(lambda: all_on_nodes(three, "sat-", 3), timeout=30, what="late member bound")
        assert not await node_names(three, "cheap")
        assert "Preempted by pod default/sat-2" in await events(three, "Preempted")


def _victim_gang() -> list[dict[str, Any]]:
    """vg: 3 x 8 GPU, minMember 3, best-effort; only vg-2 carries the label a PodDisruptionBudget selects."""
    members = [
        pod(f"vg-{i}", group="vg", gpu=8, priority_class="best-effort", labels={"guarded": "yes"} if i == 2 else None)
        for i in range(3)
    ]
    return [podgroup("vg", min_member=3), *members]


def _budget(min_available: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "guard", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"guarded": "yes"}}, "minAvailable": min_available},
    }


def _evictions(cluster: Cluster) -> list[str]:
    """The pods whose eviction was requested (the emulator's request log)."""
    entries = cluster.server.requests.entries
    return [e.path.split("/")[-2] for e in entries if e.method == "POST" and e.path.endswith("/eviction")]


async def test_a_victim_gang_a_budget_would_cut_short_is_not_chosen(three: Cluster) -> None:
    """Item 2, the issue's case: a PDB (minAvailable 1, so disruptionsAllowed 0) selects vg-2 only. The Eviction
    API refuses a pod whose budget's status allows no disruption (pkg/registry/core/pod/storage/eviction.go,
    checkAndDecrement: 429); kube-scheduler, which knows no gangs, only prefers candidates without PDB violations
    (pkg/scheduler/framework/preemption/preemption.go `filterPodsWithPDBViolation`, `pickOneNodeForPreemption`).
    Was: vg-0 and vg-1 evicted, vg-2 refused, vg left running 1 of 3 and high never placed. Now, under
    `pdb: respect`, vg is not chosen at all: nothing is evicted and high says why; once the budget allows it, vg
    goes whole and high binds."""
    three.server.requests.enabled = True
    async with replica(three.kubeconfig):
        await kubectl_apply(three, *PRIORITY_CLASSES)
        await kubectl_apply(three, *_victim_gang())
        await eventually(lambda: all_on_nodes(three, "vg-", 3), what="vg bound")
        await kubectl_apply(three, _budget(1))
        await kubectl_apply(three, *gang("high", 3, pc="guarantee"))

        async def refused() -> bool:
            return "victim gang(s) default/vg below their quorum" in await events(three, "PreemptionRefused")

        await eventually(refused, what="high says a budget keeps vg")
        assert len(await node_names(three, "vg-")) == 3 and not _evictions(three)
        assert not await node_names(three, "high-")
        await kubectl(three, "patch", "pdb", "guard", "--type=merge", "-p", '{"spec":{"minAvailable":0}}')
        await eventually(lambda: all_on_nodes(three, "high-", 3), timeout=30, what="high bound once vg may go")
        assert sorted(set(_evictions(three))) == ["vg-0", "vg-1", "vg-2"]


async def test_when_status_races_the_guarded_member_goes_first_and_a_refusal_spares_the_rest(
    three: Cluster,
) -> None:
    """Item 2, the race: the budget's status allows vg-2's eviction (minAvailable 0) when the core chooses vg, but
    the Eviction API then refuses it (429s, injected: the runtime gives up after its retry window). vg-2, the
    member a PDB selects, is evicted first and its answer awaited; refused, no other member of vg is asked, so vg
    keeps running whole (the oracle: the Eviction API's 429 is final for that request, eviction.go; a victim gang
    evicted but for one member would run below its quorum), and high looks again (it avoids vg-2 from then on)."""
    three.server.requests.enabled = True
    async with replica(three.kubeconfig) as op:

        def fast() -> None:
            p = op.preemptions
            p.retry_window, p.initial_backoff, p.attempts, p.cooldown_base, p.cooldown_max = 2.0, 0.1, 3, 0.1, 0.1

        on_replica(op, fast)
        await kubectl_apply(three, *PRIORITY_CLASSES)
        await kubectl_apply(three, *_victim_gang())
        await eventually(lambda: all_on_nodes(three, "vg-", 3), what="vg bound")
        await kubectl_apply(three, _budget(0))
        await eventually(
            lambda: _true(on_replica(op, lambda: op.cache.budgets.selected("default/vg-2"))), what="vg-2 selected"
        )
        three.server.faults.add([parse_rule_spec("kind=http429,verb=create,resource=pods/eviction,next=3")])
        await kubectl_apply(three, *gang("high", 3, pc="guarantee"))
        await eventually(lambda: _true(on_replica(op, lambda: op.preemptions.refused >= 1)), what="vg-2 refused")

        async def given_up() -> bool:
            return on_replica(op, lambda: not op.cluster.evicting)

        await eventually(given_up, what="vg-0 and vg-1 given up as victims")
        assert set(_evictions(three)) == {"vg-2"}  # only the guarded member was asked (retried within the window)
        assert len(await node_names(three, "vg-")) == 3  # vg still runs whole
        assert "vg-2" in await kubectl(
            three,
            "get",
            "events",
            "--field-selector",
            "reason=EvictionRefused",
            "-o",
            "custom-columns=N:.involvedObject.name",
        )


async def _true(value: bool) -> bool:
    return value
