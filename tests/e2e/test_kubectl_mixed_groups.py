"""Data-parallel groups of a gang of several scheduling classes, end to end with the real kubectl (issue 13 item 4:
"gangs of several scheduling classes use the same tier ladder and rank layout as single-class gangs").

An MPIJob-shaped gang (a cpu-only launcher and three 8-GPU workers, labelled as the MPI Operator labels them:
mpi-operator v2beta1 pkg/controller/mpi_job_controller.go sets `training.kubeflow.org/replica-type` launcher or
worker and `training.kubeflow.org/replica-index`) with `groupSize: 2` on two units of two 8-GPU nodes: the gang
needs the leaf (three GPU nodes), and each DP group of two consecutive ranks, (launcher, worker-0) and
(worker-1, worker-2), stays inside one unit, as the network-topology-aware PodGroup design (seed 004) keeps a
single-class gang's groups. Before, groupSize was ignored for such gangs and worker-1 and worker-2 were split over
the two units.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import running_cluster
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, eventually, pod, podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8", "pods": "110"}
TREE = [
    {"layer": 2, "name": "leaf0", "children": ["unit0", "unit1"]},
    {"layer": 1, "name": "unit0", "parents": ["leaf0"], "children": ["n0", "n1"]},
    {"layer": 1, "name": "unit1", "parents": ["leaf0"], "children": ["n2", "n3"]},
]
UNIT = {"n0": "unit0", "n1": "unit0", "n2": "unit1", "n3": "unit1"}
KUBEFLOW = "training.kubeflow.org/"


def member(name: str, kind: str, index: int, *, gpu: int, cpu: str) -> dict[str, Any]:
    labels = {KUBEFLOW + "replica-type": kind, KUBEFLOW + "replica-index": str(index)}
    return pod(name, group="mpi", gpu=gpu, cpu=cpu, labels=labels)


async def test_launcher_and_workers_keep_each_dp_group_in_one_unit() -> None:
    need_tool("kubectl")
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "gangsched-topology", "namespace": "gangsched-system"},
        "data": {"topology.json": json.dumps(TREE)},
    }
    docs = [podgroup("mpi", min_member=4, networkTopology={"mode": "soft", "groupSize": 2})]
    docs.append(member("mpi-launcher", "launcher", 0, gpu=0, cpu="2"))
    docs += [member(f"mpi-worker-{i}", "worker", i, gpu=8, cpu="1") for i in range(3)]
    async with running_cluster(nodes=0, node_resources=NODE, topology=TREE) as cluster, replica(cluster.kubeconfig):
        await kubectl(cluster, "apply", "-f", "-", input=json.dumps(configmap))
        await kubectl(cluster, "apply", "-f", "-", input=yaml.safe_dump_all(docs))

        async def all_bound() -> dict[str, str] | None:
            placed = {n: v for n, v in bound(await pods(cluster.client)).items() if n.startswith("mpi-")}
            return placed if len(placed) == 4 else None

        placed = await eventually(all_bound, what="the MPI gang bound")
        unit = {name: UNIT[node] for name, node in placed.items()}
        assert unit["mpi-launcher"] == unit["mpi-worker-0"], placed
        assert unit["mpi-worker-1"] == unit["mpi-worker-2"] != unit["mpi-worker-0"], placed

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

        assert await eventually(tier, what="the TIER column") == "2"
