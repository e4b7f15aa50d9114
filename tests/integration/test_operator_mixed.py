"""Mixed-size and role gangs (issue 13, item 3) end to end: the operator against the emulator, as a user sees it.

The two scenarios of issue 13's "Why": a Strict gang with members of different sizes where not every member fits
(room for a 6-GPU and two 1-GPU members), and a gang needing 1 `ps` + 2 `worker` with room for 3 pods.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.sim.serve import Cluster, running_cluster
from tests.integration.harness import bound, create, eventually, get_podgroup, pod, podgroup, pods, replica

ROLE = "scheduling.gangsched.io/role"


@pytest.fixture
async def one_node() -> AsyncIterator[Cluster]:
    node = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}
    async with running_cluster(nodes=1, node_resources=node) as cluster:
        yield cluster


@pytest.fixture
async def three_gpus() -> AsyncIterator[Cluster]:
    node = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "1", "pods": "110"}
    async with running_cluster(nodes=3, node_resources=node) as cluster:
        yield cluster


async def _bound_count(k: Any, n: int) -> dict[str, str] | None:
    placed = bound(await pods(k))
    return placed if len(placed) >= n else None


async def test_strict_gang_of_two_sizes_binds_the_quorum_that_fits(one_node: Cluster) -> None:
    """Room for a 6-GPU and two 1-GPU members of a Strict gang of two 6-GPU and two 1-GPU members (minMember 3)."""
    k = one_node.client
    async with replica(one_node.kubeconfig):
        await create(
            k,
            podgroup("mix", min_member=3),
            *(pod(f"big-{i}", group="mix", gpu=6) for i in range(2)),
            *(pod(f"small-{i}", group="mix", gpu=1) for i in range(2)),
        )
        placed = await eventually(lambda: _bound_count(k, 3), what="the quorum bound")
        assert {"small-0", "small-1"} <= set(placed) and len({"big-0", "big-1"} & set(placed)) == 1

        async def scheduled() -> int | None:
            pg = await get_podgroup(k, "mix")
            count = (pg or {}).get("status", {}).get("scheduled", 0)
            return count if count >= 3 else None

        await eventually(scheduled, what="status.scheduled of the PodGroup")


async def test_roles_quorum_places_every_role(three_gpus: Cluster) -> None:
    """1 ps + 2 workers needed, room for 3 pods, 3 workers ahead of the ps in rank order (by name): 1 ps + 2
    workers are bound."""
    k = three_gpus.client
    async with replica(three_gpus.kubeconfig):
        roles = [{"name": "ps", "minMember": 1}, {"name": "worker", "minMember": 2}]
        await create(
            k,
            podgroup("job", min_member=3, roles=roles),
            *(pod(f"a-worker-{i}", group="job", gpu=1, labels={ROLE: "worker"}) for i in range(3)),
            pod("b-ps", group="job", gpu=1, labels={ROLE: "ps"}),
        )
        placed = await eventually(lambda: _bound_count(k, 3), what="the quorum bound")
        assert "b-ps" in placed and len(placed) == 3


async def test_message_names_the_role_that_does_not_fit(three_gpus: Cluster) -> None:
    """The ps needs 2 GPUs and no node has them: the PodGroup says the ps role is short."""
    k = three_gpus.client
    async with replica(three_gpus.kubeconfig):
        roles = [{"name": "ps", "minMember": 1}, {"name": "worker", "minMember": 2}]
        await create(
            k,
            podgroup("job", min_member=3, roles=roles),
            *(pod(f"worker-{i}", group="job", gpu=1, labels={ROLE: "worker"}) for i in range(2)),
            pod("ps-0", group="job", gpu=2, labels={ROLE: "ps"}),
        )

        async def message() -> str | None:
            pg = await get_podgroup(k, "job")
            text = (pg or {}).get("status", {}).get("message", "")
            return text if "role ps" in text else None

        text = await eventually(message, what="a message naming the role")
        assert "role ps: 0 of minimum 1 placeable" in text, text
        assert bound(await pods(k)) == {}


async def test_launcher_and_workers_stay_in_one_unit_under_hard_tier1() -> None:
    """Issue 13 "Why": a hard tier-1 gang of several scheduling classes (MPI launcher + workers) was placed across
    tiers with TIER empty; now it stays in one unit and the PodGroup reports placedTier 1."""
    tree = [
        {"layer": 2, "name": "leaf0", "children": ["unit0", "unit1"]},
        {"layer": 1, "name": "unit0", "parents": ["leaf0"], "children": ["n0", "n1", "n2"]},
        {"layer": 1, "name": "unit1", "parents": ["leaf0"], "children": ["n3", "n4"]},
    ]
    node = {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8", "pods": "110"}
    tiers = ["topology.gangsched.io/tier-1", "topology.gangsched.io/tier-2"]
    async with running_cluster(nodes=0, node_resources=node, topology=tree) as cluster:
        k = cluster.client
        async with replica(cluster.kubeconfig, topology={"nodeLabelTiers": tiers}):
            hard = {"mode": "hard", "highestTierAllowed": 1}
            await create(
                k,
                podgroup("mpi", min_member=6, networkTopology=hard),
                pod("mpi-launcher", group="mpi", cpu="2"),
                *(pod(f"mpi-worker-{i}", group="mpi", gpu=4) for i in range(5)),  # 20 GPUs: only unit0 holds them
            )
            placed = await eventually(lambda: _bound_count(k, 6), what="the gang bound")
            assert set(placed.values()) <= {"n0", "n1", "n2"}, placed

            async def tier() -> int | None:
                pg = await get_podgroup(k, "mpi")
                value = (pg or {}).get("status", {}).get("placedTier")
                return value if isinstance(value, int) else None

            assert await eventually(tier, what="placedTier") == 1
