"""Volcano PodGroups (scheduling.volcano.sh/v1beta1), read only: the member count of Volcano-style gangs.

Contract:
- `VolcanoPodGroups.on_event(kind, obj) -> VolcanoChange`: keeps each Volcano PodGroup's `spec.minMember` by gang key
  ("namespace/name"); `changed` says whether the count of that gang moved; `problem` is a message when minMember is
  not an integer from 1 to 2147483647 (that PodGroup then gives no count: the message names the field and the value,
  for a Warning on it; said once per object and value). Never writes anything: Volcano's controller owns those objects.
- `adjust(key, decl, spec) -> GangSpec | None`: the spec of a gang named by the Volcano-style annotation
  `scheduling.k8s.io/group-name` with the Volcano PodGroup's minMember as its quorum (total raised to it when below),
  or a spec of that quorum when the pods give none. The pods' explicit `min-available` annotations still win
  (Koordinator's rule: annotations win); LeaderWorkerSet's `leaderworkerset.sigs.k8s.io/size` does not (the Volcano
  PodGroup LWS creates says what it means: minMember 1 under the LeaderReady startup policy, kubernetes-sigs/lws
  pkg/schedulerprovider/volcano_provider.go CreatePodGroupIfNotExists). Other gangs are returned unchanged.
The operator watches these only when their CRD is installed (Kopf serves the rest; see handlers/kopf_app.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from gangsched.core.values.gangspec import GangSpec
from gangsched.models import keys
from gangsched.models.fields import INT32_MAX
from gangsched.models.gang import PodGang

API_VERSION = "scheduling.volcano.sh/v1beta1"
_EXPLICIT = frozenset({keys.KOORD_MIN_AVAILABLE, keys.LEGACY_MIN_AVAILABLE})


@dataclass(frozen=True, slots=True)
class VolcanoChange:
    key: str
    changed: bool
    problem: str | None = None


class VolcanoPodGroups:
    def __init__(self) -> None:
        self.min_member: dict[str, int] = {}
        self._reported: dict[str, str] = {}  # gang -> the problem last reported (each said once)

    def on_event(self, kind: str | None, obj: dict[str, Any]) -> VolcanoChange:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        before = self.min_member.get(key)
        problem = None
        if kind == "DELETED":
            self.min_member.pop(key, None)
            self._reported.pop(key, None)
        else:
            raw = (obj.get("spec") or {}).get("minMember")
            if isinstance(raw, int) and not isinstance(raw, bool) and 1 <= raw <= INT32_MAX:
                self.min_member[key] = raw
            else:
                self.min_member.pop(key, None)
                problem = (
                    f"spec.minMember: {raw!r} is not an integer from 1 to {INT32_MAX}: this Volcano PodGroup gives"
                    " its gang no member count"
                )
        if problem is None:
            self._reported.pop(key, None)
        elif self._reported.get(key) == problem:
            problem = None
        else:
            self._reported[key] = problem
        return VolcanoChange(key, self.min_member.get(key) != before, problem)

    def adjust(self, key: str, decl: PodGang | None, spec: GangSpec | None) -> GangSpec | None:
        if decl is None or decl.declared_by != keys.VOLCANO_GROUP_NAME or decl.quorum_key in _EXPLICIT:
            return spec
        count = self.min_member.get(key)
        if count is None:
            return spec
        if spec is None:
            return GangSpec(
                namespace=decl.namespace, name=decl.name, min_member=count, total_member=count, source="volcano"
            )
        total = spec.total_member if spec.total_member is not None and spec.total_member >= count else count
        return dataclasses.replace(spec, min_member=count, total_member=total)
