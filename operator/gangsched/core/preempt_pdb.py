"""PodDisruptionBudget selectors for preemption: which pods a PDB protects (pure).

Contract:
- `pdb_selector(obj) -> LabelSelector | None` parses a policy/v1 PodDisruptionBudget's `spec.selector`
  (matchLabels and matchExpressions with In, NotIn, Exists, DoesNotExist). A missing selector gives None
  (selects nothing); an empty selector `{}` selects every pod of the namespace (policy/v1 semantics). Bad
  input raises InvalidField naming the field (`spec.selector.matchExpressions[0].operator`, ...).
- `LabelSelector.matches(labels) -> bool`.
- `PdbBudget`: one PDB as the Eviction API (pkg/registry/core/pod/storage/eviction.go) uses it: `blocked` when
  status.observedGeneration < metadata.generation (429 "being processed") or status.disruptionsAllowed <= 0
  (429 DisruptionBudget); the selected pods by victim unit (`set_member(key, unit)`, `drop(key)` return the pods
  whose protection may have changed). `pdb_protects(key, budgets)`: the pod would be refused now (selected by
  more than one PDB: 500; by a blocked one; or its unit has more selected pods than disruptionsAllowed).
The core treats protected pods as victims of last resort (core/preemption.py); the Eviction API has the final
word (a 429 is retried with backoff, then the scheduler chooses again: runtime/preemption.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
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


@dataclass(slots=True)
class PdbBudget:
    """What preemption needs of one PodDisruptionBudget: the status the Eviction API decides from, and the pods it
    selects grouped by victim unit (a gang, or a pod alone; None: not a possible victim: unbound or finished)."""

    raw_selector: Any
    selector: LabelSelector | None
    blocked: bool  # the Eviction API refuses every selected pod now (status behind spec, or no disruption allowed)
    allowed: int  # status.disruptionsAllowed
    members: dict[str, str | None] = field(default_factory=dict)
    by_unit: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def from_api(cls, obj: Mapping[str, Any], selector: LabelSelector | None, raw_selector: Any) -> PdbBudget:
        meta = obj.get("metadata") or {}
        status = obj.get("status") or {}
        generation = _int(meta.get("generation"))
        observed = _int(status.get("observedGeneration"))
        allowed = _int(status.get("disruptionsAllowed"))
        return cls(raw_selector, selector, observed < generation or allowed <= 0, allowed)

    def selects(self, labels: Mapping[str, str]) -> bool:
        """As the Eviction API matches: a nil or empty selector selects nothing there."""
        sel = self.selector
        return sel is not None and bool(sel.labels or sel.expressions) and sel.matches(labels)

    def set_member(self, key: str, unit: str | None) -> set[str]:
        """Add or update a selected pod; returns the pods whose protection may have changed."""
        affected = {key}
        if key in self.members:
            old = self.members[key]
            if old == unit:
                return affected
            affected |= self._leave(key, old)
        self.members[key] = unit
        if unit is not None:
            group = self.by_unit.setdefault(unit, set())
            group.add(key)
            affected |= group
        return affected

    def drop(self, key: str) -> set[str]:
        if key not in self.members:
            return set()
        return self._leave(key, self.members.pop(key)) | {key}

    def _leave(self, key: str, unit: str | None) -> set[str]:
        if unit is None:
            return set()
        group = self.by_unit.get(unit)
        if group is None:
            return set()
        group.discard(key)
        if not group:
            del self.by_unit[unit]
        return set(group)

    def protects(self, key: str) -> bool:
        """Would evicting this selected pod's whole unit be refused? Blocked budgets refuse everyone; otherwise a
        unit with more selected pods than disruptionsAllowed would be cut short by refusals part-way."""
        if self.blocked:
            return True
        unit = self.members.get(key)
        return unit is not None and len(self.by_unit.get(unit, ())) > self.allowed


def pdb_protects(key: str, budgets: Iterable[PdbBudget]) -> bool:
    """A pod the Eviction API would refuse now: selected by more than one PDB (an error there), or by one that
    `protects` it. Unready pods, which a real apiserver may let go without spending the budget, are treated as
    healthy ones (the cache keeps no readiness): protection errs on the safe side."""
    mine = [b for b in budgets if key in b.members]
    if len(mine) > 1:
        return True
    return bool(mine) and mine[0].protects(key)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
