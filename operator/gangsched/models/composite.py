"""Kubernetes 1.37's gang trees, parsed: CompositePodGroups (scheduling.k8s.io/v1alpha3) and the links of native
PodGroups to them.

Contract (pure, no I/O):
- `API_VERSION`, `PLURAL`, `MAX_DEPTH` (4: WorkloadMaxTreeDepth, the root counting as level one).
- `GroupLink(parent, workload)`, `group_link(obj)`: an object's parent CompositePodGroup and workload name.
- `composite_node(obj) -> CompositeInfo`: its link, minimum (`gang.minGroupCount`; `basic`: 0) and topology key;
  InvalidField for a schedulingPolicy that is not exactly one of basic | gang with minGroupCount >= 1.
- `unsupported_composite_fields(obj) -> tuple[str, ...]`: spec fields set that gangsched does not honour
  (reported, never silently ignored). More: docs/modules.md#modelscompositepy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gangsched.core import InvalidField
from gangsched.models.fields import INT32_MAX, shown
from gangsched.models.native import topology_key

API_VERSION = "scheduling.k8s.io/v1alpha3"
PLURAL = "compositepodgroups"
MAX_DEPTH = 4
_POLICY = "spec.schedulingPolicy"


@dataclass(frozen=True, slots=True)
class GroupLink:
    parent: str | None
    workload: str | None


@dataclass(frozen=True, slots=True)
class CompositeInfo:
    link: GroupLink
    minimum: int
    topology: str | None


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def group_link(obj: Mapping[str, Any]) -> GroupLink:
    """See module docstring."""
    spec = _spec(obj)
    parent = spec.get("parentCompositePodGroupName")
    ref = spec.get("workloadRef")
    workload = ref.get("workloadName") if isinstance(ref, Mapping) else None
    return GroupLink(
        parent if isinstance(parent, str) and parent else None,
        workload if isinstance(workload, str) and workload else None,
    )


def composite_node(obj: Mapping[str, Any]) -> CompositeInfo:
    """See module docstring."""
    policy = _spec(obj).get("schedulingPolicy")
    if not isinstance(policy, Mapping) or (policy.get("gang") is None) == (policy.get("basic") is None):
        raise InvalidField(_POLICY, shown(policy), "exactly one of `basic: {}` or `gang: {minGroupCount: N}`")
    gang = policy.get("gang")
    minimum = 0
    if gang is not None:
        count = gang.get("minGroupCount") if isinstance(gang, Mapping) else None
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= INT32_MAX:
            raise InvalidField(f"{_POLICY}.gang.minGroupCount", shown(count), f"an integer from 1 to {INT32_MAX}")
        minimum = count
    return CompositeInfo(group_link(obj), minimum, topology_key(obj))


def unsupported_composite_fields(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """See module docstring."""
    spec = _spec(obj)
    found = [f"spec.{k}" for k in ("priority", "priorityClassName", "preemptionPolicy") if spec.get(k) is not None]
    mode = spec.get("disruptionMode")
    if isinstance(mode, Mapping) and mode.get("all") is not None:
        found.append("spec.disruptionMode")
    constraints = spec.get("schedulingConstraints")
    if isinstance(constraints, Mapping) and not set(constraints) <= {"topology"}:
        found.append("spec.schedulingConstraints")
    return tuple(found)
