"""Workload objects and their pods, built the way each controller's source builds them (no controller runs here:
the tests create what the controller would). Shared by the unit, integration and e2e tests of inferred gangs.

Sources (the files that set each label, annotation and ownerReference):
- Indexed Job: kubernetes pkg/controller/job/indexed_job_utils.go (`addCompletionIndexAnnotation`,
  `addCompletionIndexLabel`: `batch.kubernetes.io/job-completion-index`; pod name `<job>-<index>-<suffix>`),
  pkg/controller/job/job_controller.go (the pods' controller ownerReference: `metav1.NewControllerRef(job, ...)`).
- JobSet: kubernetes-sigs/jobset pkg/controllers/jobset_controller.go (`labelAndAnnotateObject`: `jobset-name`,
  `replicatedjob-name`, `replicatedjob-replicas`, `job-index`, `job-global-index`, `job-key` on the Job and its pod
  template; Jobs named `<jobset>-<replicatedjob>-<index>`, owned by the JobSet).
- LeaderWorkerSet: kubernetes-sigs/lws pkg/webhooks/pod_webhook.go (labels `leaderworkerset.sigs.k8s.io/name`,
  `group-index`, `worker-index`, `group-key`; annotation `leaderworkerset.sigs.k8s.io/size`; leader `<lws>-<group>`,
  workers `<lws>-<group>-<worker>`, owned by StatefulSets: pkg/controllers/leaderworkerset_controller.go,
  pod_controller.go).
- PyTorchJob: kubeflow/training-operator pkg/controller.v1/common/pod.go (`createNewPod`: labels
  `training.kubeflow.org/job-name`, `operator-name`, `replica-type` (lowercase), `replica-index`, `job-role: master`;
  controller ownerReference the PyTorchJob).
- MPIJob: kubeflow/mpi-operator pkg/controller/mpi_job_controller.go (`newWorker`: pods `<job>-worker-<i>` owned by
  the MPIJob; `newLauncherJob`: the launcher a batch/v1 Job `<job>-launcher` owned by the MPIJob, its pod named by
  the Job controller; `defaultLabels`: `training.kubeflow.org/operator-name`, `job-name`, `job-role`
  launcher/worker, no replica type; `replica-index` on workers only).
- TrainJob: kubeflow/trainer pkg/runtime/framework/plugins/jobset/jobset.go (a JobSet named after the TrainJob,
  owned by it).
- RayCluster: ray-project/kuberay ray-operator/controllers/ray/common/pod.go (labels `ray.io/cluster`,
  `ray.io/node-type` head/worker, `ray.io/group`), raycluster_controller.go (pods owned by the RayCluster).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

GANGSCHED = "gangsched"


def uid() -> str:
    return str(uuid.uuid4())


def _owner(api_version: str, kind: str, name: str, owner_uid: str) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": owner_uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _pod(
    name: str,
    *,
    labels: dict[str, str],
    annotations: dict[str, str] | None = None,
    owner: dict[str, Any] | None = None,
    cpu: str = "1",
    namespace: str = "default",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations or {}}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "schedulerName": GANGSCHED,
            "containers": [
                {"name": "main", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": {"cpu": cpu}}}
            ],
        },
    }


def _template(parallelism: int, completions: int) -> dict[str, Any]:
    return {
        "completionMode": "Indexed",
        "parallelism": parallelism,
        "completions": completions,
        "template": {"spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}]}},
    }


# ------------------------------------------------------------------------------------------- Indexed Job
def indexed_job(
    name: str, *, parallelism: int, completions: int, job_uid: str = "", ns: str = "default"
) -> dict[str, Any]:
    job_uid = job_uid or uid()
    spec = _template(parallelism, completions)
    spec["template"]["spec"]["restartPolicy"] = "Never"
    spec["template"]["spec"]["schedulerName"] = GANGSCHED
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "uid": job_uid},
        "spec": spec,
    }


def job_pods(job: dict[str, Any], count: int, *, cpu: str = "1") -> list[dict[str, Any]]:
    name, job_uid = job["metadata"]["name"], job["metadata"].get("uid", "")
    ns = job["metadata"].get("namespace", "default")
    owner = _owner("batch/v1", "Job", name, job_uid)
    return [
        _pod(
            f"{name}-{i}-x{i}",
            labels={"batch.kubernetes.io/job-completion-index": str(i), "job-name": name},
            annotations={"batch.kubernetes.io/job-completion-index": str(i)},
            owner=owner,
            cpu=cpu,
            namespace=ns,
        )
        for i in range(count)
    ]


# ------------------------------------------------------------------------------------------------ JobSet
def jobset(name: str, replicated: list[tuple[str, int, int]], *, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    """replicated: (name, replicas, parallelism) per replicated job (completions = parallelism)."""
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": uid()}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": meta,
        "spec": {
            "replicatedJobs": [
                {"name": rj, "replicas": replicas, "template": {"spec": _template(par, par)}}
                for rj, replicas, par in replicated
            ]
        },
    }


def jobset_pods(js: dict[str, Any], *, cpu: str = "1", suffix: str = "x") -> list[dict[str, Any]]:
    """The pods in rank order; `suffix` stands for the Job controller's random name suffix (new per restart)."""
    name = js["metadata"]["name"]
    out = []
    global_index = 0
    for rj in js["spec"]["replicatedJobs"]:
        for j in range(rj["replicas"]):
            job = f"{name}-{rj['name']}-{j}"
            owner = _owner("batch/v1", "Job", job, uid())
            for c in range(rj["template"]["spec"]["parallelism"]):
                labels = {
                    "jobset.sigs.k8s.io/jobset-name": name,
                    "jobset.sigs.k8s.io/replicatedjob-name": rj["name"],
                    "jobset.sigs.k8s.io/replicatedjob-replicas": str(rj["replicas"]),
                    "jobset.sigs.k8s.io/job-index": str(j),
                    "jobset.sigs.k8s.io/job-global-index": str(global_index),
                    "jobset.sigs.k8s.io/job-key": f"k{global_index}",
                    "batch.kubernetes.io/job-completion-index": str(c),
                }
                out.append(_pod(f"{job}-{c}-{suffix}", labels=labels, annotations=dict(labels), owner=owner, cpu=cpu))
            global_index += 1
    return out


def trainjob(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "default", "uid": uid()},
        "spec": {"runtimeRef": {"name": "torch-distributed"}},
    }


def trainjob_jobset(tj: dict[str, Any], replicated: list[tuple[str, int, int]]) -> dict[str, Any]:
    meta = tj["metadata"]
    return jobset(meta["name"], replicated, owner=_owner(tj["apiVersion"], "TrainJob", meta["name"], meta["uid"]))


# ------------------------------------------------------------------------------------------ LeaderWorkerSet
def lws(name: str, *, replicas: int, size: int) -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "namespace": "default", "uid": uid()},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": size,
                "workerTemplate": {"spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}]}},
            },
        },
    }


def lws_group_pods(obj: dict[str, Any], group: int, *, cpu: str = "1") -> list[dict[str, Any]]:
    name = obj["metadata"]["name"]
    size = obj["spec"]["leaderWorkerTemplate"]["size"]
    out = []
    for w in range(size):
        pod_name = f"{name}-{group}" if w == 0 else f"{name}-{group}-{w}"
        sts = f"{name}" if w == 0 else f"{name}-{group}"
        labels = {
            "leaderworkerset.sigs.k8s.io/name": name,
            "leaderworkerset.sigs.k8s.io/group-index": str(group),
            "leaderworkerset.sigs.k8s.io/worker-index": str(w),
            "leaderworkerset.sigs.k8s.io/group-key": f"key{group}",
        }
        annotations = {"leaderworkerset.sigs.k8s.io/size": str(size)}
        if w:
            annotations["leaderworkerset.sigs.k8s.io/leader-name"] = f"{name}-{group}"
        owner = _owner("apps/v1", "StatefulSet", sts, uid())
        out.append(_pod(pod_name, labels=labels, annotations=annotations, owner=owner, cpu=cpu))
    return out


# ------------------------------------------------------------------------------------------------ Kubeflow
def pytorchjob(name: str, *, workers: int) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "default", "uid": uid()},
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": workers}}},
    }


def pytorch_pods(job: dict[str, Any], *, cpu: str = "1") -> list[dict[str, Any]]:
    meta = job["metadata"]
    owner = _owner("kubeflow.org/v1", "PyTorchJob", meta["name"], meta["uid"])
    out = []
    for rtype, spec in job["spec"]["pytorchReplicaSpecs"].items():
        for i in range(spec["replicas"]):
            labels = {
                "training.kubeflow.org/job-name": meta["name"],
                "training.kubeflow.org/operator-name": "pytorchjob-controller",
                "training.kubeflow.org/replica-type": rtype.lower(),
                "training.kubeflow.org/replica-index": str(i),
            }
            if rtype == "Master":
                labels["training.kubeflow.org/job-role"] = "master"
            out.append(_pod(f"{meta['name']}-{rtype.lower()}-{i}", labels=labels, owner=owner, cpu=cpu))
    return out


def mpijob(name: str, *, workers: int) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": "default", "uid": uid()},
        "spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1}, "Worker": {"replicas": workers}}},
    }


def mpi_pods(job: dict[str, Any], *, cpu: str = "1", suffix: str = "x") -> list[dict[str, Any]]:
    """The launcher (its Job's pod, `suffix` the Job controller's random one), then the workers."""
    meta = job["metadata"]
    base = {"training.kubeflow.org/job-name": meta["name"], "training.kubeflow.org/operator-name": "mpi-operator"}
    launcher_job = _owner("batch/v1", "Job", f"{meta['name']}-launcher", uid())
    launcher_labels = {**base, "training.kubeflow.org/job-role": "launcher", "job-name": f"{meta['name']}-launcher"}
    out = [_pod(f"{meta['name']}-launcher-{suffix}", labels=launcher_labels, owner=launcher_job, cpu=cpu)]
    owner = _owner("kubeflow.org/v2beta1", "MPIJob", meta["name"], meta["uid"])
    for i in range(job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]):
        labels = {**base, "training.kubeflow.org/job-role": "worker", "training.kubeflow.org/replica-index": str(i)}
        out.append(_pod(f"{meta['name']}-worker-{i}", labels=labels, owner=owner, cpu=cpu))
    return out


# ---------------------------------------------------------------------------------------------- RayCluster
def raycluster(name: str, *, workers: int, hosts: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": "default", "uid": uid()},
        "spec": {
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}}},
            "workerGroupSpecs": [{"groupName": "gpu", "replicas": workers, "numOfHosts": hosts, "minReplicas": 0}],
        },
    }


def ray_pods(rc: dict[str, Any], *, cpu: str = "1") -> list[dict[str, Any]]:
    meta = rc["metadata"]
    owner = _owner("ray.io/v1", "RayCluster", meta["name"], meta["uid"])
    head = {"ray.io/cluster": meta["name"], "ray.io/node-type": "head", "ray.io/group": "headgroup"}
    out = [_pod(f"{meta['name']}-head-x", labels=head, owner=owner, cpu=cpu)]
    group = rc["spec"]["workerGroupSpecs"][0]
    for i in range(group["replicas"] * group["numOfHosts"]):
        labels = {"ray.io/cluster": meta["name"], "ray.io/node-type": "worker", "ray.io/group": group["groupName"]}
        out.append(_pod(f"{meta['name']}-worker-gpu-{i}", labels=labels, owner=owner, cpu=cpu))
    return out


# ------------------------------------------------------------------------ the objects between workload and pods
Create = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def _between(kind: str, name: str, parent: dict[str, Any] | None) -> dict[str, Any]:
    """A Job or StatefulSet as the workload's controller creates it between itself and the pods (the emulator's
    garbage collector, like kube-controller-manager's, deletes pods whose owner does not exist)."""
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if parent is not None:
        pm = parent["metadata"]
        meta["ownerReferences"] = [_owner(parent["apiVersion"], parent["kind"], pm["name"], pm["uid"])]
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}],
    }
    template = {"metadata": {"labels": {"app": name}}, "spec": pod_spec}
    if kind == "Job":
        spec: dict[str, Any] = {"completionMode": "Indexed", "completions": 1, "parallelism": 1, "template": template}
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}
    pod_spec["restartPolicy"] = "Always"
    spec = {"replicas": 0, "serviceName": name, "selector": {"matchLabels": {"app": name}}, "template": template}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta, "spec": spec}


async def materialize(
    create: Create,
    pods: list[dict[str, Any]],
    parent: dict[str, Any] | None,
    made: dict[tuple[str, str], str] | None = None,
) -> None:
    """Create the Jobs / StatefulSets the pods' controller ownerReferences name (owned by `parent`, the workload) and
    point the pods at the uids the apiserver gave them. `made` ((kind, name) -> uid) carries the objects created by an
    earlier call, so the pods of a restart point at the same Jobs / StatefulSets."""
    made = {} if made is None else made
    for pod in pods:
        for ref in pod["metadata"].get("ownerReferences") or []:
            if ref["kind"] not in ("Job", "StatefulSet") or ref["uid"] == (parent or {}).get("metadata", {}).get("uid"):
                continue  # (an Indexed Job's pods: the Job is the workload itself)
            key = (ref["kind"], ref["name"])
            if key not in made:
                made[key] = (await create(_between(ref["kind"], ref["name"], parent)))["metadata"]["uid"]
            ref["uid"] = made[key]
