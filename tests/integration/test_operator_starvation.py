"""A large gang does not starve behind a stream of small pods (issue 13 item 12), through the emulator at scaled-down
durations: the operator runs with `starvation.holdAfterSeconds: 2`; the simulated kubelet ends each small pod 2 s
after it starts (`sim.gangsched.io/duration`), and new ones arrive faster than they end.

Oracles: Slurm's backfill scheduler (src/plugins/sched/backfill/backfill.c: a pending job's start is protected from
lower-priority jobs that would delay it), Volcano's design for starving big jobs
(docs/design/resource-reservation-design.md: nodes locked for the job that waited longest take no new jobs).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.sim.serve import Cluster, running_cluster
from tests.integration.harness import bound, create, events_for, eventually, get_podgroup, pod, podgroup, pods, replica

NODE = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "4", "pods": "110"}
HOLD_AFTER = 2.0
RUN = 2.0


@pytest.fixture
async def cluster2() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        yield cluster


def _small(name: str) -> dict[str, Any]:
    return pod(name, gpu=1, annotations={"sim.gangsched.io/duration": f"{RUN:g}s"})


async def _stream(k: KubeClient, start: int) -> None:
    """One small pod every 0.2 s (5/s) while 8 GPUs free 4/s."""
    i = start
    while True:
        await create(k, _small(f"small-{i}"))
        i += 1
        await asyncio.sleep(0.2)  # the arrival rate of the workload, not a wait for a result


async def test_a_large_gang_behind_a_stream_of_small_pods_gets_capacity_held_and_starts(cluster2: Cluster) -> None:
    k = cluster2.client
    async with replica(cluster2.kubeconfig, starvation={"holdAfterSeconds": HOLD_AFTER}):
        await create(k, *(_small(f"small-{i}") for i in range(8)))

        async def full() -> bool:
            return len(bound(await pods(k))) == 8

        await eventually(full, what="8 small pods bound")
        stream = asyncio.create_task(_stream(k, 8))
        try:
            # the first 8 started together and end together: 8 GPUs free at once would let the big gang in without
            # a hold; once they are gone, the GPUs are held by stream pods ending one by one, as in a real stream
            async def first_ones_gone() -> bool:
                phases = {name: p.get("status", {}).get("phase") for name, p in (await pods(k)).items()}
                return all(phases.get(f"small-{i}") in (None, "Succeeded") for i in range(8))

            await eventually(first_ones_gone, what="the first 8 small pods ended")
            created = time.monotonic()
            await create(k, podgroup("big", min_member=2), *(pod(f"big-{i}", group="big", gpu=4) for i in range(2)))

            async def held() -> str | None:
                pg = await get_podgroup(k, "big")
                message = str(((pg or {}).get("status") or {}).get("message", ""))
                return message if "holding capacity on 2 nodes for this gang since" in message else None

            await eventually(held, what="the big gang's status reporting its hold", timeout=30.0)

            async def started() -> bool:
                placed = bound(await pods(k))
                return "big-0" in placed and "big-1" in placed

            await eventually(started, what="the big gang bound", timeout=30.0)
            waited = time.monotonic() - created
        finally:
            stream.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stream
        # hold after 2 s, the small pods on its nodes end within 2 s more; the rest is the operator's and
        # emulator's latency on a loaded 2-core machine
        assert waited < HOLD_AFTER + RUN + 10.0, waited

        async def reported() -> list[str] | None:  # (the Scheduled event follows the status write after the binds)
            reasons = [e["reason"] for e in await events_for(k, "big")]
            return reasons if "Scheduled" in reasons else None

        reasons = await eventually(reported, what="the big gang's Scheduled event")
        assert "CapacityHeld" in reasons
