"""Group preemption end to end with the real kubectl: the demo's manifests (manifests/examples/preemption/) on a
four-node emulator cluster (32 GPUs: batch-low's 4 x 4 GPUs leave 2 nodes empty, train-urgent needs 4 whole nodes),
the operator in-process; what kubectl shows is what a user sees."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, eventually, get_podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "examples" / "preemption"
NODE = NODE_8_GPUS


@pytest.fixture
async def four_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=4, node_resources=NODE) as cluster:
        yield cluster


async def test_urgent_gang_applied_with_kubectl_preempts_the_scavenger_gang_whole(four_nodes: Cluster) -> None:
    k = four_nodes.client
    async with replica(four_nodes.kubeconfig):
        await kubectl(
            four_nodes,
            "apply",
            "-f",
            str(EXAMPLES / "00-priorityclasses.yaml"),
            "-f",
            str(EXAMPLES / "10-batch-low.yaml"),
        )

        async def low_running() -> bool:
            return len([n for n in bound(await pods(k)) if n.startswith("batch-low-")]) == 4

        await eventually(low_running, what="batch-low bound")
        assert "-100" in await kubectl(four_nodes, "get", "priorityclass", "demo-scavenger")
        await kubectl(four_nodes, "apply", "-f", str(EXAMPLES / "20-train-urgent.yaml"))

        async def urgent_bound() -> bool:
            placed = bound(await pods(k))
            return len([n for n in placed if n.startswith("train-urgent-")]) == 4 and not any(
                n.startswith("batch-low-") for n in placed
            )

        await eventually(urgent_bound, what="train-urgent bound, batch-low evicted")
        assert not [n for n in await pods(k) if n.startswith("batch-low-")]  # evicted whole, not one by one

        async def urgent_running() -> bool:
            pg = await get_podgroup(k, "train-urgent")
            return bool((pg or {}).get("status", {}).get("phase") == "Running")

        await eventually(urgent_running, what="train-urgent Running")
        events = await kubectl(four_nodes, "get", "events", "--field-selector", "reason=Preempted")
        assert "Preempted by gang default/train-urgent for gang placement" in events
        pg_events = await kubectl(four_nodes, "get", "events", "--field-selector", "involvedObject.name=train-urgent")
        assert "Preempting" in pg_events and "default/batch-low" in pg_events
        table = await kubectl(four_nodes, "get", "podgroups.scheduling.x-k8s.io")
        assert "train-urgent" in table and "Running" in table
