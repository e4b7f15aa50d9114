"""What the cache knows of gangs inferred from workloads (models/inferred.py): the opted-in namespaces, the pods that
could join such a gang, and the workloads read so far.

Contract:
- `InferredGangs(all_namespaces=...)`: `namespaces` opted in, `active(namespace)`.
- `pod_declared(pod_key, obj, rank) -> PodGang | None`: for one of our pods declaring no gang, remembers it and
  returns its gang (complete once its workload is read; without a spec while it waits); the pod's gang annotations
  override fields as for a PodGroup. `forget_pod(pod_key)`.
- Each workload is read once (GET by the runtime, no watch per kind): `take_wanted()`, `workload_read(ref, info)`
  (None: scheduled as pods without a gang) returns the pods to declare again; `owner(gang_key)`, `reading(gang_key)`.
- `namespace_set(names)`, `namespace_changed(name, on)`: the candidates whose declaration changes.
More: docs/modules.md#stateinferredpy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gangsched.core import gang_key
from gangsched.models.annotations import apply_overrides, gang_overrides
from gangsched.models.gang import PodGang
from gangsched.models.inferred import InferredMember, OwnerRef, WorkloadInfo, WorkloadRef, infer_member, inferred_spec

_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
INFERRED_BY = "inferred from its workload"


@dataclass(frozen=True, slots=True)
class _Candidate:
    namespace: str
    member: InferredMember
    rank: int | None
    overrides: tuple[tuple[str, Any], ...] = ()  # the GangSpec fields the pod's annotations set


class InferredGangs:
    def __init__(self, *, all_namespaces: bool) -> None:
        self.all_namespaces = all_namespaces
        self.namespaces: set[str] = set()
        self._candidates: dict[str, _Candidate] = {}
        self._by_workload: dict[str, set[str]] = {}  # workload key -> candidate pod keys
        self._workloads: dict[str, WorkloadInfo | None] = {}  # read so far (None: unreadable / no gang)
        self._owners: dict[str, OwnerRef] = {}  # gang key -> the PodGroup's owner
        self._gang_workload: dict[str, str] = {}  # gang key -> its workload's key
        self._workload_gangs: dict[str, set[str]] = {}  # the inverse (an LWS has a gang per group)
        self._wanted: dict[str, WorkloadRef] = {}
        self._asked: set[str] = set()

    def active(self, namespace: str) -> bool:
        return self.all_namespaces or namespace in self.namespaces

    def candidate(self, pod_key: str) -> tuple[InferredMember, int | None] | None:
        found = self._candidates.get(pod_key)
        return (found.member, found.rank) if found is not None else None

    def pod_declared(self, pod_key: str, obj: dict[str, Any], rank: int | None) -> PodGang | None:
        """Record the pod as a candidate (or forget it) and return its declaration (see the module docstring)."""
        member = infer_member(obj)
        if member is None or len(member.gang) > 253 or not _NAME.fullmatch(member.gang):
            self.forget_pod(pod_key)
            return None
        namespace = member.workload.namespace
        old = self._candidates.get(pod_key)
        if old is not None and old.member.workload.key != member.workload.key:
            self.forget_pod(pod_key)
        meta = obj.get("metadata") or {}
        overrides = gang_overrides(
            meta.get("annotations") or {}, meta.get("labels") or {}, namespace=namespace, name=member.gang
        )
        self._candidates[pod_key] = _Candidate(namespace, member, rank, tuple(overrides.items()))
        self._by_workload.setdefault(member.workload.key, set()).add(pod_key)
        return self.declaration(pod_key)

    def declaration(self, pod_key: str) -> PodGang | None:
        found = self._candidates.get(pod_key)
        if found is None or not self.active(found.namespace):
            return None
        member = found.member
        wkey = member.workload.key
        info = self._workloads.get(wkey)
        if wkey not in self._workloads and wkey not in self._asked:
            self._wanted[wkey] = member.workload
        if info is None and wkey in self._workloads:
            return None  # read, and unreadable or no gang: a pod without a gang
        gang = gang_key(found.namespace, member.gang)
        if self._gang_workload.setdefault(gang, wkey) != wkey:
            return None  # two workloads of one name (a Job and a RayCluster "x"): the first one's gang only
        self._workload_gangs.setdefault(wkey, set()).add(gang)
        spec = None  # while the workload is read, its pods wait
        if info is not None:
            if info.owner.uid:
                self._owners[gang] = info.owner
            size, total = info.size, info.total
            if member.size is not None:  # an LWS group: its own size (LeaderReady: the leader is the quorum)
                size, total = (member.size if info.size == info.total else 1), member.size
            spec = inferred_spec(found.namespace, member.gang, size, total, info.roles)
            spec = apply_overrides(spec, dict(found.overrides))
        return PodGang(
            namespace=found.namespace,
            name=member.gang,
            role=member.role,
            spec=spec,
            overrides=found.overrides,
            declared_by=INFERRED_BY,
        )

    def forget_pod(self, pod_key: str) -> None:
        found = self._candidates.pop(pod_key, None)
        if found is None:
            return
        wkey = found.member.workload.key
        pods = self._by_workload.get(wkey)
        if pods is not None:
            pods.discard(pod_key)
            if not pods:  # no pod refers to it any more: read it again if one comes back
                del self._by_workload[wkey]
                self._workloads.pop(wkey, None)
                self._wanted.pop(wkey, None)
                self._asked.discard(wkey)
                for gang in self._workload_gangs.pop(wkey, ()):
                    del self._gang_workload[gang]
                    self._owners.pop(gang, None)

    def take_wanted(self) -> list[WorkloadRef]:
        refs = list(self._wanted.values())
        self._asked.update(self._wanted)
        self._wanted.clear()
        return refs

    def workload_read(self, ref: WorkloadRef, info: WorkloadInfo | None) -> list[str]:
        """Record what reading the workload gave; the candidate pods whose declaration may change."""
        self._asked.discard(ref.key)
        pods = self._by_workload.get(ref.key)
        if pods is None:
            return []  # its pods went meanwhile
        self._workloads[ref.key] = info
        return sorted(pods)

    def owner(self, gang: str) -> OwnerRef | None:
        return self._owners.get(gang)

    def is_inferred(self, gang: str) -> bool:
        return gang in self._gang_workload

    def reading(self, gang: str) -> bool:
        """The gang's workload is still to be read (its PodGroup waits for its owner)."""
        wkey = self._gang_workload.get(gang)
        return wkey is not None and wkey not in self._workloads

    def namespace_changed(self, namespace: str, on: bool) -> list[str]:
        """A namespace opted in (or out): the candidate pods to declare again."""
        if on == (namespace in self.namespaces):
            return []
        if on:
            self.namespaces.add(namespace)
        else:
            self.namespaces.discard(namespace)
        if self.all_namespaces:
            return []
        return sorted(k for k, c in self._candidates.items() if c.namespace == namespace)

    def namespace_set(self, namespaces: set[str]) -> list[str]:
        """A full list of the opted-in namespaces."""
        changed: list[str] = []
        for ns in sorted(self.namespaces ^ namespaces):
            changed += self.namespace_changed(ns, ns in namespaces)
        return changed

    def sizes(self) -> dict[str, int]:
        return {
            "candidates": len(self._candidates),
            "workloads": len(self._by_workload),
            "owners": len(self._owners),
            "gangs": len(self._gang_workload),
        }
