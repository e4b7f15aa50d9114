"""Pods without a gang and gangs with members of different sizes preempt too (issue 13 "Why", Preemption (d)).

The issue's case: such pods never preempted, with no message. kube-scheduler's DefaultPreemption preempts for a
single pod (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go): the lowest-priority victims
on one node, the preemptor nominated there (status.nominatedNodeName) and bound once they are gone
(pkg/scheduler/framework/preemption/preemption.go). Evictions go through the emulator's Eviction API.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS, priority_class
from tests.integration.harness import bound, create, events_for, eventually, pod, podgroup, pods, replica

NODE = NODE_8_GPUS
PRIORITY_CLASSES = [
    priority_class("best-effort", 0),
    priority_class("batch", 10),
    priority_class("guarantee", 1000),
]


@pytest.fixture
async def two() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        await create(cluster.client, *PRIORITY_CLASSES)
        yield cluster


async def node_of(k: KubeClient, name: str) -> str | None:
    return bound(await pods(k)).get(name)


async def test_a_pod_without_a_gang_preempts_the_lowest_priority_pod(two: Cluster) -> None:
    k = two.client
    async with replica(two.kubeconfig):
        await create(k, pod("cheap", gpu=8, priority_class="best-effort"), pod("batch", gpu=8, priority_class="batch"))
        await eventually(lambda: node_of(k, "cheap"), what="cheap bound")
        batch_node = await eventually(lambda: node_of(k, "batch"), what="batch bound")
        cheap_node = await node_of(k, "cheap")
        await create(k, pod("urgent", gpu=8, priority_class="guarantee"))
        where = await eventually(lambda: node_of(k, "urgent"), what="urgent bound after preempting")
        assert where == cheap_node
        objs = await pods(k)
        assert "cheap" not in objs and bound(objs).get("batch") == batch_node
        preempted = [e for e in await events_for(k, "cheap") if e["reason"] == "Preempted"]
        assert preempted and preempted[0]["message"] == f"Preempted by pod default/urgent on node {cheap_node}"
        assert two.server.request_counts[("POST", "pods/eviction")] == 1


async def test_a_gang_with_members_of_different_sizes_preempts(two: Cluster) -> None:
    k = two.client
    async with replica(two.kubeconfig):
        await create(k, pod("cheap-0", gpu=8, priority_class="best-effort"))
        await create(k, pod("cheap-1", gpu=8, priority_class="best-effort"))
        await eventually(lambda: node_of(k, "cheap-0"), what="cheap-0 bound")
        await eventually(lambda: node_of(k, "cheap-1"), what="cheap-1 bound")
        members: list[dict[str, Any]] = [
            pod("mixed-0", group="mixed", gpu=6, priority_class="guarantee"),
            pod("mixed-1", group="mixed", gpu=1, priority_class="guarantee"),
            pod("mixed-2", group="mixed", gpu=1, priority_class="guarantee"),
        ]
        await create(k, podgroup("mixed", min_member=3), *members)

        async def all_bound() -> dict[str, str] | None:
            got = {n: v for n, v in bound(await pods(k)).items() if n.startswith("mixed-")}
            return got if len(got) == 3 else None

        await eventually(all_bound, what="the mixed gang bound after preempting")
        left = [n for n in await pods(k) if n.startswith("cheap-")]
        assert len(left) == 1  # one 8-GPU node freed holds 6 + 1 + 1
