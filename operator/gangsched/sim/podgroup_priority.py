"""The Priority admission plugin on PodGroup create (Kubernetes 1.37, WorkloadAwarePreemption on).

Contract (pure; `classes` is the PriorityClasses as stored): `admit_podgroup(spec, classes, gates) -> str | None`
mutates a PodGroup's spec as plugin/pkg/admission/priority/admission.go does on create (TestAdmitPodGroup's cases):
`priorityClassName` empty -> the global default PriorityClass's name (the lowest value when several), or "" and
priority 0 without one; a name that no PriorityClass has -> the reason to answer 403 Forbidden ("no PriorityClass
with name X was found"); `priority` = the class's value (a different priority already given -> Forbidden, as for
pods); `preemptionPolicy` from the class, PreemptLowerPriority when the class sets none (types.go PodGroupSpec:
"When Priority Admission Controller is enabled, it populates this field from PriorityClassName"; only with
PodGroupPreemptionPolicy, which forbids the field otherwise). Updates are not admitted (the fields are immutable).
Without WorkloadAwarePreemption nothing is done.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gangsched.sim.features import FeatureGates


def _default(classes: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """getDefaultPriorityClass: the globalDefault class of the lowest value."""
    found: dict[str, Any] | None = None
    for pc in classes:
        if pc.get("globalDefault") and (found is None or int(found.get("value", 0)) > int(pc.get("value", 0))):
            found = pc
    return found


def admit_podgroup(spec: dict[str, Any], classes: list[dict[str, Any]], gates: FeatureGates) -> str | None:
    """See module docstring."""
    if not gates.enabled("WorkloadAwarePreemption"):
        return None
    name = spec.get("priorityClassName")
    if name:
        pc = next((c for c in classes if (c.get("metadata") or {}).get("name") == name), None)
        if pc is None:
            return f"no PriorityClass with name {name} was found"
    else:
        pc = _default(classes)
        spec["priorityClassName"] = (pc.get("metadata") or {}).get("name", "") if pc is not None else ""
        if not spec["priorityClassName"]:
            spec.pop("priorityClassName")  # omitempty: "" is not stored
    value = int(pc.get("value", 0)) if pc is not None else 0
    given = spec.get("priority")
    if given is not None and given != value:
        return (
            f"the integer value of priority ({given}) must not be provided in pod group spec; priority admission"
            f" controller computed {value} from the given PriorityClass name"
        )
    spec["priority"] = value
    if gates.enabled("PodGroupPreemptionPolicy"):
        policy = (pc or {}).get("preemptionPolicy") or "PreemptLowerPriority"
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            return (
                f"the string value of PreemptionPolicy ({given_policy}) must not be provided in pod group spec;"
                f" priority admission controller computed {policy} from the given PriorityClass name"
            )
        spec["preemptionPolicy"] = policy
    return None
