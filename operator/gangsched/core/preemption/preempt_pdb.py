"""PodDisruptionBudgets for preemption: which pods a PDB protects (pure; parsed from the API by models/pdb.py).

Contract:
- `PdbBudget`: one PDB as the Eviction API (pkg/registry/core/pod/storage/eviction.go) uses it: `blocked` when
  status.observedGeneration < metadata.generation (429 "being processed") or status.disruptionsAllowed <= 0
  (429 DisruptionBudget); the selected pods by victim unit (`set_member(key, unit)`, `drop(key)` return the pods
  whose protection may have changed). `pdb_protects(key, budgets)`: the pod would be refused now (selected by
  more than one PDB: 500; by a blocked one; or its unit has more selected pods than disruptionsAllowed).
The core treats protected pods as victims of last resort, and under `preemption.pdb: respect` never takes a whole
victim gang with a protected member (core/preemption/victim_search.py); the Eviction API has the final
word (a 429 is retried with backoff, then the scheduler chooses again: runtime/preemption.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from gangsched.core.records.records import LabelSelector


@dataclass(slots=True)
class PdbBudget:
    """What preemption needs of one PodDisruptionBudget: the status the Eviction API decides from, and the pods it
    selects grouped by victim unit (a gang, or a pod alone; None: not a possible victim: unbound or finished)."""

    selector: LabelSelector | None  # None: no selector, or one that could not be parsed
    blocked: bool  # the Eviction API refuses every selected pod now (status behind spec, or no disruption allowed)
    allowed: int  # status.disruptionsAllowed
    members: dict[str, str | None] = field(default_factory=dict)
    by_unit: dict[str, set[str]] = field(default_factory=dict)

    def selects(self, labels: Mapping[str, str]) -> bool:
        """As the Eviction API matches: a nil or empty selector selects nothing there."""
        sel = self.selector
        return sel is not None and not sel.empty and sel.matches(labels)

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
