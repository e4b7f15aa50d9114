"""Several scheduler names with the real kubectl (issue 14 item 1).

- KubeRay hard-codes `schedulerName: scheduler-plugins-scheduler` and labels its pods `scheduling.x-k8s.io/pod-group`
  with a PodGroup of minMember = workers + 1 named after the RayCluster
  (ray-operator/controllers/ray/batchscheduler/scheduler-plugins/scheduler_plugins.go `createPodGroup`,
  `AddMetadataToPodFromRayCluster`): a replica configured with `schedulerNames: [gangsched,
  scheduler-plugins-scheduler]` gang-schedules them, all or nothing, from the same cache as its own pods.
- A PodGroup whose labelled pods use another scheduler (spec.schedulerName defaulted to default-scheduler by the
  apiserver, pkg/apis/core/v1/defaults.go) says so in its status and in one event, instead of "0 of 3 members
  present".
- Two replicas serving different names do not overwrite each other's PodGroup statuses (kube-scheduler ignores
  pods of names it has no profile for: pkg/scheduler/scheduler.go `frameworkForPod`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, events_for, eventually, get_podgroup, on_replica, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = {"cpu": "8", "memory": "32Gi", "pods": "110"}
KUBERAY = "scheduler-plugins-scheduler"
LABEL = "scheduling.x-k8s.io/pod-group"


@pytest.fixture
async def two_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        yield cluster


def ray_cluster(name: str, workers: int, *, cpu: str, scheduler: str | None = KUBERAY) -> str:
    """A PodGroup and pods as KubeRay's scheduler-plugins integration builds them (head + workers)."""
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": workers + 1},
        }
    ]
    for i in range(workers + 1):
        spec: dict[str, Any] = {
            "containers": [{"name": "ray", "image": "rayproject/ray:2.9.0", "resources": {"requests": {"cpu": cpu}}}]
        }
        if scheduler is not None:
            spec["schedulerName"] = scheduler
        kind = "head" if i == 0 else "worker"
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-{kind}-{i}",
                    "namespace": "default",
                    "labels": {LABEL: name, "ray.io/node-type": kind},
                },
                "spec": spec,
            }
        )
    return yaml.safe_dump_all(docs)


async def test_kuberay_pods_are_gang_scheduled_by_a_replica_serving_their_name(two_nodes: Cluster) -> None:
    k = two_nodes.client
    async with replica(two_nodes.kubeconfig, schedulerNames=["gangsched", KUBERAY]):
        await kubectl(two_nodes, "apply", "-f", "-", input=ray_cluster("fits", 2, cpu="4"))
        await kubectl(two_nodes, "apply", "-f", "-", input=ray_cluster("toobig", 2, cpu="6"))

        async def fits_bound() -> dict[str, str] | None:
            placed = {n: node for n, node in bound(await pods(k)).items() if n.startswith("fits-")}
            return placed if len(placed) == 3 else None

        await eventually(fits_bound, what="the fitting RayCluster bound whole")

        async def toobig_waits() -> str | None:
            pg = await get_podgroup(k, "toobig")
            message = ((pg or {}).get("status") or {}).get("message") or ""
            return message if "toobig" not in str(bound(await pods(k))) and message else None

        message = await eventually(toobig_waits, what="the RayCluster that cannot fit waits with a message")
        assert not [n for n in bound(await pods(k)) if n.startswith("toobig-")], "a partial RayCluster started"
        assert "reference this PodGroup" not in message, message
        table = await kubectl(two_nodes, "get", "podgroups.scheduling.x-k8s.io", "fits")
        assert "Running" in table or "Scheduled" in table, table


async def test_podgroup_whose_pods_use_another_scheduler_says_so(two_nodes: Cluster) -> None:
    k = two_nodes.client
    async with replica(two_nodes.kubeconfig):
        await kubectl(two_nodes, "apply", "-f", "-", input=ray_cluster("elsewhere", 2, cpu="1", scheduler=None))
        expected = "3 pods reference this PodGroup with schedulerName default-scheduler"

        async def said() -> str | None:
            out = await kubectl(
                two_nodes, "get", "podgroups.scheduling.x-k8s.io", "elsewhere", "-o", "jsonpath={.status.message}"
            )
            return out if expected in out else None

        await eventually(said, what="the PodGroup's message naming the other scheduler")
        condition = await kubectl(
            two_nodes,
            "get",
            "podgroups.scheduling.x-k8s.io",
            "elsewhere",
            "-o",
            "jsonpath={.status.conditions[?(@.type=='Scheduled')].message}",
        )
        assert expected in condition and condition.startswith("0 members present (minMember 3)"), condition

        async def one_event() -> list[dict[str, Any]] | None:
            found = [e for e in await events_for(k, "elsewhere") if e["reason"] == "ForeignSchedulerName"]
            return found or None

        events = await eventually(one_event, what="the ForeignSchedulerName event")
        assert len(events) == 1 and events[0].get("count", 1) == 1, events
        assert events[0]["message"] == (
            "pods with schedulerName default-scheduler reference this PodGroup: not gang-scheduled here "
            "(this scheduler serves schedulerName gangsched)"
        ), events


async def test_two_replicas_serving_different_names_keep_to_their_podgroups(two_nodes: Cluster) -> None:
    k = two_nodes.client
    async with (
        replica(two_nodes.kubeconfig, identity="serves-gangsched") as ours,
        replica(two_nodes.kubeconfig, identity="serves-kuberay", schedulerNames=[KUBERAY]),
    ):
        await kubectl(two_nodes, "apply", "-f", "-", input=ray_cluster("ray", 1, cpu="1"))

        async def running() -> bool:
            pg = await get_podgroup(k, "ray")
            return ((pg or {}).get("status") or {}).get("phase") == "Running"

        await eventually(running, what="the KubeRay PodGroup Running (its replica's status)")

        def saw_running() -> bool:  # the other replica saw that status and has nothing left to write
            pg = ours.cache.podgroup("default/ray")
            return pg is not None and pg.phase == "Running" and not ours.cache.dirty_gangs

        async def ours_caught_up() -> bool:
            return on_replica(ours, saw_running)

        await eventually(ours_caught_up, what="the gangsched replica saw the Running status")
        status = ((await get_podgroup(k, "ray")) or {}).get("status") or {}
        assert status.get("phase") == "Running" and status.get("running") == 2, status
        assert "reference this PodGroup" not in (status.get("message") or ""), status
