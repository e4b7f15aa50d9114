"""Volcano PodGroups (scheduling.volcano.sh/v1beta1), read only: the quorum of Volcano-style gangs.

Contract:
- `VolcanoPodGroups.on_event(kind, obj) -> VolcanoChange`: keeps each PodGroup's `minMember`, `minTaskMember` and
  `networkTopology` by gang key; `problem` names an invalid field and value (that part is then not used), said
  once per object and value. Never writes: Volcano's controller owns those objects.
- `adjust(key, decl, spec) -> GangSpec | None`: a gang named by `scheduling.k8s.io/group-name` gets minMember as its
  quorum (the pods' min-available annotations still win, LeaderWorkerSet's size does not), `minTaskMember` as role
  minimums only when Volcano enforces them (minMember >= their sum), and `spec.networkTopology` (hard or soft,
  highestTierAllowed) unless the gang declares one by gangsched's own means; `highestTierName`, tier 0 and
  `subGroupPolicy` are reported, not honoured. Other gangs are returned unchanged.
Watched only when the CRD is installed (handlers/kopf_app.py). More: docs/modules.md#statevolcanopy.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from gangsched.core import GangSpec, NetworkTopology, TopologyMode
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


@dataclass(frozen=True, slots=True)
class VolcanoQuorum:
    """What a Volcano PodGroup says of its gang: minMember, and the roles' minimums Volcano enforces."""

    min_member: int
    roles: tuple[tuple[str, int], ...] = ()
    topology: NetworkTopology | None = None  # spec.networkTopology


def _task_minimums(raw: Any) -> tuple[tuple[tuple[str, int], ...], str | None]:
    """spec.minTaskMember as sorted (task, minimum) pairs, zeros dropped; a problem message when invalid."""
    if raw is None:
        return (), None
    if isinstance(raw, dict) and all(
        isinstance(task, str) and task and isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= INT32_MAX
        for task, n in raw.items()
    ):
        return tuple(sorted((task, n) for task, n in raw.items() if n > 0)), None
    return (), (
        f"spec.minTaskMember: {raw!r} is not a map of task names to integers from 0 to {INT32_MAX}: this Volcano"
        " PodGroup gives its gang no per-task minimums"
    )


def _topology(raw: Any) -> tuple[NetworkTopology | None, str | None]:
    """spec.networkTopology as gangsched's NetworkTopology; a problem message for what does not map."""
    if raw is None:
        return None, None
    if not isinstance(raw, dict):
        return None, f"spec.networkTopology: {raw!r} is not an object {{mode, highestTierAllowed}}: not honoured"
    mode = raw.get("mode") or "hard"  # +kubebuilder:default=hard (volcano-sh/apis scheduling/v1beta1 types.go)
    if mode not in ("hard", "soft"):
        return None, f"spec.networkTopology.mode: {mode!r} is not hard or soft: the networkTopology is not honoured"
    tier = raw.get("highestTierAllowed")
    problem = None
    if tier is not None and not (isinstance(tier, int) and not isinstance(tier, bool) and 1 <= tier <= INT32_MAX):
        problem = (
            f"spec.networkTopology.highestTierAllowed: {tier!r} is not a tier gangsched knows (an integer from 1,"
            " the lowest domain above the nodes): the gang is placed without a tier limit"
        )
        tier = None
    if raw.get("highestTierName"):
        problem = (
            f"spec.networkTopology.highestTierName: {raw['highestTierName']!r} is not supported by gangsched (its"
            " tiers are numbers: use highestTierAllowed): the gang is placed without a tier limit"
        )
        tier = None
    return NetworkTopology(TopologyMode(mode), highest_tier_allowed=tier), problem


def _read(spec: dict[str, Any]) -> tuple[VolcanoQuorum | None, str | None]:
    raw = spec.get("minMember")
    if not (isinstance(raw, int) and not isinstance(raw, bool) and 1 <= raw <= INT32_MAX):
        return None, (
            f"spec.minMember: {raw!r} is not an integer from 1 to {INT32_MAX}: this Volcano PodGroup gives"
            " its gang no member count"
        )
    tasks, problem = _task_minimums(spec.get("minTaskMember"))
    topology, topology_problem = _topology(spec.get("networkTopology"))
    # Volcano checks each task's minimum only when the job's minAvailable is not below their sum (job_info.go)
    enforced = tasks if raw >= sum(n for _, n in tasks) else ()
    sub_groups = spec.get("subGroupPolicy")
    sub_problem = (
        f"spec.subGroupPolicy: {len(sub_groups)} subgroup(s) not honoured by gangsched (their own networkTopology is"
        " not applied): the gang is placed by its networkTopology alone"
        if isinstance(sub_groups, list) and sub_groups
        else None
    )
    problems = [p for p in (problem, topology_problem, sub_problem) if p is not None]
    return VolcanoQuorum(raw, enforced, topology), "; ".join(problems) or None


class VolcanoPodGroups:
    def __init__(self) -> None:
        self.quorum: dict[str, VolcanoQuorum] = {}
        self._reported: dict[str, str] = {}  # gang -> the problem last reported (each said once)

    def on_event(self, kind: str | None, obj: dict[str, Any]) -> VolcanoChange:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        before = self.quorum.get(key)
        problem = None
        if kind == "DELETED":
            self.quorum.pop(key, None)
            self._reported.pop(key, None)
        else:
            found, problem = _read(obj.get("spec") or {})
            if found is None:
                self.quorum.pop(key, None)
            else:
                self.quorum[key] = found
        if problem is None:
            self._reported.pop(key, None)
        elif self._reported.get(key) == problem:
            problem = None
        else:
            self._reported[key] = problem
        return VolcanoChange(key, self.quorum.get(key) != before, problem)

    def adjust(
        self, key: str, decl: PodGang | None, spec: GangSpec | None, *, topology: bool = True
    ) -> GangSpec | None:
        if decl is None or decl.declared_by != keys.VOLCANO_GROUP_NAME:
            return spec
        found = self.quorum.get(key)
        if found is None:
            return spec
        if decl.quorum_key not in _EXPLICIT:
            count = found.min_member
            if spec is None:
                spec = GangSpec(
                    namespace=decl.namespace, name=decl.name, min_member=count, roles=found.roles, source="volcano"
                )
            else:
                total = spec.total_member if spec.total_member is None or spec.total_member >= count else count
                spec = dataclasses.replace(spec, min_member=count, total_member=total, roles=found.roles)
        if not topology or spec is None or found.topology is None or spec.network_topology is not None:
            return spec  # a networkTopology declared by gangsched's own means wins
        return dataclasses.replace(spec, network_topology=found.topology)
