"""Topology-aware placement end to end: a topology ConfigMap and PodGroups applied with the real kubectl.

The tree is seed 004's user-story tree: spine0 -> leaf0 -> unit0 (node0-3); spine0 -> leaf1 -> unit1 (node4-7),
unit2 (node8-11); 8-GPU nodes, pods asking 8 GPUs each.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, events_for, eventually, get_podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

TREE = [
    {"layer": 3, "name": "spine0", "children": ["leaf0", "leaf1"]},
    {"layer": 2, "name": "leaf0", "parents": ["spine0"], "children": ["unit0"]},
    {"layer": 2, "name": "leaf1", "parents": ["spine0"], "children": ["unit1", "unit2"]},
    {"layer": 1, "name": "unit0", "parents": ["leaf0"], "children": [f"node{i}" for i in range(4)]},
    {"layer": 1, "name": "unit1", "parents": ["leaf1"], "children": [f"node{i}" for i in range(4, 8)]},
    {"layer": 1, "name": "unit2", "parents": ["leaf1"], "children": [f"node{i}" for i in range(8, 12)]},
]
NODE = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"}


def configmap(text: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "gangsched-topology", "namespace": "gangsched-system"},
            "data": {"topology.json": text},
        }
    )


def gang_manifest(
    name: str, *, members: int, group_size: int, mode: str = "soft", extra: dict[str, Any] | None = None
) -> str:
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": members, "networkTopology": {"mode": mode, "groupSize": group_size, **(extra or {})}},
        }
    ]
    for i in range(members):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-{i}",
                    "namespace": "default",
                    "labels": {"scheduling.x-k8s.io/pod-group": name},
                },
                "spec": {
                    "schedulerName": "gangsched",
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.k8s.io/pause:3.9",
                            "resources": {"requests": {"nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}},
                        }
                    ],
                },
            }
        )
    return yaml.safe_dump_all(docs)


def blocker(name: str, node: str) -> dict[str, Any]:
    """A pod another scheduler already placed: it holds a whole node's GPUs."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}},
                }
            ],
        },
    }


@pytest.fixture
async def story_cluster() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=0, node_resources=NODE, topology=TREE) as cluster:
        yield cluster


async def nodes_of(cluster: Cluster, prefix: str, count: int) -> list[str]:
    async def probe() -> list[str] | None:
        placed = bound(await pods(cluster.client))
        names = [placed.get(f"{prefix}-{i}") for i in range(count)]
        return [n for n in names if n] if all(names) else None

    return await eventually(probe, what=f"{prefix} bound")


async def test_story1_all_free_lands_in_one_unit_and_shows_its_tier(story_cluster: Cluster) -> None:
    async with replica(story_cluster.kubeconfig):
        await kubectl(story_cluster, "apply", "-f", "-", input=configmap(json.dumps(TREE)))
        await kubectl(story_cluster, "apply", "-f", "-", input=gang_manifest("story1", members=4, group_size=2))
        assert sorted(await nodes_of(story_cluster, "story1", 4)) == ["node0", "node1", "node2", "node3"]

        async def tier() -> Any:
            pg = await get_podgroup(story_cluster.client, "story1")
            return (pg or {}).get("status", {}).get("placedTier")

        assert await eventually(tier, what="placedTier") == 1
        table = await kubectl(story_cluster, "get", "podgroups.scheduling.x-k8s.io")
        header, row = table.splitlines()[0].split(), table.splitlines()[1].split()
        assert row[header.index("TIER")] == "1"


async def test_story2_busy_unit0_lands_in_unit1_not_across_units(story_cluster: Cluster) -> None:
    for i in range(4):
        await story_cluster.client.create("/api/v1/namespaces/default/pods", blocker(f"busy-{i}", f"node{i}"))
    async with replica(story_cluster.kubeconfig):
        await kubectl(story_cluster, "apply", "-f", "-", input=configmap(json.dumps(TREE)))
        await kubectl(story_cluster, "apply", "-f", "-", input=gang_manifest("story2", members=4, group_size=2))
        assert sorted(await nodes_of(story_cluster, "story2", 4)) == ["node4", "node5", "node6", "node7"]


async def test_hard_mode_waits_with_a_reason_when_its_tier_is_full(story_cluster: Cluster) -> None:
    async with replica(story_cluster.kubeconfig):
        await kubectl(story_cluster, "apply", "-f", "-", input=configmap(json.dumps(TREE)))
        # 6 members fit no unit (4 nodes each): hard mode with highestTierAllowed 1 must not spill over
        await kubectl(
            story_cluster,
            "apply",
            "-f",
            "-",
            input=gang_manifest("hard", members=6, group_size=2, mode="hard", extra={"highestTierAllowed": 1}),
        )

        async def reason() -> str | None:
            pg = await get_podgroup(story_cluster.client, "hard")
            msg = (pg or {}).get("status", {}).get("message", "")
            return msg or None

        message = await eventually(reason, what="a waiting reason")
        assert "tier" in message
        assert bound(await pods(story_cluster.client)) == {}


async def test_invalid_topology_is_rejected_with_an_event_and_the_last_good_one_stays(story_cluster: Cluster) -> None:
    async with replica(story_cluster.kubeconfig):
        await kubectl(story_cluster, "apply", "-f", "-", input=configmap(json.dumps(TREE)))
        cyclic = [
            *TREE[:3],
            {"layer": 1, "name": "unit0", "parents": ["leaf0", "leaf1"], "children": ["node0"]},
            *TREE[4:],
        ]
        await kubectl(story_cluster, "apply", "-f", "-", input=configmap(json.dumps(cyclic)))

        async def warned() -> list[dict[str, Any]]:
            return [
                e
                for e in await events_for(story_cluster.client, "gangsched-topology", "gangsched-system")
                if e["reason"] == "InvalidTopology"
            ]

        events = await eventually(warned, what="InvalidTopology event")
        assert "last good topology stays in force" in events[0]["message"]
        await kubectl(story_cluster, "apply", "-f", "-", input=gang_manifest("after", members=4, group_size=2))
        assert sorted(await nodes_of(story_cluster, "after", 4)) == ["node0", "node1", "node2", "node3"]
