"""Compact, immutable-by-convention records of nodes and pods: what the core knows of them (built from API objects
by models/node.py and models/pod.py).

Contract:
- `NodeRecord`: name, allocatable (canonical units, see core/resources.py), labels, taints, unschedulable.
- `PodRecord`: identity, priority, preemption policy, creation time (epoch seconds), spec.nodeName, status.phase,
  status.nominatedNodeName, gang/role/rank, whether it is ours, the timeout mark, its termination grace period
  (seconds), its declared run time and start time (core/starvation.py) and its `SchedulingClass`.
- `scheduling_class(requests, *, node_selector, required, preferred, tolerations)`: the constraints and requests
  of a pod interned into a `SchedulingClass` (same constraints -> the same object, with a small integer `id`;
  the implicit `pods: 1` request added): feasibility is computed once per class, and records share the class's
  dicts instead of holding their own.
- `Taint`, `Toleration` (with `tolerates`), `Requirement` and `Term` (node selector terms; matched by
  core/matching.py), `HostPort` (a container's hostIP/protocol/hostPort, checked by core/filters.py).
- `PodRecord.gated`: spec.schedulingGates is not empty (KEP-3521: never placed); `PodRecord.unsupported`: the
  pod's constraints gangsched does not evaluate (field paths), `PodRecord.holds`: whether one of them is a
  required constraint (the pod is then held, never placed); `PodRecord.hold_reasons`: other reasons it is held,
  as sentences (its volume claims, state/volumes.py).
- `with_required(cls, required)`: the interned class of `cls` with another required node affinity.
Records are slots dataclasses; do not mutate them in place: build a new one (`dataclasses.replace`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from gangsched.core.resources import PODS

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


class Taint(NamedTuple):
    key: str
    value: str
    effect: str


class Toleration(NamedTuple):
    key: str  # "" with operator Exists tolerates every taint
    operator: str  # "Equal" | "Exists"
    value: str
    effect: str  # "" matches every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


class HostPort(NamedTuple):
    """One host port a pod asks for, sanitized as kube-scheduler's HostPortInfo does (hostIP "" is 0.0.0.0,
    protocol "" is TCP)."""

    ip: str
    protocol: str
    port: int


class Requirement(NamedTuple):
    key: str
    operator: str
    values: tuple[str, ...]


class Term(NamedTuple):
    """A nodeSelectorTerm: every expression and every field requirement must match."""

    expressions: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]  # matchFields: only key metadata.name is defined


@dataclass(frozen=True, slots=True, eq=False)
class SchedulingClass:
    """The interned requests + constraints shared by every pod that has them (an equivalence class)."""

    id: int
    requests: Mapping[str, int]  # canonical units, includes pods: 1
    node_selector: tuple[tuple[str, str], ...]
    required: tuple[Term, ...] | None  # None: no required node affinity
    preferred: tuple[tuple[int, Term], ...]
    tolerations: tuple[Toleration, ...]
    host_ports: tuple[HostPort, ...] = ()

    @property
    def constrained(self) -> bool:
        return bool(self.node_selector or self.required is not None)


_classes: dict[tuple[Any, ...], SchedulingClass] = {}


def scheduling_class(
    requests: Mapping[str, int],
    *,
    node_selector: tuple[tuple[str, str], ...] = (),
    required: tuple[Term, ...] | None = None,
    preferred: tuple[tuple[int, Term], ...] = (),
    tolerations: tuple[Toleration, ...] = (),
    host_ports: tuple[HostPort, ...] = (),
) -> SchedulingClass:
    """The interned class of these requests and constraints (process-wide table; ids are never reused)."""
    req = dict(requests)
    req.setdefault(PODS, 1)
    key = (tuple(sorted(req.items())), node_selector, required, preferred, tolerations, host_ports)
    cls = _classes.get(key)
    if cls is None:
        cls = SchedulingClass(len(_classes), req, node_selector, required, preferred, tolerations, host_ports)
        _classes[key] = cls
    return cls


def with_required(cls: SchedulingClass, required: tuple[Term, ...] | None) -> SchedulingClass:
    """The interned class equal to `cls` but for its required node affinity (a pod's volumes add theirs)."""
    fields = {f.name: getattr(cls, f.name) for f in dataclasses.fields(cls) if f.name not in ("id", "requests")}
    fields["required"] = required
    return scheduling_class(cls.requests, **fields)


@dataclass(frozen=True, slots=True)
class NodeRecord:
    name: str
    allocatable: Mapping[str, int]
    labels: Mapping[str, str]
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False


@dataclass(frozen=True, slots=True)
class PodRecord:
    namespace: str
    name: str
    uid: str
    sclass: SchedulingClass
    priority: int = 0
    preemption_policy: str = "PreemptLowerPriority"
    created: float = 0.0
    node_name: str | None = None
    phase: str = "Pending"
    nominated_node: str | None = None
    gang: str | None = None  # "namespace/name" of the gang, None for a pod scheduled alone
    role: str | None = None
    rank: int | None = None
    ours: bool = True  # spec.schedulerName is ours (others' pods only consume capacity)
    timed_out: bool = False
    gated: bool = False  # spec.schedulingGates not empty
    unsupported: tuple[str, ...] = ()  # constraints not evaluated (field paths), see models/pod.py
    holds: bool = False  # one of them is required: the pod is held (never placed) until it goes
    hold_reasons: tuple[str, ...] = ()  # why else it is held, as sentences (a claim not bound: state/volumes.py)
    grace: float = 30.0  # spec.terminationGracePeriodSeconds (the API's default 30): how long its eviction may take
    run_seconds: float | None = None  # declared run time (activeDeadlineSeconds, expected-duration): backfill
    started: float | None = None  # status.startTime (epoch seconds)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def requests(self) -> Mapping[str, int]:
        return self.sclass.requests

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES
