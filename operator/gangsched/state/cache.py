"""The operator's cluster cache: raw watch objects in, the core's incremental SchedulerState kept current.

Contract:
- Feeders take raw API objects (`on_pod_event`, `on_node`, `on_podgroup`, `on_pdb`, `on_pvc`, DRA, Volcano, Grove,
  native and composite PodGroups, `set_topology`, ...), update `self.cluster` and call `on_change()` (or
  `on_status()` when only a PodGroup's status may move). They never raise for one bad object: it is reported in
  `problems` (field, value, what is allowed) and kept out of scheduling (a bound one keeps counting on its node).
- Checks the parsers cannot make: gang groups (`InvalidGangGroup`), gang trees (`InvalidGangTree`), members that
  disagree (`GangDeclarationMismatch`), `groupSize` too large. A gang's spec is its PodGroup's with the members'
  annotations on top; annotation-only gangs are listed in `podgroups_to_create`; `dirty_gangs` may need a status
  write; a gang with neither PodGroup nor member is forgotten everywhere. A pod is ours when its schedulerName is
  one of `scheduler_names`. More: docs/modules.md#statecachepy.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gangsched.core import DomainKey, GangSpec, GangTree, InvalidField, PodRecord, SchedulerState, TopologyTree
from gangsched.models import keys
from gangsched.models.composite import API_VERSION as COMPOSITE_API_VERSION
from gangsched.models.gang import PodGang, parse_pod_gang, referenced_gang
from gangsched.models.grove import API_VERSION as GROVE_API_VERSION
from gangsched.models.grove import DECLARED_BY as GROVE_DECLARED_BY
from gangsched.models.koordinator import gang_notices
from gangsched.models.native import API_VERSION as NATIVE_API_VERSION
from gangsched.models.native import SCHEDULING_GROUP
from gangsched.models.node import node_from_api, unsupported_node_fields
from gangsched.models.pod import pod_fingerprint, pod_from_api, pod_with_status
from gangsched.models.podgroup import SIGS_API_VERSION, occupied_by, podgroup_spec_from_api, podgroup_times
from gangsched.models.rank import MemberMeta, member_rank_key
from gangsched.models.timestamps import parse_time
from gangsched.state.budgets import DisruptionBudgets
from gangsched.state.composite import KIND as COMPOSITE_KIND
from gangsched.state.composite import CompositeGroups, TreeProblem
from gangsched.state.dra import DraBook
from gangsched.state.dra_feed import on_dra, with_devices
from gangsched.state.foreign import ForeignMembers
from gangsched.state.grove import GrovePodGangs
from gangsched.state.inferred import InferredGangs
from gangsched.state.native import NativePodGroups
from gangsched.state.notices import GangNotices
from gangsched.state.podgroup_kinds import PodGroupKinds
from gangsched.state.status import GangStatusBook
from gangsched.state.volcano import API_VERSION as VOLCANO_API_VERSION
from gangsched.state.volcano import VolcanoPodGroups
from gangsched.state.volumes import VolumeBook

DEFAULT_SCHEDULER = "default-scheduler"  # the apiserver's default for spec.schedulerName
log = logging.getLogger(__name__)

SATISFIED_PHASES = frozenset({"Scheduled", "Running", "Succeeded", "Finished"})
PODGROUP_API_VERSION = "scheduling.x-k8s.io/v1alpha1"  # (models/podgroup.py API_VERSION)

# GangSpec field -> how users write it (annotation suffix / PodGroup field), for messages
_FIELD_NAMES = {
    "min_member": "min-available",
    "total_member": "total-number",
    "wait_seconds": "waiting-time",
    "mode": "mode",
    "group": "groups",
    "network_topology": "network topology",
    "stale_grace_seconds": "stale-grace-period",
    "stale_policy": "stale-policy",
}


def _unexpected(exc: BaseException) -> str:
    """A parser's unexpected exception (a bug) as a problem message: the object is reported, never raised out."""
    text = f"{type(exc).__name__}: {exc}"
    return "could not be read: " + (text if len(text) <= 200 else text[:200] + "...")


def _show(field: str, value: Any) -> str:
    if value is None:
        return "(not set)"
    if field in ("wait_seconds", "stale_grace_seconds") and isinstance(value, float):
        return f"{value:g}s"
    if field == "group":
        return "[" + ", ".join(value) + "]"
    if field == "network_topology" and value is not None:
        return f"{value.mode.value}, highest tier {value.highest_tier_allowed}, groupSize {value.group_size}"
    return str(getattr(value, "value", value))


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
    type: str = "Warning"  # the event type ("Normal" for the notices that only inform)


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
    message: str | None = None  # status.message as written (by us or by another scheduler)
    owners: frozenset[str] = frozenset()  # uids of its ownerReferences (the members, for the PodGroups we create)
    schedule_start_iso: str | None = None  # status.scheduleStartTime as written
    schedule_start: float | None = None  # the same, epoch seconds (None: absent or unreadable)
    api_version: str = PODGROUP_API_VERSION  # its API group: its status is written there


@dataclass(slots=True)
class _GangSources:
    podgroup: PodGroupInfo | None = None
    member_decl: PodGang | None = None  # the latest member's declaration (its annotations speak for the gang)
    decl_pod: str | None = None  # the pod key member_decl came from
    declared: GangSpec | None = None  # the effective spec before the group check
    group_error: str | None = None  # the gang group is inconsistent (see the module docstring)
    tree_error: str | None = None  # its CompositePodGroup tree is invalid (state/composite.py)
    warned_group_size: str | None = None  # the GroupSizeTooLarge message last reported
    applied: GangSpec | None = None  # what the SchedulerState has now


def _status_message(obj: dict[str, Any]) -> str | None:
    message = (obj.get("status") or {}).get("message")
    return message if isinstance(message, str) else None


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
        scheduler_names: Iterable[str] = (),
        on_change: Callable[[], None] = lambda: None,
        on_status: Callable[[], None] | None = None,
    ) -> None:
        self.cluster = SchedulerState()
        self.scheduler_name = scheduler_name
        self.scheduler_names = frozenset((scheduler_name, *scheduler_names))  # every name served (one cache)
        self.foreign = ForeignMembers()  # pods naming a gang with a schedulerName not served here
        self.on_change = on_change
        self.on_status = on_status or on_change
        self.problems: list[Problem] = []
        self.dirty_gangs: set[str] = set()
        self.podgroups_to_create: dict[str, GangSpec] = {}
        self._node_unsupported: dict[str, str] = {}  # node -> the UnsupportedField message last reported
        self.statuses = GangStatusBook()  # the PodGroup status bodies last written, per gang
        self.notices = GangNotices()  # what was said about each gang's declaration (once per gang)
        self.podgroup_kinds = PodGroupKinds()  # which PodGroup a gang uses when both API groups have one
        self.status_clears: list[tuple[str, str]] = []  # scheduling.sigs.k8s.io PodGroups set aside: status to remove
        self.volcano = VolcanoPodGroups()  # Volcano PodGroups' minMember (read only), for Volcano-style gangs
        self.native = NativePodGroups()  # Kubernetes 1.37's own PodGroups (read), for pods' spec.schedulingGroup
        self.composites = CompositeGroups()  # their CompositePodGroups (read): the gang trees
        self.grove = GrovePodGangs()  # Grove's PodGangs (read): the gang trees of the pods they reference
        self._told_tree: dict[str, str] = {}  # CompositePodGroup key -> the InvalidGangTree message said on it
        self._gangs: dict[str, _GangSources] = {}
        self._pod_gang: dict[str, str] = {}  # pod key -> gang key
        self._gang_pods: dict[str, set[str]] = {}  # gang key -> its member pod keys (the inverse of _pod_gang)
        self._bad_pods: dict[str, str] = {}  # pod key -> message of its last problem (reported once)
        self._mismatch: dict[str, str] = {}  # pod key -> its GangDeclarationMismatch message (reported once)
        self._listed_by: dict[str, set[str]] = {}  # gang key -> the gangs whose declared group names it
        self.quick_updates = 0  # pod events that only moved nodeName/status (see models/pod.py pod_with_status)
        self._fingerprints: dict[str, int] = {}  # pod key -> pod_fingerprint of its last parsed version
        self.budgets = DisruptionBudgets(self.cluster)
        self.volumes = VolumeBook(classes=self.cluster.classes)
        self.dra = DraBook(classes=self.cluster.classes)  # DRA: slices, classes, claims, our pods' claims (dra*.py)
        self.devices_dirty = False  # flush_devices (state/dra_feed.py) has something to recount
        self.nodes_version = 0  # bumped when a node joins, leaves or changes labels (topology from labels)
        self.inferred: InferredGangs | None = None  # gangs inferred from workloads (config inferGangs; None: off)
        self.occupants: dict[str, str] = {}  # gang member pod key -> its owners as PodGroup status.occupiedBy says

    # ----------------------------------------------------------------- pods
    def on_pod_list(self, items: Iterable[dict[str, Any]]) -> None:
        """A full list: replace every pod (those missing were deleted while nobody watched)."""
        seen: set[str] = set()
        for obj in items:
            key = self._guarded_upsert(obj, notify=False)
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
            self._guarded_upsert(obj, notify=True)

    def _guarded_upsert(self, obj: Any, *, notify: bool) -> str | None:
        """`_upsert_pod`, never raising: an object it cannot even key is logged and skipped (a bug, not bad input:
        the parsers' errors are handled inside)."""
        try:
            return self._upsert_pod(obj, notify=notify)
        except Exception:
            log.exception("pod object skipped: it could not be cached")
            return None

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
        claims = bool(spec.get("resourceClaims"))  # (status.resourceClaimStatuses: read by a full parse)
        if previous is not None and self._fingerprints.get(key) == fingerprint and not claims:
            quick = pod_with_status(previous, spec, obj.get("status"))
            if quick is not None:  # only nodeName / status moved: no need to parse the pod again
                self.quick_updates += 1
                if quick != previous or key in self.cluster.assumed:  # (an assumed pod seen bound: confirmed)
                    self._apply_pod(key, meta, previous, quick, notify=notify)
                return key
        scheduler_name = spec.get("schedulerName") or DEFAULT_SCHEDULER
        ours = scheduler_name in self.scheduler_names
        if ours:
            self.dirty_gangs |= self.foreign.remove(key)
        else:
            self.dirty_gangs |= self.foreign.update(key, referenced_gang(obj), str(scheduler_name))
        try:
            decl = parse_pod_gang(obj) if ours else None
            if decl is not None and decl.declared_by == SCHEDULING_GROUP and self.native.basic(decl.key):
                decl = None  # a basic native PodGroup: no gang, its pods are scheduled one by one
            self.native.check_member(decl, spec)  # a member's priority must be its native PodGroup's
            if decl is None and ours:
                decl = self.grove.declaration(key)  # a pod a Grove PodGang references (state/grove.py)
            if self.inferred is not None:
                decl = self._infer(key, obj, decl, ours=ours)
            record = pod_from_api(
                obj,
                gang=decl.key if decl else None,
                role=decl.role if decl else None,
                rank=_rank(obj) if decl else None,
                ours=ours,
                classes=self.cluster.classes,
            )
            record = self.native.member_record(decl, record)
        except Exception as exc:  # InvalidField, or a parser's bug: reported either way, never raised
            if not isinstance(exc, InvalidField):
                log.exception("pod %s: unexpected error while parsing it", key)
            self._report_pod(obj, key, str(exc) if isinstance(exc, InvalidField) else _unexpected(exc))
            self._keep_usage(key, obj, meta, spec, previous, fingerprint, notify=notify)
            return key
        record = self.volumes.resolve(record, obj)
        if claims or key in self.dra.pods:
            record = self.dra.rebase(record, obj)
            self.devices_dirty = True
        self._bad_pods.pop(key, None)
        self._fingerprints[key] = fingerprint
        self._join(key, decl.key if decl is not None else None)
        occupant = occupied_by(key.partition("/")[0], meta.get("ownerReferences")) if decl is not None else None
        if occupant is not None:
            self.occupants[key] = occupant
        else:
            self.occupants.pop(key, None)
        if decl is not None:
            sources = self._gangs.setdefault(decl.key, _GangSources())
            if decl.overrides:
                self._check_agreement(key, decl, sources)
            if decl.overrides or sources.member_decl is None:
                sources.member_decl = decl
                sources.decl_pod = key
        self._apply_pod(key, meta, previous, record, notify=notify)
        if leaving and previous is None:  # (set_leaving above ignored a pod the SchedulerState did not know yet)
            self.cluster.set_leaving(key, True, deadline)
        if decl is not None:
            self._refresh_gang(decl.key)
            self._tell(decl.key, meta.get("annotations"))
        return key

    def _tell(self, gang: str, annotations: Any) -> None:
        """The notices of a gang's annotations (models/koordinator.py), each said once per gang."""
        if isinstance(annotations, Mapping) and annotations:
            fresh = self.notices.new(gang, gang_notices(annotations))
            sources = self._gangs.get(gang)
            if fresh and (sources is None or sources.podgroup is None):
                self.notices.told_members(gang, fresh)  # said again on its PodGroup if one appears
            for notice in fresh:
                self.report_gang(gang, notice.reason, notice.message, type_=notice.type)

    def _infer(self, key: str, obj: dict[str, Any], decl: PodGang | None, *, ours: bool) -> PodGang | None:
        """A pod declaring no gang may join the gang of its workload (state/inferred.py)."""
        assert self.inferred is not None
        if decl is not None or not ours:
            self.inferred.forget_pod(key)
            return decl
        return self.inferred.pod_declared(key, obj, _rank(obj))

    def reinfer(self, pod_keys: Iterable[str]) -> None:
        """Declare these candidate pods again (their workload was read, their namespace opted in or out): each
        joins its inferred gang, or leaves it to be scheduled as a pod without a gang."""
        if self.inferred is None:
            return
        for key in pod_keys:
            record, found = self.cluster.pods.get(key), self.inferred.candidate(key)
            if record is None or found is None or not record.ours or key in self._bad_pods:
                continue
            decl = self.inferred.declaration(key)
            gang = decl.key if decl is not None else None
            self._join(key, gang)
            if decl is not None:
                sources = self._gangs.setdefault(decl.key, _GangSources())
                sources.member_decl, sources.decl_pod = decl, key
            updated = dataclasses.replace(
                record, gang=gang, role=decl.role if decl else None, rank=found[1] if decl else None
            )
            if updated != record:
                self.cluster.upsert_pod(updated)
            if decl is not None:
                self.dirty_gangs.add(decl.key)
                self._refresh_gang(decl.key)
        self.on_change()

    def _keep_usage(
        self,
        key: str,
        obj: dict[str, Any],
        meta: dict[str, Any],
        spec: dict[str, Any],
        previous: PodRecord | None,
        fingerprint: int,
        *,
        notify: bool,
    ) -> None:
        """A pod whose declaration is invalid: kept out of scheduling. Bound and not finished, it stays in the
        SchedulerState as a pod without a gang that we do not schedule, so its requests keep counting on its node
        (read without the gang declaration; if even that fails, its last good record with the new node and phase);
        pending, it leaves the SchedulerState until fixed."""
        record: PodRecord | None
        self.volumes.forget(key)
        self.dra.forget(key)
        try:
            record = pod_from_api(obj, gang=None, ours=False, classes=self.cluster.classes)
        except Exception:
            record = pod_with_status(previous, spec, obj.get("status")) if previous is not None else None
            if record is not None:
                record = dataclasses.replace(record, gang=None, role=None, rank=None, ours=False)
        if record is None or record.node_name is None or record.terminal:
            if key in self.cluster.pods:
                reported = self._bad_pods.get(key)
                self._remove_pod(key)
                if reported is not None:
                    self._bad_pods[key] = reported  # reported once, not again on its next update
                if notify:
                    self.on_change()
            return
        self._fingerprints[key] = fingerprint  # status-only updates then keep it current without a parse
        self._join(key, None)
        self._apply_pod(key, meta, previous, record, notify=notify)

    def _check_agreement(self, key: str, decl: PodGang, sources: _GangSources) -> None:
        """Warn when this member's gang annotations differ from those that speak for the gang now."""
        current, other = sources.member_decl, sources.decl_pod
        if current is None or other is None or other == key or current.overrides is decl.overrides:
            return
        if current.overrides == decl.overrides or not current.overrides:
            return
        if other not in self._gang_pods.get(decl.key, ()):
            return  # that member is gone: nobody to disagree with
        mine, theirs = dict(decl.overrides), dict(current.overrides)
        diffs = [
            f"{_FIELD_NAMES.get(f, f)} {_show(f, theirs.get(f))} (pod {other.partition('/')[2]}) vs"
            f" {_show(f, mine.get(f))} (pod {key.partition('/')[2]})"
            for f in sorted(set(mine) | set(theirs), key=list(_FIELD_NAMES).index)
            if mine.get(f) != theirs.get(f)
        ]
        message = (
            f"members of gang {decl.key} disagree on the gang declaration: {'; '.join(diffs)}; every member must"
            f" carry the same {keys.KOORD_MIN_AVAILABLE.rpartition('/')[0]}/* annotations: the latest member's"
            f" (pod {key.partition('/')[2]}) are used"
        )
        if self._mismatch.get(key) == message:
            return
        self._mismatch[key] = message
        pod = self.cluster.pods.get(key)
        namespace, name = key.split("/", 1)
        self.problems.append(
            Problem("Pod", "v1", namespace, name, pod.uid if pod else "", "GangDeclarationMismatch", message)
        )
        if sources.podgroup is not None:
            self.report_gang(decl.key, "GangDeclarationMismatch", message, on_members=False)

    def report_gang(
        self, gang: str, reason: str, message: str, *, on_members: bool = True, type_: str = "Warning"
    ) -> None:
        """An event (a Warning by default) about a gang: on its PodGroup, or (when it has none yet and `on_members`)
        on one member."""
        sources = self._gangs.get(gang)
        namespace, name = gang.split("/", 1)
        pg = sources.podgroup if sources is not None else None
        if pg is not None:
            self.problems.append(Problem("PodGroup", pg.api_version, namespace, name, pg.uid, reason, message, type_))
            return
        if not on_members:
            return
        for pod_key in sorted(self._gang_pods.get(gang, ())):
            pod = self.cluster.pods.get(pod_key)
            if pod is not None:
                self.problems.append(Problem("Pod", "v1", pod.namespace, pod.name, pod.uid, reason, message, type_))
                return

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
            or previous.gang != record.gang  # moved to another gang: both gangs' quorum and status may change
        ):
            self.on_change()
        elif previous.node_name != record.node_name or previous.phase != record.phase:
            self.on_status()  # one of our pods bound, or a bound pod's phase moved: only PodGroup status may change

    def _remove_pod(self, key: str) -> None:
        self._fingerprints.pop(key, None)
        self.occupants.pop(key, None)
        if self.inferred is not None:
            self.inferred.forget_pod(key)
        self.dirty_gangs |= self.foreign.remove(key)
        self.volumes.forget(key)
        if key in self.dra.pods:
            self.dra.forget(key)
            self.devices_dirty = True
        self.cluster.remove_pod(key)
        self.budgets.pod_removed(key)
        self._bad_pods.pop(key, None)
        self._mismatch.pop(key, None)
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
        if sources is not None and sources.declared is not None:
            for partner in sources.declared.group:
                listing = self._listed_by.get(partner)
                if listing is not None:
                    listing.discard(gang)
                    if not listing:
                        del self._listed_by[partner]
            self._check_groups(set(sources.declared.group) - {gang})
        self._check_groups(self._listed_by.get(gang, set()))  # the gangs naming it no longer see its declaration
        self.podgroups_to_create.pop(gang, None)
        self.dirty_gangs.discard(gang)
        self.statuses.forget(gang)
        self.notices.forget(gang)

    def gang_structure_sizes(self) -> dict[str, int]:
        """How many gangs each per-gang structure of the cache holds (tests check that deleted gangs leave none)."""
        return {
            "sources": len(self._gangs),
            "members": len(self._gang_pods),
            "listed_by": len(self._listed_by),
            "podgroups_to_create": len(self.podgroups_to_create),
            "dirty_gangs": len(self.dirty_gangs),
            "statuses": self.statuses.tracked(),
            "notices": len(self.notices),
        }

    def _report_pod(self, obj: dict[str, Any], key: str, message: str) -> None:
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
        """A PodGroup event; never raises (an object that cannot even be keyed is logged and skipped)."""
        try:
            self._on_podgroup(kind, obj)
        except Exception:
            log.exception("PodGroup object skipped: it could not be cached")

    def _on_podgroup(self, kind: str | None, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        routed = self.podgroup_kinds.route(key, kind, obj)
        for other, message in routed.conflicts:
            other_meta = other.get("metadata") or {}
            namespace, name, uid = key.split("/")[0], str(other_meta.get("name", "")), str(other_meta.get("uid", ""))
            self.problems.append(
                Problem("PodGroup", SIGS_API_VERSION, namespace, name, uid, "PodGroupConflict", message)
            )
        for other in routed.cleared:  # (set aside after its status was written: the runtime removes that status)
            self.status_clears.append((key.split("/")[0], str((other.get("metadata") or {}).get("name", ""))))
        for event_kind, event_obj in routed.events:
            self._apply_podgroup(key, event_kind, event_obj)

    def _apply_podgroup(self, key: str, kind: str | None, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        sources = self._gangs.setdefault(key, _GangSources())
        if kind == "DELETED":
            self._podgroup_deleted(key, sources)
            return
        old = sources.podgroup
        raw_generation = meta.get("generation")
        generation = raw_generation if isinstance(raw_generation, int) and not isinstance(raw_generation, bool) else 0
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
            message=_status_message(obj),
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
        except Exception as exc:  # a parser's bug: the PodGroup is reported invalid, nothing raised
            log.exception("PodGroup %s: unexpected error while parsing it", key)
            spec, error = None, _unexpected(exc)
        times = podgroup_times(obj)
        sources.podgroup = PodGroupInfo(
            uid=meta.get("uid", ""),
            generation=generation,
            spec=spec,
            error=error,
            created=times.created,
            phase=phase,
            message=_status_message(obj),
            owned_by_us=owned_by_us,
            owners=_owner_uids(meta),
            schedule_start_iso=times.schedule_start_iso,
            schedule_start=times.schedule_start,
            api_version=SIGS_API_VERSION if obj.get("apiVersion") == SIGS_API_VERSION else PODGROUP_API_VERSION,
        )
        self.podgroups_to_create.pop(key, None)
        if error and (old is None or old.error != error):
            namespace, name, uid = key.split("/")[0], meta.get("name", ""), meta.get("uid", "")
            api_version = sources.podgroup.api_version
            self.problems.append(Problem("PodGroup", api_version, namespace, name, uid, "InvalidSpec", error))
        if phase in SATISFIED_PHASES:
            self.cluster.mark_satisfied(key)  # believed only when its pods show it (core/memory/scheduler_state.py)
        self._refresh_gang(key)
        self._tell(key, meta.get("annotations"))
        if old is None and sources.group_error is not None:  # reported on a member before: now on its PodGroup too
            self.report_gang(key, "InvalidGangGroup", sources.group_error)
        if old is None:
            for notice in self.notices.retell(key):  # its members' notices, said before the PodGroup was seen
                self.report_gang(key, notice.reason, notice.message, type_=notice.type)
        self.dirty_gangs.add(key)
        self.on_change()

    def on_volcano_podgroup(self, kind: str | None, obj: dict[str, Any]) -> None:
        """A Volcano PodGroup event (read only: its minMember is a Volcano-style gang's count); never raises."""
        try:
            change = self.volcano.on_event(kind, obj)
            if change.problem is not None:
                meta = obj.get("metadata") or {}
                namespace, name = change.key.split("/", 1)
                uid = str(meta.get("uid", ""))
                self.problems.append(
                    Problem("PodGroup", VOLCANO_API_VERSION, namespace, name, uid, "InvalidSpec", change.problem)
                )
            if change.changed and change.key in self._gangs:
                self._refresh_gang(change.key)
                self.on_change()
        except Exception:
            log.exception("Volcano PodGroup skipped: it could not be cached")

    def on_native_podgroup(self, kind: str | None, obj: dict[str, Any]) -> None:
        """A scheduling.k8s.io/v1beta1 PodGroup event (its gang.minCount is the quorum of the pods naming it in
        spec.schedulingGroup; basic: they are no gang); never raises."""
        try:
            meta = obj.get("metadata") or {}
            was = self._root(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
            change = self.native.on_event(kind, obj)
            namespace, name = change.key.split("/", 1)
            uid = str(meta.get("uid", ""))
            for reason, message in (("InvalidSpec", change.problem), ("UnsupportedField", change.unsupported)):
                if message is not None:
                    self.problems.append(Problem("PodGroup", NATIVE_API_VERSION, namespace, name, uid, reason, message))
            if kind != "DELETED":
                self.dirty_gangs.add(change.key)  # its PodGroupInitiallyScheduled condition (runtime/podgroups.py)
            if not change.changed:
                return
            if self.native.basic(change.key):
                for pod in list(self._gang_pods.get(change.key, ())):
                    record = self.cluster.pods.get(pod)
                    if record is not None:  # members by spec.schedulingGroup: no gang now
                        self.cluster.upsert_pod(dataclasses.replace(record, gang=None, role=None, rank=None))
                    self._join(pod, None)
            else:
                self._native_members(change.key)
            if change.key in self._gangs:
                self._refresh_gang(change.key)
            self._refresh_trees(namespace, {was, self._root(change.key)})
            self.on_change()
        except Exception:
            log.exception("native PodGroup skipped: it could not be cached")

    def on_composite_podgroup(self, kind: str | None, obj: dict[str, Any]) -> None:
        """A scheduling.k8s.io/v1alpha3 CompositePodGroup event: the gang trees of its namespace are built again
        (state/composite.py); never raises."""
        try:
            meta = obj.get("metadata") or {}
            was = self._root(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
            change = self.composites.on_event(kind, obj)
            namespace, name = change.key.split("/", 1)
            uid = self.composites.uids.get(change.key, "")
            for reason, message in (("InvalidSpec", change.problem), ("UnsupportedField", change.unsupported)):
                if message is not None:
                    where = (COMPOSITE_KIND, COMPOSITE_API_VERSION, namespace, name, uid)
                    self.problems.append(Problem(*where, reason, message))
            self._refresh_trees(namespace, {was, self._root(change.key)})
            self.on_change()
        except Exception:
            log.exception("CompositePodGroup skipped: it could not be cached")

    def on_podgang(self, kind: str | None, obj: dict[str, Any]) -> None:
        """A Grove PodGang event (scheduler.grove.io/v1alpha1): the pods it references (or did) are declared again
        (state/grove.py); never raises."""
        try:
            change = self.grove.on_event(kind, obj)
            namespace, name = change.key.split("/", 1)
            uid = self.grove.uids.get(change.key, "")
            for reason, message in (("InvalidSpec", change.problem), ("UnsupportedField", change.unsupported)):
                if message is not None:
                    self.problems.append(Problem("PodGang", GROVE_API_VERSION, namespace, name, uid, reason, message))
            for pod in sorted(change.pods):
                self._regrove(pod)
            self.on_change()
        except Exception:
            log.exception("PodGang skipped: it could not be cached")

    def _regrove(self, key: str) -> None:
        """A pod a PodGang references (or did): it joins its Grove gang, or leaves it, unless it declares a gang of
        its own."""
        record = self.cluster.pods.get(key)
        if record is None or not record.ours or key in self._bad_pods:
            return
        current = self._gangs.get(record.gang) if record.gang is not None else None
        decl_now = current.member_decl if current is not None else None
        if decl_now is not None and decl_now.declared_by != GROVE_DECLARED_BY and record.gang is not None:
            return  # declared by the pod itself (labels, annotations, spec.schedulingGroup): that one wins
        decl = self.grove.declaration(key)
        gang = decl.key if decl is not None else None
        self._join(key, gang)
        if decl is not None:
            sources = self._gangs.setdefault(decl.key, _GangSources())
            sources.member_decl, sources.decl_pod = decl, key
        if gang != record.gang:
            self.cluster.upsert_pod(
                dataclasses.replace(record, gang=gang, role=None, rank=record.rank if gang else None)
            )
        if decl is not None:
            self.dirty_gangs.add(decl.key)
            self._refresh_gang(decl.key)

    def _root(self, key: str) -> str:
        """The key a group's parent links lead to: its root, or the first parent missing (or the group where a cycle
        closes); the group itself when it names no parent."""
        namespace = key.partition("/")[0]
        seen = {key}
        while True:
            group = self.composites.groups.get(key)
            link = group.link if group is not None else self.native.links.get(key)
            if link is None or link.parent is None:
                return key
            up = f"{namespace}/{link.parent}"
            if up in seen:
                return up
            seen.add(up)
            key = up

    def _refresh_trees(self, namespace: str, roots: set[str]) -> None:
        """The native gangs of the namespace whose tree leads to one of `roots` (or that were in an invalid tree), their
        spec again: only the trees an event touched are built again."""
        for key, sources in list(self._gangs.items()):
            if key.partition("/")[0] != namespace:
                continue
            if (
                sources.tree_error is not None
                or self._root(key) in roots
                or (
                    sources.declared is not None
                    and sources.declared.tree is not None
                    and sources.declared.tree.root in roots
                )
            ):
                self._refresh_gang(key)

    def tree(self, key: str) -> GangTree | TreeProblem | None:
        """The gang tree of a native gang (a message when it is invalid; None when it is in none)."""
        return self.composites.tree_for(key, self.native.links, self.native.policy, self.native.tier_keys)

    def _native_members(self, key: str) -> None:
        """A native PodGroup seen (created): its pending members met before it get its preemptionPolicy, and those
        whose priority is not its priority are reported and set aside until their next change, as at a parse."""
        sources = self._gangs.get(key)
        decl = sources.member_decl if sources is not None else None
        if decl is None or decl.declared_by != SCHEDULING_GROUP:
            return
        for pod in list(self._gang_pods.get(key, ())):
            record = self.cluster.pods.get(pod)
            if record is None or record.node_name is not None:
                continue  # bound (or not known): it stays as it runs
            problem = self.native.priority_problem(key, record.priority)
            if problem is None:
                self.cluster.upsert_pod(self.native.member_record(decl, record))
                continue
            self._remove_pod(pod)  # (its fingerprint too: its next event parses it again)
            self._bad_pods[pod] = str(problem)
            reason = "InvalidGangDeclaration"
            self.problems.append(Problem("Pod", "v1", record.namespace, record.name, record.uid, reason, str(problem)))

    def _satisfied(self, key: str) -> bool:
        gs = self.cluster.gangs.get(key)
        return bool(gs is not None and gs.satisfied)

    def podgroup(self, key: str) -> PodGroupInfo | None:
        sources = self._gangs.get(key)
        return sources.podgroup if sources else None

    def invalid_message(self, key: str) -> str | None:
        """Why the gang is Invalid (its PodGroup's spec, or its gang group), None when it is not: the PodGroup's
        Invalid condition."""
        sources = self._gangs.get(key)
        if sources is None:
            return None
        if sources.podgroup is not None and sources.podgroup.error is not None:
            return sources.podgroup.error
        return sources.group_error or sources.tree_error

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
            effective = self.native.adjust(key, decl, self.volcano.adjust(key, decl, effective))
            effective = self._in_tree(key, sources, decl, effective)
            if effective is not None and effective.domain is None and (label := self.dra.claim_domain(key)):
                effective = dataclasses.replace(effective, domain=DomainKey(label=label))  # (a PodGroup claim's)
        wanted = self.volcano.adjust(key, decl, decl.spec, topology=False) if decl is not None else None
        if decl is not None and decl.declared_by == GROVE_DECLARED_BY:
            wanted = None  # a Grove gang: its PodGang is the declaration (no PodGroup is created for it)
        if pg is None and wanted is not None and key not in self.podgroups_to_create:
            self.podgroups_to_create[key] = wanted
        # messages: an invalid PodGroup is not "a PodGroup that does not exist yet"
        self.cluster.set_no_spec_reason(key, self.invalid_message(key) if effective is None else None)
        before = sources.declared
        if effective == before:
            return  # (a gang's group state changes only with its own or a partner's declared spec)
        sources.declared = effective
        touched = {key}
        for partner in before.group if before is not None else ():
            listing = self._listed_by.get(partner)
            if listing is not None:
                listing.discard(key)
                if not listing:
                    del self._listed_by[partner]
            touched.add(partner)
        for partner in effective.group if effective is not None else ():
            self._listed_by.setdefault(partner, set()).add(key)
            touched.add(partner)
        touched.update(self._listed_by.get(key, ()))  # the gangs that name this one as a partner
        self._check_groups(touched)

    def _in_tree(self, key: str, sources: _GangSources, decl: PodGang | None, spec: GangSpec | None) -> GangSpec | None:
        """The spec of a native gang with its CompositePodGroup tree; None (and the reason reported once: an event on
        the PodGroup, its SchedulerError condition) while the tree is invalid."""
        native = decl is not None and decl.declared_by == SCHEDULING_GROUP
        tree = self.tree(key) if native and spec is not None else None
        error = str(tree) if isinstance(tree, TreeProblem) else None
        if error != sources.tree_error:
            sources.tree_error = error
            self.dirty_gangs.add(key)
            if isinstance(tree, TreeProblem):
                namespace, name = key.split("/", 1)
                obj = self.native.objects.get(key)
                uid = obj.uid if obj is not None else ""
                where = ("PodGroup", NATIVE_API_VERSION, namespace, name, uid)
                self.problems.append(Problem(*where, "InvalidGangTree", tree.message))
                self._tell_composite(tree)
        if error is not None:
            return None
        if spec is not None and isinstance(tree, GangTree) and spec.tree != tree:
            return dataclasses.replace(spec, tree=tree)
        return spec

    def _tell_composite(self, problem: TreeProblem) -> None:
        """The CompositePodGroup an invalid tree was found at gets the event too (once per message)."""
        if problem.at not in self.composites.groups and problem.at not in self.composites.uids:
            return
        if self._told_tree.get(problem.at) == problem.message:
            return
        self._told_tree[problem.at] = problem.message
        namespace, name = problem.at.split("/", 1)
        where = (COMPOSITE_KIND, COMPOSITE_API_VERSION, namespace, name, self.composites.uids.get(problem.at, ""))
        self.problems.append(Problem(*where, "InvalidGangTree", problem.message))

    def _check_groups(self, gangs: Iterable[str]) -> None:
        """Re-check the gang-group consistency of these gangs and apply each one's spec (or None while invalid)."""
        for key in sorted(gangs):
            sources = self._gangs.get(key)
            if sources is not None:
                self._apply_gang(key, sources)

    def _group_problem(self, key: str, spec: GangSpec) -> str | None:
        for partner in spec.group:
            if partner == key:
                continue
            theirs = self._gangs.get(partner)
            other = theirs.declared if theirs is not None else None
            if other is None or other.group == spec.group:
                continue  # not known yet (waited for), or consistent
            field = "spec.gangGroup" if spec.source == "podgroup" else keys.KOORD_GROUPS
            shown = "[" + ", ".join(spec.group) + "]"
            what = (
                "does not list this group back (it is in no group)"
                if not other.group
                else "declares another group: [" + ", ".join(other.group) + "]"
            )
            return str(
                InvalidField(
                    field,
                    shown,
                    f"every gang of a group must declare the same group, but gang {partner} {what}; the gangs of this"
                    " group are not scheduled until they agree",
                )
            )
        return None

    def _apply_gang(self, key: str, sources: _GangSources) -> None:
        declared = sources.declared
        error = self._group_problem(key, declared) if declared is not None and declared.group else None
        if error != sources.group_error:
            sources.group_error = error
            self.dirty_gangs.add(key)
            if error is not None:
                self.report_gang(key, "InvalidGangGroup", error)
        effective = None if error is not None else declared
        self._warn_group_size(key, sources, effective)
        self.cluster.set_no_spec_reason(key, self.invalid_message(key) if effective is None else None)
        if effective == sources.applied:
            return
        sources.applied = effective
        pg = sources.podgroup
        if effective is None:
            self.cluster.remove_gang(key)
        else:
            self.cluster.upsert_gang(effective, created=pg.created if pg else None)
        self.on_change()

    def _warn_group_size(self, key: str, sources: _GangSources, spec: GangSpec | None) -> None:
        topology = spec.network_topology if spec is not None else None
        size = spec.total_member or spec.min_member if spec is not None else 0
        if spec is None or topology is None or topology.group_size <= size:
            sources.warned_group_size = None
            return
        field = "spec.networkTopology.groupSize" if spec.source == "podgroup" else keys.TOPOLOGY_GROUP_SIZE
        message = (
            f"{field}: {topology.group_size} is larger than the gang ({size} members: totalMember, else minMember);"
            " the whole gang is placed as one data-parallel group"
        )
        if sources.warned_group_size != message:
            sources.warned_group_size = message
            self.report_gang(key, "GroupSizeTooLarge", message)

    # ------------------------------------------------------ disruption budgets
    def on_pdb(self, kind: str | None, obj: dict[str, Any]) -> None:
        """A PodDisruptionBudget event (state/budgets.py); an invalid selector is reported, the PDB selects nothing."""
        try:
            changed, error = self.budgets.on_pdb(kind, obj)
        except Exception as exc:  # a parser's bug: reported on the PDB, never raised
            log.exception("PodDisruptionBudget event could not be handled")
            changed, error = False, _unexpected(exc)
        if error is not None:
            meta = obj.get("metadata") or {}
            ns, name, uid = meta.get("namespace") or "default", meta.get("name", ""), meta.get("uid", "")
            self.problems.append(Problem("PodDisruptionBudget", "policy/v1", ns, name, uid, "InvalidSelector", error))
        if changed:
            self.on_change()

    # -------------------------------------------------------------- volumes
    def on_pvc(self, kind: str | None, obj: dict[str, Any]) -> None:
        """A PersistentVolumeClaim event (state/volumes.py); never raises."""
        try:
            self._volumes_moved(self.volumes.on_claim(kind, obj))
        except Exception:
            log.exception("PersistentVolumeClaim event could not be handled")

    def on_pv(self, kind: str | None, obj: dict[str, Any]) -> None:
        """A PersistentVolume event (state/volumes.py); never raises (an unreadable one is reported on it)."""
        try:
            pods, error = self.volumes.on_volume(kind, obj)
            if error is not None:
                meta = obj.get("metadata") or {}
                name, uid = meta.get("name", ""), meta.get("uid", "")
                self.problems.append(Problem("PersistentVolume", "v1", "", name, uid, "InvalidNodeAffinity", error))
            self._volumes_moved(pods)
        except Exception:
            log.exception("PersistentVolume event could not be handled")

    def _volumes_moved(self, keys: Iterable[str]) -> None:
        """Re-derive the records of these pods (pending ones: a bound pod's placement is decided)."""
        moved = False
        for key in sorted(keys):
            record = self.cluster.pods.get(key)
            if record is None or record.node_name is not None or record.terminal:
                continue
            new = self.volumes.refresh(record)
            if key in self.dra.pods:
                new = self.dra.rebase(new, None)
            if new != record:
                self.cluster.upsert_pod(new)
                if new.gang is not None:
                    self.dirty_gangs.add(new.gang)
                moved = True
        if moved:
            self.cluster.store.bump_freed()  # an unready pod backed off: it is tried again at once
            self.on_change()

    # ------------------------------------------------------------------ DRA
    def on_resource_slice(self, kind: str | None, obj: dict[str, Any]) -> None:
        self._on_dra("ResourceSlice", kind, obj)

    def on_device_class(self, kind: str | None, obj: dict[str, Any]) -> None:
        self._on_dra("DeviceClass", kind, obj)

    def on_resource_claim(self, kind: str | None, obj: dict[str, Any]) -> None:
        self._on_dra("ResourceClaim", kind, obj)
        meta = obj.get("metadata") or {}
        try:
            for owner in meta.get("ownerReferences") or ():  # a PodGroup's claim may give its gang a domain
                if isinstance(owner, dict) and owner.get("kind") == "PodGroup":
                    self._refresh_gang(f"{meta.get('namespace') or 'default'}/{owner.get('name', '')}")
        except Exception:
            log.exception("the gang of a PodGroup's claim could not be refreshed")

    def _on_dra(self, which: str, kind: str | None, obj: dict[str, Any]) -> None:
        report = on_dra(self, which, kind, obj)  # (state/dra_feed.py)
        if report is not None:
            self.problems.append(Problem(*report))

    # ---------------------------------------------------------------- nodes
    def on_node(self, kind: str | None, obj: dict[str, Any]) -> None:
        """A Node event; never raises (a node that cannot be read is reported and left out)."""
        try:
            self._on_node(kind, obj)
        except Exception:
            log.exception("Node object skipped: it could not be cached")

    def _on_node(self, kind: str | None, obj: dict[str, Any]) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        old = self.cluster.nodes.get(name)
        if kind == "DELETED":
            self.cluster.remove_node(name)
            self._node_unsupported.pop(name, None)
            self.nodes_version += 1
        else:
            self._node_fields(name, obj)
            try:
                self.cluster.upsert_node(with_devices(self, node_from_api(obj)))
            except Exception as exc:  # InvalidField, or a parser's bug: reported, the node is left out
                message = str(exc) if isinstance(exc, InvalidField) else _unexpected(exc)
                uid = (obj.get("metadata") or {}).get("uid", "")
                self.problems.append(Problem("Node", "v1", "", name, uid, "InvalidNode", message))
                self.cluster.remove_node(name)
            new = self.cluster.nodes.get(name)
            if old is None or new is None or old.labels != new.labels:
                self.nodes_version += 1
                if self.dra.slices:
                    self.dra.nodes_moved()  # (a slice's nodeSelector reads labels)
                    self.devices_dirty = True
        self.on_change()

    def _node_fields(self, name: str, obj: dict[str, Any]) -> None:
        """A Warning UnsupportedField on the node for its fields gangsched does not evaluate, once per message."""
        message = unsupported_node_fields(obj)
        if message == self._node_unsupported.get(name):
            return
        if message is None:
            self._node_unsupported.pop(name, None)
            return
        self._node_unsupported[name] = message
        uid = (obj.get("metadata") or {}).get("uid", "")
        self.problems.append(Problem("Node", "v1", "", name, uid, "UnsupportedField", message))

    # ----------------------------------------------------------- namespaces
    def on_namespace(self, kind: str | None, obj: dict[str, Any]) -> None:
        """A Namespace event: its labels (pod affinity's namespaceSelector reads them); never raises."""
        meta = obj.get("metadata") or {}
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            return
        labels = meta.get("labels") or {}
        if kind == "DELETED":
            self.cluster.set_namespace(name, None)
        else:
            self.cluster.set_namespace(
                name, {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}
            )
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
