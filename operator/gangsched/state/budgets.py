"""PodDisruptionBudgets kept current from watch events, and the victims the Eviction API would refuse now (no API call,
no LIST).

Contract: `DisruptionBudgets(cluster)` keeps per namespace each PDB's selector, its status fields (models/pdb.py) and
the pods it selects, matched incrementally.
- `on_pdb(kind, obj) -> (changed, error)`: `changed` when a pod's protection moved; `error` for an invalid selector
  (the PDB then selects nothing).
- `pod_upserted(key, namespace, labels)`, `pod_removed(key)`; `selected(key)`: some PDB selects the pod.
A pod is marked protected in the SchedulerState (`set_protected`) while the Eviction API would refuse it
(core/preemption/preempt_pdb.py `pdb_protects`), re-evaluated when it or one of its budgets changes.
More: docs/modules.md#statebudgetspy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gangsched.core import InvalidField, PdbBudget, SchedulerState, pdb_protects
from gangsched.models.pdb import pdb_budget, pdb_selector


class DisruptionBudgets:
    def __init__(self, cluster: SchedulerState) -> None:
        self.cluster = cluster
        self._budgets: dict[str, dict[str, PdbBudget]] = {}  # namespace -> PDB name -> budget
        self._protected: set[str] = set()  # pods marked protected from here
        self._labels: dict[str, Mapping[str, str]] = {}  # pod key -> labels

    def on_pdb(self, kind: str | None, obj: Mapping[str, Any]) -> tuple[bool, str | None]:
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace") or "default", meta.get("name", "")
        budgets = self._budgets.setdefault(namespace, {})
        old = budgets.pop(name, None)
        affected: set[str] = set(old.members) if old is not None else set()
        error = None
        if kind != "DELETED":
            try:
                selector = pdb_selector(obj)
            except InvalidField as exc:
                selector, error = None, str(exc)
            budget = pdb_budget(obj, selector)
            if old is not None and old.selector == selector:
                budget.members, budget.by_unit = old.members, old.by_unit  # the same pods: only the status moved
            else:  # a new selector: match the namespace's pods once
                prefix = namespace + "/"
                for key, labels in self._labels.items():
                    if key.startswith(prefix) and budget.selects(labels):
                        budget.set_member(key, self._victim_unit(key))
            budgets[name] = budget
            affected |= set(budget.members)
        if not budgets:
            del self._budgets[namespace]
        return self._refresh(affected, budget_changed=True), error

    def pod_upserted(self, key: str, namespace: str, labels: Mapping[str, str]) -> None:
        """Memberships follow the labels, the unit the binding; protection is re-evaluated for the pods whose unit
        counts moved."""
        self._labels[key] = labels
        if not self._budgets and key not in self._protected:
            return
        affected: set[str] = {key}
        unit = self._victim_unit(key)
        for budget in self._budgets.get(namespace, {}).values():
            if budget.selects(labels):
                affected |= budget.set_member(key, unit)
            elif key in budget.members:
                affected |= budget.drop(key)
        self._refresh(affected, budget_changed=False)

    def selected(self, key: str) -> bool:
        """Whether some PodDisruptionBudget selects the pod, whatever its status says (runtime/preemption.py evicts
        such members of a victim gang first)."""
        return any(key in budget.members for budget in self._budgets.get(key.partition("/")[0], {}).values())

    def pod_removed(self, key: str) -> None:
        self._protected.discard(key)
        self._labels.pop(key, None)
        affected: set[str] = set()
        for budget in self._budgets.get(key.partition("/")[0], {}).values():
            affected |= budget.drop(key)
        if affected:
            self._refresh(affected, budget_changed=False)

    def _refresh(self, keys: Iterable[str], *, budget_changed: bool) -> bool:
        """Mark or unmark pods protected as the Eviction API would decide; True when a pod's protection changed.
        `budget_changed`: a PDB moved, so an earlier refusal of its pods is forgotten when it now allows them."""
        changed = False
        cluster = self.cluster
        for key in keys:
            if key not in cluster.pods:
                self._protected.discard(key)
                continue
            if pdb_protects(key, self._budgets.get(key.partition("/")[0], {}).values()):
                if key not in self._protected or key not in cluster.protected:
                    self._protected.add(key)
                    cluster.set_protected(key, True)
                    changed = True
            elif key in self._protected or (budget_changed and key in cluster.protected):
                self._protected.discard(key)
                cluster.set_protected(key, False)
                changed = True
        return changed

    def _victim_unit(self, key: str) -> str | None:
        """The victim unit of a bound, unfinished pod (its gang, or itself); None: not a possible victim."""
        pod = self.cluster.pods.get(key)
        if pod is None or pod.node_name is None or pod.terminal:
            return None
        return pod.gang or key
