"""RuntimeClass (node.k8s.io/v1): its strategy, and the RuntimeClass admission plugin for new pods (pure).

Contract:
- `validate_runtime_class(obj)` / `validate_runtime_class_update(cur, new)` -> problems (field, detail, reason):
  `handler` a DNS-1123 label, immutable; `overhead.podFixed` quantities >= 0.
- `admit_pod(spec, lookup)`: the plugin on pod CREATE (Admit then Validate); `lookup(name)` gives the class or
  None. Raises `Rejected(why)` (403 Forbidden) for an unknown class, an overhead other than the class's, a
  nodeSelector conflict, or an overhead without a class defining one; sets spec.overhead from the class and
  merges its nodeSelector and tolerations into the pod's.
More: docs/modules.md#simruntimeclasspy.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from gangsched.core import InvalidField, parse_quantity

Problem = tuple[str, str, str]
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class Rejected(Exception):
    """The admission plugin's answer: the pod is forbidden, for `why`."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def validate_runtime_class(obj: Mapping[str, Any]) -> list[Problem]:
    """See module docstring."""
    problems: list[Problem] = []
    handler = obj.get("handler") or ""  # Go's zero value: a missing handler is validated as ""
    if isinstance(handler, str) and (len(handler) > 63 or not _DNS1123_LABEL.match(handler)):
        detail = (
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start"
            " and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is"
            " '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        )
        if len(handler) > 63:
            detail = "must be no more than 63 characters"
        problems.append(("handler", f'Invalid value: "{handler}": {detail}', "FieldValueInvalid"))
    fixed = (obj.get("overhead") or {}).get("podFixed") or {}
    for resource, value in fixed.items() if isinstance(fixed, dict) else ():
        try:
            parse_quantity(value, field=resource)
        except InvalidField:
            detail = f'Invalid value: "{value}": must be greater than or equal to 0'
            problems.append((f"overhead.podFixed[{resource}]", detail, "FieldValueInvalid"))
    return problems


def validate_runtime_class_update(cur: Mapping[str, Any], new: Mapping[str, Any]) -> list[Problem]:
    """See module docstring."""
    problems = validate_runtime_class(new)
    if new.get("handler") != cur.get("handler"):
        problems.append(("handler", f'Invalid value: "{new.get("handler")}": field is immutable', "FieldValueInvalid"))
    return problems


def _quantities(resources: Any) -> dict[str, Fraction] | None:
    if not isinstance(resources, dict):
        return None
    out: dict[str, Fraction] = {}
    for name, value in resources.items():
        try:
            out[str(name)] = parse_quantity(value, field=str(name))
        except InvalidField:
            return {"<invalid>": Fraction(-1)}  # never equal to a class's valid overhead
    return out


def _set_overhead(spec: dict[str, Any], runtime_class: Mapping[str, Any] | None) -> None:
    overhead = runtime_class.get("overhead") if runtime_class is not None else None
    if not isinstance(overhead, dict):
        if spec.get("overhead") is not None:  # validateOverhead, no class with an overhead
            raise Rejected("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
        return
    fixed = overhead.get("podFixed")
    given = spec.get("overhead")
    if given is not None and _quantities(given) != _quantities(fixed or {}):  # nil and empty are equal
        raise Rejected("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
    if fixed:
        spec["overhead"] = dict(fixed)
    else:
        spec.pop("overhead", None)


def _set_scheduling(spec: dict[str, Any], runtime_class: Mapping[str, Any]) -> None:
    scheduling = runtime_class.get("scheduling")
    if not isinstance(scheduling, dict):
        return
    selector = scheduling.get("nodeSelector") or {}
    pod_selector = spec.get("nodeSelector")
    if pod_selector is None:
        merged = dict(selector)
    else:
        merged = dict(pod_selector)
        for key, value in selector.items():
            if key in merged and merged[key] != value:
                raise Rejected(
                    f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value};"
                    f" pod.spec.nodeSelector[{key}] = {merged[key]}"
                )
            merged[key] = value
    if merged or pod_selector is not None:
        spec["nodeSelector"] = merged
    tolerations = merge_tolerations(list(spec.get("tolerations") or []), list(scheduling.get("tolerations") or []))
    if tolerations:
        spec["tolerations"] = tolerations


def _is_superset(ss: Mapping[str, Any], t: Mapping[str, Any]) -> bool:
    """pkg/util/tolerations isSuperset: whether `ss` tolerates everything `t` does."""
    if dict(ss) == dict(t):
        return True
    if t.get("key", "") != ss.get("key", "") and (ss.get("key", "") != "" or ss.get("operator") != "Exists"):
        return False
    if t.get("effect", "") != ss.get("effect", "") and ss.get("effect", "") != "":
        return False
    limit = ss.get("tolerationSeconds")
    if ss.get("effect") == "NoExecute" and limit is not None:
        seconds = t.get("tolerationSeconds")
        if seconds is None or seconds > limit:
            return False
    operator = ss.get("operator") or "Equal"
    if operator == "Equal":
        return (t.get("operator") or "Equal") == "Equal" and t.get("value", "") == ss.get("value", "")
    return operator == "Exists"


def merge_tolerations(first: list[Any], second: list[Any]) -> list[Any]:
    """pkg/util/tolerations MergeTolerations: both lists, without tolerations a kept one already covers."""
    everything = [t for t in first + second if isinstance(t, dict)]
    merged: list[dict[str, Any]] = []
    for i, t in enumerate(everything):
        if any(_is_superset(kept, t) for kept in merged):
            continue
        if any(t != other and _is_superset(other, t) for other in everything[i + 1 :]):
            continue
        merged.append(t)
    return merged


def admit_pod(spec: dict[str, Any], lookup: Callable[[str], Mapping[str, Any] | None]) -> None:
    """See module docstring: mutates `spec` or raises Rejected."""
    name = spec.get("runtimeClassName")
    runtime_class = None
    if name is not None:
        runtime_class = lookup(str(name))
        if runtime_class is None:
            raise Rejected(f'pod rejected: RuntimeClass "{name}" not found')
    _set_overhead(spec, runtime_class)
    if runtime_class is not None:
        _set_scheduling(spec, runtime_class)
