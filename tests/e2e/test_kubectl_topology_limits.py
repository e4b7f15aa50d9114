"""A topology ConfigMap too big or with a tier gap, applied with the real kubectl: refused with a Warning
`InvalidTopology` on the ConfigMap, and the last good tree stays in force (issue 22 item 15a).

Oracles: Kubernetes' scalability thresholds (kubernetes/community sig-scalability/configs-and-limits/thresholds.md:
5,000 nodes per cluster; a topology domain holds at least one node, so MAX_TOPOLOGY_DOMAINS = 10,000 is twice
what a real tree needs); the network-topology-aware PodGroup design (seed 004) numbers layers 1, 2, 3 upwards
(unit/ToR, leaf, spine), so a tree of layers 1 and 5 only has no tier 2 to 4 that `highestTierAllowed` could name.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.models.topology import MAX_TOPOLOGY_DOMAINS
from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.kubectl_run import kubectl
from tests.e2e.test_kubectl_topology import NODE, TREE, configmap, gang_manifest, nodes_of
from tests.integration.harness import events_for, eventually, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e


@pytest.fixture
async def story_cluster() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=0, node_resources=NODE, topology=TREE) as cluster:
        yield cluster


async def invalid_topology_events(cluster: Cluster, count: int) -> list[str]:
    async def warned() -> list[str] | None:
        events = await events_for(cluster.client, "gangsched-topology", "gangsched-system")
        found = [e["message"] for e in events if e["reason"] == "InvalidTopology"]
        return found if len(found) >= count else None

    return await eventually(warned, what=f"{count} InvalidTopology event(s)")


def oversized() -> list[dict[str, Any]]:
    """MAX_TOPOLOGY_DOMAINS + 1 layer-1 domains of one node each: under a ConfigMap's 1 MiB, over the bound."""
    return [{"layer": 1, "name": f"u{i}", "children": [f"n{i}"]} for i in range(MAX_TOPOLOGY_DOMAINS + 1)]


async def test_too_many_domains_and_a_tier_gap_are_refused_and_the_last_good_tree_stays(
    story_cluster: Cluster,
) -> None:
    async with replica(story_cluster.kubeconfig):
        await kubectl(story_cluster, "create", "-f", "-", input=configmap(json.dumps(TREE)))
        # `replace`, not `apply`: apply's last-applied annotation would exceed 256 KiB (refused by the API server)
        await kubectl(story_cluster, "replace", "-f", "-", input=configmap(json.dumps(oversized())))
        messages = await invalid_topology_events(story_cluster, 1)
        assert f'topology.json: invalid value "{MAX_TOPOLOGY_DOMAINS + 1} domains"' in messages[0]
        assert f"must list at most {MAX_TOPOLOGY_DOMAINS} domains" in messages[0]

        gap = [
            {"layer": 5, "name": "top", "children": ["unit0", "unit1"]},
            {"layer": 1, "name": "unit0", "parents": ["top"], "children": ["node0", "node1"]},
            {"layer": 1, "name": "unit1", "parents": ["top"], "children": ["node2", "node3"]},
        ]
        await kubectl(story_cluster, "replace", "-f", "-", input=configmap(json.dumps(gap)))
        messages = await invalid_topology_events(story_cluster, 2)
        gap_message = next(m for m in messages if "gap" in m)
        assert "no domain has layer 2, 3, 4" in gap_message and "last good topology stays in force" in gap_message

        # the first tree (units of 4 nodes) is still the one in force: a 4-member gang fills unit0
        await kubectl(story_cluster, "apply", "-f", "-", input=gang_manifest("after", members=4, group_size=2))
        assert sorted(await nodes_of(story_cluster, "after", 4)) == ["node0", "node1", "node2", "node3"]
