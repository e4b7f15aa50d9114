"""Grove's PodGangs (scheduler.grove.io/v1alpha1), read: the gang trees of the pods they reference.

Contract:
- `GrovePodGangs.on_event(kind, obj) -> GroveChange`: keeps each PodGang's tree (models/grove.py); `pods` whose
  membership may have moved; `problem` (an unreadable PodGang declares nothing) and `unsupported` fields, each said
  once per object and message.
- `declaration(pod_key) -> PodGang | None`: the gang of the Grove pod group a PodGang references the pod from (used
  only for pods declaring no gang of their own: a native PodGroup wins), else None.
- `tier_keys`: the node labels of the topology's tiers. Grove's scheduling gate needs nothing here: gated members
  make their gang wait (core/gang/readiness.py). More: docs/modules.md#stategrovepy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gangsched.core import InvalidField
from gangsched.models.gang import PodGang
from gangsched.models.grove import DECLARED_BY, GroveGang, parse_podgang


@dataclass(frozen=True, slots=True)
class GroveChange:
    key: str
    pods: frozenset[str]
    problem: str | None = None
    unsupported: str | None = None


class GrovePodGangs:
    def __init__(self) -> None:
        self.gangs: dict[str, GroveGang] = {}
        self.uids: dict[str, str] = {}
        self.tier_keys: tuple[str, ...] = ()
        self._pods: dict[str, str] = {}  # pod key -> its PodGang's key
        self._said: dict[str, tuple[str | None, str | None]] = {}

    def on_event(self, kind: str | None, obj: dict[str, Any]) -> GroveChange:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        old = self.gangs.pop(key, None)
        before = frozenset(old.members) if old is not None else frozenset()
        for pod in before:
            self._pods.pop(pod, None)
        problem = unsupported = None
        if kind == "DELETED":
            self.uids.pop(key, None)
            self._said.pop(key, None)
            return GroveChange(key, before)
        self.uids[key] = str(meta.get("uid") or "")
        try:
            gang = parse_podgang(obj, self.tier_keys)
        except InvalidField as exc:
            problem = f"{exc}: this PodGang declares no gang until it is fixed"
            gang = None
        if gang is not None:
            self.gangs[key] = gang
            for pod in gang.members:
                self._pods[pod] = key
            if gang.unsupported:
                unsupported = (
                    f"{', '.join(gang.unsupported)}: not honoured by gangsched (the PodGang is scheduled without"
                    " them: only required topology constraints are)"
                )
        said = self._said.get(key, (None, None))
        self._said[key] = (problem, unsupported)
        now = frozenset(gang.members) if gang is not None else frozenset()
        return GroveChange(
            key, before | now, problem if problem != said[0] else None, unsupported if unsupported != said[1] else None
        )

    def declaration(self, pod_key: str) -> PodGang | None:
        """See module docstring."""
        owner = self._pods.get(pod_key)
        gang = self.gangs.get(owner) if owner is not None else None
        if gang is None:
            return None
        leaf = gang.members[pod_key]
        spec = gang.specs[leaf]
        return PodGang(spec.namespace, spec.name, spec=spec, declared_by=DECLARED_BY)
