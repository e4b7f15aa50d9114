"""PodGroups as the operator writes them: status through the status subresource, and the PodGroups of annotation-only
and inferred gangs.

Contract:
- `write_statuses()` drains the cache's `dirty_gangs` and hands each changed status (state/status.py) to the
  coalesced writes, to the PodGroup object the cache shows now (re-created: written in full; gone: dropped, never
  re-created). Native PodGroups get only their `PodGroupInitiallyScheduled` condition (models/native_status.py).
  Status is written for PodGroups with members this replica serves; another writer's status is written over.
  The `Scheduled` event is recorded when a status moves into Scheduled or Running, only after bindings succeeded.
- `sync_owned(spawn)` creates the PodGroup of every annotation-only gang, owned by its live members (never one
  without owners); an inferred gang's is owned by its workload, and a same-named PodGroup it does not own wins
  (Warning `InferredGangNameTaken`). More: docs/modules.md#runtimepodgroupspy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from gangsched.core import GangSpec, GangTree, PodRecord
from gangsched.k8s.api import KubeApi, PodOwner
from gangsched.k8s.coalescing import EventRecorder, ObjectRef
from gangsched.k8s.errors import ApiError
from gangsched.k8s.writes import Writes
from gangsched.models.native import API_VERSION as NATIVE_API_VERSION
from gangsched.models.native_status import COMPOSITE_INITIALLY_SCHEDULED as COMPOSITE_CONDITION
from gangsched.models.native_status import set_condition, wanted_composite, wanted_condition
from gangsched.models.podgroup import SIGS_API_VERSION, PodGroupPhase
from gangsched.models.timestamps import now_time
from gangsched.state.cache import ClusterCache, PodGroupInfo
from gangsched.state.composite import KIND as COMPOSITE_KIND
from gangsched.state.placed_tiers import PlacedTiers, placed_tiers
from gangsched.state.status import GANGSCHED

log = logging.getLogger(__name__)
# every status field gangsched writes, as nulls (a JSON merge patch removes them)
_CLEARED: dict[str, Any] = dict.fromkeys(
    (
        "phase",
        "scheduled",
        "running",
        "succeeded",
        "failed",
        "conditions",
        "message",
        "scheduleStartTime",
        "observedGeneration",
        "placedTier",
        "placedGroupTier",
        "occupiedBy",
    )
)

Spawn = Callable[[Coroutine[Any, Any, None]], None]


def split_key(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


_STARTED = frozenset({PodGroupPhase.SCHEDULED.value, PodGroupPhase.RUNNING.value})


class PodGroupReporter:
    def __init__(
        self,
        *,
        api: KubeApi,
        cache: ClusterCache,
        writes: Writes,
        create_for_annotation_gangs: bool,
        events: EventRecorder | None = None,
        status_compatibility: str = GANGSCHED,
    ) -> None:
        self.api = api
        self.events = events
        self.cache = cache
        self.writes = writes
        self.statuses = cache.statuses  # the cache forgets deleted gangs there
        self.statuses.compatibility = status_compatibility
        self.create_for_annotation_gangs = create_for_annotation_gangs
        self._creating: set[str] = set()
        self._noted: dict[str, tuple[str, ...]] = {}  # gang -> the foreign schedulerNames last reported in an event
        self._taken: set[str] = set()  # inferred gangs whose name an unrelated PodGroup holds (reported once)

    def _owners(self, key: str, *, live: bool = False) -> list[PodOwner]:
        """The gang's member pods as owners (live=True: only those not being deleted)."""
        leaving: set[str] | frozenset[str] = self.cache.cluster.leaving if live else frozenset()
        return [PodOwner(pod.name, pod.uid) for pod in self.cache.members(key) if pod.uid and pod.key not in leaving]

    def _workload(self, key: str) -> dict[str, Any] | None:
        """The ownerReference of an inferred gang's workload, None when it has none (owned by its pods)."""
        inferred = self.cache.inferred
        owner = inferred.owner(key) if inferred is not None else None
        if owner is None:
            return None
        return {
            "apiVersion": owner.api_version,
            "kind": owner.kind,
            "name": owner.name,
            "uid": owner.uid,
            "controller": False,
            "blockOwnerDeletion": False,
        }

    def sync_owned(self, spawn: Spawn, gangs: set[str]) -> None:
        inferred = self.cache.inferred
        self._creating.intersection_update(self.cache.podgroups_to_create)  # created (seen) or gone: forget
        for key, spec in list(self.cache.podgroups_to_create.items()):
            if key in self._creating:
                continue
            if spec.source == "inferred":
                if inferred is not None and inferred.reading(key):
                    continue  # its owner is being read
            elif not self.create_for_annotation_gangs:
                continue
            # Owners are taken now, from the members that still live: a PodGroup is never created without an owner
            # (nothing would ever delete it) nor for a gang whose pods are all going (it would outlive them). If
            # they go before the create lands, the garbage collector deletes it: its owners no longer exist.
            workload = self._workload(key) if spec.source == "inferred" else None
            owners = self._owners(key, live=True)
            if not owners:
                continue  # reconsidered every round: a live member may join
            self._creating.add(key)
            spawn(self._create(key, spec, owners, workload))
        for key in gangs:
            pg = self.cache.podgroup(key)
            if pg is None:
                self._taken.discard(key)
                continue
            workload = self._workload(key)
            if workload is not None:
                if workload["uid"] not in pg.owners and key not in self._taken:
                    self._taken.add(key)
                    message = (
                        f"this PodGroup is not owned by {workload['kind']} {workload['name']}, whose pods would form"
                        " an inferred gang of this name: the PodGroup's spec is used"
                    )
                    self.cache.report_gang(key, "InferredGangNameTaken", message, on_members=False)
                continue
            if not pg.owned_by_us:
                continue
            owners = self._owners(key)
            if owners and not {owner.uid for owner in owners} <= pg.owners:
                self.writes.set_podgroup_owners(*split_key(key), owners)

    async def _create(
        self, key: str, spec: GangSpec, owners: list[PodOwner], workload: dict[str, Any] | None = None
    ) -> None:
        try:
            await self.api.create_podgroup(spec, owners, workload)
        except ApiError as exc:
            if exc.status != 409:
                log.warning("creating PodGroup %s for an annotation-only gang: %s", key, exc)
                self._creating.discard(key)  # try again next round

    def _clear_set_aside(self) -> None:
        """Remove the status written to scheduling.sigs.k8s.io PodGroups set aside for a scheduling.x-k8s.io one
        (state/podgroup_kinds.py): a merge patch of nulls, so `kubectl get` shows no stale phase on the ignored one."""
        clears, self.cache.status_clears = self.cache.status_clears, []
        for namespace, name in clears:
            self.writes.set_podgroup_status(namespace, name, dict(_CLEARED), api_version=SIGS_API_VERSION)
            self.writes.forget_podgroup(namespace, name, api_version=SIGS_API_VERSION)

    def _foreign_note(self, key: str) -> str | None:
        """The foreign-pods note of the gang (state/foreign.py); one Warning event on the PodGroup when the set of
        foreign schedulerNames changes (not per pod: a controller creates its pods one by one)."""
        note = self.cache.foreign.note(key)
        if note is None:
            self._noted.pop(key, None)
            return None
        names = self.cache.foreign.names(key)
        if self._noted.get(key) != names:
            self._noted[key] = names
            served = ", ".join(sorted(self.cache.scheduler_names))
            message = (
                f"pods with schedulerName {', '.join(names)} reference this PodGroup: not gang-scheduled here "
                f"(this scheduler serves schedulerName {served})"
            )
            self.cache.report_gang(key, "ForeignSchedulerName", message, on_members=False)
        return note

    def write_statuses(self, dirty: set[str]) -> None:
        self._clear_set_aside()
        cluster = self.cache.cluster
        now = now_time()
        in_flight: dict[str, int] = {}
        if dirty:
            for pod_key, _node in cluster.bindings_in_flight():
                pod = cluster.pods.get(pod_key)
                if pod is not None and pod.gang in dirty and not pod.node_name:
                    in_flight[pod.gang] = in_flight.get(pod.gang, 0) + 1
        self._composite_statuses(dirty, now)
        for key in dirty:
            pg = self.cache.podgroup(key)
            if pg is None:
                self._noted.pop(key, None)
                self._native_status(key, now)  # a native PodGroup (scheduling.k8s.io/v1beta1), if the gang has one
                continue  # no PodGroup object (yet): nothing to write to
            if self.statuses.adopt(key, pg.uid):  # a PodGroup object not written to yet (or created again)
                self.writes.forget_podgroup(*split_key(key), api_version=pg.api_version)
            if pg.schedule_start_iso is not None:  # (a restart does not move scheduleStartTime)
                self.statuses.seed_start(key, pg.schedule_start_iso)
            before = self.statuses.last_phase(key) or pg.phase
            gs = cluster.gangs.get(key)
            spec = gs.spec if gs is not None else None
            min_member = spec.min_member if spec is not None else (pg.spec.min_member if pg.spec else 1)
            members = self.cache.members(key)
            note = self._foreign_note(key)
            overwritten = self.statuses.overwritten(key, pg.phase, pg.message)
            if note is not None and not members:
                if pg.phase is not None and (overwritten or not self.statuses.wrote(key)):
                    continue  # only other schedulers' pods, and another writer: that status is theirs
            elif overwritten:  # our members' status, overwritten by another writer: ours again, in full
                self.statuses.rewrite(key)
                self.writes.forget_podgroup(*split_key(key), api_version=pg.api_version)
            reserved_now = 0
            for member in members:
                reservation = cluster.reservation_of(member.key)
                if reservation is not None and not reservation[1]:
                    reserved_now += 1
            body = self.statuses.status_of(
                key,
                min_member=min_member,
                members=members,
                generation=pg.generation,
                decided=gs.last_status if gs is not None else None,
                satisfied=bool(gs and gs.satisfied),
                timed_out=bool(gs and gs.timed_out),
                invalid=self.cache.invalid_message(key),
                in_flight=in_flight.get(key, 0),
                now_iso=now,
                reserved_now=reserved_now,
                note=note,
                degraded=cluster.health.condition(key),
                placed=self._placed(spec, members),
                occupied_by=self._occupant(members),
            )
            if body is not None:
                self.writes.set_podgroup_status(*split_key(key), body, api_version=pg.api_version)
                if body["phase"] in _STARTED and before not in _STARTED:
                    self._scheduled_event(key, pg, body)

    def _native_status(self, key: str, now_iso: str) -> None:
        """The PodGroupInitiallyScheduled condition of a native gang's PodGroup, as kube-scheduler 1.37 writes it
        (models/native_status.py): a merge patch of status.conditions (the whole list, the other writers' conditions
        kept as last seen), only when it changes; never again once True."""
        native = self.cache.native
        obj = native.objects.get(key)
        min_count = native.policy.get(key)
        if obj is None or not min_count:
            return  # no native PodGroup, or a basic one (no gang: kube-scheduler writes no group condition then)
        gs = self.cache.cluster.gangs.get(key)
        decided = gs.last_status if gs is not None else None
        members = self.cache.members(key)
        wanted = wanted_condition(
            bound=sum(1 for pod in members if pod.node_name),
            min_count=gs.spec.min_member if gs is not None and gs.spec is not None else min_count,
            decided_reason=decided.reason if decided is not None else None,
            decided_message=decided.message if decided is not None else "",
            invalid=self.cache.invalid_message(key),
        )
        if wanted is None:
            return
        conditions = set_condition(obj.conditions, wanted, generation=obj.generation, now_iso=now_iso)
        if conditions is None:
            return
        native.wrote(key, conditions)
        self.writes.set_podgroup_status(*split_key(key), {"conditions": conditions}, api_version=NATIVE_API_VERSION)

    def _composite_statuses(self, dirty: set[str], now_iso: str) -> None:
        """The CompositePodGroupInitiallyScheduled condition of every CompositePodGroup in the trees of the dirty native
        gangs, as kube-scheduler 1.37 writes it (models/native_status.py wanted_composite): a composite is scheduled
        once minGroupCount of its children are (a leaf: its quorum bound), recursively; never again once True."""
        gangs = self.cache.cluster.gangs
        trees: dict[str, GangTree] = {}
        for key in dirty:
            gs = gangs.get(key)
            tree = gs.spec.tree if gs is not None and gs.spec is not None else None
            if tree is not None and tree.kind == COMPOSITE_KIND:
                trees[tree.root] = tree
        composites = self.cache.composites
        for tree in trees.values():
            done: dict[str, bool] = {}
            for leaf in tree.leaves():
                gs = gangs.get(leaf)
                quorum = gs.spec.min_member if gs is not None and gs.spec is not None else 0
                done[leaf] = quorum > 0 and sum(1 for pod in self.cache.members(leaf) if pod.node_name) >= quorum
            decided = next(
                (g.last_status for leaf in tree.leaves() if (g := gangs.get(leaf)) is not None and g.last_status),
                None,
            )
            for node in reversed(tree.nodes):  # children before their parents (the nodes are listed level by level)
                if node.leaf:
                    continue
                admitted = sum(1 for child in node.children if done.get(child))
                done[node.key] = admitted >= node.minimum
                obj = composites.objects.get(node.key)
                wanted = wanted_composite(
                    admitted=admitted,
                    minimum=node.minimum,
                    decided_reason=decided.reason if decided is not None else None,
                    decided_message=decided.message if decided is not None else "",
                    invalid=None,
                )
                if obj is None or wanted is None:
                    continue
                conditions = set_condition(
                    obj.conditions, wanted, generation=obj.generation, now_iso=now_iso, type_=COMPOSITE_CONDITION
                )
                if conditions is not None:
                    composites.wrote(node.key, conditions)
                    self.writes.set_composite_status(*split_key(node.key), {"conditions": conditions})

    def _placed(self, spec: GangSpec | None, members: list[PodRecord]) -> PlacedTiers | None:
        """The tiers the gang's bound members occupy (a gang with networkTopology, a topology known)."""
        if spec is None or spec.network_topology is None:
            return None
        return placed_tiers(self.cache.cluster.topology, members, spec.network_topology.group_size)

    def _occupant(self, members: list[PodRecord]) -> str | None:
        """status.occupiedBy: the owners of the first member in the API's list order (by name), as scheduler-plugins'
        controller takes them from pods[0] of its list (pkg/controllers/podgroup_controller.go fillOccupiedObj)."""
        if not members:
            return None
        first = min(members, key=lambda pod: pod.name)
        return self.cache.occupants.get(first.key)

    def _scheduled_event(self, key: str, pg: PodGroupInfo, body: dict[str, Any]) -> None:
        """The PodGroup reached Scheduled (or Running) now that its bindings succeeded."""
        if self.events is None:
            return
        message = next((c["message"] for c in body["conditions"] if c["type"] == "Scheduled"), "scheduled")
        ref = ObjectRef("PodGroup", pg.api_version, *split_key(key), pg.uid)
        self.events.record(ref, "Normal", "Scheduled", message)
