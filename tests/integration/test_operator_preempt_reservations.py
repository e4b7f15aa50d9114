"""A high-priority gang takes the room reserved by a low-priority NonStrict gang (issue 13 "Why", Preemption (b)).

The issue's case: a NonStrict gang holding part of its quorum kept its reservations for its whole waiting time
while a higher-priority gang waited (priority inversion). kube-scheduler rejects lower-priority pods waiting in
Permit when it preempts (pkg/scheduler/framework/preemption/preemption.go `prepareCandidate`:
`fh.GetWaitingPod(victim.UID)` ... `waitingPod.Reject`), without deleting anything; so here: the reservations
are released, the losing PodGroup gets an event saying for whom, and no running pod is evicted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS, priority_class
from tests.integration.harness import (
    create,
    events_for,
    eventually,
    on_replica,
    placed,
    pod,
    podgroup,
    replica,
)

NODE = NODE_8_GPUS
PRIORITY_CLASSES = [
    priority_class("best-effort", 0),
    priority_class("guarantee", 1000),
]


@pytest.fixture
async def three() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=3, node_resources=NODE) as cluster:
        await create(cluster.client, *PRIORITY_CLASSES)
        yield cluster


def members(name: str, n: int, *, pc: str) -> list[dict[str, Any]]:
    return [pod(f"{name}-{i}", group=name, gpu=8, priority_class=pc) for i in range(n)]


async def test_reservations_of_a_lower_priority_nonstrict_gang_are_released_for_a_higher_one(three: Cluster) -> None:
    k = three.client
    async with replica(three.kubeconfig) as op:
        # one node runs a low-priority pod; a low-priority NonStrict gang of 4 reserves the other two and waits
        await create(k, podgroup("run", min_member=1), *members("run", 1, pc="best-effort"))
        await eventually(lambda: placed(k, "run", 1), what="run bound")
        await create(
            k,
            podgroup("slow", min_member=4, mode="NonStrict", scheduleTimeoutSeconds=600),
            *members("slow", 4, pc="best-effort"),
        )

        async def slow_holds_two() -> bool:
            return on_replica(op, lambda: sum(1 for k_ in op.cluster.pods if op.cluster.reservation_of(k_))) == 2

        await eventually(slow_holds_two, what="slow reserving two nodes")
        await create(k, podgroup("high", min_member=2), *members("high", 2, pc="guarantee"))
        await eventually(lambda: placed(k, "high", 2), what="high bound on the reserved nodes")
        assert len(await placed(k, "run", 1) or {}) == 1  # no running pod was evicted
        assert three.server.request_counts[("POST", "pods/eviction")] == 0

        async def released_event() -> list[dict[str, Any]]:
            return [e for e in await events_for(k, "slow") if e["reason"] == "ReservationsReleased"]

        got = await eventually(released_event, what="slow told it lost its reservations")
        assert "reservations released for higher-priority gang default/high" in got[0]["message"]
