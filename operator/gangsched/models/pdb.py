"""policy/v1 PodDisruptionBudgets read from the API into the core's `PdbBudget` (core/preemption/preempt_pdb.py).

Contract:
- `pdb_selector(obj) -> LabelSelector | None`: the PDB's `spec.selector` (matchLabels, matchExpressions with In,
  NotIn, Exists, DoesNotExist). A missing selector gives None; `{}` gives the empty selector (what either selects
  is the Eviction API's rule, kept by PdbBudget.selects). Bad input raises InvalidField naming the field
  (`spec.selector.matchExpressions[0].operator`, ...).
- `pdb_budget(obj, selector) -> PdbBudget`: the status the Eviction API decides from
  (pkg/registry/core/pod/storage/eviction.go checkAndDecrement): blocked while status.observedGeneration <
  metadata.generation or status.disruptionsAllowed <= 0. Missing or non-integer numbers read as 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gangsched.core import InvalidField, LabelSelector, PdbBudget
from gangsched.models.selectors import label_selector


def pdb_selector(obj: Mapping[str, Any]) -> LabelSelector | None:
    spec = obj.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise InvalidField("spec", spec, "must be an object")
    raw = spec.get("selector")
    if raw is None:
        return None
    return label_selector(raw, field="spec.selector")


def pdb_budget(obj: Mapping[str, Any], selector: LabelSelector | None) -> PdbBudget:
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    generation = _int(meta.get("generation"))
    observed = _int(status.get("observedGeneration"))
    allowed = _int(status.get("disruptionsAllowed"))
    return PdbBudget(selector, observed < generation or allowed <= 0, allowed)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
