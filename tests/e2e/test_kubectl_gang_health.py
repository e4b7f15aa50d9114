"""Runtime gang health (issue 14 item 5) with the real kubectl: a running gang of 3 declared with
`spec.staleGracePeriodSeconds: 1`; `kubectl delete node` of one member's node (its pod stays, bound to a node that
no longer exists) makes the PodGroup Degraded after the grace period (`kubectl wait --for=condition=Degraded`), with
a Warning event GangDegraded naming the lost member; with `stalePolicy: Evict` the other members are evicted too
(Warning StaleGangEvicted).

Oracles: KAI Scheduler's stale-gang eviction (NVIDIA/KAI-Scheduler
pkg/scheduler/actions/stalegangeviction/stalegangeviction.go: after the staleness grace period a gang below its
minAvailable has its active allocated tasks evicted); Kubernetes' pod GC (pkg/controller/podgc/gc_controller.go
`gcOrphaned`: pods bound to a deleted node are lost); kubectl wait's condition check (kubectl
pkg/cmd/wait/condition.go `ConditionalWait`: status.conditions[type].status == "True").
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS
from tests.e2e.kubectl_run import kubectl, kubectl_apply
from tests.integration.harness import eventually, pod, podgroup, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = NODE_8_GPUS
NAMES = [f"train-{i}" for i in range(3)]


@pytest.fixture
async def four() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=4, node_resources=NODE) as cluster:
        yield cluster


async def phases(cluster: Cluster) -> dict[str, tuple[str, str]]:
    """name -> (phase, node) of every pod, and whether it is being deleted (node "" when unbound)."""
    out = await kubectl(
        cluster,
        "get",
        "pods",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}={.status.phase}={.spec.nodeName}="
        "{.metadata.deletionTimestamp}\n{end}",
    )
    rows = [line.split("=") for line in out.splitlines() if line]
    return {r[0]: (r[1] if not r[3] else "Terminating", r[2]) for r in rows}


async def _running_gang(cluster: Cluster, **spec: Any) -> dict[str, str]:
    await kubectl_apply(
        cluster, podgroup("train", min_member=3, **spec), *(pod(n, group="train", gpu=8) for n in NAMES)
    )

    async def running() -> dict[str, str] | None:
        got = await phases(cluster)
        ok = all(got.get(n, ("", ""))[0] == "Running" for n in NAMES)
        return {n: got[n][1] for n in NAMES} if ok else None

    return await eventually(running, what="the gang running")


async def _event(cluster: Cluster, reason: str) -> str | None:
    out = await kubectl(
        cluster, "get", "events", "--field-selector", f"reason={reason}", "-o", "custom-columns=T:.type,M:.message"
    )
    return out if "Warning" in out else None


async def test_node_deleted_makes_the_gang_degraded_after_the_grace(four: Cluster) -> None:
    async with replica(four.kubeconfig):
        nodes = await _running_gang(four, staleGracePeriodSeconds=1)
        await kubectl(four, "delete", "node", nodes["train-0"])
        await kubectl(four, "wait", "--for=condition=Degraded", "podgroups.scheduling.x-k8s.io/train", "--timeout=30s")
        reason = await kubectl(
            four,
            "get",
            "podgroups.scheduling.x-k8s.io",
            "train",
            "-o",
            'jsonpath={.status.conditions[?(@.type=="Degraded")].reason}',
        )
        assert reason == "BelowMinMember"
        event = await eventually(lambda: _event(four, "GangDegraded"), what="the GangDegraded event")
        assert "lost with their node: train-0" in event and "2 of minMember 3" in event
        got = await phases(four)
        assert got["train-1"][0] == "Running" and got["train-2"][0] == "Running"  # Report: nothing evicted


async def test_evict_policy_evicts_the_other_members(four: Cluster) -> None:
    async with replica(four.kubeconfig):
        nodes = await _running_gang(four, staleGracePeriodSeconds=1, stalePolicy="Evict")
        await kubectl(four, "delete", "node", nodes["train-0"])
        await kubectl(four, "wait", "--for=condition=Degraded", "podgroups.scheduling.x-k8s.io/train", "--timeout=30s")
        event = await eventually(lambda: _event(four, "StaleGangEvicted"), what="the StaleGangEvicted event")
        assert "train-1" in event and "train-2" in event

        async def evicted() -> bool:
            got = await phases(four)
            return all(n not in got or got[n][0] in ("Terminating", "Failed", "Succeeded") for n in NAMES[1:])

        await eventually(evicted, what="the other members evicted")
