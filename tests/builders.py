"""Builders of raw API dicts and a populated SchedulerState for the core tests (helpers only: no tests here)."""

from __future__ import annotations

from typing import Any

from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.gangspec import GangMode, GangSpec
from gangsched.models.node import node_from_api
from gangsched.models.pod import pod_from_api


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
    spec_extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
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
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "creationTimestamp": created},
        "spec": spec,
        "status": {"phase": phase},
    }


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
    pod = pod_from_api(pod_obj(name, **kw), gang=gang, role=role, rank=rank, ours=ours)
    c.upsert_pod(pod)
    return pod.key


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
            ),
            created=created,
        )
    return [add_pod(c, f"{name}-{i}", gang=key, rank=i, namespace=namespace, **pod_kw) for i in range(pods)]
