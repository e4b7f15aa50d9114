"""Kubernetes 1.37's own gang API in the emulator: scheduling.k8s.io/v1beta1 Workload and PodGroup,
scheduling.k8s.io/v1alpha3 CompositePodGroup, and pods' `spec.schedulingGroup` (pod.py).

Contract:
- `served_types(gates) -> list[ResourceType]`: the kinds served under the API profile's feature gates
  (sim/features.py): Workload and PodGroup (with a status subresource) with GenericWorkload, CompositePodGroup
  (status subresource) with GenericWorkload and CompositePodGroup; none in the `plain-1.37` profile.
- `strategy_for(group, kind) -> Strategy | None`: the kind's strategy (one module each, as
  pkg/registry/scheduling/<kind>/strategy.go): `prepare_create(obj, gates)`, `validate(obj, gates)`,
  `prepare_update(cur, new, gates)`, `validate_update(cur, new, gates)`, `validate_status_update(cur, new)`;
  problems are `(field path, detail, cause reason)` and the registry answers them as 422 Invalid.
Pure data and functions; the registry calls them on every write of these kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gangsched.sim.features import FeatureGates
from gangsched.sim.scheduling import compositepodgroup, podgroup, workload
from gangsched.sim.scheduling.fields import Problem
from gangsched.sim.types import ResourceType

GROUP = "scheduling.k8s.io"
_STATUS = frozenset({"status"})

WORKLOAD = ResourceType(GROUP, "v1beta1", "Workload", "workloads", "workload", True)
PODGROUP = ResourceType(GROUP, "v1beta1", "PodGroup", "podgroups", "podgroup", True, (), _STATUS)
COMPOSITE = ResourceType(
    GROUP, "v1alpha3", "CompositePodGroup", "compositepodgroups", "compositepodgroup", True, (), _STATUS
)

Obj = dict[str, Any]


@dataclass(frozen=True)
class Strategy:
    prepare_create: Callable[[Obj, FeatureGates], None]
    validate: Callable[[Obj, FeatureGates], list[Problem]]
    prepare_update: Callable[[Obj, Obj, FeatureGates], None]
    validate_update: Callable[[Obj, Obj, FeatureGates], list[Problem]]
    validate_status_update: Callable[[Obj, Obj], list[Problem]]


def _no_status(cur: Obj, new: Obj) -> list[Problem]:
    return []


STRATEGIES: dict[tuple[str, str], Strategy] = {
    (GROUP, "PodGroup"): Strategy(
        podgroup.prepare_create,
        podgroup.validate,
        podgroup.prepare_update,
        podgroup.validate_update,
        podgroup.validate_status_update,
    ),
    (GROUP, "Workload"): Strategy(
        workload.prepare_create, workload.validate, workload.prepare_update, workload.validate_update, _no_status
    ),
    (GROUP, "CompositePodGroup"): Strategy(
        lambda obj, gates: compositepodgroup.prepare_create(obj),
        compositepodgroup.validate,
        lambda cur, new, gates: compositepodgroup.prepare_update(cur, new),
        compositepodgroup.validate_update,
        compositepodgroup.validate_status_update,
    ),
}


def served_types(gates: FeatureGates) -> list[ResourceType]:
    """See module docstring."""
    if not gates.enabled("GenericWorkload"):
        return []
    out = [WORKLOAD, PODGROUP]
    if gates.enabled("CompositePodGroup"):
        out.append(COMPOSITE)
    return out


def strategy_for(group: str, kind: str) -> Strategy | None:
    return STRATEGIES.get((group, kind))
