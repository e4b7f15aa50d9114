"""A preemptor waits for its victims' graceful termination (issue 13 "Why", Preemption (a)), end to end.

The issue's case: victims with the default 30 s grace period and a preemptor with `scheduleTimeoutSeconds: 10`
timed out for good while its victims terminated, and the victims were lost anyway. Durations are scaled down
here: the victims take 3 s to stop (the emulator's kubelet, `sim.gangsched.io/termination-delay`, within their
default 30 s grace period: sim/termination.py, as pkg/kubelet/status/status_manager.go finishes a graceful
deletion) and the preemptor's waiting time is 1 s. kube-scheduler keeps a preemptor nominated in its queue
while the victims terminate (pkg/scheduler/framework/preemption/preemption.go); the waiting time (Permit) only
applies once it fits. The deadline is bounded by the victims' deletionTimestamp (deletion time + grace period,
pkg/registry/core/pod/strategy.go `CheckGracefulDelete`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS, gang_manifests, priority_class
from tests.integration.harness import create, events_for, eventually, get_podgroup, placed, pods, replica

NODE = NODE_8_GPUS
PRIORITY_CLASSES = [
    priority_class("best-effort", 0),
    priority_class("guarantee", 1000),
]
DELAY = "sim.gangsched.io/termination-delay"


@pytest.fixture
async def two() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        await create(cluster.client, *PRIORITY_CLASSES)
        yield cluster


def gang(name: str, n: int, *, pc: str, annotations: dict[str, str] | None = None, **spec: Any) -> list[dict[str, Any]]:
    return gang_manifests(name, n, pc=pc, annotations=annotations, **spec)


async def test_preemptor_outlasts_its_waiting_time_while_victims_terminate(two: Cluster) -> None:
    k = two.client
    async with replica(two.kubeconfig):
        await create(k, *gang("low", 2, pc="best-effort", annotations={DELAY: "3s"}))
        await eventually(lambda: placed(k, "low", 2), what="low bound")
        await create(k, *gang("high", 2, pc="guarantee", scheduleTimeoutSeconds=1))

        async def terminating() -> bool:
            objs = await pods(k)
            return all(objs.get(f"low-{i}", {}).get("metadata", {}).get("deletionTimestamp") for i in range(2))

        await eventually(terminating, what="the victims terminating")
        where = await eventually(lambda: placed(k, "high", 2), timeout=20, what="high bound after the victims left")
        assert set(where.values()) == {"node-0", "node-1"}
        assert not any(name.startswith("low-") for name in await pods(k))
        assert not [e for e in await events_for(k, "high") if e["reason"] == "GangTimeout"]

        async def scheduled() -> bool:
            pg = await get_podgroup(k, "high")
            return (pg or {}).get("status", {}).get("phase") in ("Scheduled", "Running")

        await eventually(scheduled, what="high Scheduled")


async def test_victims_that_never_leave_time_the_preemptor_out_after_their_grace_period(two: Cluster) -> None:
    """Bounded: victims held by a finalizer never go; the preemptor times out once their 2 s grace period and
    its 1 s waiting time are over (not at 1 s, and not never)."""
    k = two.client
    async with replica(two.kubeconfig):
        members = gang("low", 2, pc="best-effort")
        for m in members[1:]:
            m["metadata"]["finalizers"] = ["example.com/hold"]
            m["spec"]["terminationGracePeriodSeconds"] = 2
        await create(k, *members)
        await eventually(lambda: placed(k, "low", 2), what="low bound")
        await create(k, *gang("high", 2, pc="guarantee", scheduleTimeoutSeconds=1))

        async def timed_out() -> list[dict[str, Any]]:
            return [e for e in await events_for(k, "high") if e["reason"] == "GangTimeout"]

        events = await eventually(timed_out, timeout=20, what="high timed out after the grace period")
        assert "suspended" in events[0]["message"], events[0]["message"]
        for i in range(2):
            await k.patch(f"/api/v1/namespaces/default/pods/low-{i}", {"metadata": {"finalizers": None}})
