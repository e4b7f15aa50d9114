"""PodGroup protection, as Kubernetes 1.37 does it: a finalizer stamped at creation, removed once no pod uses it.

Contract:
- `admit_create(obj)`: the PodGroupProtection admission plugin on create (plugin/pkg/admission/podgroupprotection
  admission.go Admit): appends FINALIZER (`scheduling.k8s.io/podgroup-protection`) unless present.
- `PodGroupProtectionController(registry)`: kube-controller-manager's controller (pkg/controller/podgroupprotection
  processPodGroup, hasActivePods): a PodGroup being deleted loses FINALIZER once no pod of its namespace that is not
  Succeeded or Failed names it in `spec.schedulingGroup.podGroupName`; the registry then finishes the deletion if no
  other finalizer remains. `start()` taps the store (pods, PodGroups) and checks every PodGroup; the work runs at
  the next loop iteration, never inside a store write; `sync_all()` runs it now (tests); `stop()` removes the taps.
CompositePodGroups' own finalizer is not handled here.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final

from gangsched.sim.disruption import StoreTap
from gangsched.sim.request import RequestContext
from gangsched.sim.store import StorageKey, WatchEvent

log = logging.getLogger(__name__)

FINALIZER: Final = "scheduling.k8s.io/podgroup-protection"
PODS: StorageKey = ("", "pods")
PODGROUPS: StorageKey = ("scheduling.k8s.io", "podgroups")
_TERMINATED = frozenset({"Succeeded", "Failed"})


def admit_create(obj: dict[str, Any]) -> None:
    """See module docstring."""
    meta = obj.setdefault("metadata", {})
    finalizers = meta.get("finalizers")
    if not isinstance(finalizers, list):
        finalizers = []
    if FINALIZER not in finalizers:
        meta["finalizers"] = [*finalizers, FINALIZER]


def _group_of(pod: dict[str, Any]) -> str | None:
    group = (pod.get("spec") or {}).get("schedulingGroup")
    name = group.get("podGroupName") if isinstance(group, dict) else None
    return name if isinstance(name, str) and name else None


def _deletion_candidate(obj: dict[str, Any]) -> bool:
    """protectionutil.IsDeletionCandidate: being deleted and still carrying the finalizer."""
    meta = obj.get("metadata") or {}
    return bool(meta.get("deletionTimestamp")) and FINALIZER in (meta.get("finalizers") or [])


class PodGroupProtectionController:
    """See module docstring."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry
        self.store = registry.store
        self._taps: list[tuple[StorageKey, StoreTap]] = []
        self._dirty: set[tuple[str, str]] = set()  # (namespace, PodGroup name)
        self._handle: asyncio.Handle | None = None

    def start(self) -> None:
        if self._taps:
            return
        for key, callback in ((PODS, self._on_pod), (PODGROUPS, self._on_podgroup)):
            tap = StoreTap(callback)
            self.store.subscribe(key, tap)
            self._taps.append((key, tap))
        for entry in self.store.entries(PODGROUPS):
            self._on_podgroup_obj(entry.obj)
        self._schedule()

    def stop(self) -> None:
        for key, tap in self._taps:
            self.store.unsubscribe(key, tap)
        self._taps.clear()
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _on_pod(self, event: WatchEvent) -> None:
        pod = event.entry.obj
        name = _group_of(pod)
        if name is not None:  # a pod that goes away or finishes may free its PodGroup
            self._dirty.add((pod["metadata"].get("namespace") or "", name))
            self._schedule()

    def _on_podgroup(self, event: WatchEvent) -> None:
        if event.type != "DELETED":
            self._on_podgroup_obj(event.entry.obj)
            self._schedule()

    def _on_podgroup_obj(self, obj: dict[str, Any]) -> None:
        if _deletion_candidate(obj):
            meta = obj["metadata"]
            self._dirty.add((meta.get("namespace") or "", meta["name"]))

    def _schedule(self) -> None:
        if self._handle is not None or not self._dirty:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (synchronous use): sync_all() runs the work
        self._handle = loop.call_soon(self._run)

    def _run(self) -> None:
        self._handle = None
        self.sync_all()

    def sync_all(self) -> None:
        dirty, self._dirty = self._dirty, set()
        for namespace, name in sorted(dirty):
            try:
                self._sync(namespace, name)
            except Exception:  # one PodGroup's failure never stops the others
                log.exception("podgroup protection: %s/%s could not be synced", namespace, name)

    def _sync(self, namespace: str, name: str) -> None:
        entry = self.store.get(PODGROUPS, namespace, name)
        if entry is None or not _deletion_candidate(entry.obj) or self._in_use(namespace, name):
            return

        obj = entry.copy()
        obj["metadata"]["finalizers"] = [f for f in obj["metadata"]["finalizers"] if f != FINALIZER]
        rtype = self.registry.resolve("scheduling.k8s.io", "v1beta1", "podgroups")
        self.registry.update(rtype, namespace, name, obj, RequestContext())

    def _in_use(self, namespace: str, name: str) -> bool:
        """hasActivePods: a pod of the namespace, not Succeeded or Failed, names the PodGroup."""
        for entry in self.store.entries(PODS):
            pod = entry.obj
            if (pod["metadata"].get("namespace") or "") != namespace or _group_of(pod) != name:
                continue
            if (pod.get("status") or {}).get("phase") not in _TERMINATED:
                return True
        return False
