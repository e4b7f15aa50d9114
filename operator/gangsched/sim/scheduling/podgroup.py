"""PodGroup (scheduling.k8s.io/v1beta1): its strategy, as pkg/registry/scheduling/podgroup/strategy.go and the
declarative validation of PodGroupSpec's `+k8s:` tags shape it.

Contract (pure; problems are `(field path, detail, cause reason)`, answered as 422 Invalid by the registry):
- `prepare_create(obj, gates)`: the protection finalizer (sim/podgroup_protection.py), status cleared, fields of
  disabled gates dropped, `disruptionMode: {single: {}}` defaulted.
- `validate(obj, gates)`: schedulingPolicy, minCount, topology, resourceClaims, disruptionMode, priority fields,
  parent CompositePodGroup and workloadRef, each gated as upstream.
- `prepare_update` / `validate_update(cur, new, gates)`: status kept; spec immutable except the gang's minCount.
- `validate_status_update(cur, new)`: conditions and resourceClaimStatuses.
More: docs/modules.md#simschedulingpodgrouppy.
"""

from __future__ import annotations

from typing import Any

import gangsched.sim.scheduling.fields as f
from gangsched.sim.features import FeatureGates
from gangsched.sim.podgroup_protection import admit_create

Problem = f.Problem

IMMUTABLE_SPEC = (
    "parentCompositePodGroupName",
    "workloadRef",
    "schedulingConstraints",
    "resourceClaims",
    "disruptionMode",
    "priorityClassName",
    "priority",
    "preemptionPolicy",
)
DEFAULT_DISRUPTION_MODE: dict[str, Any] = {"single": {}}


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def drop_disabled(spec: dict[str, Any], old_spec: dict[str, Any] | None, gates: FeatureGates) -> None:
    """dropDisabledSchedulingConstraintsFields and dropDisabledDRAWorkloadResourceClaimsFields."""
    old = old_spec or {}
    if not gates.enabled("TopologyAwareWorkloadScheduling") and old.get("schedulingConstraints") is None:
        spec.pop("schedulingConstraints", None)
    if not gates.enabled("DRAWorkloadResourceClaims") and not old.get("resourceClaims"):
        spec.pop("resourceClaims", None)


def prepare_create(obj: dict[str, Any], gates: FeatureGates) -> None:
    """See module docstring."""
    admit_create(obj)  # the PodGroupProtection admission plugin runs before the strategy
    obj.pop("status", None)
    spec = _spec(obj)
    drop_disabled(spec, None, gates)
    if spec.get("disruptionMode") is None and "spec" in obj:
        spec["disruptionMode"] = dict(DEFAULT_DISRUPTION_MODE)


def scheduling_policy(path: str, policy: Any) -> list[Problem]:
    """PodGroupSchedulingPolicy (shared with the Workload's PodGroupTemplate)."""
    return gang_policy(path, policy, "minCount")


def gang_policy(path: str, policy: Any, count_field: str) -> list[Problem]:
    """A scheduling policy: basic | gang{<count_field> >= 1} (minCount for PodGroups, minGroupCount for
    CompositePodGroups)."""
    if not isinstance(policy, dict):
        return []
    problems = f.union(path, policy, ("basic", "gang"))
    gang = policy.get("gang")
    if isinstance(gang, dict) and count_field in gang:
        count = gang.get(count_field)
        if not count:
            problems.append(f.required(f"{path}.gang.{count_field}"))
        elif isinstance(count, int) and count < 1:
            problems.append(f.invalid(f"{path}.gang.{count_field}", count, "must be greater than or equal to 1"))
    return problems


def topology(path: str, constraints: Any) -> list[Problem]:
    """(Composite)PodGroupSchedulingConstraints: topology has at most one {key}, a label key."""
    if not isinstance(constraints, dict):
        return []
    items = constraints.get("topology")
    problems = f.max_items(f"{path}.topology", items, 1)
    for i, item in enumerate(items if isinstance(items, list) else ()):
        if isinstance(item, dict) and "key" in item:
            key = item.get("key")
            problems.extend(
                [f.required(f"{path}.topology[{i}].key")] if not key else f.label_key(f"{path}.topology[{i}].key", key)
            )
    return problems


def resource_claims(path: str, claims: Any) -> list[Problem]:
    problems = f.max_items(path, claims, 4) + f.unique_keys(path, claims, "name")
    for i, claim in enumerate(claims if isinstance(claims, list) else ()):
        if not isinstance(claim, dict):
            continue
        at = f"{path}[{i}]"
        if "name" in claim:
            problems.extend(
                [f.required(f"{at}.name")] if not claim.get("name") else f.short_name(f"{at}.name", claim["name"])
            )
        problems.extend(f.union(at, claim, ("resourceClaimName", "resourceClaimTemplateName")))
        for key in ("resourceClaimName", "resourceClaimTemplateName"):
            if claim.get(key) is not None:
                problems.extend(f.long_name(f"{at}.{key}", claim[key]))
    return problems


def workload_ref(path: str, ref: Any) -> list[Problem]:
    if not isinstance(ref, dict):
        return []
    problems: list[Problem] = []
    for key, check in (("workloadName", f.long_name), ("templateName", f.short_name)):
        if key in ref:
            problems.extend([f.required(f"{path}.{key}")] if not ref.get(key) else check(f"{path}.{key}", ref[key]))
    return problems


def group_fields(path: str, spec: dict[str, Any], gates: FeatureGates) -> list[Problem]:
    """What PodGroupSpec shares with PodGroupTemplate: disruption mode, priority class, priority, preemption."""
    problems: list[Problem] = []
    if spec.get("disruptionMode") is not None:
        problems.extend(f.union(f"{path}.disruptionMode", spec["disruptionMode"], ("single", "all")))
    if spec.get("priorityClassName"):
        problems.extend(f.long_name(f"{path}.priorityClassName", spec["priorityClassName"]))
    problems.extend(f.priority(f"{path}.priority", spec.get("priority")))
    if spec.get("preemptionPolicy") is not None:
        if not gates.enabled("PodGroupPreemptionPolicy"):
            problems.append(f.forbidden(f"{path}.preemptionPolicy"))
        problems.extend(f.preemption_policy(f"{path}.preemptionPolicy", spec["preemptionPolicy"]))
    return problems


def validate(obj: dict[str, Any], gates: FeatureGates) -> list[Problem]:
    """See module docstring."""
    spec = _spec(obj)
    problems = scheduling_policy("spec.schedulingPolicy", spec.get("schedulingPolicy"))
    problems.extend(topology("spec.schedulingConstraints", spec.get("schedulingConstraints")))
    problems.extend(resource_claims("spec.resourceClaims", spec.get("resourceClaims")))
    problems.extend(group_fields("spec", spec, gates))
    problems.extend(workload_ref("spec.workloadRef", spec.get("workloadRef")))
    parent = spec.get("parentCompositePodGroupName")
    if parent is not None:
        if not gates.enabled("CompositePodGroup"):
            problems.append(f.forbidden("spec.parentCompositePodGroupName"))
        problems.extend(f.long_name("spec.parentCompositePodGroupName", parent))
        if spec.get("workloadRef") is None:
            problems.append(f.required("spec.workloadRef"))
    return problems


def prepare_update(cur: dict[str, Any], new: dict[str, Any], gates: FeatureGates) -> None:
    """See module docstring."""
    if "status" in cur:
        new["status"] = cur["status"]
    else:
        new.pop("status", None)
    drop_disabled(_spec(new), _spec(cur), gates)


def validate_update(cur: dict[str, Any], new: dict[str, Any], gates: FeatureGates) -> list[Problem]:
    """See module docstring."""
    old_spec, spec = _spec(cur), _spec(new)
    problems = validate(new, gates)
    for key in IMMUTABLE_SPEC:
        problems.extend(f.immutable(f"spec.{key}", spec.get(key), old_spec.get(key)))
    old_policy = old_spec.get("schedulingPolicy") or {}
    policy = spec.get("schedulingPolicy") or {}
    if isinstance(old_policy, dict) and isinstance(policy, dict):
        problems.extend(f.immutable("spec.schedulingPolicy.basic", policy.get("basic"), old_policy.get("basic")))
        problems.extend(f.no_set_no_unset("spec.schedulingPolicy.gang", policy.get("gang"), old_policy.get("gang")))
    return problems


def validate_status_update(cur: dict[str, Any], new: dict[str, Any]) -> list[Problem]:
    """See module docstring."""
    status = new.get("status") if isinstance(new.get("status"), dict) else {}
    assert isinstance(status, dict)
    problems = f.conditions("status.conditions", status.get("conditions"))
    statuses = status.get("resourceClaimStatuses")
    problems.extend(f.max_items("status.resourceClaimStatuses", statuses, 4))
    names = {c.get("name") for c in _spec(new).get("resourceClaims") or () if isinstance(c, dict)}
    for i, entry in enumerate(statuses if isinstance(statuses, list) else ()):
        name = entry.get("name") if isinstance(entry, dict) else None
        if name not in names:
            problems.append(
                f.invalid(
                    f"status.resourceClaimStatuses[{i}].name",
                    name,
                    "must match the name of an entry in `spec.resourceClaims`",
                )
            )
    return problems
