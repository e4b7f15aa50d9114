"""Re-ganged pods, stale status after a deletion, JobSet exclusive placement with an inferred gang and Volcano quorum,
with the real kubectl against the emulator and the operator (issue 22 items 1, 6, 7 and 8).

- A re-ganged pod (item 1): a pod's gang is what its labels and annotations say now. kube-scheduler's cache and
  Koordinator's gang cache (koordinator pkg/scheduler/plugins/coscheduling/core/gang_cache.go onPodUpdate: the pod
  is deleted from the gang it was in and added to the one it names now) follow an update of them; a pod that
  leaves a gang while it waits in Permit is unreserved from it (pkg/scheduler/framework/interface.go
  ReservePlugin.Unreserve: the capacity it held goes back), and is then scheduled as a member of its new gang. A
  bound pod is never moved by a scheduler: it stays where it runs, counted in the gang it names now, and the gang
  it left reports its members below minMember (nothing evicted).

- Stale status after a deletion (item 6): every pods/binding answered 5 s late (the emulator's latency fault, a
  loaded apiserver) and no kubelet, so no later event comes; a member deleted while its binding is in flight. The
  PodGroup status counts the members there are (scheduler-plugins pkg/controllers/podgroup_controller.go derives it
  from the pods listed on every reconcile, a pod delete included): the status round after the deletion says so,
  not the binding decision's "3 members bound or binding".
- JobSet exclusive placement with an inferred gang (item 8): the JobSet, its Jobs and pods as tests/workloads.py
  builds them (jobset pkg/controllers/jobset_controller.go labelAndAnnotateObject copies
  `alpha.jobset.sigs.k8s.io/exclusive-topology` to every pod), and jobset's pod webhooks played as their sources act
  (the emulator runs neither): pod_mutating_webhook.go gives a leader (completion index 0) the exclusive pod
  affinity and anti-affinity (setExclusiveAffinities) and a follower its leader's domain as a nodeSelector
  (setNodeSelector); pod_admission_webhook.go refuses a follower until its leader is scheduled
  (spec.nodeName set), and the Job controller (kubernetes pkg/controller/job/job_controller.go manageJob) creates
  it again on its next sync. The inferred quorum is the leaders; the followers join as late members.
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
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.sim.faults import parse_rule_spec
from gangsched.sim.serve import Cluster, running_cluster
from tests import workloads as w
from tests.e2e.kubectl_run import kubectl
from tests.integration.harness import bound, eventually, get_podgroup, pod, podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = {"cpu": "8", "memory": "32Gi", "pods": "110"}
PAUSE = "registry.k8s.io/pause:3.9"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def two_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        yield cluster


GPU_NODE = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}
K = "gang.scheduling.koordinator.sh/"


@pytest.fixture
async def four_gpu_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=4, node_resources=GPU_NODE) as cluster:
        yield cluster


async def status_of(cluster: Cluster, name: str) -> dict[str, Any]:
    return ((await get_podgroup(cluster.client, name)) or {}).get("status") or {}


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


# --------------------------------------------------------------------------------------------- item 1: re-ganged
async def test_pending_pod_moved_to_another_gang_leaves_its_reservation_and_schedules(
    four_gpu_nodes: Cluster,
) -> None:
    """Item 1: two of four nodes taken by another scheduler's pods; gang e (3 x 8 GPU, min 3, NonStrict) holds two
    reservations. `kubectl annotate pod e-0 --overwrite` into gang solo (min 1, Strict): e-0 leaves e at once (its
    reservation released, e's counts say 2 pods) and binds as solo's member, long before e's waiting time ends."""
    cluster, k = four_gpu_nodes, four_gpu_nodes.client
    nodes = sorted((await k.get("/api/v1/nodes"))["items"], key=lambda n: n["metadata"]["name"])
    others = []
    for i, node in enumerate(nodes[:2]):
        other = pod(f"other-{i}", gpu=8, scheduler="default-scheduler")
        other["spec"]["nodeName"] = node["metadata"]["name"]
        others.append(other)
    koord = {f"{K}name": "e", f"{K}min-available": "3", f"{K}mode": "NonStrict", f"{K}waiting-time": "120s"}
    gang = [pod(f"e-{i}", gpu=8, annotations=koord) for i in range(3)]
    await kubectl(cluster, "apply", "-f", "-", input=yaml.safe_dump_all(others))
    async with replica(cluster.kubeconfig):
        await kubectl(cluster, "apply", "-f", "-", input=yaml.safe_dump_all(gang))

        async def e_holds_two() -> dict[str, Any] | None:
            status = await status_of(cluster, "e")
            return status if status.get("phase") == "Scheduling" else None

        await eventually(e_holds_two, what="gang e holding its two reservations")
        await kubectl(
            cluster, "annotate", "pod", "e-0", "--overwrite",
            f"{K}name=solo", f"{K}min-available=1", f"{K}mode=Strict",
        )  # fmt: skip

        async def solo_bound() -> dict[str, str] | None:
            found = placed(await pods(k), "e-0")
            return found or None

        found = await eventually(solo_bound, timeout=15, what="e-0 bound as the member of gang solo")
        assert found["e-0"] not in {n["metadata"]["name"] for n in nodes[:2]}, found

        async def e_counts_two() -> str | None:
            message = str((await status_of(cluster, "e")).get("message") or "")
            return message if "2 of minMember 3" in message else None

        await eventually(e_counts_two, what="gang e's status counting the two pods it has left")
        assert not placed(await pods(k), "e-1") and not placed(await pods(k), "e-2")

        async def solo_running() -> dict[str, Any] | None:
            status = await status_of(cluster, "solo")
            return status if status.get("phase") == "Running" else None

        await eventually(solo_running, what="gang solo Running")


async def test_bound_pod_moved_to_another_gang_stays_and_counts_there(four_gpu_nodes: Cluster) -> None:
    """Item 1: b-0, bound in gang b (min 2), is relabelled `scheduling.x-k8s.io/pod-group=single` (min 1): it stays
    on its node (no eviction, no deletion), PodGroup single counts it (Running), and PodGroup b reports that it is
    below minMember."""
    cluster, k = four_gpu_nodes, four_gpu_nodes.client
    objs = [podgroup("b", min_member=2), podgroup("single", min_member=1)]
    objs += [pod(f"b-{i}", group="b", gpu=8) for i in range(2)]
    async with replica(cluster.kubeconfig):
        await kubectl(cluster, "apply", "-f", "-", input=yaml.safe_dump_all(objs))

        async def b_running() -> dict[str, Any] | None:
            status = await status_of(cluster, "b")
            return status if status.get("phase") == "Running" else None

        await eventually(b_running, what="gang b Running")
        node = placed(await pods(k), "b-0")["b-0"]
        await kubectl(cluster, "label", "pod", "b-0", "--overwrite", "scheduling.x-k8s.io/pod-group=single")

        async def single_running() -> dict[str, Any] | None:
            status = await status_of(cluster, "single")
            return status if status.get("phase") == "Running" and status.get("running") == 1 else None

        await eventually(single_running, what="PodGroup single counting the pod that joined it bound")

        async def b_below() -> dict[str, Any] | None:
            status = await status_of(cluster, "b")
            return status if status.get("running") == 1 and status.get("phase") != "Running" else None

        status = await eventually(b_below, what="PodGroup b reporting the member it lost")
        assert "minMember 2" in str(status.get("message")), status
        now = await pods(k)
        assert now["b-0"]["spec"].get("nodeName") == node and not now["b-0"]["metadata"].get("deletionTimestamp")
        assert now["b-1"]["spec"].get("nodeName") and not now["b-1"]["metadata"].get("deletionTimestamp")


# ---------------------------------------------------------------------------------- item 6: stale after deletion
@pytest.fixture
async def slow_binds() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    rule = parse_rule_spec("kind=latency,verb=create,resource=pods/binding,delay=5")
    async with running_cluster(nodes=4, node_resources=GPU_NODE, kubelet_start_delay=3600, faults=[rule]) as cluster:
        yield cluster


async def test_status_after_member_deleted_while_binding_counts_the_pods_left(slow_binds: Cluster) -> None:
    """Item 6: gang g (3 x 8 GPU, min 3) decided and binding; g-2 force-deleted while its binding is in flight.
    Within a few seconds of the binds' answers the PodGroup counts 2 members bound, not "3 members bound or
    binding", with no unrelated event to help."""
    cluster = slow_binds
    objs = [podgroup("g", min_member=3), *(pod(f"g-{i}", group="g", gpu=8) for i in range(3))]
    async with replica(cluster.kubeconfig):
        await kubectl(cluster, "apply", "-f", "-", input=yaml.safe_dump_all(objs))

        async def binding() -> str | None:
            message = str((await status_of(cluster, "g")).get("message") or "")
            return message if "3 members bound or binding" in message else None

        await eventually(binding, what="gang g binding")
        await kubectl(cluster, "delete", "pod", "g-2", "--grace-period=0", "--force", "--wait")

        async def counted() -> dict[str, Any] | None:
            status = await status_of(cluster, "g")
            stale = "3 members" in str(status.get("message")) or "3 members" in str(status.get("conditions"))
            return status if status.get("scheduled") == 2 and not stale else None

        status = await eventually(counted, timeout=15, what="PodGroup g counting the 2 members left")
        assert "minMember 3" in str(status.get("message")), status
        assert len(placed(await pods(cluster.client), "g-")) == 2


# ------------------------------------------------------------------------------ item 8: JobSet exclusive placement
EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
JOB_KEY = "jobset.sigs.k8s.io/job-key"
PRIORITY = "jobset.sigs.k8s.io/priority"
INDEX = "batch.kubernetes.io/job-completion-index"
POOL = "example.com/pool"


def _term(expressions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"labelSelector": {"matchExpressions": expressions}, "topologyKey": POOL, "namespaceSelector": {}}


def mutated(member: dict[str, Any], pool_of_leader: str | None) -> dict[str, Any]:
    """What jobset's mutating webhook makes of a pod (pod_mutating_webhook.go Default; the Priority admission
    plugin, which runs before webhooks, set spec.priority 0, so the priority label is "0")."""
    meta = member["metadata"]
    meta["labels"][PRIORITY] = "0"
    key = meta["labels"][JOB_KEY]
    if meta["annotations"][INDEX] == "0":  # setExclusiveAffinities
        member["spec"]["affinity"] = {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    _term([{"key": JOB_KEY, "operator": "In", "values": [key]}])
                ]
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    _term(
                        [
                            {"key": JOB_KEY, "operator": "Exists"},
                            {"key": JOB_KEY, "operator": "NotIn", "values": [key]},
                            {"key": PRIORITY, "operator": "In", "values": ["0"]},
                        ]
                    )
                ]
            },
        }
    else:  # setNodeSelector
        assert pool_of_leader is not None
        member["spec"]["nodeSelector"] = {POOL: pool_of_leader}
    return member


async def test_jobset_exclusive_placement_inferred_quorum_is_the_leaders() -> None:
    """Item 8: JobSet ex (exclusive-topology on a node-pool label; 2 Jobs x 4 pods x 2 cpu; two pools of two 4-cpu
    nodes): the inferred gang's quorum is the 2 leaders, bound in different pools (the anti-affinity); each Job's
    followers, admitted once their leader is scheduled, join it in its pool. Before: "2 of minMember 8 pods exist"
    forever."""
    need_tool("kubectl")
    async with running_cluster(nodes=4, node_resources={"cpu": "4", "memory": "32Gi", "pods": "110"}) as cluster:
        k = cluster.client
        await kubectl(cluster, "apply", "-f", str(ROOT / "tests" / "data" / "workload-crds.yaml"))
        await kubectl(cluster, "apply", "-f", str(ROOT / "manifests" / "rbac-infer-gangs.yaml"))
        for i in range(4):
            await kubectl(cluster, "label", "node", f"node-{i}", f"{POOL}={'ab'[i // 2]}")
        js = w.jobset("ex", [("workers", 2, 4)])
        js["metadata"]["annotations"] = {EXCLUSIVE: POOL}
        created = await _create(cluster, js)
        members = w.jobset_pods(created, cpu="2")
        for member in members:
            member["metadata"]["annotations"][EXCLUSIVE] = POOL  # jobset_controller.go labelAndAnnotateObject
        await w.materialize(
            lambda obj: _create(cluster, obj), members, created
        )  # the Jobs the pods' ownerReferences name
        leaders = [m for m in members if m["metadata"]["annotations"][INDEX] == "0"]
        followers = [m for m in members if m["metadata"]["annotations"][INDEX] != "0"]
        async with replica(cluster.kubeconfig, inferGangs={"enabled": True, "allNamespaces": True}):
            leader_yaml = yaml.safe_dump_all([mutated(m, None) for m in leaders])
            await kubectl(cluster, "apply", "-f", "-", input=leader_yaml)
            admitted: set[str] = set()

            async def job_controller_sync() -> bool:
                """Each follower not created yet is created again; jobset's webhooks admit it once its leader is
                scheduled (the leader of the same Job: same job-key)."""
                now = await pods(k)
                for follower in followers:
                    name = follower["metadata"]["name"]
                    if name in admitted:
                        continue
                    key = follower["metadata"]["labels"][JOB_KEY]
                    (leader,) = [m for m in leaders if m["metadata"]["labels"][JOB_KEY] == key]
                    node = now[leader["metadata"]["name"]]["spec"].get("nodeName")
                    if not node:
                        continue  # "leader pod not yet scheduled, not creating follower pod" (the webhook's 403)
                    labels = (await k.get(f"/api/v1/nodes/{node}"))["metadata"]["labels"]
                    pod_yaml = yaml.safe_dump(mutated(follower, labels[POOL]))
                    await kubectl(cluster, "apply", "-f", "-", input=pod_yaml)
                    admitted.add(name)
                return len(admitted) == len(followers)

            await eventually(job_controller_sync, timeout=30, what="every follower admitted after its leader")

            async def all_bound() -> dict[str, str] | None:
                found = placed(await pods(k), "ex-")
                return found if len(found) == len(members) else None

            found = await eventually(all_bound, timeout=30, what="the whole JobSet bound")
            pool = {n: "ab"[int(node.rsplit("-", 1)[1]) // 2] for n, node in found.items()}
            by_job = {
                key: {pool[m["metadata"]["name"]] for m in members if m["metadata"]["labels"][JOB_KEY] == key}
                for key in {m["metadata"]["labels"][JOB_KEY] for m in members}
            }
            assert sorted(by_job.values(), key=sorted) == [{"a"}, {"b"}], by_job  # one pool per Job, exclusively
            pg = await get_podgroup(k, "ex")
            assert pg is not None and pg["spec"]["minMember"] == 2, pg


async def _create(cluster: Cluster, obj: dict[str, Any]) -> dict[str, Any]:
    body = {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "uid"}}
    created: dict[str, Any] = yaml.safe_load(
        await kubectl(cluster, "create", "-f", "-", "-o", "yaml", input=yaml.safe_dump(body))
    )
    return created
