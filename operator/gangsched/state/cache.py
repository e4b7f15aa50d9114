"""The operator's cluster cache: raw watch objects in, the core's incremental SchedulerState kept current.

Contract:
- Feeders, each taking raw API objects (dicts, as parsed by orjson or handed over by Kopf): `on_pod_list`,
  `on_pod_event`, `on_node`, `on_podgroup`, `on_pdb`, `set_topology`. Each converts, updates
  `self.cluster` (core.scheduler_state.SchedulerState) and calls `on_change()` when the scheduler may now decide
  something new. They never raise for one bad object: the object is reported in `problems` (an event to emit, naming
  the field, the value and what is allowed) and kept out of scheduling until it is fixed; nothing else is lost.
- A gang's effective spec is its PodGroup's spec with the members' annotations on top (annotations win,
  Koordinator's rule); a gang declared only by annotations is scheduled from them, and listed in
  `podgroups_to_create` so the runtime can create a PodGroup for it (shown by `kubectl get podgroups`).
- Deleted gangs are forgotten: when a gang has neither a PodGroup nor a member pod left, every per-gang structure
  (its sources, `podgroups_to_create`, `dirty_gangs`, the status memory in `statuses`, the SchedulerState's gang)
  lets it go; a deleted PodGroup's status memory goes at once. `gang_structure_sizes()` reports their sizes.
- `dirty_gangs` collects the gangs whose PodGroup status may have to change (member phases, placements);
  the runtime drains it. `on_status()` (default: on_change) is called instead of on_change when a pod event can
  only change a PodGroup's status: one of our pods seen bound, a bound pod's non-terminal phase moving (Running).
  A burst of bindings then costs status writes, not a scheduling round per echo. Likewise a PodGroup update
  with an unchanged metadata.generation (a status update, typically the echo of our own patch) is not parsed
  again and wakes the scheduler only if it newly marks the gang satisfied.
- Pod updates that move only nodeName or status (bind, Running, nomination, conditions) skip the full parse:
  the rest of the object is fingerprinted, and the record is the previous one with those fields re-read.
- `podgroup(key)` and `members(key)` give what the status writer needs; a PodGroup's status.scheduleStartTime is
  kept (`schedule_start`, epoch seconds, and `schedule_start_iso`) so a new leader neither restarts a gang's
  waiting time nor rewrites that field.
- Restart safety: every pod version sets or clears the SchedulerState's `leaving` mark from metadata.deletionTimestamp,
  and a version showing one of the SchedulerState's assumed pods bound confirms it (see core/store.py).
- PodDisruptionBudgets (preemption): `on_pdb(kind, obj)` hands them to `budgets` (state/budgets.py), which marks
  the pods the Eviction API would refuse now as protected in the SchedulerState; pods' labels and bindings reach it too.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from gangsched.core.errors import InvalidField
from gangsched.core.gangspec import GangSpec
from gangsched.core.records import PodRecord
from gangsched.core.scheduler_state import SchedulerState
from gangsched.core.topology import TopologyTree
from gangsched.models.gang import PodGang, parse_pod_gang
from gangsched.models.node import node_from_api
from gangsched.models.pod import pod_fingerprint, pod_from_api, pod_with_status
from gangsched.models.podgroup import podgroup_spec_from_api, podgroup_times
from gangsched.models.rank import MemberMeta, member_rank_key
from gangsched.models.timestamps import parse_time
from gangsched.state.budgets import DisruptionBudgets
from gangsched.state.status import GangStatusBook

log = logging.getLogger(__name__)

SATISFIED_PHASES = frozenset({"Scheduled", "Running", "Succeeded", "Finished"})


@dataclass(frozen=True, slots=True)
class Problem:
    """Bad input found on an object: becomes a Warning event on it."""

    kind: str  # "Pod" | "PodGroup" | "ConfigMap" | "Node"
    api_version: str
    namespace: str
    name: str
    uid: str
    reason: str
    message: str


@dataclass(slots=True)
class PodGroupInfo:
    """What the cache keeps of one PodGroup object (never the raw dict)."""

    uid: str
    generation: int
    spec: GangSpec | None  # None: its spec is invalid (see error)
    error: str | None
    created: float
    phase: str | None
    owned_by_us: bool
    owners: frozenset[str] = frozenset()  # uids of its ownerReferences (the members, for the PodGroups we create)
    schedule_start_iso: str | None = None  # status.scheduleStartTime as written
    schedule_start: float | None = None  # the same, epoch seconds (None: absent or unreadable)


@dataclass(slots=True)
class _GangSources:
    podgroup: PodGroupInfo | None = None
    member_decl: PodGang | None = None  # the latest member's declaration (its annotations speak for the gang)
    applied: GangSpec | None = None  # what the SchedulerState has now


def _owner_uids(meta: dict[str, Any]) -> frozenset[str]:
    return frozenset(str(ref.get("uid", "")) for ref in meta.get("ownerReferences") or [] if isinstance(ref, dict))


def _rank(pod: dict[str, Any]) -> int | None:
    meta = pod.get("metadata") or {}
    key = member_rank_key(
        MemberMeta(
            name=meta.get("name", ""), labels=meta.get("labels") or {}, annotations=meta.get("annotations") or {}
        )
    )
    if key is None:
        return None
    rank = 0
    for part in key.parts:  # lexicographic order of the parts, folded into one integer
        rank = rank * 1_000_000 + part
    return rank


class ClusterCache:
    def __init__(
        self,
        *,
        scheduler_name: str,
        on_change: Callable[[], None] = lambda: None,
        on_status: Callable[[], None] | None = None,
    ) -> None:
        self.cluster = SchedulerState()
        self.scheduler_name = scheduler_name
        self.on_change = on_change
        self.on_status = on_status or on_change
        self.problems: list[Problem] = []
        self.dirty_gangs: set[str] = set()
        self.podgroups_to_create: dict[str, GangSpec] = {}
        self.statuses = GangStatusBook()  # the PodGroup status bodies last written, per gang
        self._gangs: dict[str, _GangSources] = {}
        self._pod_gang: dict[str, str] = {}  # pod key -> gang key
        self._gang_pods: dict[str, set[str]] = {}  # gang key -> its member pod keys (the inverse of _pod_gang)
        self._bad_pods: dict[str, str] = {}  # pod key -> message of its last problem (reported once)
        self.quick_updates = 0  # pod events that only moved nodeName/status (see models/pod.py pod_with_status)
        self._fingerprints: dict[str, int] = {}  # pod key -> pod_fingerprint of its last parsed version
        self.budgets = DisruptionBudgets(self.cluster)
        self.nodes_version = 0  # bumped when a node joins, leaves or changes labels (topology from labels)

    # ----------------------------------------------------------------- pods
    def on_pod_list(self, items: Iterable[dict[str, Any]]) -> None:
        """A full list: replace every pod (those missing were deleted while nobody watched)."""
        seen: set[str] = set()
        for obj in items:
            key = self._upsert_pod(obj, notify=False)
            if key:
                seen.add(key)
        for key in [k for k in self.cluster.pods if k not in seen]:
            self._remove_pod(key)
        for key in [k for k in self._bad_pods if k not in seen]:
            del self._bad_pods[key]  # reported, then deleted while nobody watched
        self.on_change()

    def on_pod_event(self, kind: str | None, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            meta = obj.get("metadata") or {}
            self._remove_pod(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
            self.on_change()
        else:
            self._upsert_pod(obj, notify=True)

    def _upsert_pod(self, obj: dict[str, Any], *, notify: bool) -> str | None:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        fingerprint = pod_fingerprint(meta, spec)
        previous = self.cluster.pods.get(key)
        leaving = meta.get("deletionTimestamp") is not None
        deadline = _deletion_deadline(meta) if leaving else None
        if leaving or key in self.cluster.leaving:
            self.cluster.set_leaving(key, leaving, deadline)
        if previous is not None and self._fingerprints.get(key) == fingerprint:
            quick = pod_with_status(previous, spec, obj.get("status"))
            if quick is not None:  # only nodeName / status moved: no need to parse the pod again
                self.quick_updates += 1
                if quick != previous or key in self.cluster.assumed:  # (an assumed pod seen bound: confirmed)
                    self._apply_pod(key, meta, previous, quick, notify=notify)
                return key
        ours = spec.get("schedulerName") == self.scheduler_name
        try:
            decl = parse_pod_gang(obj) if ours else None
            record = pod_from_api(
                obj,
                gang=decl.key if decl else None,
                role=decl.role if decl else None,
                rank=_rank(obj) if decl else None,
                ours=ours,
            )
        except InvalidField as exc:
            self._report_pod(obj, key, exc)
            if key in self.cluster.pods:  # keep its node share counted, but stop scheduling it
                self._remove_pod(key)
            return key
        self._bad_pods.pop(key, None)
        self._fingerprints[key] = fingerprint
        self._join(key, decl.key if decl is not None else None)
        if decl is not None:
            sources = self._gangs.setdefault(decl.key, _GangSources())
            if decl.overrides or sources.member_decl is None:
                sources.member_decl = decl
        self._apply_pod(key, meta, previous, record, notify=notify)
        if leaving and previous is None:  # (set_leaving above ignored a pod the SchedulerState did not know yet)
            self.cluster.set_leaving(key, True, deadline)
        if decl is not None:
            self._refresh_gang(decl.key)
        return key

    def _apply_pod(
        self, key: str, meta: dict[str, Any], previous: PodRecord | None, record: PodRecord, *, notify: bool
    ) -> None:
        self.cluster.upsert_pod(record)
        labels = meta.get("labels")
        self.budgets.pod_upserted(key, meta.get("namespace") or "default", labels if isinstance(labels, dict) else {})
        if record.gang is not None:
            self.dirty_gangs.add(record.gang)
        if not notify:
            return
        if (
            previous is None
            or record.node_name is None  # pending (or unbound again): the scheduler may decide
            or previous.terminal != record.terminal  # capacity freed (or taken back)
            or (previous.node_name != record.node_name and (previous.node_name is not None or not record.ours))
        ):
            self.on_change()
        elif previous.node_name != record.node_name or previous.phase != record.phase:
            self.on_status()  # one of our pods bound, or a bound pod's phase moved: only PodGroup status may change

    def _remove_pod(self, key: str) -> None:
        self._fingerprints.pop(key, None)
        self.cluster.remove_pod(key)
        self.budgets.pod_removed(key)
        self._bad_pods.pop(key, None)
        self._join(key, None)

    def _join(self, key: str, gang: str | None) -> None:
        """The pod's gang is now `gang` (None: no gang); a gang left without members or PodGroup is forgotten."""
        old = self._pod_gang.get(key)
        if old == gang:
            return
        if gang is not None:
            self._pod_gang[key] = gang
            self._gang_pods.setdefault(gang, set()).add(key)
        else:
            del self._pod_gang[key]
        if old is None:
            return
        self.dirty_gangs.add(old)
        left = self._gang_pods.get(old)
        if left is not None:
            left.discard(key)
            if not left:
                del self._gang_pods[old]
        self._forget_if_gone(old)

    def _forget_if_gone(self, gang: str) -> None:
        """Drop every per-gang structure of a gang that has neither a PodGroup nor a member any more."""
        if gang in self._gang_pods:
            return
        sources = self._gangs.get(gang)
        if sources is not None and sources.podgroup is not None:
            return
        self._gangs.pop(gang, None)
        if sources is not None and sources.applied is not None:
            self.cluster.remove_gang(gang)
        self.podgroups_to_create.pop(gang, None)
        self.dirty_gangs.discard(gang)
        self.statuses.forget(gang)

    def gang_structure_sizes(self) -> dict[str, int]:
        """How many gangs each per-gang structure of the cache holds (tests check that deleted gangs leave none)."""
        return {
            "sources": len(self._gangs),
            "members": len(self._gang_pods),
            "podgroups_to_create": len(self.podgroups_to_create),
            "dirty_gangs": len(self.dirty_gangs),
            "statuses": self.statuses.tracked(),
        }

    def _report_pod(self, obj: dict[str, Any], key: str, exc: InvalidField) -> None:
        message = str(exc)
        if self._bad_pods.get(key) == message:
            return
        self._bad_pods[key] = message
        meta = obj.get("metadata") or {}
        self.problems.append(
            Problem(
                "Pod",
                "v1",
                meta.get("namespace") or "default",
                meta.get("name", ""),
                meta.get("uid", ""),
                "InvalidGangDeclaration",
                message,
            )
        )
        self.on_change()

    def members(self, gang: str) -> list[PodRecord]:
        state = self.cluster.gangs.get(gang)
        if state is None:
            return []
        pods = self.cluster.pods
        return [pods[k] for k in state.members if k in pods]

    # ------------------------------------------------------------ podgroups
    def on_podgroup(self, kind: str | None, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        sources = self._gangs.setdefault(key, _GangSources())
        if kind == "DELETED":
            self._podgroup_deleted(key, sources)
            return
        old = sources.podgroup
        generation = int(meta.get("generation") or 0)
        owned_by_us = (meta.get("labels") or {}).get("app.kubernetes.io/managed-by") == "gangsched"
        if (
            old is not None
            and generation
            and (old.generation, old.uid, old.owned_by_us) == (generation, meta.get("uid", ""), owned_by_us)
        ):
            self._podgroup_status_moved(key, sources, old, obj)
        else:
            self._podgroup_spec_moved(key, sources, old, obj, generation=generation, owned_by_us=owned_by_us)

    def _podgroup_deleted(self, key: str, sources: _GangSources) -> None:
        sources.podgroup = None
        self.statuses.forget(key)  # a PodGroup created again gets its status written afresh
        if key in self._gang_pods:
            self._refresh_gang(key)
        else:
            self._forget_if_gone(key)
        self.on_change()

    def _podgroup_status_moved(self, key: str, sources: _GangSources, old: PodGroupInfo, obj: dict[str, Any]) -> None:
        """The same spec (generation moves with every spec change): a status update, most often our own echo."""
        phase = (obj.get("status") or {}).get("phase")
        times = podgroup_times(obj)
        sources.podgroup = dataclasses.replace(
            old,
            phase=phase,
            owners=_owner_uids(obj.get("metadata") or {}),
            schedule_start_iso=times.schedule_start_iso,
            schedule_start=times.schedule_start,
        )
        satisfied_before = self._satisfied(key)
        if phase in SATISFIED_PHASES:
            self.cluster.mark_satisfied(key)
        self.dirty_gangs.add(key)
        if self._satisfied(key) != satisfied_before:
            self.on_change()
        else:
            self.on_status()

    def _podgroup_spec_moved(
        self,
        key: str,
        sources: _GangSources,
        old: PodGroupInfo | None,
        obj: dict[str, Any],
        *,
        generation: int,
        owned_by_us: bool,
    ) -> None:
        meta = obj.get("metadata") or {}
        phase = (obj.get("status") or {}).get("phase")
        try:
            spec: GangSpec | None = podgroup_spec_from_api(obj)
            error = None
        except InvalidField as exc:
            spec, error = None, str(exc)
        times = podgroup_times(obj)
        sources.podgroup = PodGroupInfo(
            uid=meta.get("uid", ""),
            generation=generation,
            spec=spec,
            error=error,
            created=times.created,
            phase=phase,
            owned_by_us=owned_by_us,
            owners=_owner_uids(meta),
            schedule_start_iso=times.schedule_start_iso,
            schedule_start=times.schedule_start,
        )
        self.podgroups_to_create.pop(key, None)
        if error and (old is None or old.error != error):
            namespace, name, uid = key.split("/")[0], meta.get("name", ""), meta.get("uid", "")
            api_version = "scheduling.x-k8s.io/v1alpha1"
            self.problems.append(Problem("PodGroup", api_version, namespace, name, uid, "InvalidSpec", error))
        if phase in SATISFIED_PHASES:
            self.cluster.mark_satisfied(key)  # restart safety: a satisfied gang stays satisfied
        self._refresh_gang(key)
        self.dirty_gangs.add(key)
        self.on_change()

    def _satisfied(self, key: str) -> bool:
        gs = self.cluster.gangs.get(key)
        return bool(gs is not None and gs.satisfied)

    def podgroup(self, key: str) -> PodGroupInfo | None:
        sources = self._gangs.get(key)
        return sources.podgroup if sources else None

    def _refresh_gang(self, key: str) -> None:
        sources = self._gangs.get(key)
        if sources is None:
            return
        pg = sources.podgroup
        decl = sources.member_decl
        effective: GangSpec | None
        if pg is not None and pg.error is not None:
            effective = None  # an invalid PodGroup stops its gang until fixed
        else:
            effective = decl.resolve(pg.spec if pg else None) if decl is not None else (pg.spec if pg else None)
        if pg is None and decl is not None and decl.spec is not None and key not in self.podgroups_to_create:
            self.podgroups_to_create[key] = decl.spec
        if effective == sources.applied:
            return
        sources.applied = effective
        if effective is None:
            self.cluster.remove_gang(key)
        else:
            self.cluster.upsert_gang(effective, created=pg.created if pg else None)
        self.on_change()

    # ------------------------------------------------------ disruption budgets
    def on_pdb(self, kind: str | None, obj: dict[str, Any]) -> None:
        """A PodDisruptionBudget event (state/budgets.py); an invalid selector is reported, the PDB selects nothing."""
        changed, error = self.budgets.on_pdb(kind, obj)
        if error is not None:
            meta = obj.get("metadata") or {}
            ns, name, uid = meta.get("namespace") or "default", meta.get("name", ""), meta.get("uid", "")
            self.problems.append(Problem("PodDisruptionBudget", "policy/v1", ns, name, uid, "InvalidSelector", error))
        if changed:
            self.on_change()

    # ---------------------------------------------------------------- nodes
    def on_node(self, kind: str | None, obj: dict[str, Any]) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        old = self.cluster.nodes.get(name)
        if kind == "DELETED":
            self.cluster.remove_node(name)
            self.nodes_version += 1
        else:
            try:
                self.cluster.upsert_node(node_from_api(obj))
            except InvalidField as exc:
                self.problems.append(
                    Problem("Node", "v1", "", name, (obj.get("metadata") or {}).get("uid", ""), "InvalidNode", str(exc))
                )
                self.cluster.remove_node(name)
            new = self.cluster.nodes.get(name)
            if old is None or new is None or old.labels != new.labels:
                self.nodes_version += 1
        self.on_change()

    def node_labels(self) -> dict[str, dict[str, str]]:
        return {name: dict(node.labels) for name, node in self.cluster.nodes.items()}

    # -------------------------------------------------------------- topology
    def set_topology(self, tree: TopologyTree | None) -> None:
        self.cluster.set_topology(tree)
        self.on_change()


def _deletion_deadline(meta: dict[str, Any]) -> float | None:
    """metadata.deletionTimestamp as epoch seconds (the apiserver sets it to the deletion time plus the grace
    period: the pod is gone by then), rounded up to the next second (the field has second precision); None when
    unreadable."""
    try:
        return parse_time(meta.get("deletionTimestamp"), field="metadata.deletionTimestamp") + 1.0
    except InvalidField:
        return None
