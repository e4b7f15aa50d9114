"""The result of one scheduling cycle: decisions as data, recorded in memory, then carried out by the runtime.

Contract: `schedule()` (core/cycle/scheduler.py) returns a `Plan`. The runtime first calls
`SchedulerState.apply(plan)` (core/memory/scheduler_state.py) so the in-memory model records what was decided (the
pod state machine's transitions: reservations, bindings in flight, releases, nominations; victims; gang and
queue bookkeeping), and the next cycle never hands the same capacity out again; then it performs the API side
effects (bindings through pods/binding, evictions, pod annotations and conditions, PodGroup status, events)
and reports the binder's answers back (`bind_succeeded` / `bind_failed`). The `unit_*`, `satisfied`,
`first_reserved` and `waiting_reasons` fields are bookkeeping for `SchedulerState.apply` only; the runtime
may ignore them.

Fields:
- bindings: [(pod_key, node)] to bind now (the gang, or its whole gang group, reached quorum).
- reservations: [(pod_key, node)] held in memory only (NonStrict progress, or waiting for the gang group).
- releases: [pod_key] reservations given up (Strict failure, timeout).
- timeouts: [GangTimeout] gangs whose waiting time ended: annotate each listed pod
  `gang.scheduling.koordinator.sh/timeout: "true"`.
- gang_status: {gang_key: GangStatus} PodGroup status to write (only gangs that changed).
- events: [Event] to emit. pod_events: [PodEvents] one event for each of many pods (FailedScheduling on every
  member of a failed attempt), expanded by the runtime.
- conditions: [PodCondition] PodScheduled=False conditions for pods that cannot be placed or wait.
- next_wakeup: earliest absolute time at which a timer matters (waiting-time expiry, backoff end), or None.
- evictions: [pod_key] victims to evict through the Eviction API (group preemption, core/preemption/preemption.py; the
  bound members of a partially bound gang, core/gang/partial_gangs.py, with the gang as their preemptor).
- nominations: [(pod_key, node)] preemptor members to nominate (status.nominatedNodeName); the scheduler holds
  that capacity for them. nomination_clears: [pod_key] nominations given up (patch nominatedNodeName null).
- preemptions: {gang_key: victim pod keys} for SchedulerState.apply (victims are never taken twice).
- health: {gang_key: GangHealth | None} runtime gang-health records that changed (core/gang/health.py; None: dropped);
  bookkeeping for SchedulerState.apply, and the runtime rewrites those gangs' PodGroup status (Degraded condition).
- capacity_holds: {gang_key: CapacityHold | None} capacity held for a starving gang, started or recomputed (None:
  ended); bookkeeping for SchedulerState.apply (core/gang/starvation.py).
- hint_skips: {unit: freed_gen} backed-off gangs the queueing hint skipped (core/hints/queue_hints.py): the capacity
  freed up to that generation ends their backoff no more; empty_fits: {unit: (memo key, fits)} whether a gang fits empty
  nodes, reach_memos: {unit: ReachMemo} what it could reach with lower priorities gone (the hint's memos,
  core/hints/reach.py); bookkeeping only (a plan with nothing else is empty).
- deadlocks: [Deadlock] NonStrict deadlocks found and resolved this cycle (core/gang/deadlock.py); read by the replay
  and the metrics, nothing to apply (the releases and events carry the effect).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gangsched.core.devices import PodFit
from gangsched.core.memory.health_book import GangHealth
from gangsched.core.values.units import UnitKey


@dataclass(frozen=True, slots=True)
class ReachMemo:
    """What a gang's class could reach per node with every lower-priority pod gone (core/hints/reach.py), kept between
    cycles by the queue (`UnitState.reach`)."""

    key: tuple[object, ...]  # (static_gen, class id, priority, tree id, topology, count)
    pos: int  # the accounting log position `cap` is up to date with
    cap: Mapping[str, int]  # node -> members that would fit (nodes with none absent); never mutated
    fits: bool
    sums: Mapping[int, int] | None = None  # hard topology: domain index at the highest tier allowed -> its sum


@dataclass(frozen=True, slots=True)
class GangStatus:
    scheduled: int  # members bound or being bound
    reserved: int  # members holding in-memory reservations
    pending: int  # members not placed
    reason: str  # CamelCase, e.g. Scheduled, Unschedulable, WaitingForPods, WaitingForGangGroup, GangTimeout
    message: str
    tier: int | None = None  # topology tier the gang was placed within (None: no topology)


@dataclass(frozen=True, slots=True)
class Event:
    kind: str  # "Pod" | "PodGroup"
    namespace: str
    name: str
    type: str  # "Normal" | "Warning"
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class PodEvents:
    """One event, the same for each listed pod (a unit's FailedScheduling at one attempt: built once, written to
    every member by the runtime)."""

    pod_keys: tuple[str, ...]  # namespace/name
    type: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class PodCondition:
    pod_key: str
    reason: str  # "Unschedulable" | "WaitingForGang" | ...
    message: str


@dataclass(frozen=True, slots=True)
class GangTimeout:
    gang_key: str
    pods: tuple[str, ...]  # member pod keys to annotate as timed out


@dataclass(frozen=True, slots=True)
class UnitBackoff:
    attempts: int
    until: float  # no new attempt before this time
    failed_at: float  # queue re-sort key


@dataclass(frozen=True, slots=True)
class CapacityHold:
    """Capacity held for a starving gang (core/gang/starvation.py): on each node, up to `targets`' resources."""

    gang_key: str
    since: float  # when the hold started
    targets: tuple[tuple[str, Mapping[str, int]], ...]  # (node, resources the gang would use there)
    static_gen: int  # the store's static_gen the targets were computed at
    members: int  # pending members they were computed for


@dataclass(frozen=True, slots=True)
class Deadlock:
    """A wait-for cycle among NonStrict gangs holding reservations, resolved by releasing `victim`'s."""

    cycle: tuple[str, ...]  # gangs, each waiting for capacity the next holds (the last for the first's)
    victim: str  # the gang whose reservations were released (lowest priority, then newest)
    released: int  # reservations released
    held: Mapping[str, int]  # the resources they held
    formed: float  # when the last gang of the cycle started holding (the deadlock exists since, at the latest)


@dataclass(slots=True)
class Plan:
    bindings: list[tuple[str, str]] = field(default_factory=list)
    reservations: list[tuple[str, str]] = field(default_factory=list)
    releases: list[str] = field(default_factory=list)
    timeouts: list[GangTimeout] = field(default_factory=list)
    gang_status: dict[str, GangStatus] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    pod_events: list[PodEvents] = field(default_factory=list)
    conditions: list[PodCondition] = field(default_factory=list)
    next_wakeup: float | None = None
    evictions: list[str] = field(default_factory=list)
    nominations: list[tuple[str, str]] = field(default_factory=list)
    nomination_clears: list[str] = field(default_factory=list)
    preemptions: dict[str, tuple[str, ...]] = field(default_factory=dict)
    victim_deadlines: dict[str, float] = field(default_factory=dict)  # preemptor -> its victims gone by (grace)
    # bookkeeping for SchedulerState.apply
    unit_backoffs: dict[UnitKey, UnitBackoff] = field(default_factory=dict)
    unit_success: list[UnitKey] = field(default_factory=list)  # units whose backoff resets
    satisfied: list[str] = field(default_factory=list)  # gangs whose quorum this cycle binds (core/memory/gangs.py)
    first_reserved: dict[str, float | None] = field(default_factory=dict)  # gang -> waiting-time start (None: clear)
    waiting_reasons: dict[UnitKey, str] = field(default_factory=dict)  # unit -> reason shown (dedupe)
    waiting_told: dict[UnitKey, frozenset[str]] = field(default_factory=dict)  # unit -> UIDs whose condition says it
    capacity_holds: dict[str, CapacityHold | None] = field(default_factory=dict)  # gang -> hold (None: ended)
    deadlocks: list[Deadlock] = field(default_factory=list)  # NonStrict deadlocks resolved (core/gang/deadlock.py)
    health: dict[str, GangHealth | None] = field(default_factory=dict)  # gang -> health record (None: dropped)
    hint_skips: dict[UnitKey, int] = field(default_factory=dict)  # unit -> freed_gen its skip covered (queue_hints)
    empty_fits: dict[UnitKey, tuple[object, bool]] = field(default_factory=dict)  # unit -> (memo key, fits empty)
    reach_memos: dict[UnitKey, ReachMemo] = field(default_factory=dict)  # unit -> its reach (core/hints/reach.py)
    device_fits: dict[str, PodFit] = field(default_factory=dict)  # pod bound now -> its DRA claims' fit (False: none)

    @property
    def empty(self) -> bool:
        return not (
            self.bindings
            or self.reservations
            or self.releases
            or self.timeouts
            or self.gang_status
            or self.events
            or self.pod_events
            or self.conditions
            or self.unit_backoffs
            or self.satisfied
            or self.waiting_reasons
            or self.evictions
            or self.nominations
            or self.nomination_clears
            or self.capacity_holds
            or self.health
        )
