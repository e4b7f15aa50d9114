"""PodDisruptionBudget selectors for preemption: which pods a PDB protects (pure).

Contract:
- `pdb_selector(obj) -> LabelSelector | None` parses a policy/v1 PodDisruptionBudget's `spec.selector`
  (matchLabels and matchExpressions with In, NotIn, Exists, DoesNotExist). A missing selector gives None
  (selects nothing); an empty selector `{}` selects every pod of the namespace (policy/v1 semantics). Bad
  input raises InvalidField naming the field (`spec.selector.matchExpressions[0].operator`, ...).
- `LabelSelector.matches(labels) -> bool`.
The core treats a pod selected by any PDB as protected: preemption avoids it when another choice exists
(core/preemption.py); the Eviction API has the final word (a 429 makes the scheduler choose again).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gangsched.core.errors import InvalidField

_OPS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True, slots=True)
class LabelSelector:
    labels: tuple[tuple[str, str], ...]
    expressions: tuple[tuple[str, str, frozenset[str]], ...]  # (key, operator, values)

    def matches(self, labels: Mapping[str, str]) -> bool:
        for k, v in self.labels:
            if labels.get(k) != v:
                return False
        for k, op, values in self.expressions:
            present = k in labels
            if op == "In" and (not present or labels[k] not in values):
                return False
            if op == "NotIn" and present and labels[k] in values:
                return False
            if op == "Exists" and not present:
                return False
            if op == "DoesNotExist" and present:
                return False
        return True


def label_selector(raw: Any, *, field: str) -> LabelSelector:
    if not isinstance(raw, Mapping):
        raise InvalidField(field, raw, "must be a label selector object")
    ml = raw.get("matchLabels") or {}
    if not isinstance(ml, Mapping):
        raise InvalidField(f"{field}.matchLabels", ml, "must be a mapping of string to string")
    exprs = []
    me = raw.get("matchExpressions") or []
    if not isinstance(me, list):
        raise InvalidField(f"{field}.matchExpressions", me, "must be a list")
    for i, e in enumerate(me):
        where = f"{field}.matchExpressions[{i}]"
        if not isinstance(e, Mapping):
            raise InvalidField(where, e, "must be an object with key, operator and values")
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if not isinstance(key, str) or not key:
            raise InvalidField(f"{where}.key", key, "must be a non-empty string")
        if op not in _OPS:
            raise InvalidField(f"{where}.operator", op, f"must be one of {list(_OPS)}")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise InvalidField(f"{where}.values", values, "must be a list of strings")
        if op in ("In", "NotIn") and not values:
            raise InvalidField(f"{where}.values", values, f"operator {op} needs at least one value")
        if op in ("Exists", "DoesNotExist") and values:
            raise InvalidField(f"{where}.values", values, f"operator {op} takes no values")
        exprs.append((key, str(op), frozenset(values)))
    return LabelSelector(tuple(sorted((str(k), str(v)) for k, v in ml.items())), tuple(exprs))


def pdb_selector(obj: Mapping[str, Any]) -> LabelSelector | None:
    spec = obj.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise InvalidField("spec", spec, "must be an object")
    raw = spec.get("selector")
    if raw is None:
        return None
    return label_selector(raw, field="spec.selector")
