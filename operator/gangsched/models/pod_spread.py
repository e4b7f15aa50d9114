"""A pod's `spec.topologySpreadConstraints` read into the core's `SpreadConstraint` records (core/records/records.py).

Contract:
- `spread_constraints(spec, *, namespace, labels, classes) -> constraints`: DoNotSchedule ones first (filter),
  ScheduleAnyway ones `hard` False (they order candidates), read as kube-scheduler's filterTopologySpreadConstraints:
  a nil selector selects no pod, defaults minDomains 1, nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore,
  matchLabelKeys merged in, `selfMatch`; the selectors' label keys are registered in `classes` (a ClassRegistry).
- Validated as the apiserver's validateTopologySpreadConstraints does.
Bad input raises InvalidField naming the field path (e.g. `spec.topologySpreadConstraints[0].maxSkew`).
More: docs/modules.md#modelspod_spreadpy.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from gangsched.core import ClassRegistry, InvalidField, LabelSelector, SpreadConstraint
from gangsched.models.fields import INT32_MAX, as_list, as_object
from gangsched.models.selectors import label_selector

FIELD = "spec.topologySpreadConstraints"
_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
_POLICIES = ("Honor", "Ignore")


def _int32(raw: Any, *, field: str) -> int:
    if not isinstance(raw, int) or isinstance(raw, bool) or not 1 <= raw <= INT32_MAX:
        raise InvalidField(field, raw, f"must be an integer from 1 to {INT32_MAX}")
    return raw


def _policy(raw: Any, default: str, *, field: str) -> bool:
    """True for Honor."""
    value = default if raw is None else raw
    if value not in _POLICIES:
        raise InvalidField(field, raw, "must be Honor or Ignore")
    return value == "Honor"


def _selector(entry: Mapping[str, Any], labels: Mapping[str, str], *, field: str) -> LabelSelector | None:
    """The labelSelector with the matchLabelKeys values merged in (None: a nil selector, matching no pod)."""
    raw = entry.get("labelSelector")
    keys = as_list(entry.get("matchLabelKeys"), field=f"{field}.matchLabelKeys")
    if raw is None:
        if keys:
            raise InvalidField(f"{field}.matchLabelKeys", keys, "must not be set when labelSelector is not set")
        return None
    selector = label_selector(raw, field=f"{field}.labelSelector")
    named = {k for k, _ in selector.labels} | {r.key for r in selector.expressions}
    merged = dict(selector.labels)
    for i, key in enumerate(keys):
        if not isinstance(key, str) or not key:
            raise InvalidField(f"{field}.matchLabelKeys[{i}]", key, "must be a non-empty string")
        if key in named:
            raise InvalidField(f"{field}.matchLabelKeys[{i}]", key, "must not be a key the labelSelector names")
        if key in labels:
            merged[key] = labels[key]
    if len(merged) == len(selector.labels):
        return selector
    return LabelSelector(tuple(sorted(merged.items())), selector.expressions)


def _constraint(
    raw: Any, labels: Mapping[str, str], namespace: str, classes: ClassRegistry, *, field: str
) -> tuple[str, SpreadConstraint]:
    entry = as_object(raw, field=field)
    max_skew = _int32(entry.get("maxSkew"), field=f"{field}.maxSkew")
    key = entry.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise InvalidField(f"{field}.topologyKey", key, "must be a non-empty label key")
    action = entry.get("whenUnsatisfiable")
    if action not in _ACTIONS:
        raise InvalidField(f"{field}.whenUnsatisfiable", action, "must be DoNotSchedule or ScheduleAnyway")
    min_domains = 1
    if entry.get("minDomains") is not None:
        min_domains = _int32(entry.get("minDomains"), field=f"{field}.minDomains")
        if action != "DoNotSchedule":
            raise InvalidField(
                f"{field}.minDomains", min_domains, "may only be set with whenUnsatisfiable DoNotSchedule"
            )
    selector = _selector(entry, labels, field=field)
    if selector is not None:  # the workspace matches classes by these labels
        classes.register_label_keys([*(k for k, _ in selector.labels), *(r.key for r in selector.expressions)])
    return action, SpreadConstraint(
        max_skew=max_skew,
        topology_key=sys.intern(key),
        namespace=namespace,
        selector=selector,
        self_match=selector is not None and selector.matches(labels),
        min_domains=min_domains,
        honor_affinity=_policy(entry.get("nodeAffinityPolicy"), "Honor", field=f"{field}.nodeAffinityPolicy"),
        honor_taints=_policy(entry.get("nodeTaintsPolicy"), "Ignore", field=f"{field}.nodeTaintsPolicy"),
        hard=action == "DoNotSchedule",
    )


def spread_constraints(
    spec: Mapping[str, Any], *, namespace: str, labels: Mapping[str, str], classes: ClassRegistry
) -> tuple[SpreadConstraint, ...]:
    """The constraints, DoNotSchedule ones first; see the module docstring. (The label keys their selectors read
    are registered in `classes`, the registry the pod's class is interned in.)"""
    hard: list[SpreadConstraint] = []
    soft: list[SpreadConstraint] = []
    seen: set[tuple[str, str]] = set()
    for i, raw in enumerate(as_list(spec.get("topologySpreadConstraints"), field=FIELD)):
        field = f"{FIELD}[{i}]"
        action, constraint = _constraint(raw, labels, namespace, classes, field=field)
        pair = (constraint.topology_key, action)
        if pair in seen:
            raise InvalidField(field, f"{pair[0]}/{pair[1]}", "must not repeat a (topologyKey, whenUnsatisfiable) pair")
        seen.add(pair)
        (hard if constraint.hard else soft).append(constraint)
    return (*hard, *soft)
