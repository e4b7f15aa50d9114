"""The emulator's namespace controller: empties a Terminating namespace, then removes it (kube-controller-manager's
namespaced_resources_deleter.go, run in-process on the API server's event loop).

Contract: `NamespaceController(registry)`; `schedule(namespace)` queues one sync of it on the event loop (at once
without a loop); the registry calls it when a namespace starts terminating and when an object of one is removed.
A sync deletes every object of the namespace not yet being deleted (default options), sets the real controller's
namespace conditions, and once nothing is left removes the "kubernetes" finalizer and then, with no other
finalizer, the namespace. Nothing raises: a failed deletion is retried on the next sync.
More: docs/modules.md#simnamespace_controllerpy.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Any

from gangsched.sim import status as st
from gangsched.sim.namespace_lifecycle import NAMESPACES_KEY, is_terminating
from gangsched.sim.request import RegistryCalls, RequestContext

log = logging.getLogger(__name__)


class NamespaceController:
    def __init__(self, registry: RegistryCalls) -> None:
        self._registry = registry
        self._queued: set[str] = set()
        self._syncing = False
        self._again: set[str] = set()

    def schedule(self, namespace: str) -> None:
        if self._syncing:
            self._again.add(namespace)
            return
        if namespace in self._queued:
            return
        self._queued.add(namespace)
        try:
            asyncio.get_running_loop().call_soon(self._run, namespace)
        except RuntimeError:
            self._run(namespace)

    def _run(self, namespace: str) -> None:
        self._queued.discard(namespace)
        pending = {namespace}
        while pending:
            ns = pending.pop()
            self._syncing = True
            try:
                self.sync(ns)
            except Exception:  # the loop never dies for one namespace
                log.exception("namespace controller: syncing namespace %s failed", ns)
            finally:
                self._syncing = False
            pending |= self._again
            self._again.clear()

    def sync(self, namespace: str) -> None:
        registry = self._registry
        store = registry.store
        entry = store.get(NAMESPACES_KEY, "", namespace)
        if entry is None or not is_terminating(entry.obj):
            return

        counts: Counter[str] = Counter()
        finalizers: Counter[str] = Counter()
        for rtype in registry.namespaced_storage_types():
            skey = (rtype.group, rtype.plural)
            for obj_entry in store.entries(skey, namespace):
                meta = obj_entry.obj["metadata"]
                if not meta.get("deletionTimestamp"):
                    try:
                        registry.delete(
                            rtype,
                            namespace,
                            meta["name"],
                            RequestContext(),
                            options={"propagationPolicy": "Background"},
                        )
                    except st.ApiError as exc:
                        if exc.code != 404:
                            log.warning(
                                "namespace controller: deleting %s %s/%s: %s",
                                rtype.plural,
                                namespace,
                                meta["name"],
                                exc.message,
                            )
            for obj_entry in store.entries(skey, namespace):
                counts[rtype.plural if not rtype.group else f"{rtype.plural}.{rtype.group}"] += 1
                for finalizer in obj_entry.obj["metadata"].get("finalizers") or []:
                    finalizers[str(finalizer)] += 1
        entry = store.get(NAMESPACES_KEY, "", namespace)
        if entry is None:
            return
        if counts:
            self._report(entry, counts, finalizers)
            return
        obj = entry.copy()
        spec = obj.get("spec")
        if isinstance(spec, dict) and "kubernetes" in (spec.get("finalizers") or []):
            spec["finalizers"] = [f for f in spec["finalizers"] if f != "kubernetes"]
        if obj["metadata"].get("finalizers"):
            if obj != entry.obj:
                store.put(NAMESPACES_KEY, obj, previous=entry)
            return
        ns_type = registry.resolve("", "v1", "namespaces")
        assert ns_type is not None
        registry.remove_entry(ns_type, entry)

    def _report(self, entry: Any, counts: Counter[str], finalizers: Counter[str]) -> None:
        now = self._registry.now()
        remaining = ", ".join(f"{res} has {n} resource instances" for res, n in sorted(counts.items()))
        conditions = [
            {
                "type": "NamespaceDeletionDiscoveryFailure",
                "status": "False",
                "reason": "ResourcesDiscovered",
                "message": "All resources successfully discovered",
            },
            {
                "type": "NamespaceDeletionGroupVersionParsingFailure",
                "status": "False",
                "reason": "ParsedGroupVersions",
                "message": "All legacy kube types successfully parsed",
            },
            {
                "type": "NamespaceDeletionContentFailure",
                "status": "False",
                "reason": "ContentDeleted",
                "message": "All content successfully deleted, may be waiting on finalization",
            },
            {
                "type": "NamespaceContentRemaining",
                "status": "True",
                "reason": "SomeResourcesRemain",
                "message": f"Some resources are remaining: {remaining}",
            },
        ]
        if finalizers:
            pending = ", ".join(f"{f} in {n} resource instances" for f, n in sorted(finalizers.items()))
            conditions.append(
                {
                    "type": "NamespaceFinalizersRemaining",
                    "status": "True",
                    "reason": "SomeFinalizersRemain",
                    "message": f"Some content in the namespace has finalizers remaining: {pending}",
                }
            )
        else:
            conditions.append(
                {
                    "type": "NamespaceFinalizersRemaining",
                    "status": "False",
                    "reason": "ContentHasNoFinalizers",
                    "message": "All content-preserving finalizers finished",
                }
            )
        obj = entry.copy()
        old = {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or []}
        for cond in conditions:
            before = old.get(cond["type"])
            same = before is not None and all(before.get(k) == cond[k] for k in ("status", "reason", "message"))
            cond["lastTransitionTime"] = before.get("lastTransitionTime", now) if same and before else now
        obj.setdefault("status", {})["conditions"] = conditions
        if obj != entry.obj:
            self._registry.store.put(NAMESPACES_KEY, obj, previous=entry)
