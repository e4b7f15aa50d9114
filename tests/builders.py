"""Shared test builders (helpers only: no tests here); import them instead of writing another copy.

- As the API server serves them (uid, creationTimestamp, status): `node_obj`, `pod_obj`, `member_obj` (a pod of a
  scheduler-plugins PodGroup), `podgroup_obj`.
- As a client creates them (`kubectl apply`, a POST to the emulator): `pod_manifest`, `member_manifest` (with
  resources, PodGroup label, PriorityClass), `podgroup_manifest`, `gang_manifests` (a PodGroup and its members),
  `priority_class`, `koordinator_annotations` (a Koordinator gang's pod annotations).
- Records for the core, upserted into a SchedulerState: `add_nodes`, `add_pod`, `add_gang`; `pod_record(obj, into)`
  parses a served pod with its class interned in `into`'s ClassRegistry (a fresh one when `into` is None);
  `same_record(a, b)`: records of two states equal (their classes by contents).
- What-if inputs: `whatif_nodes`, `whatif_job`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.records.records import ClassRegistry, PodRecord
from gangsched.core.values.gangspec import GangMode, GangSpec
from gangsched.core.values.gangtree import DomainKey, GangTree
from gangsched.models.node import node_from_api
from gangsched.models.pod import pod_from_api
from gangsched.whatif.model import JobSpec, NodeSpec, RoleSpec

GPU = "nvidia.com/gpu"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
KOORDINATOR = "gang.scheduling.koordinator.sh/"
# the allocatable of the node most integration and e2e clusters run (running_cluster(node_resources=...))
NODE_8_GPUS = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}


def node_obj(
    name: str,
    *,
    cpu: str = "32",
    memory: str = "256Gi",
    gpu: int = 0,
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    alloc: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    if gpu:
        alloc["nvidia.com/gpu"] = str(gpu)
    return {
        "metadata": {"name": name, "labels": labels or {"kubernetes.io/hostname": name}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"allocatable": alloc},
    }


def pod_obj(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = "1",
    gpu: int = 0,
    priority: int = 0,
    created: str = "2024-01-01T00:00:00Z",
    node: str | None = None,
    phase: str = "Pending",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    spec_extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Pod as the API serves it; `labels`/`annotations` appear in its metadata only when given."""
    requests: dict[str, Any] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    spec: dict[str, Any] = {
        "schedulerName": "gangsched",
        "priority": priority,
        "containers": [{"name": "c", "resources": {"requests": requests}}],
    }
    if node:
        spec["nodeName"] = node
    spec.update(spec_extra or {})
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "creationTimestamp": created}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def member_obj(
    name: str, *, group: str | None = None, annotations: dict[str, str] | None = None, **kw: Any
) -> dict[str, Any]:
    """A Pod as served (`pod_obj` keywords) labelled a member of the scheduler-plugins PodGroup `group`; the
    metadata gets `labels` only with a group and `annotations` only when non-empty."""
    obj = pod_obj(name, **kw)
    if group:
        obj["metadata"]["labels"] = {POD_GROUP_LABEL: group}
    if annotations:
        obj["metadata"]["annotations"] = annotations
    return obj


def podgroup_obj(
    name: str,
    *,
    min_member: int,
    namespace: str = "default",
    uid: str | None = None,
    generation: int = 1,
    created: str = "2024-01-01T00:00:00Z",
    phase: str | None = None,
    typed: bool = False,
    **spec: Any,
) -> dict[str, Any]:
    """A scheduler-plugins PodGroup as the API serves it (uid `pg-<name>` unless given; a status only with `phase`)."""
    obj: dict[str, Any] = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup"} if typed else {}
    obj["metadata"] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"pg-{name}",
        "generation": generation,
        "creationTimestamp": created,
    }
    obj["spec"] = {"minMember": min_member, **spec}
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def pod_manifest(
    name: str,
    *,
    namespace: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    finalizers: list[str] | None = None,
    scheduler: str | None = None,
    image: str = "busybox",
    container: str = "c",
    typed: bool = True,
    **spec: Any,
) -> dict[str, Any]:
    """A Pod as a client creates it: one container, metadata keys only when given, `spec` keywords merged into the
    spec (`nodeName=...`, `priority=...`); `typed` adds apiVersion and kind."""
    meta: dict[str, Any] = {"name": name}
    for key, value in (
        ("namespace", namespace),
        ("labels", labels),
        ("annotations", annotations),
        ("finalizers", finalizers),
    ):
        if value is not None:
            meta[key] = value
    body: dict[str, Any] = {"schedulerName": scheduler} if scheduler else {}
    body["containers"] = [{"name": container, "image": image}]
    body.update(spec)
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod"} if typed else {}
    return {**obj, "metadata": meta, "spec": body}


def member_manifest(
    name: str,
    *,
    namespace: str = "default",
    group: str | None = None,
    gpu: int = 0,
    cpu: str = "1",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    scheduler: str = "gangsched",
    priority_class: str | None = None,
) -> dict[str, Any]:
    """A Pod as a client creates it, with resources (1 CPU, 1 Gi, `gpu` GPUs requested and limited), an optional
    scheduler-plugins PodGroup label (`group`) and PriorityClass; what the integration and e2e tests apply."""
    requests: dict[str, str] = {"cpu": cpu, "memory": "1Gi"}
    if gpu:
        requests[GPU] = str(gpu)
    all_labels = dict(labels or {})
    if group:
        all_labels[POD_GROUP_LABEL] = group
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.9",
                "resources": {"requests": requests, "limits": {GPU: str(gpu)} if gpu else {}},
            }
        ],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": all_labels,
            "annotations": dict(annotations or {}),
        },
        "spec": spec,
    }


def podgroup_manifest(name: str, *, min_member: int, namespace: str = "default", **spec: Any) -> dict[str, Any]:
    """A scheduler-plugins PodGroup (scheduling.x-k8s.io/v1alpha1) as a client creates it."""
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": min_member, **spec},
    }


def gang_manifests(
    name: str,
    n: int,
    *,
    pc: str | None = None,
    gpu: int = 8,
    min_member: int | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> list[dict[str, Any]]:
    """A PodGroup `name` (minMember `min_member` or `n`, `spec` keywords in its spec) and its `n` members
    `<name>-<i>` of `gpu` GPUs each at PriorityClass `pc`, as a client creates them."""
    members = [
        member_manifest(f"{name}-{i}", group=name, gpu=gpu, priority_class=pc, labels=labels, annotations=annotations)
        for i in range(n)
    ]
    return [podgroup_manifest(name, min_member=min_member or n, **spec), *members]


def priority_class(name: str, value: int, **extra: Any) -> dict[str, Any]:
    """A PriorityClass as a client creates it; `extra` fields as written (`preemptionPolicy="Never"`)."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **extra,
    }


def koordinator_annotations(name: str, min_available: int | str, **extra: str) -> dict[str, str]:
    """A Koordinator gang's pod annotations; `extra` keys are the other annotations' names with `_` for `-`
    (`total_number="4"`, `waiting_time="30s"`, `mode="NonStrict"`)."""
    out = {KOORDINATOR + "name": name, KOORDINATOR + "min-available": str(min_available)}
    out.update({KOORDINATOR + key.replace("_", "-"): value for key, value in extra.items()})
    return out


def add_nodes(c: SchedulerState, n: int, prefix: str = "n", **kw: Any) -> list[str]:
    names = [f"{prefix}{i}" for i in range(n)]
    for name in names:
        c.upsert_node(node_from_api(node_obj(name, **kw)))
    return names


def add_pod(
    c: SchedulerState,
    name: str,
    *,
    gang: str | None = None,
    role: str | None = None,
    rank: int | None = None,
    ours: bool = True,
    **kw: Any,
) -> str:
    pod = pod_record(pod_obj(name, **kw), c, gang=gang, role=role, rank=rank, ours=ours)
    c.upsert_pod(pod)
    return pod.key


def pod_record(
    obj: dict[str, Any],
    into: SchedulerState | ClassRegistry | None = None,
    *,
    gang: str | None = None,
    role: str | None = None,
    rank: int | None = None,
    ours: bool = True,
) -> PodRecord:
    """`obj` (a served pod: `pod_obj`) parsed as the operator does, its class interned in the registry of `into`, the
    SchedulerState it will be upserted into (a state refuses another registry's classes), or in a fresh one."""
    classes = into.classes if isinstance(into, SchedulerState) else ClassRegistry() if into is None else into
    return pod_from_api(obj, gang=gang, role=role, rank=rank, ours=ours, classes=classes)


def same_record(a: PodRecord, b: PodRecord) -> bool:
    """`a` and `b` are equal records whose classes have the same contents (interned by two states' registries:
    classes compare by identity, and ids are per registry)."""

    def content(cls: Any) -> list[Any]:
        return [getattr(cls, f.name) for f in dataclasses.fields(cls) if f.name != "registry"]

    return dataclasses.replace(a, sclass=b.sclass) == b and content(a.sclass) == content(b.sclass)


def add_gang(
    c: SchedulerState,
    name: str,
    pods: int,
    *,
    min_member: int | None = None,
    namespace: str = "default",
    mode: GangMode = GangMode.STRICT,
    spec: bool = True,
    created: float | None = None,
    group: tuple[str, ...] = (),
    wait: float | None = None,
    tree: GangTree | None = None,
    domain: DomainKey | None = None,
    **pod_kw: Any,
) -> list[str]:
    key = f"{namespace}/{name}"
    if spec:
        c.upsert_gang(
            GangSpec(
                namespace,
                name,
                min_member if min_member is not None else pods,
                mode=mode,
                group=group,
                wait_seconds=wait,
                tree=tree,
                domain=domain,
            ),
            created=created,
        )
    return [add_pod(c, f"{name}-{i}", gang=key, rank=i, namespace=namespace, **pod_kw) for i in range(pods)]


def whatif_nodes(n: int, gpus: int = 8) -> tuple[NodeSpec, ...]:
    """`n` what-if nodes `n0..`: 64 CPUs, 512 GiB (the model counts memory in MiB), `gpus` GPUs each."""
    return tuple(NodeSpec(f"n{i}", 64_000, 512 * 1024, gpus) for i in range(n))


def whatif_job(id: str, submit: float, duration: float, pods: int, gpus: int, **kw: Any) -> JobSpec:
    """A what-if job of one role: `pods` pods of 1 CPU, 1 GiB and `gpus` GPUs; `kw` are JobSpec's other fields."""
    return JobSpec(id, submit, duration, (RoleSpec(pods, 1000, 1024, gpus),), pods, **kw)
