"""Victims' protection from PodDisruptionBudget status, as the Eviction API decides (core/preemption/preempt_pdb.py,
read from the API by models/pdb.py) and as the cache keeps it current from watch events (state/cache.py): no API call,
pods matched incrementally.

The rules mirror kubernetes/kubernetes pkg/registry/core/pod/storage/eviction.go: checkAndDecrement (429 while
status.observedGeneration < metadata.generation, 429 when status.disruptionsAllowed is 0), the 500 for a pod
selected by two PDBs, and getPodDisruptionBudgets (a nil or empty selector matches nothing)."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.core.preemption.preempt_pdb import PdbBudget, pdb_protects
from gangsched.models.pdb import pdb_budget
from gangsched.models.selectors import label_selector
from gangsched.state.cache import ClusterCache


def pdb(name: str, *, allowed: int, generation: int = 1, observed: int = 1, selector: Any = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "generation": generation},
        "spec": {"selector": {"matchLabels": {"app": "a"}} if selector is None else selector},
        "status": {"disruptionsAllowed": allowed, "observedGeneration": observed},
    }


def budget(obj: dict[str, Any]) -> PdbBudget:
    raw = obj["spec"]["selector"]
    return pdb_budget(obj, label_selector(raw, field="spec.selector"))


@pytest.mark.parametrize(
    ("allowed", "generation", "observed", "blocked"),
    [(0, 1, 1, True), (2, 1, 1, False), (2, 2, 1, True), (-1, 1, 1, True)],
    ids=["exhausted", "allows", "being-processed", "negative"],
)
def test_blocked_budgets(allowed: int, generation: int, observed: int, blocked: bool) -> None:
    b = budget(pdb("x", allowed=allowed, generation=generation, observed=observed))
    assert b.blocked is blocked
    b.set_member("default/p", "default/p")
    assert pdb_protects("default/p", [b]) is blocked


def test_a_unit_larger_than_the_budget_is_protected() -> None:
    b = budget(pdb("x", allowed=2))
    for i in range(3):
        b.set_member(f"default/g-{i}", "default/g")
    b.set_member("default/alone", "default/alone")
    assert pdb_protects("default/g-0", [b])  # 3 members of gang g, 2 disruptions allowed
    assert not pdb_protects("default/alone", [b])
    affected = b.drop("default/g-2")
    assert affected == {"default/g-0", "default/g-1", "default/g-2"}
    assert not pdb_protects("default/g-0", [b])


def test_two_budgets_protect_and_empty_selectors_select_nothing() -> None:
    one, two = budget(pdb("one", allowed=5)), budget(pdb("two", allowed=5))
    one.set_member("default/p", "default/p")
    two.set_member("default/p", "default/p")
    assert pdb_protects("default/p", [one, two])
    assert not budget(pdb("e", allowed=0, selector={})).selects({"app": "a"})


def _pod(name: str, labels: dict[str, str], *, node: str | None = "n1") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "other", "containers": [{"name": "c", "image": "i"}]}
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"u-{name}",
            "labels": labels,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def test_the_cache_follows_pdb_status_and_pod_labels() -> None:
    changes: list[int] = []
    cache = ClusterCache(scheduler_name="gangsched", on_change=lambda: changes.append(1))
    cache.on_pod_list([_pod("a-0", {"app": "a"}), _pod("b-0", {"app": "b"})])
    cache.on_pdb("ADDED", pdb("a", allowed=0))
    assert cache.cluster.protected == {"default/a-0"}
    cache.on_pdb("MODIFIED", pdb("a", allowed=1))  # the controller computed a budget: free again
    assert cache.cluster.protected == set()
    cache.on_pdb("MODIFIED", pdb("a", allowed=1, generation=2, observed=1))  # spec changed, not yet observed
    assert cache.cluster.protected == {"default/a-0"}
    cache.on_pod_event("MODIFIED", _pod("b-0", {"app": "a"}))  # relabelled into the budget
    assert cache.cluster.protected == {"default/a-0", "default/b-0"}
    cache.on_pod_event("MODIFIED", _pod("b-0", {"app": "c"}))
    assert cache.cluster.protected == {"default/a-0"}
    cache.cluster.eviction_failed("default/b-0")  # refused for some other reason: kept...
    cache.on_pdb("DELETED", pdb("a", allowed=0))
    assert cache.cluster.protected == {"default/b-0"}  # ...while a's pods are free once the PDB is gone
