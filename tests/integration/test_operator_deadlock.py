"""Two NonStrict gangs deadlock each other and the scheduler resolves it (issue 15 item 4), against the emulator.

The issue's case: a NonStrict gang holding part of its quorum kept it for its whole waiting time while another
gang holding the rest waited too, neither able to complete. Here the wait-for cycle is found in the cycle after it
forms; the lower-priority gang's reservations are released (a Warning `DeadlockResolved` on its PodGroup names
the cycle), the other completes, and the released gang completes once capacity frees.

Oracles: the wait-for graph of deadlock detection (Coffman, Elphick, Shoshani, "System Deadlocks", 1971: a cycle
among holders each waiting for another is a deadlock, resolved by rolling one back); kube-scheduler's Unreserve of
pods waiting in Permit (pkg/scheduler/framework/interface.go `ReservePlugin`) is how a reservation is given up.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS, gang_manifests, priority_class
from tests.integration.harness import bound, create, events_for, eventually, on_replica, pod, pods, replica

NODE = NODE_8_GPUS
PRIORITY_CLASSES = [
    priority_class("best-effort", 0),
    priority_class("guarantee", 1000),
]


@pytest.fixture
async def four() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=4, node_resources=NODE) as cluster:
        await create(cluster.client, *PRIORITY_CLASSES)
        yield cluster


def busy(name: str, node: str) -> dict[str, Any]:
    """A pod bound by someone else (spec.nodeName at creation), with no declared run time, of the high gang's
    priority (a NonStrict gang preempts lower-priority pods, issue 22 item 4: here only the deadlock may help)."""
    obj = pod(name, gpu=8, scheduler="default-scheduler", priority_class="guarantee")
    obj["spec"]["nodeName"] = node
    return obj


def gang(name: str, pc: str) -> list[dict[str, Any]]:
    return gang_manifests(name, 4, pc=pc, mode="NonStrict", scheduleTimeoutSeconds=600)


async def placed(k: KubeClient, prefix: str) -> dict[str, str] | None:
    got = {name: node for name, node in bound(await pods(k)).items() if name.startswith(prefix + "-")}
    return got if len(got) == 4 else None


def reserved_by(op: Any, prefix: str) -> int:
    def read() -> int:
        return sum(
            1
            for key in op.cluster.pods
            if key.startswith(f"default/{prefix}-") and (held := op.cluster.reservation_of(key)) and not held[1]
        )

    return on_replica(op, read)


async def test_two_nonstrict_gangs_holding_each_others_room_are_resolved_and_both_complete(four: Cluster) -> None:
    k = four.client
    async with replica(four.kubeconfig) as op:
        await create(k, busy("busy-2", "node-2"), busy("busy-3", "node-3"))
        await create(k, *gang("low", "best-effort"))

        async def low_holds_two() -> bool | None:
            return reserved_by(op, "low") == 2 or None

        await eventually(low_holds_two, what="low reserving node-0 and node-1")
        await create(k, *gang("high", "guarantee"))
        await k.delete("/api/v1/namespaces/default/pods/busy-2")  # high takes node-2: each waits for the other

        async def resolved() -> list[str] | None:
            got = [e["message"] for e in await events_for(k, "low") if e["reason"] == "DeadlockResolved"]
            return got or None

        expected = (
            "2 reservations released: deadlock with default/high "
            "(default/low waits for capacity default/high holds, default/high for default/low)"
        )
        assert await eventually(resolved, what="the deadlock resolved") == [expected]

        async def high_holds_three() -> bool | None:
            return reserved_by(op, "high") == 3 or None

        await eventually(high_holds_three, what="high holding node-0, node-1 and node-2")
        assert reserved_by(op, "low") == 0
        await k.delete("/api/v1/namespaces/default/pods/busy-3")
        assert sorted((await eventually(lambda: placed(k, "high"), what="high bound")).values()) == [
            "node-0",
            "node-1",
            "node-2",
            "node-3",
        ]
        for i in range(4):  # high's job ends: low completes on the freed nodes
            await k.delete(f"/api/v1/namespaces/default/pods/high-{i}")
        assert len(await eventually(lambda: placed(k, "low"), what="low bound")) == 4
        assert op.metrics.registry.get_sample_value("gangsched_deadlocks_resolved_total") == 1
        assert op.metrics.registry.get_sample_value("gangsched_deadlock_released_reservations_total") == 2
