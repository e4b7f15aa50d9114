"""Gangs inferred from the owning workload: which workload a pod belongs to, and the gang that workload makes.

Contract (pure: the runtime reads the workload objects, state/inferred.py keeps them):
- `infer_member(pod) -> InferredMember | None`: the workload a pod belongs to, from its controller's labels and
  ownerReferences (LeaderWorkerSet, JobSet / TrainJob, PyTorchJob / MPIJob, RayCluster, Indexed Job), naming the
  gang, the member's role and, for an LWS, the gang's size; None for any other pod.
- `workload_info(ref, obj) -> WorkloadInfo | None`: from the workload object, the quorum (the pods started at
  once), totalMember, the roles' minimums and the PodGroup's owner; None when it makes no gang.
- `inferred_spec(namespace, name, info) -> GangSpec` (source "inferred").
Invalid values raise core.errors.InvalidField (key or field path, value, what is allowed).
More: docs/modules.md#modelsinferredpy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from gangsched.core import GangSpec, InvalidField
from gangsched.models.fields import INT32_MAX, decimal, shown

LWS_NAME: Final = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_INDEX: Final = "leaderworkerset.sigs.k8s.io/group-index"
LWS_SIZE: Final = "leaderworkerset.sigs.k8s.io/size"
JOBSET_NAME: Final = "jobset.sigs.k8s.io/jobset-name"
JOBSET_REPLICATED_JOB: Final = "jobset.sigs.k8s.io/replicatedjob-name"
JOBSET_EXCLUSIVE: Final = "alpha.jobset.sigs.k8s.io/exclusive-topology"  # jobset api ExclusiveKey
JOBSET_NODE_SELECTOR_STRATEGY: Final = "alpha.jobset.sigs.k8s.io/node-selector"  # jobset api NodeSelectorStrategyKey
KUBEFLOW_JOB_NAME: Final = "training.kubeflow.org/job-name"
KUBEFLOW_REPLICA_TYPE: Final = "training.kubeflow.org/replica-type"
KUBEFLOW_JOB_ROLE: Final = "training.kubeflow.org/job-role"  # mpi-operator v2 `defaultLabels`: launcher / worker
RAY_CLUSTER: Final = "ray.io/cluster"
RAY_NODE_TYPE: Final = "ray.io/node-type"
JOB_COMPLETION_INDEX: Final = "batch.kubernetes.io/job-completion-index"

_EMPTY: Mapping[str, Any] = {}
_ALLOWED_COUNT = f"must be a non-negative integer <= {INT32_MAX}"


class WorkloadRef(NamedTuple):
    """A workload object: what to read from the API; `uid` is known when it is the pod's direct owner."""

    api_version: str
    kind: str
    plural: str
    namespace: str
    name: str
    uid: str = ""

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    @property
    def path(self) -> str:
        group, _, version = self.api_version.rpartition("/")
        base = f"/apis/{group}/{version}" if group else f"/api/{version}"
        return f"{base}/namespaces/{self.namespace}/{self.plural}/{self.name}"


@dataclass(frozen=True, slots=True)
class OwnerRef:
    """The owner of the PodGroup created for an inferred gang."""

    api_version: str
    kind: str
    name: str
    uid: str


class InferredMember(NamedTuple):
    gang: str  # the gang's name (in the pod's namespace)
    workload: WorkloadRef
    role: str | None = None
    size: int | None = None  # known from the pod alone (LeaderWorkerSet)


@dataclass(frozen=True, slots=True)
class WorkloadInfo:
    size: int  # the gang's quorum (minMember)
    roles: tuple[tuple[str, int], ...]  # minimum members per role, within the quorum
    owner: OwnerRef
    total: int = 0  # every pod the workload runs at once (totalMember); LWS: the group's size, 1 with LeaderReady


def _controller(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def _label(labels: Mapping[str, Any], key: str) -> str | None:
    value = labels.get(key)
    return value if isinstance(value, str) and value else None


def _count(value: Any, field: str, default: int) -> int:
    if value is None:
        return default
    return decimal(value, field=field, minimum=0, maximum=INT32_MAX, allowed=_ALLOWED_COUNT)


def _ref(api_version: str, kind: str, plural: str, ns: str, name: str, owner: Mapping[str, Any] | None) -> WorkloadRef:
    uid = str(owner.get("uid") or "") if owner is not None and owner.get("kind") == kind else ""
    return WorkloadRef(api_version, kind, plural, ns, name, uid)


def _lws(ns: str, labels: Mapping[str, Any], annotations: Mapping[str, Any], name: str) -> InferredMember:
    group = _label(labels, LWS_GROUP_INDEX)
    if group is None:
        raise InvalidField(f"metadata.labels[{LWS_GROUP_INDEX}]", "(not set)", "must be set on a LeaderWorkerSet pod")
    index = decimal(
        group, field=f"metadata.labels[{LWS_GROUP_INDEX}]", minimum=0, maximum=INT32_MAX, allowed=_ALLOWED_COUNT
    )
    raw_size = annotations.get(LWS_SIZE)
    size = decimal(
        raw_size if raw_size is not None else "",
        field=f"metadata.annotations[{LWS_SIZE}]",
        minimum=1,
        maximum=INT32_MAX,
        allowed=f"must be an integer from 1 to {INT32_MAX} (the group's size)",
    )
    ref = WorkloadRef("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "leaderworkersets", ns, name)
    return InferredMember(gang=f"{name}-{index}", workload=ref, size=size)


def _kubeflow(ns: str, labels: Mapping[str, Any], owner: Mapping[str, Any] | None, name: str) -> InferredMember | None:
    role = (_label(labels, KUBEFLOW_REPLICA_TYPE) or _label(labels, KUBEFLOW_JOB_ROLE) or "").lower() or None
    kind = owner.get("kind") if owner is not None else None
    if owner is not None and kind in ("PyTorchJob", "MPIJob"):
        api_version = str(owner.get("apiVersion") or "kubeflow.org/v1")
        ref = _ref(api_version, str(kind), f"{str(kind).lower()}s", ns, name, owner)
    elif kind == "Job" and role == "launcher":  # mpi-operator v2: the launcher runs as a Job the MPIJob owns
        ref = WorkloadRef("kubeflow.org/v2beta1", "MPIJob", "mpijobs", ns, name)
    else:
        return None
    return InferredMember(gang=name, workload=ref, role=role)


def infer_member(pod: Mapping[str, Any]) -> InferredMember | None:
    """The workload the pod belongs to (see the module docstring), or None."""
    meta = pod.get("metadata") or _EMPTY
    labels = meta.get("labels") or _EMPTY
    annotations = meta.get("annotations") or _EMPTY
    ns = meta.get("namespace") or "default"
    owner = _controller(meta)
    if (name := _label(labels, LWS_NAME)) is not None:
        return _lws(ns, labels, annotations, name)
    if (name := _label(labels, JOBSET_NAME)) is not None:
        ref = WorkloadRef("jobset.x-k8s.io/v1alpha2", "JobSet", "jobsets", ns, name)
        return InferredMember(gang=name, workload=ref, role=_label(labels, JOBSET_REPLICATED_JOB))
    if (name := _label(labels, KUBEFLOW_JOB_NAME)) is not None:
        return _kubeflow(ns, labels, owner, name)
    if (name := _label(labels, RAY_CLUSTER)) is not None:
        ref = _ref("ray.io/v1", "RayCluster", "rayclusters", ns, name, owner)
        return InferredMember(gang=name, workload=ref, role=(_label(labels, RAY_NODE_TYPE) or "").lower() or None)
    indexed = JOB_COMPLETION_INDEX in labels or JOB_COMPLETION_INDEX in annotations
    if indexed and owner is not None and owner.get("kind") == "Job" and str(owner.get("apiVersion")) == "batch/v1":
        job = str(owner.get("name") or "")
        return InferredMember(gang=job, workload=_ref("batch/v1", "Job", "jobs", ns, job, owner))
    return None


# ------------------------------------------------------------------------------------------------- workloads
Roles = tuple[tuple[str, int], ...]


def _mapping(value: Any, field: str) -> Mapping[str, Any]:
    if value is None:
        return _EMPTY
    if not isinstance(value, Mapping):
        raise InvalidField(field, shown(value), "must be an object")
    return value


def _list(value: Any, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidField(field, shown(value), "must be a list")
    return value


def _job_pods(job_spec: Mapping[str, Any], field: str) -> int:
    """Pods a Job runs at once: min(parallelism (default 1), completions (when set))."""
    parallelism = _count(job_spec.get("parallelism"), f"{field}.parallelism", 1)
    completions = job_spec.get("completions")
    return parallelism if completions is None else min(parallelism, _count(completions, f"{field}.completions", 1))


def _leader_first(annotations: Mapping[str, Any]) -> bool | None:
    """Whether these (JobSet or replicated job template) annotations ask for exclusive placement with its pod
    webhooks (True), for none (None), or for it by node selectors, all pods at once (False)."""
    if JOBSET_EXCLUSIVE not in annotations:
        return None
    return JOBSET_NODE_SELECTOR_STRATEGY not in annotations


def _jobset(spec: Mapping[str, Any], annotations: Mapping[str, Any]) -> tuple[int, int, Roles]:
    """(gang quorum, all pods, roles). The quorum counts only the pods the JobSet controller starts at once: with
    `startupPolicy.startupPolicyOrder: InOrder` the first replicated job, and never one that `dependsOn` another
    (jobset pkg/controllers/startup_policy.go, depends_on.go: those Jobs are created later; a gang waiting for them
    would never start: trainer's initializers). With exclusive placement (`alpha.jobset.sigs.k8s.io/
    exclusive-topology` on the JobSet or the replicated job's template, without the node-selector strategy) only each
    Job's leader (completion index 0): jobset's pod webhooks (pkg/webhooks/pod_admission_webhook.go,
    pod_mutating_webhook.go) refuse its followers until the leader is scheduled, then pin them to its domain; they
    join as late members."""
    in_order = _mapping(spec.get("startupPolicy"), "spec.startupPolicy").get("startupPolicyOrder") == "InOrder"
    first: list[tuple[str, int]] = []
    total = 0
    for i, raw in enumerate(_list(spec.get("replicatedJobs"), "spec.replicatedJobs")):
        rj = _mapping(raw, f"spec.replicatedJobs[{i}]")
        field = f"spec.replicatedJobs[{i}]"
        replicas = _count(rj.get("replicas"), f"{field}.replicas", 1)
        template = _mapping(rj.get("template"), f"{field}.template")
        job_spec = _mapping(template.get("spec"), f"{field}.template.spec")
        per_job = _job_pods(job_spec, f"{field}.template.spec")
        pods = replicas * per_job
        total += pods
        template_meta = _mapping(template.get("metadata"), f"{field}.template.metadata")
        own = _mapping(template_meta.get("annotations"), f"{field}.template.metadata.annotations")
        leaders = _leader_first(own) if JOBSET_EXCLUSIVE in own else _leader_first(annotations)
        if pods and not rj.get("dependsOn") and not (in_order and first):
            first.append((str(rj.get("name") or f"job-{i}"), replicas if leaders else pods))
    return sum(n for _, n in first), total, tuple(first)


def _replica_specs(spec: Mapping[str, Any], key: str) -> tuple[int, int, Roles]:
    roles = []
    for rtype, raw in sorted(_mapping(spec.get(key), f"spec.{key}").items()):
        replicas = _count(_mapping(raw, f"spec.{key}.{rtype}").get("replicas"), f"spec.{key}.{rtype}.replicas", 1)
        roles.append((str(rtype).lower(), replicas))
    size = sum(n for _, n in roles)
    return size, size, tuple((r, n) for r, n in roles if n)


def _raycluster(spec: Mapping[str, Any]) -> tuple[int, int, Roles]:
    """KAI Scheduler's rule (pkg/podgrouper/podgrouper/plugins/ray/ray_grouper.go `calcJobNumOfPodsAndSubGroups`,
    after KubeRay's own Volcano PodGroup): per worker group, minReplicas x numOfHosts when autoscaling or when
    minReplicas > 0, else replicas x numOfHosts; a suspended group counts nothing. All pods: replicas x hosts."""
    autoscaling = spec.get("enableInTreeAutoscaling") is True
    quorum = total = 0
    for i, raw in enumerate(_list(spec.get("workerGroupSpecs"), "spec.workerGroupSpecs")):
        group = _mapping(raw, f"spec.workerGroupSpecs[{i}]")
        field = f"spec.workerGroupSpecs[{i}]"
        if group.get("suspend") is True or group.get("suspended") is True:
            continue
        min_replicas = _count(group.get("minReplicas"), f"{field}.minReplicas", 0)
        replicas = _count(group.get("replicas"), f"{field}.replicas", min_replicas)
        hosts = _count(group.get("numOfHosts"), f"{field}.numOfHosts", 1)
        quorum += (min_replicas if autoscaling or min_replicas > 0 else replicas) * hosts
        total += max(replicas, min_replicas) * hosts
    roles: Roles = (("head", 1), ("worker", quorum)) if quorum else (("head", 1),)
    return 1 + quorum, 1 + total, roles


def _lws_group(spec: Mapping[str, Any]) -> tuple[int, int, Roles]:
    """LeaderReady: the LWS controller creates a group's workers once its leader is ready (lws
    pkg/controllers/pod_controller.go); a gang waiting for them would never start, so the quorum is the leader alone
    (KAI Scheduler's lws_grouper.go `calcLeaderReadyMinAvailable` while the leader is unscheduled); the workers then
    join as they come. LeaderCreated (the default): the whole group. The size itself is the pods' annotation."""
    template = _mapping(spec.get("leaderWorkerTemplate"), "spec.leaderWorkerTemplate")
    size = _count(template.get("size"), "spec.leaderWorkerTemplate.size", 1)
    policy = spec.get("startupPolicy") or "LeaderCreated"
    if policy not in ("LeaderCreated", "LeaderReady"):
        raise InvalidField("spec.startupPolicy", shown(policy), "must be LeaderCreated or LeaderReady")
    return (1 if policy == "LeaderReady" else size), size, ()


def _owner_of(obj: Mapping[str, Any], ref: WorkloadRef) -> OwnerRef:
    meta = _mapping(obj.get("metadata"), "metadata")
    if ref.kind == "JobSet":  # a TrainJob's JobSet: the PodGroup goes with the TrainJob
        owner = _controller(meta)
        if owner is not None and owner.get("kind") == "TrainJob" and owner.get("uid"):
            return OwnerRef(str(owner.get("apiVersion")), "TrainJob", str(owner.get("name")), str(owner.get("uid")))
    return OwnerRef(ref.api_version, ref.kind, ref.name, str(meta.get("uid") or ""))


def workload_info(ref: WorkloadRef, obj: Mapping[str, Any]) -> WorkloadInfo | None:
    """The gang the workload object makes (see the module docstring); None when it makes none."""
    spec = _mapping(obj.get("spec"), "spec")
    roles: Roles = ()
    if ref.kind == "Job":
        if spec.get("completionMode") != "Indexed":
            return None
        size = total = _job_pods(spec, "spec")
    elif ref.kind == "JobSet":
        meta = _mapping(obj.get("metadata"), "metadata")
        size, total, roles = _jobset(spec, _mapping(meta.get("annotations"), "metadata.annotations"))
    elif ref.kind == "PyTorchJob":
        size, total, roles = _replica_specs(spec, "pytorchReplicaSpecs")
    elif ref.kind == "MPIJob":
        size, total, roles = _replica_specs(spec, "mpiReplicaSpecs")
    elif ref.kind == "RayCluster":
        size, total, roles = _raycluster(spec)
    elif ref.kind == "LeaderWorkerSet":
        size, total, roles = _lws_group(spec)
    else:
        return None
    if size < 1:
        return None
    return WorkloadInfo(size=size, roles=roles, owner=_owner_of(obj, ref), total=max(total, size))


def inferred_spec(namespace: str, name: str, size: int, total: int, roles: Roles = ()) -> GangSpec:
    return GangSpec(namespace=namespace, name=name, min_member=size, total_member=total, roles=roles, source="inferred")
