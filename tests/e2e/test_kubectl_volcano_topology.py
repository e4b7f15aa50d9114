"""Kubeflow Trainer's Volcano PodGroup with `networkTopology`, applied with kubectl, on a two-block cluster.

Objects as Trainer builds them in Volcano mode (kubeflow/trainer, commit 8c0f5059bd51ec3ba6d6a6a7b2e1471de7bc13b3):
pkg/runtime/framework/plugins/volcano/volcano.go Build writes a scheduling.volcano.sh/v1beta1 PodGroup named after
the TrainJob, minMember = all its pods, minResources their summed requests, owned by the TrainJob (left out here:
no TrainJob exists, and the garbage collector removes an object whose owner is missing), and the runtime's
`podGroupPolicy.volcano.networkTopology` as `{mode, highestTierAllowed}` (docs/operator-guides/job-scheduling/
volcano.md: `mode: hard, highestTierAllowed: 1`); EnforcePodGroupPolicy annotates every pod
`scheduling.k8s.io/group-name: <TrainJob>`. Volcano's meaning (volcano-sh/apis pkg/apis/scheduling/v1beta1/types.go
NetworkTopologySpec): hard = never cross a tier above highestTierAllowed; tier 1 is the lowest (a block here).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import running_cluster
from tests.e2e.kubectl_run import kubectl
from tests.e2e.test_kubectl_sources import GPU_NODE, TREE, placed
from tests.integration.harness import eventually, get_podgroup, pods, replica
from tests.integration.volcano import CRD
from tests.tools import need_tool

pytestmark = pytest.mark.e2e


def trainjob_objects(name: str, n: int, topology: dict[str, Any]) -> str:
    gpu = {"nvidia.com/gpu": "8"}
    podgroup = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": "default",
        },
        "spec": {"minMember": n, "minResources": {"nvidia.com/gpu": str(8 * n)}, "networkTopology": topology},
    }
    members = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-node-0-{i}",
                "namespace": "default",
                "annotations": {"scheduling.k8s.io/group-name": name},
                "labels": {
                    "jobset.sigs.k8s.io/jobset-name": name,
                    "trainer.kubeflow.org/trainjob-ancestor-step": "trainer",
                },
            },
            "spec": {
                "schedulerName": "gangsched",
                "containers": [{"name": "node", "image": "pytorch", "resources": {"requests": gpu, "limits": gpu}}],
            },
        }
        for i in range(n)
    ]
    return yaml.safe_dump_all([podgroup, *members])


def block(node: str) -> str:
    return "block0" if int(node.removeprefix("node")) < 4 else "block1"


async def test_trainer_volcano_network_topology_hard_and_soft() -> None:
    """hard tier 1: 5 pods of 8 GPUs cannot share a block of 4 nodes, so none binds (the message names the tier);
    3 pods bind inside one block (the bug: the networkTopology was not read and the gang spread); soft tier 1 lets
    5 pods span both blocks."""
    need_tool("kubectl")
    async with running_cluster(nodes=0, node_resources=GPU_NODE, topology=TREE) as cluster:
        k = cluster.client
        topology_cm = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "gangsched-topology", "namespace": "gangsched-system"},
            "data": {"topology.json": json.dumps(TREE)},
        }
        await kubectl(cluster, "apply", "-f", "-", input=yaml.safe_dump_all([CRD, topology_cm]))
        hard = {"mode": "hard", "highestTierAllowed": 1}
        async with replica(cluster.kubeconfig):
            await kubectl(cluster, "apply", "-f", "-", input=trainjob_objects("wide", 5, hard))

            async def wide_waits() -> str | None:
                status = ((await get_podgroup(k, "wide")) or {}).get("status") or {}
                return status.get("message") or None

            message = await eventually(wide_waits, what="the hard tier-1 gang of 5 waits with a message")
            assert not placed(await pods(k), "wide-"), message
            assert "tier" in message, message  # held by the topology: 8 nodes are free
            await kubectl(cluster, "delete", "podgroups.scheduling.volcano.sh", "wide")
            await kubectl(cluster, "delete", "pod", *(f"wide-node-0-{i}" for i in range(5)), "--wait=false")

            await kubectl(cluster, "apply", "-f", "-", input=trainjob_objects("tight", 3, hard))

            async def tight_bound() -> dict[str, str] | None:
                found = placed(await pods(k), "tight-")
                return found if len(found) == 3 else None

            nodes = await eventually(tight_bound, what="the hard tier-1 gang of 3 bound")
            assert len({block(node) for node in nodes.values()}) == 1, nodes

            soft = {"mode": "soft", "highestTierAllowed": 1}
            await kubectl(cluster, "apply", "-f", "-", input=trainjob_objects("loose", 5, soft))

            async def loose_bound() -> dict[str, str] | None:
                found = placed(await pods(k), "loose-")
                return found if len(found) == 5 else None

            nodes = await eventually(loose_bound, what="the soft gang of 5 bound across both blocks")
            assert {block(node) for node in nodes.values()} == {"block0", "block1"}, nodes
