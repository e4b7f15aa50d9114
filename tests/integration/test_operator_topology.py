"""Topology from node labels: the operator derives the tree, writes the ConfigMap, keeps it current, places by it."""

from __future__ import annotations

import json
from typing import Any

from gangsched.k8s.client import ApiError
from gangsched.models.topology import parse_topology
from gangsched.sim.cluster import create_nodes
from gangsched.sim.serve import running_cluster
from tests.integration.harness import bound, create, eventually, pod, podgroup, pods, replica

TREE = [
    {"layer": 2, "name": "leaf0", "children": ["unit0", "unit1"]},
    {"layer": 1, "name": "unit0", "parents": ["leaf0"], "children": ["n0", "n1", "n2"]},
    {"layer": 1, "name": "unit1", "parents": ["leaf0"], "children": ["n3", "n4"]},
]
NODE = {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8", "pods": "110"}
TIERS = ["topology.gangsched.io/tier-1", "topology.gangsched.io/tier-2"]
CM = "/api/v1/namespaces/gangsched-system/configmaps/gangsched-topology"


async def test_operator_writes_the_topology_from_node_labels_and_places_by_it() -> None:
    async with running_cluster(nodes=0, node_resources=NODE, topology=TREE) as cluster:
        k = cluster.client
        async with replica(cluster.kubeconfig, topology={"nodeLabelTiers": TIERS}):

            async def written() -> Any:
                try:
                    return await k.get(CM)
                except ApiError:
                    return None

            cm = await eventually(written, what="topology ConfigMap written")
            tree = parse_topology(cm["data"]["topology.json"])
            assert tree.node_path("n3") == ("unit1", "leaf0")
            assert tree.nodes() == frozenset({"n0", "n1", "n2", "n3", "n4"})

            # a node joins unit1: the ConfigMap follows
            await create_nodes(k, ["n5"], NODE, labels_for_name=lambda _: {TIERS[0]: "unit1", TIERS[1]: "leaf0"})

            async def has_n5() -> bool:
                text = (await k.get(CM))["data"]["topology.json"]
                return "n5" in json.dumps(json.loads(text))

            await eventually(has_n5, what="n5 in the ConfigMap")
            # 3 full-node members with groupSize 3: unit0 (3 nodes) and unit1 (now 3 nodes) both fit one unit
            members = [pod(f"t-{i}", group="t", gpu=8) for i in range(3)]
            await create(
                k,
                podgroup("t", min_member=3, networkTopology={"mode": "hard", "highestTierAllowed": 1, "groupSize": 3}),
                *members,
            )

            async def placed() -> dict[str, str] | None:
                got = bound(await pods(k))
                return got if len(got) == 3 else None

            nodes = set((await eventually(placed, what="gang bound")).values())
            assert nodes in ({"n0", "n1", "n2"}, {"n3", "n4", "n5"})
