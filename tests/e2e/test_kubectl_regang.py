"""Issue 22 items 1, 6, 7 and 8 with the real kubectl against the emulator and the operator.

- Volcano quorum (item 7): a Volcano Job's pods and PodGroup as Volcano's job controller builds them
  (volcano-sh/volcano pkg/controllers/job/job_controller_util.go createJobPod: pods `<job>-<task>-<index>`, annotation
  `scheduling.k8s.io/group-name` naming the PodGroup and `volcano.sh/task-spec` (annotation and label) naming the
  task; job_controller_actions.go createOrUpdatePodGroup: PodGroup `<job>-<uid>` with `minMember` = the job's
  minAvailable and `minTaskMember` = each task's minAvailable, its replicas when unset). Volcano's scheduler
  (pkg/scheduler/api/job_info.go CheckTaskReady / CheckTaskValid / CheckTaskPipelined) skips the per-task check
  when the job's minAvailable is below the sum of its tasks' minAvailable (TaskMinAvailableTotal): then any
  minAvailable pods of the job make it ready; otherwise every task needs its own minimum.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, eventually, get_podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = {"cpu": "8", "memory": "32Gi", "pods": "110"}
PAUSE = "registry.k8s.io/pause:3.9"


@pytest.fixture
async def two_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        yield cluster


def placed(objs: dict[str, dict[str, Any]], prefix: str) -> dict[str, str]:
    return {n: node for n, node in bound(objs).items() if n.startswith(prefix)}


# ------------------------------------------------------------------------------------------------ item 7: Volcano
def volcano_job(job: str, uid: str, min_available: int, tasks: dict[str, tuple[int, int, str]]) -> str:
    """A Volcano Job's PodGroup and pods; tasks: name -> (replicas, minAvailable, cpu per pod)."""
    group = f"{job}-{uid}"
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": group, "namespace": "default"},
            "spec": {
                "minMember": min_available,
                "minTaskMember": {task: minimum for task, (_, minimum, _) in tasks.items()},
                "queue": "default",
            },
        }
    ]
    for task, (replicas, _, cpu) in tasks.items():
        for index in range(replicas):
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{job}-{task}-{index}",
                        "namespace": "default",
                        "labels": {
                            "volcano.sh/job-name": job,
                            "volcano.sh/task-spec": task,
                            "volcano.sh/job-namespace": "default",
                            "volcano.sh/queue-name": "default",
                        },
                        "annotations": {
                            "volcano.sh/task-spec": task,
                            "scheduling.k8s.io/group-name": group,
                            "volcano.sh/job-name": job,
                            "volcano.sh/queue-name": "default",
                            "volcano.sh/job-version": "0",
                            "volcano.sh/template-uid": f"{job}-{task}",
                        },
                    },
                    "spec": {
                        "schedulerName": "gangsched",
                        "containers": [{"name": task, "image": PAUSE, "resources": {"requests": {"cpu": cpu}}}],
                    },
                }
            )
    return yaml.safe_dump_all(docs)


async def test_volcano_job_quorum_is_any_min_available_pods_when_tasks_ask_more(two_nodes: Cluster) -> None:
    """Item 7. Job `tf` (minAvailable 3; ps x1 that fits no node, worker x4 that fit; minTaskMember {ps: 1, worker:
    4}, sum 5 > 3): Volcano skips the per-task check, so the 4 workers bind and the ps waits. Job `st` (minAvailable
    4; ps x1 that fits no node, worker x3; minTaskMember {ps: 1, worker: 3}, sum 4 = minAvailable): Volcano enforces
    the ps's minimum, so nothing of it binds although its 3 workers fit, and its PodGroup names the role."""
    from tests.integration.volcano import CRD

    k = two_nodes.client
    await kubectl(two_nodes, "apply", "-f", "-", input=yaml.safe_dump(CRD))
    async with replica(two_nodes.kubeconfig):
        enforced = volcano_job("st", "5d1c", 4, {"ps": (1, 1, "9"), "worker": (3, 3, "2")})
        await kubectl(two_nodes, "apply", "-f", "-", input=enforced)

        async def st_waits() -> str | None:
            status = ((await get_podgroup(k, "st-5d1c")) or {}).get("status") or {}
            message = status.get("message") or ""
            return message if "ps" in message else None

        message = await eventually(st_waits, what="the job whose tasks' minimums Volcano enforces waits for its ps")
        assert "role ps" in message, message
        assert not placed(await pods(k), "st-"), "a job bound without the ps its minTaskMember requires"
        relaxed = volcano_job("tf", "8e2a", 3, {"ps": (1, 1, "9"), "worker": (4, 4, "2")})
        await kubectl(two_nodes, "apply", "-f", "-", input=relaxed)

        async def workers_bound() -> dict[str, str] | None:
            found = placed(await pods(k), "tf-")
            return found if len(found) == 4 else None

        found = await eventually(workers_bound, what="the 4 workers of a job of minAvailable 3 bound")
        assert sorted(found) == [f"tf-worker-{i}" for i in range(4)], found
        assert not placed(await pods(k), "st-"), "the enforced job bound partly"
