"""The scheduler's in-memory model of the cluster: a facade over the store, the queue and the victim book.

Contract (the state/ layer feeds it from watch events; the runtime applies plans to it):
- Parts: `store` (core/memory/store.py), `queue` (core/memory/queue.py), `victims` (core/memory/victim_book.py),
  `health` (core/memory/health_book.py); the scheduler reads them, only this facade changes them.
- Observations: `upsert_node`/`remove_node`, `set_namespace`, `upsert_pod`/`remove_pod`, `upsert_gang`/`remove_gang`,
  `set_no_spec_reason`, `mark_satisfied` (believed only when the pods show it), `set_topology`, `set_protected`,
  `set_leaving`; restart: `restore_wait_start`, `restore_nominations`.
- `apply(plan)` records a cycle's decisions before the runtime carries them out; outcomes: `bind_succeeded`,
  `bind_failed`, `eviction_failed` (the victim is protected from then on), `victim_spared`.
- Nominations are not charged to `used`; readers: `nodes`, `pods`, `gangs`, `used`, `free`, `nominations`, ...
More: docs/modules.md#corememoryscheduler_statepy.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from gangsched.core.devices import DeviceState
from gangsched.core.memory.gangs import GangState, GangTransition
from gangsched.core.memory.health_book import HealthBook
from gangsched.core.memory.plan import Plan, UnitBackoff
from gangsched.core.memory.podstate import BINDING, NOMINATED, PENDING, RESERVED, PodState
from gangsched.core.memory.queue import SchedulingQueue
from gangsched.core.memory.restore import restore_nominations
from gangsched.core.memory.store import ClusterStore
from gangsched.core.memory.victim_book import VictimBook
from gangsched.core.records.records import ClassRegistry, NodeRecord, PodRecord
from gangsched.core.topology import TopologyTree
from gangsched.core.values.gangspec import GangSpec
from gangsched.core.values.resources import Resources
from gangsched.core.values.units import UnitKey

BIND_BACKOFF_GEN = 2**62  # a bind backoff's freed generation: freed capacity never ends it early


class SchedulerState:
    def __init__(self, classes: ClassRegistry | None = None) -> None:
        self.queue = SchedulingQueue()
        self.victims = VictimBook()
        self.store = ClusterStore(self, classes)  # (it owns the class registry: `store.classes`)
        self._no_spec_reasons: dict[str, str] = {}  # gang -> why its PodGroup is invalid (set_no_spec_reason)
        self.health = HealthBook()  # runtime gang health (core/gang/health.py)

    @property
    def classes(self) -> ClassRegistry:
        """The registry this state's pods' classes are interned in (the parsers intern into it)."""
        return self.store.classes

    # ----- PendingSink (the store's notifications, forwarded) -----
    def pod_pending(self, pod_key: str, gang_key: str | None, pending: bool) -> None:
        self.queue.pod_pending(pod_key, gang_key, pending)

    def gang_queued(self, gang_key: str, queued: bool) -> None:
        self.queue.gang_queued(gang_key, queued)

    def gang_forgotten(self, gang_key: str) -> None:
        self.queue.gang_forgotten(gang_key)
        self.victims.forget_gang(gang_key)

    # ----- readers -----
    @property
    def nodes(self) -> dict[str, NodeRecord]:
        return self.store.nodes

    @property
    def pods(self) -> dict[str, PodRecord]:
        return self.store.pods

    @property
    def gangs(self) -> dict[str, GangState]:
        return self.store.gangs

    @property
    def used(self) -> dict[str, Resources]:
        return self.store.used

    @property
    def topology(self) -> TopologyTree | None:
        return self.store.topology

    @property
    def leaving(self) -> set[str]:
        return self.store.leaving

    @property
    def assumed(self) -> dict[str, tuple[str, str]]:
        return self.store.assumed

    @property
    def evicting(self) -> dict[str, str]:
        return self.victims.evicting

    @property
    def protected(self) -> set[str]:
        return self.victims.protected

    def state_of(self, pod_key: str) -> PodState | None:
        return self.store.state_of(pod_key)

    def reservation_of(self, pod_key: str) -> tuple[str, bool] | None:
        """(node, binding_in_flight) of a pod's reservation, or None."""
        return self.store.reservation_of(pod_key)

    def nomination_of(self, pod_key: str) -> str | None:
        return self.store.nomination_of(pod_key)

    def nominations(self) -> Iterator[tuple[str, str]]:
        return self.store.nominations()

    def victims_of(self, gang_key: str) -> list[str]:
        return self.victims.victims_of(gang_key)

    def refused_for(self, gang_key: str) -> set[str]:
        """Pods whose eviction was refused for this preemptor, nothing having changed since."""
        return self.victims.refused_for(gang_key, self.store.static_gen)

    def termination_deadline(self, gang_key: str) -> float | None:
        """When the victims chosen for this preemptor must be gone at the latest (None: none chosen)."""
        return self.victims.termination_deadline(gang_key)

    def bindings_in_flight(self) -> Iterator[tuple[str, str]]:
        return self.store.bindings_in_flight()

    def free(self, node: str) -> Resources:
        return self.store.free(node)

    def lowest_priority(self) -> int | None:
        return self.store.lowest_priority()

    def sizes(self) -> dict[str, int]:
        """Sizes of every per-pod and per-gang structure of the three parts."""
        sizes = {**self.store.sizes(), **self.queue.sizes(), **self.victims.sizes()}
        sizes["no_spec_reasons"] = len(self._no_spec_reasons)
        return sizes

    # ----- feeding -----
    def upsert_node(self, node: NodeRecord) -> None:
        self.store.upsert_node(node)

    def remove_node(self, name: str) -> None:
        self.store.remove_node(name)

    def set_namespace(self, name: str, labels: dict[str, str] | None) -> None:
        """A namespace's labels (None: gone), read by pod affinity's namespaceSelector (core/fit/pod_counts.py)."""
        if self.store.pod_counts.namespaces.get(name) != labels:
            self.store.pod_counts.set_namespace(name, labels)
            self.store.bump_freed()  # a pod waiting for a namespace's labels may fit now

    def upsert_pod(self, pod: PodRecord) -> None:
        pod = self.store.classes.projected(pod)  # as the store keeps it, so an unchanged pod compares equal
        previous = self.store.pods.get(pod.key)
        if previous is not None and previous != pod:
            self.victims.victim_changed(pod.key)
        self.store.upsert_pod(pod)

    def remove_pod(self, key: str) -> None:
        self.store.remove_pod(key)
        self.victims.forget_pod(key)
        self.queue.forget_pod(key)

    def upsert_gang(self, spec: GangSpec, *, created: float | None = None) -> None:
        self.store.upsert_gang(spec, created=created)
        self.health.watch(spec)

    def remove_gang(self, key: str) -> None:
        if key in self.store.gangs:
            self.victims.forget_gang(key)
        self.store.remove_gang(key)
        self.health.forget(key)

    def set_no_spec_reason(self, key: str, reason: str | None) -> None:
        """Why the gang has no spec: its PodGroup exists but is invalid (None: it is valid, or there is none)."""
        if reason is None:
            self._no_spec_reasons.pop(key, None)
        else:
            self._no_spec_reasons[key] = reason

    def no_spec_reason(self, key: str) -> str | None:
        return self._no_spec_reasons.get(key)

    def mark_satisfied(self, key: str) -> None:
        """A PodGroup status says the gang is satisfied: true only if its pods show it (never the phase alone)."""
        if self.victims.is_preempted(key) or key not in self.store.gangs:
            return  # a stale PodGroup status of a gang preempted whole: it must reach its quorum again
        self.store.gang_transition(key, GangTransition.QUORUM_HELD)

    def set_topology(self, tree: TopologyTree | None) -> None:
        self.store.set_topology(tree)  # (a new tree may give a waiting topology gang its room: backed-off units retry)

    def set_devices(self, devices: DeviceState | None) -> None:
        """DRA's view (core/devices DeviceState): a new one may give a waiting unit its devices."""
        if devices is not self.store.devices:
            self.store.bump_freed()
        self.store.devices = devices

    def set_protected(self, pod_key: str, flag: bool) -> None:
        """The pod's PodDisruptionBudget protects it (flag) or allows its eviction: a refusal of it is then
        forgotten, and preemptors (those it was refused to, those its protection kept out) are attempted again at
        once."""
        lifted = not flag and (self.victims.is_refused(pod_key) or pod_key in self.victims.protected)
        self.victims.set_protected(pod_key, flag)
        if lifted:
            self.store.bump_freed()

    def set_leaving(self, pod_key: str, flag: bool, deadline: float | None = None) -> None:
        """The pod's metadata.deletionTimestamp is set (flag; `deadline`: its value) or not: a leaving pod is never
        a victim; a victim's preemptor waits for it until the deadline."""
        self.store.set_leaving(pod_key, flag)
        if flag and deadline is not None:
            self.victims.victim_leaving(pod_key, deadline)

    def restore_wait_start(self, gang_key: str, start: float) -> None:
        """A new leader: the gang was reserving since `start` (its PodGroup's scheduleStartTime)."""
        gang = self.store.gangs.get(gang_key)
        if gang is None or gang.satisfied or gang.timed_out or gang.first_reserved is not None:
            return
        self.store.set_wait_start(gang_key, start)

    def restore_nominations(self, *, now: float) -> list[str]:
        """A new leader: nominations (and their victims) back from the pods' status; see core/memory/restore.py."""
        return restore_nominations(self, now=now)

    # ----- plan application and binder feedback -----
    def apply(self, plan: Plan) -> None:
        """Record what a cycle decided (see the module docstring)."""
        self._apply_nominations(plan)
        self._apply_victims(plan.preemptions.items())
        for gang_key, deadline in plan.victim_deadlines.items():
            if gang_key in self.store.gangs:
                self.victims.extend_deadline(gang_key, deadline)
        self._apply_placements(plan)
        self._apply_gangs(plan)
        self._apply_units(plan)
        if plan.deadlocks:  # the victims' capacity is for their cycles' gangs, not a wake-up for every backed-off unit
            self.queue.rebase_freed(
                self.store.freed_gen
            )  # (else the next gang in line closes the knot again: a livelock)
        self.health.apply(plan.health)
        for unit, gen in plan.hint_skips.items():
            self.queue.rebase_unit(unit, gen)
        for unit, memo in plan.empty_fits.items():
            self.queue.record_empty_fit(unit, memo)
        for unit, reach in plan.reach_memos.items():
            self.queue.record_reach(unit, reach)

    def _apply_nominations(self, plan: Plan) -> None:
        store = self.store
        for key in plan.nomination_clears:
            if store.state_of(key) is NOMINATED:
                store.clear_nomination(key)
        for key, node in plan.nominations:
            state = store.state_of(key)
            if state is PENDING or state is NOMINATED:
                store.nominate(key, node)

    def _apply_victims(self, preemptions: Iterable[tuple[str, tuple[str, ...]]]) -> None:
        for gang_key, victims in preemptions:
            victim_gangs: set[str] = set()
            for pod_key in victims:
                pod = self.store.pods.get(pod_key)
                if pod is not None and self.victims.add_victim(pod_key, gang_key) and pod.gang is not None:
                    victim_gangs.add(pod.gang)
            self.mark_preempted(victim_gangs)

    def mark_preempted(self, victim_gangs: Iterable[str]) -> None:
        """A gang whose running members are all being evicted must gather its quorum again."""
        pods = self.store.pods
        for gang_key in victim_gangs:
            gang = self.store.gangs.get(gang_key)
            if gang is not None and all(
                k in self.victims.evicting
                for k in gang.members
                if k in pods and pods[k].node_name and not pods[k].terminal
            ):
                self.store.gang_transition(gang_key, GangTransition.PREEMPTED)
                self.victims.mark_preempted(gang_key)

    def _apply_placements(self, plan: Plan) -> None:
        store = self.store
        for key in plan.releases:
            if store.state_of(key) is RESERVED:
                store.release(key)
        for key, node in plan.reservations:
            state = store.state_of(key)
            if state is PENDING or state is NOMINATED or state is RESERVED:
                store.reserve(key, node, binding=False)
        store.bind_all(plan.bindings)

    def _apply_gangs(self, plan: Plan) -> None:
        store = self.store
        for gang_key, start in plan.first_reserved.items():
            gang = store.gang(gang_key)
            if start is None:
                store.set_wait_start(gang_key, None)
                if gang_key not in plan.victim_deadlines:  # it gave up: an old choice's deadline no longer applies
                    self.victims.clear_deadline(gang_key)
            elif gang.first_reserved is None and not gang.satisfied:
                store.set_wait_start(gang_key, start)
        for gang_key in plan.satisfied:
            self.victims.clear_preempted(gang_key)
            self.victims.clear_deadline(gang_key)
            store.gang_transition(gang_key, GangTransition.SATISFY)
        for timeout in plan.timeouts:
            self.victims.clear_deadline(timeout.gang_key)
            store.set_timed_out(timeout.gang_key)
        for gang_key, status in plan.gang_status.items():
            store.gang(gang_key).last_status = status

    def _known(self, unit: UnitKey) -> bool:
        return unit.key in (self.store.pods if unit.is_pod else self.store.gangs)

    def _apply_units(self, plan: Plan) -> None:
        queue = self.queue
        for unit, backoff in plan.unit_backoffs.items():
            if self._known(unit):
                queue.record_backoff(unit, backoff, self.store.freed_gen)
        for unit in plan.unit_success:
            if self._known(unit):
                queue.record_success(unit)
        for unit, reason in plan.waiting_reasons.items():
            if self._known(unit):
                queue.record_waiting_reason(unit, reason)
        for unit, told in plan.waiting_told.items():
            if self._known(unit):
                queue.record_told(unit, told)
        queue.apply_holds(plan.capacity_holds)

    def bind_succeeded(self, pod_key: str) -> None:
        state = self.store.state_of(pod_key)
        if state is RESERVED:  # (bound without a binding recorded: start it now)
            reservation = self.store.reservation_of(pod_key)
            if reservation is not None:
                self.store.reserve(pod_key, reservation[0], binding=True)
                state = BINDING
        if state is BINDING:
            self.store.bind_succeeded(pod_key)

    def bind_failed(self, pod_key: str, *, now: float = 0.0, retry_at: float | None = None) -> None:
        """The pod is pending again. `retry_at` (the runtime's bind backoff at `now`, runtime/bind_backoff.py): its
        unit is not attempted before then, whatever capacity is freed meanwhile (kube-scheduler's backoffQ, where a pod
        whose binding failed waits, is not flushed by cluster events)."""
        state = self.store.state_of(pod_key)
        if state is BINDING:
            self.store.bind_failed(pod_key)
        elif state is RESERVED:
            self.store.release(pod_key)
        pod = self.store.pods.get(pod_key)
        if retry_at is not None and pod is not None:
            unit = UnitKey.gang(pod.gang) if pod.gang is not None else UnitKey.pod(pod_key)
            attempts = st.attempts if (st := self.queue.unit_state(unit)) is not None else 0
            self.queue.record_backoff(unit, UnitBackoff(attempts, retry_at, now), BIND_BACKOFF_GEN)

    def eviction_failed(self, pod_key: str) -> None:
        """The eviction of a victim was refused: its preemptor chooses again after its backoff, avoiding it. No
        capacity was freed, so no backoff ends early (bumping the freed generation here made a refusal loop)."""
        if pod_key not in self.store.pods:
            self.victims.forget_victim(pod_key)
            return
        self.victims.refuse(pod_key, self.store.static_gen)

    def victim_spared(self, pod_key: str) -> None:
        """The runtime gave the eviction of this victim up before asking (a PodDisruptionBudget refused another
        member of its gang: runtime/preemption.py): it stops being a victim; its preemptor chooses again after its
        backoff (nothing was freed)."""
        self.victims.forget_victim(pod_key)
