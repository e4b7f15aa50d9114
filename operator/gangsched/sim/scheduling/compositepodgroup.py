"""CompositePodGroup (scheduling.k8s.io/v1alpha3): its strategy, as pkg/registry/scheduling/compositepodgroup/
strategy.go, ValidateCompositePodGroup / ValidateCompositePodGroupUpdate / ValidateCompositePodGroupStatusUpdate
(pkg/apis/scheduling/validation/validation.go) and the declarative tags of CompositePodGroupSpec
(staging/src/k8s.io/api/scheduling/v1alpha3/types.go) shape it. Served only with the CompositePodGroup gate.

Contract (pure; problems are `(field path, detail, cause reason)`):
- `prepare_create(obj)`: status cleared. `prepare_update(cur, new)`: status kept from the stored object.
- `validate(obj, gates)`: workloadRef required (workloadName a DNS subdomain, templateName a DNS label);
  schedulingPolicy exactly one of basic | gang with minGroupCount >= 1; parentCompositePodGroupName a DNS
  subdomain; schedulingConstraints.topology at most one label key; disruptionMode exactly one of single | all;
  priorityClassName a DNS subdomain, priority <= 1000000000, preemptionPolicy Never | PreemptLowerPriority.
- `validate_update(cur, new, gates)`: `validate(new)`; the whole spec is immutable (every field carries
  `+k8s:immutable`).
- `validate_status_update(cur, new)`: conditions as ValidateConditions checks them.
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
