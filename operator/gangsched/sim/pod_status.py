"""Writes to pods/status, as kube-apiserver's pod status strategy prepares them.

Oracle: kubernetes/kubernetes pkg/registry/core/pod/strategy.go, `podStatusStrategy.PrepareForUpdate`:
`newPod.Spec = oldPod.Spec`, `newPod.DeletionTimestamp = nil`, `newPod.OwnerReferences = oldPod.OwnerReferences`,
status.qosClass backfilled from the old pod when the new one has none, and `preserveOldObservedGeneration`
(status.observedGeneration and each condition's observedGeneration kept when the request leaves them 0). Every
other part of the request's metadata (labels, annotations, finalizers) is taken as sent: the pods/status grant can
relabel and annotate a pod, never change what it runs. What rest.BeforeUpdate does for every kind afterwards
(generation, uid, creationTimestamp, an existing deletionTimestamp kept; no new finalizers on a deleting object) is
the registry's (registry.py `_commit`).

Contract: `prepare_update(old, new) -> dict`: the object to store, built from `new` (not modified) and `old`.
"""

from __future__ import annotations

import copy
from typing import Any


def prepare_update(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(new)
    if "spec" in old:
        result["spec"] = copy.deepcopy(old["spec"])
    else:
        result.pop("spec", None)
    meta = result.get("metadata")
    if not isinstance(meta, dict):
        meta = result["metadata"] = {}
    meta.pop("deletionTimestamp", None)
    owners = (old.get("metadata") or {}).get("ownerReferences")
    if owners:
        meta["ownerReferences"] = copy.deepcopy(owners)
    else:
        meta.pop("ownerReferences", None)
    _backfill_status(old.get("status") or {}, result)
    return result


def _backfill_status(old_status: dict[str, Any], result: dict[str, Any]) -> None:
    status = result.get("status")
    if not isinstance(status, dict):
        if not old_status.get("qosClass") and not old_status.get("observedGeneration"):
            return
        status = result["status"] = {}
    for key in ("qosClass", "observedGeneration"):
        if not status.get(key) and old_status.get(key):
            status[key] = old_status[key]
    _keep_condition_generations(old_status.get("conditions") or [], status.get("conditions") or [])


def _keep_condition_generations(old: list[Any], new: list[Any]) -> None:
    """preserveOldObservedGeneration: per condition type, in order, a new condition without observedGeneration
    takes the old one's."""
    remembered: dict[str, list[Any]] = {}
    for condition in old:
        if isinstance(condition, dict):
            remembered.setdefault(str(condition.get("type")), []).append(condition.get("observedGeneration"))
    for condition in new:
        if not isinstance(condition, dict):
            continue
        olds = remembered.get(str(condition.get("type"))) or []
        previous = olds.pop(0) if olds else None
        if not condition.get("observedGeneration") and previous:
            condition["observedGeneration"] = previous
