"""After a crash (issue 13 item 11), against the emulator: the state a leader leaves when it dies in the middle of a
bind burst (2 of a Strict gang of 4 bound through pods/binding, the others not; its PodGroup already written
Scheduled) is what a new replica finds. With room for the rest it completes the gang; without, after the gang's
waiting time counted from its start, it evicts the 2 bound members (Warning PartialGangEvicted naming them) so the
gang starts again whole. The PodGroup never says Scheduled while below its quorum, and says it once the binds of the
quorum succeeded (with a Scheduled event).

Oracles: scheduler-plugins coscheduling `PostFilter`/`Permit` (pkg/coscheduling/coscheduling.go: a gang that cannot
reach minMember within scheduleTimeoutSeconds is rejected whole) and its PodGroup controller
(pkg/controllers/podgroup_controller.go: phase Scheduled only when status.scheduled, the bound pods, reaches
minMember); Koordinator gang "once-satisfied" (pkg/scheduler/plugins/coscheduling/core/gang.go). Binding: the
apiserver's pods/binding (pkg/registry/core/pod/storage/storage.go `BindingREST.Create`). Eviction of a Pending pod
ignores PodDisruptionBudgets (pkg/registry/core/pod/storage/eviction.go `canIgnorePDB`).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.sim.faults import parse_rule_spec
from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS
from tests.integration.harness import (
    PG,
    create,
    events_for,
    eventually,
    get_podgroup,
    pod,
    podgroup,
    pods,
    replica,
)

NODE = NODE_8_GPUS
WAIT = 3  # scheduleTimeoutSeconds
LONG_AGO = "2024-01-01T00:00:00Z"


@pytest.fixture
async def four() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=4, node_resources=NODE, kubelet_start_delay=3600) as cluster:  # images pull
        yield cluster


@pytest.fixture
async def two() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=2, node_resources=NODE, kubelet_start_delay=3600) as cluster:
        yield cluster


async def _crashed_burst(k: KubeClient, nodes: list[str], phase: str = "Scheduled") -> None:
    """What a leader that died in the middle of its bind burst leaves: the PodGroup (Scheduling since long ago, and
    maybe already written Scheduled before its binds succeeded), 4 members, 2 of them bound through pods/binding."""
    await create(k, podgroup("g", min_member=4, scheduleTimeoutSeconds=WAIT))
    await create(k, *(pod(f"g-{i}", group="g", gpu=8) for i in range(4)))
    for i in range(2):
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": f"g-{i}"}, "target": {"name": nodes[i]}}
        await k.create(f"/api/v1/namespaces/default/pods/g-{i}/binding", binding)
    status = {"status": {"phase": phase, "scheduled": 4, "scheduleStartTime": LONG_AGO}}
    await k.patch(f"{PG}/namespaces/default/podgroups/g/status", status)


async def _status(k: KubeClient) -> dict[str, Any]:
    pg = await get_podgroup(k, "g")
    return dict((pg or {}).get("status", {}))


async def _bound(k: KubeClient) -> dict[str, str]:
    return {n: p["spec"]["nodeName"] for n, p in (await pods(k)).items() if p["spec"].get("nodeName")}


@pytest.mark.parametrize("stale", ["Scheduled", "Scheduling"])
async def test_new_leader_completes_a_partially_bound_gang(four: Cluster, stale: str) -> None:
    """Scheduling since long ago: the waiting time counts from the restart (it used to time out at once, for good,
    the 2 bound members holding their GPUs)."""
    k = four.client
    await _crashed_burst(k, four.node_names, stale)
    async with replica(four.kubeconfig):

        async def whole() -> dict[str, str] | None:
            got = await _bound(k)
            return got if len(got) == 4 else None

        placed = await eventually(whole, what="the gang completed")
        assert placed["g-0"] == four.node_names[0] and placed["g-1"] == four.node_names[1]  # kept where they were

        async def scheduled() -> dict[str, Any] | None:
            status = await _status(k)
            return status if status.get("phase") == "Scheduled" and status.get("scheduled") == 4 else None

        await eventually(scheduled, what="PodGroup Scheduled with 4 bound")

        async def scheduled_event() -> list[str] | None:  # (events are sent after the status, asynchronously)
            reasons = [e["reason"] for e in await events_for(k, "g")]
            return reasons if "Scheduled" in reasons else None

        reasons = await eventually(scheduled_event, what="the Scheduled event")
        assert reasons.count("Scheduled") == 1 and "PartialGangEvicted" not in reasons
        left = await pods(k)
        assert all(not left[n]["metadata"].get("deletionTimestamp") for n in ("g-0", "g-1"))  # nobody evicted


async def test_new_leader_evicts_a_partially_bound_gang_without_room_after_its_waiting_time(two: Cluster) -> None:
    k = two.client
    await _crashed_burst(k, two.node_names)
    started = time.monotonic()
    async with replica(two.kubeconfig):

        async def corrected() -> dict[str, Any] | None:  # the stale Scheduled goes: 2 of minMember 4 bound
            status = await _status(k)
            return status if status.get("phase") not in (None, "Scheduled", "Running") else None

        status = await eventually(corrected, what="the stale Scheduled corrected")
        assert status["scheduled"] == 2

        async def evicted() -> list[dict[str, Any]] | None:
            found = [e for e in await events_for(k, "g") if e["reason"] == "PartialGangEvicted"]
            return found or None

        found = await eventually(evicted, timeout=30, what="the PartialGangEvicted event")
        assert time.monotonic() - started >= WAIT * 0.9  # counted from the restart, not from scheduleStartTime
        assert found[0]["type"] == "Warning"
        assert "g-0" in found[0]["message"] and "g-1" in found[0]["message"]

        async def gone() -> bool:  # bare pods: evicted is deleted (a controller would create them again)
            left = await pods(k)
            return "g-0" not in left and "g-1" not in left

        await eventually(gone, what="the 2 bound members evicted")
        assert await _bound(k) == {}  # g-2 and g-3 were never bound: nothing of the gang holds a node

        async def waiting() -> str | None:
            message = str((await _status(k)).get("message") or "")
            return message if "2 of minMember 4 pods exist" in message else None

        await eventually(waiting, what="the gang waits for its pods, whole")
        assert "Scheduled" not in [e["reason"] for e in await events_for(k, "g")]


@pytest.fixture
async def slow_binds() -> AsyncIterator[Cluster]:
    """Every pods/binding answered 8 s late (a loaded apiserver): the binds of a burst stay in flight a while."""
    rule = parse_rule_spec("kind=latency,verb=create,resource=pods/binding,delay=8")
    async with running_cluster(nodes=4, node_resources=NODE, kubelet_start_delay=3600, faults=[rule]) as cluster:
        yield cluster


async def test_podgroup_says_scheduled_only_after_its_bindings_succeeded(slow_binds: Cluster) -> None:
    """Was: Scheduled (phase, condition, event) written when the binds were decided, before any succeeded."""
    k = slow_binds.client
    async with replica(slow_binds.kubeconfig):
        await create(k, podgroup("g", min_member=4), *(pod(f"g-{i}", group="g", gpu=8) for i in range(4)))

        async def binding() -> dict[str, Any] | None:
            status = await _status(k)
            return status if "bound or binding" in str(status.get("message")) else None

        status = await eventually(binding, what="the gang's binds decided")
        # seen while the binds are in flight (8 s): status writes wait for the binder 2 s at most (runtime/operator.py)
        assert len(await _bound(k)) < 4
        assert status["phase"] == "Scheduling"
        condition = next(c for c in status["conditions"] if c["type"] == "Scheduled")
        assert (condition["status"], condition["reason"]) == ("False", "Binding")
        assert "Scheduled" not in [e["reason"] for e in await events_for(k, "g")]

        async def scheduled() -> dict[str, Any] | None:
            status = await _status(k)
            # (Running when the kubelet started the pods before the status write: both come after the binds)
            return status if status.get("phase") in ("Scheduled", "Running") else None

        status = await eventually(scheduled, what="PodGroup Scheduled")
        assert len(await _bound(k)) == 4  # every binding had succeeded when it was written
        assert status["scheduled"] == 4
