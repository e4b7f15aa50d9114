"""Gang incarnations and gang groups with the real kubectl (issue 13 items 5 and 6), the operator in-process
against the emulator; what kubectl shows is what a user sees.

- A JobSet/TrainJob-style restart (`kubectl delete pods -l ... --grace-period=0 --force`, then the same pods
  applied again) while only 3 of the 4 members fit: none is bound until room appears, then all are bound.
  Oracle: Koordinator's coscheduling core/gang.go `isGangValidForPermit` (GangMatchPolicyWaitingAndRunning).
- A gang group whose partner's second pod is applied 2 s later, past the 1 s waiting time: nothing is
  reserved meanwhile (the message names the partner) and the group is bound whole, never timed out.
  Oracle: Koordinator's coscheduling core/core.go `basicGangRequirementsCheck`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import NODE_8_GPUS
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, eventually, pod, podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = NODE_8_GPUS


@pytest.fixture
async def four_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=4, node_resources=NODE) as cluster:
        yield cluster


async def apply(cluster: Cluster, path: Path, *objs: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    await kubectl(cluster, "apply", "-f", str(path))


async def message_of(cluster: Cluster, name: str, namespace: str = "default") -> str:
    return await kubectl(
        cluster, "get", "podgroups.scheduling.x-k8s.io", name, "-n", namespace, "-o", "jsonpath={.status.message}"
    )


async def test_restarted_job_starts_whole_or_not_at_all(four_nodes: Cluster, tmp_path: Path) -> None:
    k = four_nodes.client
    names = [f"train-{i}" for i in range(4)]
    members = [pod(n, group="train", gpu=8, labels={"job": "train"}) for n in names]
    async with replica(four_nodes.kubeconfig):
        await apply(four_nodes, tmp_path / "train.yaml", podgroup("train", min_member=4), *members)

        async def all_bound() -> bool:
            placed = bound(await pods(k))
            return all(n in placed for n in names)

        await eventually(all_bound, what="train bound whole")
        await kubectl(four_nodes, "delete", "pods", "-l", "job=train", "--grace-period=0", "--force", "--wait")
        blocker = pod("blocker", gpu=8, scheduler="default-scheduler")
        blocker["spec"]["nodeName"] = "node-0"  # another scheduler's pod takes a node: room for 3 of 4
        await apply(four_nodes, tmp_path / "blocker.yaml", blocker)
        await apply(four_nodes, tmp_path / "train-again.yaml", *members)

        async def waits() -> str | None:
            message = await message_of(four_nodes, "train")
            return message if "cannot reach its quorum" in message else None

        await eventually(waits, what="the restarted job waits whole")
        wide = await kubectl(four_nodes, "get", "pods", "-l", "job=train", "-o", "jsonpath={.items[*].spec.nodeName}")
        assert wide.strip() == ""  # none of the 4 bound: no partial job
        await kubectl(four_nodes, "delete", "pod", "blocker", "--grace-period=0", "--force", "--wait")
        await eventually(all_bound, what="train bound whole again")


async def test_gang_group_partner_arriving_later_is_bound_whole(four_nodes: Cluster, tmp_path: Path) -> None:
    k = four_nodes.client
    group = ["default/a", "team-b/b"]
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}}
    async with replica(four_nodes.kubeconfig):
        await apply(
            four_nodes,
            tmp_path / "group.yaml",
            namespace,
            podgroup("a", min_member=2, gangGroup=group, scheduleTimeoutSeconds=1),
            podgroup("b", namespace="team-b", min_member=2, gangGroup=group, scheduleTimeoutSeconds=1),
            pod("a-0", group="a", gpu=8),
            pod("a-1", group="a", gpu=8),
            pod("b-0", namespace="team-b", group="b", gpu=8),
        )

        async def waiting() -> str | None:
            message = await message_of(four_nodes, "a")
            return message if message.startswith("waiting for gang group") else None

        assert await eventually(waiting) == "waiting for gang group: team-b/b has 1 of minMember 2 pods"
        await asyncio.sleep(2.0)  # the scenario: b's second pod comes 2 s later, past the 1 s waiting time
        await apply(four_nodes, tmp_path / "b-1.yaml", pod("b-1", namespace="team-b", group="b", gpu=8))

        async def group_bound() -> bool:
            return {"a-0", "a-1", "b-0", "b-1"} <= set(bound(await pods(k)))

        await eventually(group_bound, what="the whole group bound")
        table = await kubectl(four_nodes, "get", "podgroups.scheduling.x-k8s.io", "-A")
        assert "Timeout" not in table
