"""The scheduling queue: which units (gangs, and pods without a gang) have pending members, their backoff,
and the order in which a cycle attempts them.

Contract:
- Fed by the store as a `PendingSink` (`pod_pending`, `gang_queued`, `gang_forgotten`).
- `unit_state(unit)`: a unit's backoff bookkeeping, changed from an applied Plan (`record_backoff`,
  `record_success`, `record_waiting_reason`, `record_told`); `forget_pod` and a forgotten gang drop it.
- `queued_gangs()`, `alone_pending()`; `ready(unit, now, freed_gen)`: not backed off (freed capacity ends a
  backoff early); `rebase_freed(freed_gen)` / `rebase_unit`: freed capacity ends no backoff.
- `waiting_since` of a unit: its first failure since it last succeeded (starvation ages gangs by it).
- `holds`: capacity held for starving gangs, by gang; `apply_holds(changes)` records a plan's (None: ended).
More: docs/modules.md#corememoryqueuepy.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from gangsched.core.memory.plan import CapacityHold, ReachMemo, UnitBackoff
from gangsched.core.values.units import UnitKey


@dataclass(slots=True)
class UnitState:
    """Queue bookkeeping of one scheduling unit (a gang, or a pod scheduled alone)."""

    key: UnitKey
    attempts: int = 0
    backoff_until: float = 0.0
    failed_at: float | None = None
    freed_gen: int = 0  # the store's freed_gen when it backed off: capacity freed since then ends the backoff
    waiting_reason: str | None = None  # last waiting reason reported (to report a change once)
    told: frozenset[str] = frozenset()  # UIDs of the pods whose PodScheduled condition says waiting_reason
    waiting_since: float | None = None  # first failure since the last success
    empty_fit: tuple[object, bool] | None = (
        None  # whether it fits empty nodes, and the memo key (core/hints/queue_hints.py)
    )
    reach: ReachMemo | None = None  # what it could reach with lower priorities gone (core/hints/reach.py)


class SchedulingQueue:
    def __init__(self) -> None:
        self._queued_gangs: dict[str, UnitKey] = {}  # gangs with pending members -> their unit key
        self._alone_pending: dict[str, UnitKey] = {}  # pending pods without a gang -> their unit key
        self._gang_units: dict[str, UnitState] = {}
        self._pod_units: dict[str, UnitState] = {}
        self._holds: dict[str, CapacityHold] = {}  # starving gang -> capacity held for it (core/gang/starvation.py)

    # ----- PendingSink -----
    def pod_pending(self, pod_key: str, gang_key: str | None, pending: bool) -> None:
        if pending:
            if pod_key not in self._alone_pending:
                self._alone_pending[pod_key] = UnitKey("pod", pod_key)
            return
        self._alone_pending.pop(pod_key, None)
        st = self._pod_units.get(pod_key)
        if st is not None and st.attempts == 0:
            del self._pod_units[pod_key]

    def gang_queued(self, gang_key: str, queued: bool) -> None:
        if queued:
            self._queued_gangs[gang_key] = UnitKey("gang", gang_key)
        else:
            self._queued_gangs.pop(gang_key, None)

    def gang_forgotten(self, gang_key: str) -> None:
        self._queued_gangs.pop(gang_key, None)
        self._gang_units.pop(gang_key, None)
        self._holds.pop(gang_key, None)

    def forget_pod(self, pod_key: str) -> None:
        self._alone_pending.pop(pod_key, None)
        self._pod_units.pop(pod_key, None)

    # ----- readers -----
    def queued_gangs(self) -> Iterator[str]:
        return iter(self._queued_gangs)

    def alone_pending(self) -> Iterator[str]:
        return iter(self._alone_pending)

    @property
    def queued_gang_units(self) -> Mapping[str, UnitKey]:
        """Queued gangs -> their unit keys (read-only)."""
        return self._queued_gangs

    @property
    def alone_units(self) -> Mapping[str, UnitKey]:
        """Pending pods without a gang -> their unit keys (read-only)."""
        return self._alone_pending

    @property
    def gang_backoffs(self) -> Mapping[str, UnitState]:
        """Backoff state by gang key (read-only; a gang without one never failed)."""
        return self._gang_units

    @property
    def pod_backoffs(self) -> Mapping[str, UnitState]:
        """Backoff state by pod key of pods without a gang (read-only)."""
        return self._pod_units

    @property
    def holds(self) -> Mapping[str, CapacityHold]:
        """Capacity held for starving gangs, by gang key (read-only)."""
        return self._holds

    def unit_state(self, unit: UnitKey) -> UnitState | None:
        table = self._pod_units if unit.kind == "pod" else self._gang_units
        return table.get(unit.key)

    def ready(self, unit: UnitKey, now: float, freed_gen: int) -> bool:
        """Not backed off at `now` (or capacity was freed since it backed off)."""
        st = self.unit_state(unit)
        return st is None or st.backoff_until <= now or st.freed_gen < freed_gen

    def sizes(self) -> dict[str, int]:
        return {
            "queued_gangs": len(self._queued_gangs),
            "alone_pending": len(self._alone_pending),
            "gang_units": len(self._gang_units),
            "pod_units": len(self._pod_units),
            "capacity_holds": len(self._holds),
        }

    # ----- writers (from an applied Plan) -----
    def _state(self, unit: UnitKey) -> UnitState:
        table = self._pod_units if unit.kind == "pod" else self._gang_units
        st = table.get(unit.key)
        if st is None:
            st = table[unit.key] = UnitState(unit)
        return st

    def record_backoff(self, unit: UnitKey, backoff: UnitBackoff, freed_gen: int) -> None:
        st = self._state(unit)
        st.attempts, st.backoff_until, st.failed_at = backoff.attempts, backoff.until, backoff.failed_at
        st.freed_gen = freed_gen
        if st.waiting_since is None:
            st.waiting_since = backoff.failed_at

    def rebase_freed(self, freed_gen: int) -> None:
        """Capacity freed up to `freed_gen` ends no backoff (a deadlock victim's reservations: that capacity is for
        the gangs of its cycle, already attempted in the cycle that released it, core/gang/deadlock.py)."""
        for table in (self._gang_units, self._pod_units):
            for st in table.values():
                st.freed_gen = max(st.freed_gen, freed_gen)

    def record_empty_fit(self, unit: UnitKey, memo: tuple[object, bool]) -> None:
        self._state(unit).empty_fit = memo

    def record_reach(self, unit: UnitKey, memo: ReachMemo) -> None:
        self._state(unit).reach = memo

    def rebase_unit(self, unit: UnitKey, freed_gen: int) -> None:
        """Capacity freed up to `freed_gen` ends this unit's backoff no more (a queueing hint,
        core/hints/queue_hints.py)."""
        st = self.unit_state(unit)
        if st is not None:
            st.freed_gen = max(st.freed_gen, freed_gen)

    def record_success(self, unit: UnitKey) -> None:
        st = self._state(unit)
        st.attempts, st.backoff_until, st.failed_at, st.waiting_reason = 0, 0.0, None, None
        st.told = frozenset()
        st.reach = None  # (its per-node counts are only worth keeping while it waits)
        st.waiting_since = None

    def record_waiting_reason(self, unit: UnitKey, reason: str) -> None:
        self._state(unit).waiting_reason = reason

    def record_told(self, unit: UnitKey, told: frozenset[str]) -> None:
        self._state(unit).told = told

    def apply_holds(self, changes: Mapping[str, CapacityHold | None]) -> None:
        for gang_key, hold in changes.items():
            if hold is None:
                self._holds.pop(gang_key, None)
            elif gang_key in self._queued_gangs:
                self._holds[gang_key] = hold
