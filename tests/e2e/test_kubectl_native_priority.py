"""A native PodGroup's `priority`, `preemptionPolicy` and `disruptionMode` (issue 25 item 2), with the real kubectl
and the operator in-process against the emulator serving scheduling.k8s.io/v1beta1 (its default profile).

Objects as the API types define them (staging/src/k8s.io/api/scheduling/v1beta1/types.go PodGroupSpec: `priority`
(what kube-apiserver's Priority admission resolves from `priorityClassName` under WorkloadAwarePreemption; set here
directly, as that gate is off in the emulator's profiles), `preemptionPolicy`, `disruptionMode` a union
`{single: {}}` (the default) | `{all: {}}`). Oracle: kube-scheduler 1.37's workload-aware preemption
(pkg/scheduler/framework/preemption/podgrouppreemption.go: a pod of a pod group counts at its group's priority,
util.PodGroupPriority; preemptorEligibleToPreemptOthers refuses a preemptor whose preemptionPolicy is Never; victims
are units: a group with disruptionMode all goes whole, single lets its pods go one by one; gangsched adds its own
rule that no victim gang is left below its quorum).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, eventually, pod, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}
URGENT = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "urgent"},
    "value": 1000,
}


@pytest.fixture
async def two_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        yield cluster


def group(name: str, min_count: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}, **spec},
    }


def member(name: str, pg: str, priority_class: str | None = None) -> dict[str, Any]:
    body = pod(name, gpu=8, priority_class=priority_class)
    body["spec"]["schedulingGroup"] = {"podGroupName": pg}
    return body


async def apply(cluster: Cluster, path: Path, *objs: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    await kubectl(cluster, "apply", "-f", str(path))


async def existing(cluster: Cluster) -> set[str]:
    out = json.loads(await kubectl(cluster, "get", "pods", "-o", "json"))
    return {p["metadata"]["name"] for p in out["items"] if not p["metadata"].get("deletionTimestamp")}


async def waiting(cluster: Cluster, name: str) -> bool:
    out = json.loads(await kubectl(cluster, "get", "pod", name, "-o", "json"))
    conditions = out.get("status", {}).get("conditions") or []
    return any(c.get("type") == "PodScheduled" and c.get("status") == "False" for c in conditions)


async def running_batch(cluster: Cluster, tmp_path: Path, mode: dict[str, Any]) -> None:
    """A low-priority native gang of two 8-GPU pods, quorum 1, filling both nodes."""
    await apply(
        cluster,
        tmp_path / "batch.yaml",
        URGENT,
        group("batch", 1, disruptionMode=mode),
        member("batch-0", "batch"),
        member("batch-1", "batch"),
    )

    async def both_bound() -> bool:
        return {"batch-0", "batch-1"} <= set(bound(await pods(cluster.client)))

    await eventually(both_bound, what="the batch gang bound")


async def urgent_gang(cluster: Cluster, tmp_path: Path, **spec: Any) -> None:
    await apply(
        cluster, tmp_path / "urgent.yaml", group("hot", 1, priority=1000, **spec), member("hot-0", "hot", "urgent")
    )


async def disruption_target(cluster: Cluster, name: str) -> dict[str, Any] | None:
    """The PodGroup's DisruptionTarget condition (k8s.io/api scheduling/v1beta1 types.go: reason
    PreemptionByScheduler "indicates the PodGroup was preempted to make room for higher-priority PodGroups or Pods";
    the message as pkg/scheduler/framework/preemption/executor.go PreemptPod words its victims' pod condition)."""
    out = json.loads(await kubectl(cluster, "get", "podgroups.scheduling.k8s.io", name, "-o", "json"))
    conditions = out.get("status", {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "DisruptionTarget"), None)


async def test_disruption_mode_all_is_evicted_whole(two_nodes: Cluster, tmp_path: Path) -> None:
    """disruptionMode all: the urgent gang needs one node, the batch gang (quorum 1) goes whole, both pods; the
    batch PodGroup says it was preempted."""
    async with replica(two_nodes.kubeconfig):
        await running_batch(two_nodes, tmp_path, {"all": {}})
        await urgent_gang(two_nodes, tmp_path)

        async def hot_bound() -> bool:
            return "hot-0" in bound(await pods(two_nodes.client))

        await eventually(hot_bound, what="the urgent gang bound")
        assert not {"batch-0", "batch-1"} & await existing(two_nodes)
        found = await eventually(lambda: disruption_target(two_nodes, "batch"), what="DisruptionTarget on batch")
        assert (found["status"], found["reason"]) == ("True", "PreemptionByScheduler"), found
        assert found["message"] == "gangsched: preempting to accommodate a higher priority pod group", found
        assert await disruption_target(two_nodes, "hot") is None


async def test_disruption_mode_single_gives_one_member(two_nodes: Cluster, tmp_path: Path) -> None:
    """single (the default): the member above the batch gang's quorum goes alone; the other keeps running."""
    async with replica(two_nodes.kubeconfig):
        await running_batch(two_nodes, tmp_path, {"single": {}})
        await urgent_gang(two_nodes, tmp_path)

        async def hot_bound() -> bool:
            return "hot-0" in bound(await pods(two_nodes.client))

        await eventually(hot_bound, what="the urgent gang bound")
        assert len({"batch-0", "batch-1"} & await existing(two_nodes)) == 1


async def test_group_preemption_policy_never_preempts_nothing(two_nodes: Cluster, tmp_path: Path) -> None:
    """The group's preemptionPolicy Never applies to every member (their PriorityClass says PreemptLowerPriority)."""
    async with replica(two_nodes.kubeconfig):
        await running_batch(two_nodes, tmp_path, {"single": {}})
        await urgent_gang(two_nodes, tmp_path, preemptionPolicy="Never")

        async def told() -> str | None:
            out = json.loads(await kubectl(two_nodes, "get", "pod", "hot-0", "-o", "json"))
            for cond in out.get("status", {}).get("conditions") or []:
                if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                    return str(cond.get("message"))
            return None

        await eventually(told, what="the urgent member told it waits")
        assert {"batch-0", "batch-1"} <= set(bound(await pods(two_nodes.client)))
        assert "hot-0" not in bound(await pods(two_nodes.client))
        assert await disruption_target(two_nodes, "batch") is None  # nothing preempted


@pytest.mark.parametrize("pods_first", [False, True], ids=["podgroup-first", "pods-first"])
async def test_member_priority_disagreeing_with_its_group_is_reported(
    two_nodes: Cluster, tmp_path: Path, pods_first: bool
) -> None:
    """A member whose own priority is not its PodGroup's is reported and not scheduled; the gang waits whole (also
    when the pods were created before their PodGroup, which they wait for)."""
    async with replica(two_nodes.kubeconfig):
        members = [member("mixed-0", "mixed", "urgent"), member("mixed-1", "mixed")]  # mixed-1: priority 0
        pg = group("mixed", 2, priority=1000)
        if pods_first:
            await apply(two_nodes, tmp_path / "pods.yaml", URGENT, *members)
            await eventually(lambda: waiting(two_nodes, "mixed-1"), what="the members waiting for their PodGroup")
            await apply(two_nodes, tmp_path / "pg.yaml", pg)
        else:
            await apply(two_nodes, tmp_path / "mixed.yaml", URGENT, pg, *members)

        async def reported() -> str | None:
            events = json.loads(await kubectl(two_nodes, "get", "events", "-o", "json"))["items"]
            for event in events:
                if event.get("involvedObject", {}).get("name") == "mixed-1" and "spec.priority" in (
                    event.get("message") or ""
                ):
                    return str(event["message"])
            return None

        message = await eventually(reported, what="the disagreeing member reported")
        assert "the priority of its PodGroup mixed (1000)" in message, message
        assert not {"mixed-0", "mixed-1"} & set(bound(await pods(two_nodes.client)))
