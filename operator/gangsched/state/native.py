"""Kubernetes 1.37's own PodGroups (scheduling.k8s.io/v1beta1), read: the quorum of gangs pods name natively.

Contract:
- `NativePodGroups.on_event(kind, obj) -> NativeChange`: each PodGroup's policy (`gang.minCount`, or BASIC) by gang
  key; `changed`, `problem` (unreadable: declares nothing), `unsupported` (a Warning `UnsupportedField`).
- `adjust(key, decl, spec) -> GangSpec | None`: a natively named gang gets minCount as its quorum (its pods'
  annotations still win), its topology key as a hard tier (a `topology.nodeLabelTiers` label) or a label domain,
  `disrupt_whole` for disruptionMode all; without its PodGroup the gang has no spec and its pods wait.
- `check_member(decl, pod_spec)` raises InvalidField for a member whose priority differs from the PodGroup's
  `spec.priority`; `member_record` applies its preemptionPolicy; `basic(key)`: its pods are no gang; `links`,
  `objects` (uid, generation, conditions; `wrote`) for state/composite.py's trees and the status written.
Known limit: pods met while their PodGroup was basic stay no gang until re-parsed. More: docs/modules.md#statenativepy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from gangsched.core import DomainKey, GangSpec, InvalidField, NetworkTopology, PodRecord, TopologyMode
from gangsched.models.composite import GroupLink, group_link
from gangsched.models.gang import PodGang
from gangsched.models.native import (
    SCHEDULING_GROUP,
    GroupPriority,
    group_priority,
    native_policy,
    topology_key,
    unsupported_fields,
)

BASIC: Final = 0  # the policy of a basic PodGroup (a gang's minCount is >= 1)


@dataclass(frozen=True, slots=True)
class NativeChange:
    key: str
    changed: bool
    problem: str | None = None
    unsupported: str | None = None  # the fields set that gangsched does not honour yet (said once per object)


@dataclass(slots=True)
class NativeObject:
    uid: str
    generation: int
    conditions: list[dict[str, Any]]


class NativePodGroups:
    def __init__(self) -> None:
        self.policy: dict[str, int] = {}  # gang key -> minCount, or BASIC
        self.objects: dict[str, NativeObject] = {}
        self.tier_keys: tuple[str, ...] = ()  # node label key per topology tier (config topology.nodeLabelTiers)
        self.tier: dict[str, int] = {}  # gang key -> the tier its schedulingConstraints.topology key names
        self.group: dict[str, GroupPriority] = {}  # gang key -> its priority, preemptionPolicy, disruptionMode
        self.label: dict[str, str] = {}  # gang key -> a topology key that is no tier's label (its own domain)
        self.links: dict[str, GroupLink] = {}  # gang key -> its parent CompositePodGroup and Workload
        self._reported: dict[str, str] = {}
        self._unsupported: dict[str, tuple[str, ...]] = {}  # gang key -> the unsupported fields last reported

    def on_event(self, kind: str | None, obj: dict[str, Any]) -> NativeChange:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        before = self.policy.get(key)
        problem = None
        if kind == "DELETED":
            self.policy.pop(key, None)
            self.objects.pop(key, None)
            self.tier.pop(key, None)
            self.group.pop(key, None)
            self.label.pop(key, None)
            self.links.pop(key, None)
        else:
            self.links[key] = group_link(obj)
            self._remember(key, obj)
            self._remember_tier(key, obj)
            self.group[key] = group_priority(obj)
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

    def _remember(self, key: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        status = obj.get("status") or {}
        conditions = status.get("conditions") if isinstance(status, dict) else None
        generation = meta.get("generation")
        self.objects[key] = NativeObject(
            str(meta.get("uid") or ""),
            generation if isinstance(generation, int) else 0,
            [dict(c) for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else [],
        )

    def _remember_tier(self, key: str, obj: dict[str, Any]) -> None:
        label = topology_key(obj)
        self.tier.pop(key, None)
        self.label.pop(key, None)
        if label is not None and label in self.tier_keys:
            self.tier[key] = self.tier_keys.index(label) + 1
        elif label is not None:
            self.label[key] = label

    def check_member(self, decl: PodGang | None, pod_spec: Mapping[str, Any]) -> None:
        """Raises InvalidField for a member whose own priority is not its native PodGroup's `spec.priority`."""
        if decl is None or decl.declared_by != SCHEDULING_GROUP:
            return
        own = pod_spec.get("priority")
        own = own if isinstance(own, int) and not isinstance(own, bool) else 0
        problem = self.priority_problem(decl.key, own)
        if problem is not None:
            raise problem

    def priority_problem(self, key: str, own: int) -> InvalidField | None:
        """The problem of a member of gang `key` whose resolved priority is `own`, None when it agrees."""
        group = self.group.get(key)
        if group is None or group.priority is None or own == group.priority:
            return None
        return InvalidField(
            "spec.priority",
            own,
            f"the priority of its PodGroup {key.partition('/')[2]} ({group.priority}): a group is scheduled at one"
            " priority, its PodGroup's, and kube-scheduler 1.37 holds a group whose pods disagree; give the pod the"
            " PodGroup's priorityClassName",
        )

    def member_record(self, decl: PodGang | None, record: PodRecord) -> PodRecord:
        """The member with its native PodGroup's preemptionPolicy, when the PodGroup sets one."""
        if decl is None or decl.declared_by != SCHEDULING_GROUP:
            return record
        group = self.group.get(decl.key)
        policy = group.preemption_policy if group is not None else None
        if policy is None or policy == record.preemption_policy:
            return record
        return dataclasses.replace(record, preemption_policy=policy)

    def wrote(self, key: str, conditions: list[dict[str, Any]]) -> None:
        """The operator patched these conditions onto the PodGroup (its echo may come later)."""
        found = self.objects.get(key)
        if found is not None:
            found.conditions = conditions

    def _unsupported_notice(self, kind: str | None, key: str, obj: dict[str, Any]) -> str | None:
        fields = () if kind == "DELETED" else unsupported_fields(obj, self.tier_keys)
        if fields == self._unsupported.get(key, ()):
            return None
        if not fields:
            self._unsupported.pop(key, None)
            return None
        self._unsupported[key] = fields
        return (
            f"{', '.join(fields)}: not honoured by gangsched yet (the gang is scheduled without them); use "
            "kube-scheduler for these, or leave them unset"
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
            spec = GangSpec(namespace=decl.namespace, name=decl.name, min_member=count, source="native")
        elif decl.quorum_key is None:  # (the member's min-available annotation wins)
            total = spec.total_member if spec.total_member is not None and spec.total_member >= count else None
            spec = dataclasses.replace(spec, min_member=count, total_member=total)
        group = self.group.get(key)
        if group is not None and group.disrupt_whole and not spec.disrupt_whole:
            spec = dataclasses.replace(spec, disrupt_whole=True)
        label = self.label.get(key)
        if label is not None and spec.domain is None:
            spec = dataclasses.replace(spec, domain=DomainKey(label=label))
        tier = self.tier.get(key)
        if tier is None or spec.network_topology is not None:
            return spec  # a networkTopology declared for the gang by gangsched's own means wins
        return dataclasses.replace(spec, network_topology=NetworkTopology(TopologyMode.HARD, highest_tier_allowed=tier))
