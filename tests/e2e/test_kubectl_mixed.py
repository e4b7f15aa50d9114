"""Mixed-size and role gangs with the real kubectl (issue 13 "Why": "A Strict gang with members of different sizes
is never scheduled", "Roles are ignored during placement", "Topology is dropped for gangs with more than one
scheduling class"): manifests applied with `kubectl apply`, results read with `kubectl get`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import podgroup_manifest
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, eventually, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

ROLE = "scheduling.gangsched.io/role"


def _pod(name: str, group: str, *, gpu: int, cpu: str = "1", role: str | None = None) -> dict[str, Any]:
    labels = {"scheduling.x-k8s.io/pod-group": group, **({ROLE: role} if role else {})}
    requests = {"cpu": cpu, **({"nvidia.com/gpu": str(gpu)} if gpu else {})}
    limits = {"nvidia.com/gpu": str(gpu)} if gpu else {}
    container = {
        "name": "main",
        "image": "registry.k8s.io/pause:3.9",
        "resources": {"requests": requests, "limits": limits},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"schedulerName": "gangsched", "containers": [container]},
    }


async def _bound(cluster: Cluster, n: int) -> dict[str, str]:
    async def probe() -> dict[str, str] | None:
        placed = bound(await pods(cluster.client))
        return placed if len(placed) >= n else None

    return await eventually(probe, what=f"{n} pods bound")


@pytest.fixture
async def gpu_nodes(request: pytest.FixtureRequest) -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    count, gpus = request.param
    node = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": str(gpus), "pods": "110"}
    async with running_cluster(nodes=count, node_resources=node) as cluster:
        yield cluster


@pytest.mark.parametrize("gpu_nodes", [(1, 8)], indirect=True)
async def test_strict_gang_of_two_sizes_is_scheduled(gpu_nodes: Cluster) -> None:
    """Room for a 6-GPU and two 1-GPU members (two of each declared, minMember 3): 3 bound, PodGroup Scheduled."""
    docs = [podgroup_manifest("mix", min_member=3)]
    docs += [_pod(f"big-{i}", "mix", gpu=6) for i in range(2)]
    docs += [_pod(f"small-{i}", "mix", gpu=1) for i in range(2)]
    async with replica(gpu_nodes.kubeconfig):
        await kubectl(gpu_nodes, "apply", "-f", "-", input=yaml.safe_dump_all(docs))
        placed = await _bound(gpu_nodes, 3)
        assert {"small-0", "small-1"} <= set(placed) and len({"big-0", "big-1"} & set(placed)) == 1

        async def scheduled() -> dict[str, Any] | None:
            pg = json.loads(await kubectl(gpu_nodes, "get", "podgroups.scheduling.x-k8s.io", "mix", "-o", "json"))
            return pg if pg.get("status", {}).get("scheduled", 0) >= 3 else None

        await eventually(scheduled, what="PodGroup status.scheduled 3")


@pytest.mark.parametrize("gpu_nodes", [(3, 1)], indirect=True)
async def test_role_minimums_are_placed(gpu_nodes: Cluster) -> None:
    """1 ps + 2 workers needed, room for 3 pods, 3 workers ahead of the ps: 1 ps + 2 workers bound."""
    roles = [{"name": "ps", "minMember": 1}, {"name": "worker", "minMember": 2}]
    docs = [podgroup_manifest("job", min_member=3, roles=roles)]
    docs += [_pod(f"a-worker-{i}", "job", gpu=1, role="worker") for i in range(3)]
    docs.append(_pod("b-ps", "job", gpu=1, role="ps"))
    async with replica(gpu_nodes.kubeconfig):
        await kubectl(gpu_nodes, "apply", "-f", "-", input=yaml.safe_dump_all(docs))
        placed = await _bound(gpu_nodes, 3)
        assert "b-ps" in placed and len(placed) == 3
        out = await kubectl(gpu_nodes, "get", "pod", "b-ps", "-o", "jsonpath={.spec.nodeName}")
        assert out == placed["b-ps"]


@pytest.mark.parametrize("gpu_nodes", [(3, 1)], indirect=True)
async def test_message_names_the_short_role(gpu_nodes: Cluster) -> None:
    roles = [{"name": "ps", "minMember": 1}, {"name": "worker", "minMember": 2}]
    docs = [podgroup_manifest("job", min_member=3, roles=roles)]
    docs += [_pod(f"worker-{i}", "job", gpu=1, role="worker") for i in range(2)]
    docs.append(_pod("ps", "job", gpu=2, role="ps"))  # no node has 2 GPUs
    async with replica(gpu_nodes.kubeconfig):
        await kubectl(gpu_nodes, "apply", "-f", "-", input=yaml.safe_dump_all(docs))

        async def message() -> str | None:
            text = await kubectl(
                gpu_nodes, "get", "podgroups.scheduling.x-k8s.io", "job", "-o", "jsonpath={.status.message}"
            )
            return text if "role ps" in text else None

        assert "role ps: 0 of minimum 1 placeable" in await eventually(message, what="the role in the message")


TREE = [
    {"layer": 2, "name": "leaf0", "children": ["unit0", "unit1"]},
    {"layer": 1, "name": "unit0", "parents": ["leaf0"], "children": ["n0", "n1", "n2"]},
    {"layer": 1, "name": "unit1", "parents": ["leaf0"], "children": ["n3", "n4"]},
]


async def test_launcher_and_workers_keep_hard_tier1_and_show_their_tier() -> None:
    need_tool("kubectl")
    node = {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8", "pods": "110"}
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "gangsched-topology", "namespace": "gangsched-system"},
        "data": {"topology.json": json.dumps(TREE)},
    }
    docs = [podgroup_manifest("mpi", min_member=6, networkTopology={"mode": "hard", "highestTierAllowed": 1})]
    docs.append(_pod("mpi-launcher", "mpi", gpu=0, cpu="2"))
    docs += [_pod(f"mpi-worker-{i}", "mpi", gpu=4) for i in range(5)]  # 20 GPUs: only unit0 (24) holds them
    async with running_cluster(nodes=0, node_resources=node, topology=TREE) as cluster, replica(cluster.kubeconfig):
        await kubectl(cluster, "apply", "-f", "-", input=json.dumps(configmap))
        await kubectl(cluster, "apply", "-f", "-", input=yaml.safe_dump_all(docs))
        placed = await _bound(cluster, 6)
        assert set(placed.values()) <= {"n0", "n1", "n2"}, placed

        async def tier() -> str | None:
            args = (
                "get",
                "podgroups.scheduling.x-k8s.io",
                "mpi",
                "-o",
                "custom-columns=TIER:.status.placedTier",
                "--no-headers",
            )
            value = (await kubectl(cluster, *args)).strip()
            return value if value != "<none>" else None

        assert await eventually(tier, what="the TIER column") == "1"
