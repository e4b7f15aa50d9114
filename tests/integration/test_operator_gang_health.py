"""Runtime gang health end to end (issue 14 item 5): the operator against the emulator.

- A running gang of 3 that loses a member (pod deleted) is reported after its grace period: PodGroup condition
  Degraded=True (reason BelowMinMember) and a Warning event GangDegraded; with policy Report nothing is evicted;
  when the member is re-created and placed, Degraded turns False (reason Recovered).
- A running gang of 3 whose member's node is deleted (its pod stays in the API bound to a node that no longer
  exists, until the pod GC deletes it) is reported the same way, and with policy Evict (here by annotation) its
  other members are evicted (Warning StaleGangEvicted naming them).
- No grace period: a gang that loses a member is never reported (off by default).

Oracle: KAI Scheduler's stale-gang eviction, NVIDIA/KAI-Scheduler
pkg/scheduler/actions/stalegangeviction/stalegangeviction.go (nothing before the staleness grace period has passed
since the first cycle that saw the job below its minAvailable, then its active allocated tasks are evicted);
Kubernetes' pod GC, pkg/controller/podgc/gc_controller.go `gcOrphaned` (pods bound to a deleted node are lost).
Deletion with gracePeriodSeconds=0 is honoured at once (pkg/registry/core/pod/strategy.go `CheckGracefulDelete`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS
from tests.integration.harness import bound, create, events_for, eventually, get_podgroup, pod, podgroup, pods, replica

NODE = NODE_8_GPUS
NAMES = [f"train-{i}" for i in range(3)]


@pytest.fixture
async def cluster4() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=4, node_resources=NODE) as cluster:
        yield cluster


async def _degraded(k: KubeClient, name: str = "train") -> dict[str, Any] | None:
    pg = await get_podgroup(k, name)
    conditions = (pg or {}).get("status", {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "Degraded"), None)


async def _degraded_with(k: KubeClient, status: str) -> dict[str, Any] | None:
    cond = await _degraded(k)
    return cond if cond is not None and cond["status"] == status else None


async def _running(k: KubeClient, names: list[str]) -> bool:
    objs = await pods(k)
    return all(n in objs and objs[n].get("status", {}).get("phase") == "Running" for n in names)


async def _event(k: KubeClient, reason: str) -> dict[str, Any] | None:
    return next((e for e in await events_for(k, "train") if e["reason"] == reason), None)


async def test_lost_member_is_reported_after_the_grace_and_clears_on_recovery(cluster4: Cluster) -> None:
    k = cluster4.client
    async with replica(cluster4.kubeconfig):
        await create(
            k,
            podgroup("train", min_member=3, staleGracePeriodSeconds=1),
            *(pod(n, group="train", gpu=8) for n in NAMES),
        )
        await eventually(lambda: _running(k, NAMES), what="the gang running")
        await k.delete("/api/v1/namespaces/default/pods/train-2", params={"gracePeriodSeconds": "0"})
        cond = await eventually(lambda: _degraded_with(k, "True"), what="Degraded=True")
        assert cond["reason"] == "BelowMinMember" and "2 of minMember 3" in cond["message"]
        event = await eventually(lambda: _event(k, "GangDegraded"), what="the GangDegraded event")
        assert event["type"] == "Warning"
        objs = await pods(k)
        assert {"train-0", "train-1"} <= objs.keys()  # Report: nothing evicted
        assert not any(o["metadata"].get("deletionTimestamp") for o in objs.values())
        await create(k, pod("train-2", group="train", gpu=8))  # its controller re-creates it
        cond = await eventually(lambda: _degraded_with(k, "False"), what="Degraded=False")
        assert cond["reason"] == "Recovered"
        assert await _event(k, "StaleGangEvicted") is None


async def test_node_deleted_degrades_the_gang_and_evict_frees_the_others(cluster4: Cluster) -> None:
    k = cluster4.client
    annotations = {"scheduling.gangsched.io/stale-grace-period": "1s", "scheduling.gangsched.io/stale-policy": "Evict"}
    group = podgroup("train", min_member=3)
    group["metadata"]["annotations"] = annotations
    async with replica(cluster4.kubeconfig):
        await create(k, group, *(pod(n, group="train", gpu=8) for n in NAMES))
        await eventually(lambda: _running(k, NAMES), what="the gang running")
        placed = bound(await pods(k))
        await k.delete(f"/api/v1/nodes/{placed['train-0']}")  # the node went away (its pod is not deleted)
        event = await eventually(lambda: _event(k, "GangDegraded"), what="the GangDegraded event")
        assert "lost with their node: train-0" in event["message"]
        evicted = await eventually(lambda: _event(k, "StaleGangEvicted"), what="the StaleGangEvicted event")
        assert "train-1" in evicted["message"] and "train-2" in evicted["message"]

        async def others_gone() -> bool:
            objs = await pods(k)
            return all(n not in objs or objs[n]["metadata"].get("deletionTimestamp") for n in NAMES[1:])

        await eventually(others_gone, what="the other members evicted")
        cond = await eventually(lambda: _degraded_with(k, "True"), what="Degraded=True")
        assert (
            cond["reason"] == "StaleGangEvicted"
            and "evicted its 3 member(s) still bound (train-0, train-1, train-2)" in cond["message"]
        )


async def test_without_a_grace_period_nothing_is_reported(cluster4: Cluster) -> None:
    k = cluster4.client
    async with replica(cluster4.kubeconfig):
        await create(k, podgroup("train", min_member=3), *(pod(n, group="train", gpu=8) for n in NAMES))
        await eventually(lambda: _running(k, NAMES), what="the gang running")
        await k.delete("/api/v1/namespaces/default/pods/train-2", params={"gracePeriodSeconds": "0"})

        async def status_after_loss() -> dict[str, Any] | None:  # the status written once the member is gone
            pg = await get_podgroup(k, "train")
            status = (pg or {}).get("status", {})
            return status if status.get("running") == 2 else None

        status = await eventually(status_after_loss, what="the status after the loss")
        assert not any(c["type"] == "Degraded" for c in status.get("conditions") or [])
        assert await _event(k, "GangDegraded") is None


async def test_grace_period_annotated_on_the_pods(cluster4: Cluster) -> None:
    """The pods carry the grace period (as KAI Scheduler's `kai.scheduler/staleness-grace-period` pod annotation);
    the PodGroup declares none."""
    k = cluster4.client
    annotations = {"scheduling.gangsched.io/stale-grace-period": "1s"}
    async with replica(cluster4.kubeconfig):
        await create(
            k, podgroup("train", min_member=3), *(pod(n, group="train", gpu=8, annotations=annotations) for n in NAMES)
        )
        await eventually(lambda: _running(k, NAMES), what="the gang running")
        await k.delete("/api/v1/namespaces/default/pods/train-1", params={"gracePeriodSeconds": "0"})
        cond = await eventually(lambda: _degraded_with(k, "True"), what="Degraded=True")
        assert cond["reason"] == "BelowMinMember" and "(grace period 1s)" in cond["message"]
