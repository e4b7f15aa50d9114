"""CompositePodGroup (scheduling.k8s.io/v1alpha3): its strategy and validation, as upstream's
compositepodgroup/strategy.go and validation.go shape it. Served only with the CompositePodGroup gate.

Contract (pure; problems are `(field path, detail, cause reason)`):
- `prepare_create(obj)`: status cleared. `prepare_update(cur, new)`: status kept from the stored object.
- `validate(obj, gates)`: workloadRef, schedulingPolicy (basic | gang, minGroupCount >= 1), parent name,
  topology, disruptionMode, priority fields. `validate_update(cur, new, gates)`: the whole spec is immutable.
- `validate_status_update(cur, new)`: conditions as ValidateConditions checks them.
More: docs/modules.md#simschedulingcompositepodgrouppy.
"""

from __future__ import annotations

from typing import Any

import gangsched.sim.scheduling.fields as f
import gangsched.sim.scheduling.podgroup as podgroup
import gangsched.sim.scheduling.workload as workload
from gangsched.sim.features import FeatureGates

Problem = f.Problem
SPEC_FIELDS = (
    "parentCompositePodGroupName",
    "workloadRef",
    "schedulingPolicy",
    "schedulingConstraints",
    "disruptionMode",
    "priorityClassName",
    "priority",
    "preemptionPolicy",
)


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def prepare_create(obj: dict[str, Any]) -> None:
    obj.pop("status", None)


def prepare_update(cur: dict[str, Any], new: dict[str, Any]) -> None:
    if "status" in cur:
        new["status"] = cur["status"]
    else:
        new.pop("status", None)


def validate(obj: dict[str, Any], gates: FeatureGates) -> list[Problem]:
    """See module docstring."""
    spec = _spec(obj)
    problems = workload.composite_policy("spec.schedulingPolicy", spec.get("schedulingPolicy"))
    problems.extend(podgroup.workload_ref("spec.workloadRef", spec.get("workloadRef")))
    if spec.get("parentCompositePodGroupName") is not None:
        problems.extend(f.long_name("spec.parentCompositePodGroupName", spec["parentCompositePodGroupName"]))
    problems.extend(podgroup.topology("spec.schedulingConstraints", spec.get("schedulingConstraints")))
    problems.extend(podgroup.group_fields("spec", spec, gates))
    return problems


def validate_update(cur: dict[str, Any], new: dict[str, Any], gates: FeatureGates) -> list[Problem]:
    """See module docstring."""
    old_spec, spec = _spec(cur), _spec(new)
    problems = validate(new, gates)
    for key in SPEC_FIELDS:
        problems.extend(f.immutable(f"spec.{key}", spec.get(key), old_spec.get(key)))
    return problems


def validate_status_update(cur: dict[str, Any], new: dict[str, Any]) -> list[Problem]:
    status = new.get("status")
    return f.conditions("status.conditions", status.get("conditions") if isinstance(status, dict) else None)
