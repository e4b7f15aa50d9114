"""Volcano PodGroups (scheduling.volcano.sh/v1beta1), read only: the quorum of Volcano-style gangs.

Contract:
- `VolcanoPodGroups.on_event(kind, obj) -> VolcanoChange`: keeps each Volcano PodGroup's `spec.minMember` and
  `spec.minTaskMember` by gang key ("namespace/name"); `changed` says whether what that gang gets moved; `problem` is
  a message when minMember is not an integer from 1 to 2147483647 (that PodGroup then gives no count), or when
  minTaskMember is not a map of task names to integers from 0 to 2147483647 (it then gives no roles): the message
  names the field and the value, for a Warning on it; said once per object and value. Never writes anything:
  Volcano's controller owns those objects.
- `adjust(key, decl, spec) -> GangSpec | None`: the spec of a gang named by the Volcano-style annotation
  `scheduling.k8s.io/group-name` with the Volcano PodGroup's minMember as its quorum, or a spec of that quorum when
  the pods give none. The quorum is chosen among all the gang's pods: a Volcano PodGroup bounds no total (a total
  the pods give is raised to minMember when below). `minTaskMember` becomes the gang's roles' minimums (a pod's
  role is its `volcano.sh/task-spec`, models/gang.py) exactly when Volcano enforces them: when minMember is at least
  their sum; below it Volcano skips the per-task check (volcano-sh/volcano pkg/scheduler/api/job_info.go:
  CheckTaskReady, CheckTaskValid, CheckTaskPipelined return true when MinAvailable < TaskMinAvailableTotal), so
  the gang then has no roles. The pods' explicit `min-available` annotations still win (Koordinator's rule:
  annotations win, the PodGroup is then not read); LeaderWorkerSet's `leaderworkerset.sigs.k8s.io/size` does not
  (the Volcano PodGroup LWS creates says what it means: minMember 1 under the LeaderReady startup policy,
  kubernetes-sigs/lws pkg/schedulerprovider/volcano_provider.go CreatePodGroupIfNotExists). Other gangs are
  returned unchanged.
- `spec.networkTopology` (Volcano's NetworkTopologySpec, volcano-sh/apis scheduling/v1beta1 types.go; what Kubeflow
  Trainer writes in Volcano mode) is the gang's `NetworkTopology`: `mode` hard (Volcano's default) or soft,
  `highestTierAllowed` n >= 1 the tier (Volcano's and gangsched's tiers both count up from 1, the lowest domain
  above the nodes); hard: all members in one domain of a tier <= n, or none placed. Unless the gang declares a
  networkTopology by gangsched's own means (annotations, its gangsched PodGroup), which wins; `topology=False`
  leaves it out (the PodGroup the operator creates for the gang does not freeze Volcano's value). `highestTierName` and
  a tier of 0 are reported (a problem message) and the topology then limits no tier. A non-empty `subGroupPolicy`
  (Volcano's per-subgroup networkTopology) is reported as not honoured.
The operator watches these only when their CRD is installed (Kopf serves the rest; see handlers/kopf_app.py).
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
