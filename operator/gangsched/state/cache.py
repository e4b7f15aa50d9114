"""The operator's cluster cache: raw watch objects in, the core's incremental Cluster model kept current.

Contract:
- Feeders, each taking raw API objects (dicts, as parsed by orjson or handed over by Kopf): `on_pod_list`,
  `on_pod_event`, `on_node`, `on_podgroup`, `on_priority_class`, `set_topology`. Each converts, updates
  `self.cluster` (core.cluster.Cluster) and calls `on_change()` when the scheduler may now decide something
  new. They never raise for one bad object: the object is reported in `problems` (an event to emit, naming
  the field, the value and what is allowed) and kept out of scheduling until it is fixed; nothing else is lost.
- A gang's effective spec is its PodGroup's spec with the members' annotations on top (annotations win,
  Koordinator's rule); a gang declared only by annotations is scheduled from them, and listed in
  `podgroups_to_create` so the runtime can create a PodGroup for it (shown by `kubectl get podgroups`).
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
- Restart safety: every pod version sets or clears the Cluster's `leaving` mark from metadata.deletionTimestamp,
  and a version showing one of the Cluster's assumed pods bound confirms it (see core/cluster.py).
- PodDisruptionBudgets (preemption, issues 6 and 11): `on_pdb(kind, obj)` keeps each PDB's selector, the
  status fields the Eviction API decides from (observedGeneration vs generation, disruptionsAllowed) and the
  set of pods it selects, matched incrementally (pod labels are kept; no API call, no LIST). A pod is marked
  protected in the Cluster (`Cluster.set_protected`) when the Eviction API would refuse it now
  (core/preempt_pdb.py `pdb_protects`), re-evaluated when the pod or one of its budgets changes; a budget that
  allows the pod's eviction again also forgets an earlier refusal of it.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from gangsched.core.cluster import Cluster
from gangsched.core.errors import InvalidField
from gangsched.core.gangspec import GangSpec
from gangsched.core.preempt_pdb import PdbBudget, pdb_protects, pdb_selector
from gangsched.core.records import PodRecord, node_from_api, pod_from_api
from gangsched.core.timeparse import parse_rfc3339
from gangsched.core.topology import TopologyTree
from gangsched.models.gang import PodGang, parse_pod_gang
from gangsched.models.podgroup import podgroup_spec_from_api
from gangsched.models.rank import MemberMeta, member_rank_key

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
    applied: GangSpec | None = None  # what the Cluster has now


def _static_fingerprint(meta: dict[str, Any], spec: dict[str, Any]) -> int:
    """A hash of everything pod_from_api and parse_pod_gang read, except nodeName and status."""
    if "nodeName" in spec:
        spec = {k: v for k, v in spec.items() if k != "nodeName"}
    blob = orjson.dumps(
        (meta.get("uid"), meta.get("creationTimestamp"), meta.get("labels"), meta.get("annotations"), spec)
    )
    return hash(blob)


def _with_status(previous: PodRecord, spec: dict[str, Any], status: Any) -> PodRecord | None:
    """previous with nodeName, phase and nominatedNodeName taken from a new version of the pod, exactly as
    core.records.pod_from_api reads them; None when the version needs the full parse (it then reports bad input)."""
    if status is None:
        status = {}
    elif not isinstance(status, dict):
        return None
    node_name = spec.get("nodeName") or None
    phase = status.get("phase") or "Pending"
    nominated = status.get("nominatedNodeName") or None
    return dataclasses.replace(
        previous,
        node_name=sys.intern(node_name) if isinstance(node_name, str) else None,
        phase=sys.intern(str(phase)),
        nominated_node=nominated if isinstance(nominated, str) else None,
    )


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
        self.cluster = Cluster()
        self.scheduler_name = scheduler_name
        self.on_change = on_change
        self.on_status = on_status or on_change
        self.problems: list[Problem] = []
        self.dirty_gangs: set[str] = set()
        self.podgroups_to_create: dict[str, GangSpec] = {}
        self.priority_classes: dict[str, int] = {}
        self._gangs: dict[str, _GangSources] = {}
        self._pod_gang: dict[str, str] = {}  # pod key -> gang key
        self._bad_pods: dict[str, str] = {}  # pod key -> message of its last problem (reported once)
        self.pods_seen = 0
        self.quick_updates = 0  # pod events that only moved nodeName/status (see _with_status)
        self._fingerprints: dict[str, int] = {}  # pod key -> _static_fingerprint of its last parsed version
        self._pdbs: dict[str, dict[str, PdbBudget]] = {}  # namespace -> PDB name -> budget
        self._pdb_pods: set[str] = set()  # pods this cache marked protected
        self._labels: dict[str, dict[str, str]] = {}  # pod key -> labels (PDB selectors are matched incrementally)
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
        self.on_change()

    def on_pod_event(self, kind: str | None, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            meta = obj.get("metadata") or {}
            self._remove_pod(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
            self.on_change()
        else:
            self._upsert_pod(obj, notify=True)

    def _upsert_pod(self, obj: dict[str, Any], *, notify: bool) -> str | None:
        self.pods_seen += 1
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        fingerprint = _static_fingerprint(meta, spec)
        previous = self.cluster.pods.get(key)
        leaving = meta.get("deletionTimestamp") is not None
        if leaving or key in self.cluster.leaving:
            self.cluster.set_leaving(key, leaving)
        if previous is not None and self._fingerprints.get(key) == fingerprint:
            quick = _with_status(previous, spec, obj.get("status"))
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
        if decl is not None:
            self._pod_gang[key] = decl.key
            sources = self._gangs.setdefault(decl.key, _GangSources())
            if decl.overrides or sources.member_decl is None:
                sources.member_decl = decl
        self._apply_pod(key, meta, previous, record, notify=notify)
        if leaving and previous is None:  # (set_leaving above ignored a pod the Cluster did not know yet)
            self.cluster.set_leaving(key, True)
        if decl is not None:
            self._refresh_gang(decl.key)
        return key

    def _apply_pod(
        self, key: str, meta: dict[str, Any], previous: PodRecord | None, record: PodRecord, *, notify: bool
    ) -> None:
        self.cluster.upsert_pod(record)
        labels = meta.get("labels")
        self._labels[key] = labels if isinstance(labels, dict) else {}
        if self._pdbs or key in self._pdb_pods:
            self._check_pdb(key, meta)
        if record.gang is not None:
            self.dirty_gangs.add(record.gang)
        if not notify:
            return
        if (
            previous is None
            or record.node_name is None  # pending (or unbound again): the scheduler may decide
            or previous.terminal != record.terminal  # capacity freed (or taken back)
            or previous.node_name != record.node_name
            and (previous.node_name is not None or not record.ours)
        ):
            self.on_change()
        elif previous.node_name != record.node_name or previous.phase != record.phase:
            self.on_status()  # one of our pods bound, or a bound pod's phase moved: only PodGroup status may change

    def _remove_pod(self, key: str) -> None:
        self._fingerprints.pop(key, None)
        self.cluster.remove_pod(key)
        self._pdb_pods.discard(key)
        self._labels.pop(key, None)
        affected: set[str] = set()
        for budget in self._pdbs.get(key.partition("/")[0], {}).values():
            affected |= budget.drop(key)
        if affected:
            self._refresh_protection(affected, budget_changed=False)
        self._bad_pods.pop(key, None)
        gang = self._pod_gang.pop(key, None)
        if gang is not None:
            self.dirty_gangs.add(gang)

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
            sources.podgroup = None
            self._refresh_gang(key)
            self.on_change()
            return
        old = sources.podgroup
        phase = (obj.get("status") or {}).get("phase")
        generation = int(meta.get("generation") or 0)
        owned_by_us = (meta.get("labels") or {}).get("app.kubernetes.io/managed-by") == "gangsched"
        if (
            old is not None
            and generation
            and (old.generation, old.uid, old.owned_by_us) == (generation, meta.get("uid", ""), owned_by_us)
        ):
            # the same spec (generation moves with every spec change): a status update, most often our own echo
            sources.podgroup = dataclasses.replace(old, phase=phase, owners=_owner_uids(meta), **self._start(obj))
            satisfied_before = self._satisfied(key)
            if phase in SATISFIED_PHASES:
                self.cluster.mark_satisfied(key)
            self.dirty_gangs.add(key)
            if self._satisfied(key) != satisfied_before:
                self.on_change()
            else:
                self.on_status()
            return
        try:
            spec: GangSpec | None = podgroup_spec_from_api(obj)
            error = None
        except InvalidField as exc:
            spec, error = None, str(exc)
        sources.podgroup = PodGroupInfo(
            uid=meta.get("uid", ""),
            generation=generation,
            spec=spec,
            error=error,
            created=self._created(obj),
            phase=phase,
            owned_by_us=owned_by_us,
            owners=_owner_uids(meta),
            **self._start(obj),
        )
        self.podgroups_to_create.pop(key, None)
        if error and (old is None or old.error != error):
            self.problems.append(
                Problem(
                    "PodGroup",
                    "scheduling.x-k8s.io/v1alpha1",
                    key.split("/")[0],
                    meta.get("name", ""),
                    meta.get("uid", ""),
                    "InvalidSpec",
                    error,
                )
            )
        if phase in SATISFIED_PHASES:
            self.cluster.mark_satisfied(key)  # restart safety: a satisfied gang stays satisfied
        self._refresh_gang(key)
        self.dirty_gangs.add(key)
        self.on_change()

    def _satisfied(self, key: str) -> bool:
        gs = self.cluster.gangs.get(key)
        return bool(gs is not None and gs.satisfied)

    @staticmethod
    def _start(obj: dict[str, Any]) -> dict[str, Any]:
        raw = (obj.get("status") or {}).get("scheduleStartTime")
        if not isinstance(raw, str) or not raw:
            return {"schedule_start_iso": None, "schedule_start": None}
        try:
            return {"schedule_start_iso": raw, "schedule_start": parse_rfc3339(raw, field="status.scheduleStartTime")}
        except InvalidField:
            return {"schedule_start_iso": None, "schedule_start": None}

    @staticmethod
    def _created(obj: dict[str, Any]) -> float:
        raw = (obj.get("metadata") or {}).get("creationTimestamp")
        try:
            return parse_rfc3339(raw, field="metadata.creationTimestamp") if raw else 0.0
        except InvalidField:
            return 0.0

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
        """A PodDisruptionBudget event: its selector, status and members kept here; no API call."""
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace") or "default", meta.get("name", "")
        budgets = self._pdbs.setdefault(ns, {})
        old = budgets.pop(name, None)
        affected: set[str] = set(old.members) if old is not None else set()
        if kind != "DELETED":
            try:
                sel = pdb_selector(obj)
            except InvalidField as exc:
                self.problems.append(
                    Problem(
                        "PodDisruptionBudget", "policy/v1", ns, name, meta.get("uid", ""), "InvalidSelector", str(exc)
                    )
                )
                sel = None
            raw_selector = (obj.get("spec") or {}).get("selector")
            budget = PdbBudget.from_api(obj, sel, raw_selector)
            if old is not None and old.raw_selector == raw_selector:
                budget.members, budget.by_unit = old.members, old.by_unit  # the same pods: only the status moved
            else:  # a new selector: match the namespace's pods once (their labels are kept)
                prefix = ns + "/"
                for key, labels in self._labels.items():
                    if key.startswith(prefix) and budget.selects(labels):
                        budget.set_member(key, self._victim_unit(key))
            budgets[name] = budget
            affected |= set(budget.members)
        if not budgets:
            del self._pdbs[ns]
        if self._refresh_protection(affected, budget_changed=True):
            self.on_change()

    def _check_pdb(self, key: str, meta: dict[str, Any]) -> None:
        """A pod upserted: its memberships follow its labels, its unit its binding; protection is re-evaluated
        for the pods whose unit counts moved."""
        labels = self._labels.get(key, {})
        affected: set[str] = {key}
        unit = self._victim_unit(key)
        for budget in self._pdbs.get(meta.get("namespace") or "default", {}).values():
            if budget.selects(labels):
                affected |= budget.set_member(key, unit)
            elif key in budget.members:
                affected |= budget.drop(key)
        self._refresh_protection(affected, budget_changed=False)

    def _refresh_protection(self, keys: Iterable[str], *, budget_changed: bool) -> bool:
        """Mark or unmark pods protected as the Eviction API would decide (core/preempt_pdb.py pdb_protects);
        True when a pod's protection changed. `budget_changed`: a PDB moved, so an earlier refusal of its pods is
        forgotten when it now allows their eviction."""
        changed = False
        pods = self.cluster.pods
        for key in keys:
            if key not in pods:
                self._pdb_pods.discard(key)
                continue
            if pdb_protects(key, self._pdbs.get(key.partition("/")[0], {}).values()):
                if key not in self._pdb_pods or key not in self.cluster.protected:
                    self._pdb_pods.add(key)
                    self.cluster.set_protected(key, True)
                    changed = True
            elif key in self._pdb_pods or (budget_changed and key in self.cluster.protected):
                self._pdb_pods.discard(key)
                self.cluster.set_protected(key, False)
                changed = True
        return changed

    def _victim_unit(self, key: str) -> str | None:
        """The victim unit of a bound, unfinished pod (its gang, or itself); None: not a possible victim."""
        pod = self.cluster.pods.get(key)
        if pod is None or pod.node_name is None or pod.terminal:
            return None
        return pod.gang or key

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

    # ------------------------------------------------------ priority classes
    def on_priority_class(self, kind: str | None, obj: dict[str, Any]) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        if kind == "DELETED":
            self.priority_classes.pop(name, None)
        else:
            self.priority_classes[name] = int(obj.get("value") or 0)

    # -------------------------------------------------------------- topology
    def set_topology(self, tree: TopologyTree | None) -> None:
        self.cluster.set_topology(tree)
        self.on_change()
