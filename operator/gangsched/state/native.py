"""Kubernetes 1.37's own PodGroups (scheduling.k8s.io/v1beta1), read: the quorum of gangs pods name natively.

Contract:
- `NativePodGroups.on_event(kind, obj) -> NativeChange`: keeps each native PodGroup's policy by gang key
  ("namespace/name"): its `gang.minCount` (models/native.py native_policy), or BASIC for `basic: {}`; `changed` says
  whether that gang's policy moved; `problem` is the message of a PodGroup whose policy cannot be read (it then
  declares nothing; said once per object and message).
- `adjust(key, decl, spec) -> GangSpec | None`: for a member that names its gang by `spec.schedulingGroup.podGroupName`
  and a native gang PodGroup of that name, the spec with minCount as its quorum (`source` "native"); the member's
  own gang annotations (min-available...) still win, as for every source. Other gangs are returned unchanged;
  without a native PodGroup the gang has no spec and its pods wait for one (kube-scheduler's GangScheduling
  PreEnqueue waits for the PodGroup too).
- `NativeChange.unsupported`: the spec fields gangsched does not honour yet (models/native.py unsupported_fields),
  as one message, when they change (a Warning `UnsupportedField` on the PodGroup: never silently ignored).
- `basic(key) -> bool`: the native PodGroup of that name has the basic policy: its pods are no gang (the cache
  schedules them one by one).
Status, conditions, events and the finalizer kube-scheduler writes on these objects are not written yet.
Known limit: pods met while their PodGroup was basic are no gang until their next full parse (a change to their
spec or metadata), even if that PodGroup is deleted and created again as a gang (the policy itself is immutable).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Final

from gangsched.core import GangSpec, InvalidField
from gangsched.models.gang import PodGang
from gangsched.models.native import SCHEDULING_GROUP, native_policy, unsupported_fields

BASIC: Final = 0  # the policy of a basic PodGroup (a gang's minCount is >= 1)


@dataclass(frozen=True, slots=True)
class NativeChange:
    key: str
    changed: bool
    problem: str | None = None
    unsupported: str | None = None  # the fields set that gangsched does not honour yet (said once per object)


class NativePodGroups:
    def __init__(self) -> None:
        self.policy: dict[str, int] = {}  # gang key -> minCount, or BASIC
        self._reported: dict[str, str] = {}
        self._unsupported: dict[str, tuple[str, ...]] = {}  # gang key -> the unsupported fields last reported

    def on_event(self, kind: str | None, obj: dict[str, Any]) -> NativeChange:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        before = self.policy.get(key)
        problem = None
        if kind == "DELETED":
            self.policy.pop(key, None)
        else:
            try:
                count = native_policy(obj)
                self.policy[key] = BASIC if count is None else count
            except InvalidField as exc:
                self.policy.pop(key, None)
                problem = f"{exc}: this PodGroup declares no gang"
        if problem is None:
            self._reported.pop(key, None)
        elif self._reported.get(key) == problem:
            problem = None  # said already
        else:
            self._reported[key] = problem
        return NativeChange(key, self.policy.get(key) != before, problem, self._unsupported_notice(kind, key, obj))

    def _unsupported_notice(self, kind: str | None, key: str, obj: dict[str, Any]) -> str | None:
        fields = () if kind == "DELETED" else unsupported_fields(obj)
        if fields == self._unsupported.get(key, ()):
            return None
        if not fields:
            self._unsupported.pop(key, None)
            return None
        self._unsupported[key] = fields
        return (
            f"{', '.join(fields)}: not honoured by gangsched yet (the gang is scheduled on "
            "schedulingPolicy alone); use kube-scheduler for these, or leave them unset"
        )

    def basic(self, key: str) -> bool:
        return self.policy.get(key) == BASIC

    def adjust(self, key: str, decl: PodGang | None, spec: GangSpec | None) -> GangSpec | None:
        if decl is None or decl.declared_by != SCHEDULING_GROUP:
            return spec
        count = self.policy.get(key)
        if not count:
            return spec
        if spec is None:
            return GangSpec(namespace=decl.namespace, name=decl.name, min_member=count, source="native")
        if decl.quorum_key is not None:
            return spec  # the member's min-available annotation wins
        total = spec.total_member if spec.total_member is not None and spec.total_member >= count else None
        return dataclasses.replace(spec, min_member=count, total_member=total)
