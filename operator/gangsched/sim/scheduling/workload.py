"""Workload (scheduling.k8s.io/v1beta1): its strategy and validation, as upstream's workload/strategy.go,
validation.go and WorkloadSpec's declarative tags shape it. A Workload has no status.

Contract (pure; problems are `(field path, detail, cause reason)`):
- `prepare_create(obj, gates)` / `prepare_update(cur, new, gates)`: templates' schedulingConstraints dropped
  without TopologyAwareWorkloadScheduling (unless the stored object uses them).
- `validate(obj, gates)`: exactly one of podGroupTemplates | compositePodGroupTemplates, controllerRef, every
  template as podgroup.py checks a PodGroup, composite trees (depth, unique names, one priority).
- `validate_update(cur, new, gates)`: controllerRef immutable; templates neither added nor removed; a template's
  fields immutable except its gang minCount.
More: docs/modules.md#simschedulingworkloadpy.
"""

from __future__ import annotations

from typing import Any

import gangsched.sim.scheduling.fields as f
import gangsched.sim.scheduling.podgroup as podgroup
from gangsched.sim.features import FeatureGates

Problem = f.Problem
MAX_TEMPLATES = 8
MAX_DEPTH = 4  # WorkloadMaxTemplateDepth
_TEMPLATE_IMMUTABLE = (
    "schedulingConstraints",
    "resourceClaims",
    "disruptionMode",
    "priorityClassName",
    "priority",
    "preemptionPolicy",
)


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _list(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _walk(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Every template of the tree (leaf and composite)."""
    out: list[dict[str, Any]] = []
    stack = [spec]
    while stack:
        node = stack.pop()
        for key in ("podGroupTemplates", "compositePodGroupTemplates"):
            out.extend(_list(node.get(key)))
        stack.extend(_list(node.get("compositePodGroupTemplates")))
    return out


def prepare_create(obj: dict[str, Any], gates: FeatureGates) -> None:
    prepare_update({}, obj, gates)


def prepare_update(cur: dict[str, Any], new: dict[str, Any], gates: FeatureGates) -> None:
    if gates.enabled("TopologyAwareWorkloadScheduling"):
        return
    if any(t.get("schedulingConstraints") is not None for t in _walk(_spec(cur))):
        return
    for template in _walk(_spec(new)):
        template.pop("schedulingConstraints", None)


def _path_segment(path: str, value: Any) -> list[Problem]:
    """content.IsPathSegmentName."""
    text = str(value)
    if text in (".", ".."):
        return [f.invalid(path, text, f"may not be '{text}'")]
    return [f.invalid(path, text, f"may not contain '{c}'") for c in "/%" if c in text]


def _controller_ref(path: str, ref: Any) -> list[Problem]:
    if not isinstance(ref, dict):
        return []
    problems = f.long_name(f"{path}.apiGroup", ref["apiGroup"]) if ref.get("apiGroup") else []
    for key in ("kind", "name"):
        if key in ref:
            problems.extend(
                [f.required(f"{path}.{key}")] if not ref.get(key) else _path_segment(f"{path}.{key}", ref[key])
            )
    return problems


def _template(path: str, t: dict[str, Any], gates: FeatureGates, composite: bool) -> list[Problem]:
    problems: list[Problem] = []
    if "name" in t:
        problems.extend([f.required(f"{path}.name")] if not t.get("name") else f.short_name(f"{path}.name", t["name"]))
    if composite:
        policy = t.get("schedulingPolicy")
        problems.extend(composite_policy(f"{path}.schedulingPolicy", policy))
        if not _list(t.get("podGroupTemplates")) and not _list(t.get("compositePodGroupTemplates")):
            problems.append(
                f.invalid(
                    path, t.get("name"), "must have at least one child PodGroupTemplate or CompositePodGroupTemplate"
                )
            )
    else:
        problems.extend(podgroup.scheduling_policy(f"{path}.schedulingPolicy", t.get("schedulingPolicy")))
        problems.extend(podgroup.resource_claims(f"{path}.resourceClaims", t.get("resourceClaims")))
    if (
        t.get("schedulingConstraints") is not None
        and not gates.enabled("TopologyAwareWorkloadScheduling")
        and not composite
    ):
        problems.append(f.forbidden(f"{path}.schedulingConstraints"))
    problems.extend(podgroup.topology(f"{path}.schedulingConstraints", t.get("schedulingConstraints")))
    problems.extend(podgroup.group_fields(path, t, gates))
    problems.extend(_children(path, t, gates))
    return problems


def composite_policy(path: str, policy: Any) -> list[Problem]:
    """CompositePodGroupSchedulingPolicy: basic | gang{minGroupCount >= 1}."""
    return podgroup.gang_policy(path, policy, "minGroupCount")


def _children(path: str, node: dict[str, Any], gates: FeatureGates) -> list[Problem]:
    problems: list[Problem] = []
    for key, composite in (("podGroupTemplates", False), ("compositePodGroupTemplates", True)):
        at = f"{path}.{key}" if path else key
        items = node.get(key)
        problems.extend(f.max_items(at, items, MAX_TEMPLATES) + f.unique_keys(at, items, "name"))
        for i, t in enumerate(_list(items)):
            problems.extend(_template(f"{at}[{i}]", t, gates, composite))
    return problems


def _depth_ok(t: dict[str, Any], depth: int) -> bool:
    if depth == MAX_DEPTH:
        return False
    return all(_depth_ok(c, depth + 1) for c in _list(t.get("compositePodGroupTemplates")))


def _names_unique(spec: dict[str, Any]) -> list[Problem]:
    """validateWorkloadTemplateNamesUniqueness: a name used on another list of the tree is a Duplicate."""
    problems: list[Problem] = []
    names = {t.get("name") for t in _list(spec.get("podGroupTemplates"))}

    def composites(path: str, items: list[dict[str, Any]]) -> None:
        for i, t in enumerate(items):
            if t.get("name") in names:
                problems.append(
                    (
                        f"{path}.compositePodGroupTemplates[{i}].name",
                        f"Duplicate value: {f.quote(t.get('name'))}",
                        "FieldValueDuplicate",
                    )
                )
        names.update(t.get("name") for t in items)
        for i, t in enumerate(items):
            at = f"{path}.compositePodGroupTemplates[{i}]"
            leaves = _list(t.get("podGroupTemplates"))
            for j, leaf in enumerate(leaves):
                if leaf.get("name") in names:
                    problems.append(
                        (
                            f"{at}.podGroupTemplates[{j}].name",
                            f"Duplicate value: {f.quote(leaf.get('name'))}",
                            "FieldValueDuplicate",
                        )
                    )
            names.update(leaf.get("name") for leaf in leaves)
            composites(at, _list(t.get("compositePodGroupTemplates")))

    composites("spec", _list(spec.get("compositePodGroupTemplates")))
    return problems


def _priority(spec: dict[str, Any]) -> list[Problem]:
    """validateWorkloadPriority: one (priorityClassName, priority) for every template."""
    leaves = _list(spec.get("podGroupTemplates"))
    if len({(t.get("priorityClassName") or "", t.get("priority")) for t in leaves}) > 1:
        return [f.invalid("spec", None, "detected multiple priority configurations")]
    seen = {(t.get("priorityClassName") or "", t.get("priority")) for t in _walk(spec)}
    if len(seen) > 1:
        return [
            f.invalid(
                "spec", None, "all priority and priorityClassName values must be identical, detected multiple values"
            )
        ]
    return []


def validate(obj: dict[str, Any], gates: FeatureGates) -> list[Problem]:
    """See module docstring."""
    spec = _spec(obj)
    problems = _controller_ref("spec.controllerRef", spec.get("controllerRef"))
    lists = {k: spec.get(k) or None for k in ("podGroupTemplates", "compositePodGroupTemplates")}
    problems.extend(f.union("spec", lists, ("podGroupTemplates", "compositePodGroupTemplates")))
    if spec.get("compositePodGroupTemplates") and not gates.enabled("CompositePodGroup"):
        problems.append(f.forbidden("spec.compositePodGroupTemplates"))
    problems.extend(_children("spec", spec, gates))
    problems.extend(_names_unique(spec))
    for i, t in enumerate(_list(spec.get("compositePodGroupTemplates"))):
        if not _depth_ok(t, 1):
            problems.append(
                f.invalid(
                    f"spec.compositePodGroupTemplates[{i}]", None, f"maximum template hierarchy depth is {MAX_DEPTH}"
                )
            )
    problems.extend(_priority(spec))
    return problems


def _template_update(path: str, new: dict[str, Any], old: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    for key in _TEMPLATE_IMMUTABLE:
        problems.extend(f.immutable(f"{path}.{key}", new.get(key), old.get(key)))
    policy, old_policy = new.get("schedulingPolicy") or {}, old.get("schedulingPolicy") or {}
    problems.extend(f.immutable(f"{path}.schedulingPolicy.basic", policy.get("basic"), old_policy.get("basic")))
    problems.extend(f.no_set_no_unset(f"{path}.schedulingPolicy.gang", policy.get("gang"), old_policy.get("gang")))
    problems.extend(_lists_update(path, new, old))
    return problems


def _lists_update(path: str, new: dict[str, Any], old: dict[str, Any]) -> list[Problem]:
    """NoAddItem / NoRemoveItem on every template list, items correlated by name (listType=map)."""
    problems: list[Problem] = []
    for key in ("podGroupTemplates", "compositePodGroupTemplates"):
        at = f"{path}.{key}" if path else key
        olds = {t.get("name"): t for t in _list(old.get(key))}
        news = {t.get("name"): t for t in _list(new.get(key))}
        if set(news) - set(olds):
            problems.append(f.forbidden(at, "items cannot be added"))
        if set(olds) - set(news):
            problems.append(f.forbidden(at, "items cannot be removed"))
        for i, t in enumerate(_list(new.get(key))):
            if t.get("name") in olds:
                problems.extend(_template_update(f"{at}[{i}]", t, olds[t.get("name")]))
    return problems


def validate_update(cur: dict[str, Any], new: dict[str, Any], gates: FeatureGates) -> list[Problem]:
    """See module docstring."""
    spec, old_spec = _spec(new), _spec(cur)
    problems = validate(new, gates)
    if old_spec.get("controllerRef") is not None:
        problems.extend(f.immutable("spec.controllerRef", spec.get("controllerRef"), old_spec.get("controllerRef")))
    problems.extend(_lists_update("spec", spec, old_spec))
    return problems
