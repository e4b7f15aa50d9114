"""The result of one scheduling cycle: decisions as data, recorded in memory, then carried out by the runtime.

Contract: `schedule()` returns a `Plan`. The runtime first calls `SchedulerState.apply(plan)` so the memory records
the decisions (the next cycle never hands the same capacity out again), then performs the API side effects
(bindings, evictions, nominations, annotations, conditions, PodGroup status, events) and reports the binder's
answers back (`bind_succeeded` / `bind_failed`). Fields to carry out: bindings, reservations, releases, timeouts,
gang_status, events, pod_events, conditions, next_wakeup, evictions, nominations, nomination_clears, health;
bookkeeping for `apply` only: unit_*, satisfied, first_reserved, waiting_reasons, preemptions, capacity_holds,
hint_skips, empty_fits, reach_memos; deadlocks is read by the replay and the metrics. Each field's meaning is
commented where it is declared. More: docs/modules.md#corememoryplanpy.
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
    bindings: list[tuple[str, str]] = field(default_factory=list)  # (pod, node) to bind now (quorum or gang group)
    reservations: list[tuple[str, str]] = field(default_factory=list)  # (pod, node) held in memory only
    releases: list[str] = field(default_factory=list)  # reservations given up (Strict failure, timeout)
    timeouts: list[GangTimeout] = field(default_factory=list)  # annotate each pod koordinator's timeout: "true"
    gang_status: dict[str, GangStatus] = field(default_factory=dict)  # PodGroup status to write (changed only)
    events: list[Event] = field(default_factory=list)
    pod_events: list[PodEvents] = field(default_factory=list)  # one event on each of many pods (FailedScheduling)
    conditions: list[PodCondition] = field(default_factory=list)  # PodScheduled=False of pods not placed or waiting
    next_wakeup: float | None = None  # earliest absolute time a timer matters (waiting time, backoff end)
    evictions: list[str] = field(default_factory=list)  # victims to evict (Eviction API), or a partial gang's pods
    nominations: list[tuple[str, str]] = field(default_factory=list)  # (preemptor pod, node): nominatedNodeName
    nomination_clears: list[str] = field(default_factory=list)  # nominations given up (patched to null)
    preemptions: dict[str, tuple[str, ...]] = field(default_factory=dict)  # gang -> its victims (never taken twice)
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
