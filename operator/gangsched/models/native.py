"""Kubernetes 1.37's own gang declaration (scheduling.k8s.io/v1beta1 PodGroup, pods' spec.schedulingGroup), parsed.

Contract (pure, no I/O):
- `API_VERSION`; `SCHEDULING_GROUP` (the pod field naming its native PodGroup, a member's `declared_by`).
- `scheduling_group_name(spec) -> str | None`: the PodGroup a pod spec names (None: none, null or empty).
- `native_policy(obj) -> int | None`: the quorum `spec.schedulingPolicy.gang.minCount` (1..2147483647); None for
  `basic: {}` (no gang); anything else raises InvalidField naming the field, the value and what is allowed.
- `topology_key(obj)`: `spec.schedulingConstraints.topology[0].key` or None.
- `group_priority(obj) -> GroupPriority`: `spec.priority`, `spec.preemptionPolicy`, whether disruptionMode is `all`.
- `unsupported_fields(obj, tier_keys=())`: spec fields bearing on scheduling that gangsched does not honour, as
  paths (reported on the PodGroup, never silently ignored). More: docs/modules.md#modelsnativepy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gangsched.core import InvalidField
from gangsched.models.fields import INT32_MAX, shown

API_VERSION = "scheduling.k8s.io/v1beta1"
SCHEDULING_GROUP = "spec.schedulingGroup.podGroupName"
_POLICY = "spec.schedulingPolicy"


def scheduling_group_name(spec: Mapping[str, Any]) -> str | None:
    """See module docstring."""
    group = spec.get("schedulingGroup")
    if not isinstance(group, Mapping):
        return None
    name = group.get("podGroupName")
    return name if isinstance(name, str) and name else None


_UNSUPPORTED = ("schedulingConstraints",)  # (resourceClaims: allocated as its pods' claims are, state/dra.py)


@dataclass(frozen=True, slots=True)
class GroupPriority:
    priority: int | None  # spec.priority (None: not set)
    preemption_policy: str | None  # spec.preemptionPolicy (None: not set)
    disrupt_whole: bool  # spec.disruptionMode: {all: {}}


def group_priority(obj: Mapping[str, Any]) -> GroupPriority:
    """See module docstring."""
    spec = obj.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    priority = spec.get("priority")
    policy = spec.get("preemptionPolicy")
    mode = spec.get("disruptionMode")
    return GroupPriority(
        priority if isinstance(priority, int) and not isinstance(priority, bool) else None,
        policy if policy in ("Never", "PreemptLowerPriority") else None,
        isinstance(mode, Mapping) and mode.get("all") is not None,
    )


def topology_key(obj: Mapping[str, Any]) -> str | None:
    """See module docstring."""
    spec = obj.get("spec")
    constraints = spec.get("schedulingConstraints") if isinstance(spec, Mapping) else None
    topology = constraints.get("topology") if isinstance(constraints, Mapping) else None
    first = topology[0] if isinstance(topology, list) and topology else None
    key = first.get("key") if isinstance(first, Mapping) else None
    return key if isinstance(key, str) and key else None


def unsupported_fields(obj: Mapping[str, Any], tier_keys: Sequence[str] = ()) -> tuple[str, ...]:
    """See module docstring."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return ()
    found = [f"spec.{key}" for key in _UNSUPPORTED if spec.get(key) not in (None, "", [], {})]
    constraints = spec.get("schedulingConstraints")
    if isinstance(constraints, Mapping) and set(constraints) <= {"topology"}:
        found.remove("spec.schedulingConstraints")  # honoured: a tier's label at that tier, any other as its own domain
    if spec.get("priorityClassName") and group_priority(obj).priority is None:
        found.append("spec.priorityClassName")  # honoured through spec.priority, which the API server resolves
    return tuple(found)


def native_policy(obj: Mapping[str, Any]) -> int | None:
    """See module docstring."""
    spec = obj.get("spec")
    policy = spec.get("schedulingPolicy") if isinstance(spec, Mapping) else None
    if not isinstance(policy, Mapping) or (policy.get("gang") is None) == (policy.get("basic") is None):
        raise InvalidField(_POLICY, shown(policy), "exactly one of `basic: {}` or `gang: {minCount: N}`")
    gang = policy.get("gang")
    if gang is None:
        return None
    count = gang.get("minCount") if isinstance(gang, Mapping) else None
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= INT32_MAX:
        raise InvalidField(f"{_POLICY}.gang.minCount", shown(count), f"an integer from 1 to {INT32_MAX}")
    return count
