"""PodGroup status as `kubectl get podgroups` should show it, computed from the cache.

Contract:
- `GangStatusBook.status_of(gang, ...)`: the `status` body to merge-patch onto the PodGroup, or None when nothing
  changed since the last body for that gang: the phase, the
  conditions (lastTransitionTime moves only on a transition; Degraded: core/gang/health.py), the placed tiers
  (state/placed_tiers.py), occupiedBy once minMember members exist, and the message.
- `podgroup_phase(counts, ...)`: the one computation of the phase, first match wins: Succeeded (or Finished with
  statusCompatibility scheduler-plugins), Failed, Running, Scheduled (bindings succeeded, never merely decided),
  Timeout, Scheduling, Pending. A stale decision is not used; an invalid gang shows why (Invalid=True).
- `wrote`, `overwritten`, `rewrite`: another writer's status is written over in full; `seed_start`, `forget`,
  `adopt`, `tracked`, `last_phase`. Pure but for the last bodies. More: docs/modules.md#statestatuspy.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gangsched.core import DegradedCondition, GangStatus, PodRecord
from gangsched.models.podgroup import ConditionType, PodGroupPhase
from gangsched.state.placed_tiers import PlacedTiers

Phase = PodGroupPhase
_RECENT = 16  # bodies remembered per gang to recognize the echoes of our own writes
SCHEDULED_PHASES = frozenset({Phase.SCHEDULED, Phase.RUNNING, Phase.SUCCEEDED, Phase.FAILED})
GANGSCHED = "gangsched"  # statusCompatibility: all members done is phase Succeeded
SCHEDULER_PLUGINS = "scheduler-plugins"  # ... is phase Finished (apis/scheduling/v1alpha1 PodGroupFinished)


@dataclass(slots=True)
class MemberCounts:
    scheduled: int = 0  # bound to a node, or being bound
    bound: int = 0  # bound to a node (the API shows it, or the binder saw the binding succeed)
    running: int = 0
    succeeded: int = 0
    failed: int = 0


def count_members(members: Sequence[PodRecord], *, in_flight: int) -> MemberCounts:
    counts = MemberCounts()
    for pod in members:
        if pod.node_name:
            counts.bound += 1
        if pod.phase == "Running":
            counts.running += 1
        elif pod.phase == "Succeeded":
            counts.succeeded += 1
        elif pod.phase == "Failed":
            counts.failed += 1
    counts.scheduled = counts.bound + in_flight
    return counts


def podgroup_phase(
    counts: MemberCounts, *, min_member: int, satisfied: bool, timed_out: bool, reserved: int
) -> PodGroupPhase:
    """The PodGroup phase (see the module docstring for the order)."""
    finished_or_running = counts.running + counts.succeeded
    if counts.succeeded >= min_member:
        return Phase.SUCCEEDED
    had_quorum = satisfied or finished_or_running + counts.failed >= min_member
    if counts.failed and finished_or_running < min_member and had_quorum:
        return Phase.FAILED
    if finished_or_running >= min_member:
        return Phase.RUNNING
    if counts.bound >= min_member:
        return Phase.SCHEDULED
    if timed_out:
        return Phase.TIMEOUT
    if reserved or counts.scheduled > counts.bound:
        return Phase.SCHEDULING
    return Phase.PENDING


@dataclass(slots=True)
class _Memory:
    body: dict[str, Any] | None = None
    start: str | None = None  # scheduleStartTime
    transitions: dict[str, tuple[str, str]] = field(default_factory=dict)  # condition type -> (status, time)
    uid: str | None = None  # the PodGroup object written to (adopt())
    occupied: str | None = None  # status.occupiedBy, once filled (kept, as scheduler-plugins keeps it)
    # (phase, message) of the bodies last returned: an observed status among them is ours (perhaps a late echo)
    recent: deque[tuple[Any, Any]] = field(default_factory=lambda: deque(maxlen=_RECENT))


@dataclass(frozen=True, slots=True)
class _Context:
    """What every condition of one status body shares."""

    memory: _Memory
    generation: int
    now_iso: str


class GangStatusBook:
    def __init__(self, *, compatibility: str = GANGSCHED) -> None:
        self._memory: dict[str, _Memory] = {}
        self.compatibility = compatibility  # config statusCompatibility: which name all members done is written as

    def forget(self, gang: str) -> None:
        self._memory.pop(gang, None)

    def adopt(self, gang: str, uid: str) -> bool:
        """The gang's PodGroup object is now the one with this uid. True when the book had written nothing to it yet:
        its memory belonged to another object of the same name (deleted and created again, even if the DELETED
        event was missed) or to none; that memory is dropped, so the next `status_of` returns a full body."""
        mem = self._memory.get(gang)
        if mem is not None and mem.uid == uid:
            return False
        if mem is not None and mem.uid is not None:
            del self._memory[gang]
        self._memory.setdefault(gang, _Memory()).uid = uid
        return True

    def tracked(self) -> int:
        return len(self._memory)

    def overwritten(self, gang: str, phase: str | None, message: str | None) -> bool:
        """Whether the PodGroup shows a status this book did not write (another writer's), after it wrote one."""
        mem = self._memory.get(gang)
        return mem is not None and mem.body is not None and (phase, message) not in mem.recent

    def rewrite(self, gang: str) -> None:
        """The next `status_of` returns the gang's full body again (its times and transitions are kept)."""
        mem = self._memory.get(gang)
        if mem is not None:
            mem.body = None

    def wrote(self, gang: str) -> bool:
        """Whether this book returned a body for the gang's current PodGroup object (this process wrote it)."""
        mem = self._memory.get(gang)
        return mem is not None and mem.body is not None

    def last_phase(self, gang: str) -> str | None:
        """The phase of the last body returned for the gang (None: none remembered)."""
        mem = self._memory.get(gang)
        return mem.body["phase"] if mem is not None and mem.body is not None else None

    def seed_start(self, gang: str, start_iso: str) -> None:
        """scheduleStartTime as the PodGroup already shows it (written before a restart): kept, not rewritten."""
        mem = self._memory.setdefault(gang, _Memory())
        if mem.start is None:
            mem.start = start_iso

    def status_of(
        self,
        gang: str,
        *,
        min_member: int,
        members: Sequence[PodRecord],
        generation: int,
        decided: GangStatus | None,
        satisfied: bool,
        timed_out: bool,
        invalid: str | None,
        in_flight: int,
        now_iso: str,
        reserved_now: int | None = None,
        note: str | None = None,
        degraded: DegradedCondition | None = None,
        placed: PlacedTiers | None = None,
        occupied_by: str | None = None,
    ) -> dict[str, Any] | None:
        mem = self._memory.setdefault(gang, _Memory())
        if mem.occupied is None and occupied_by and len(members) >= min_member:
            mem.occupied = occupied_by  # scheduler-plugins fills it once, when minMember pods exist
        counts = count_members(members, in_flight=in_flight)
        reserved = decided.reserved if decided is not None else 0
        if reserved_now is not None and reserved_now < reserved:
            # the core's last decision reserved more than the gang has now (members deleted, a node gone): stale
            reserved = reserved_now
            if reserved_now == 0:
                decided = None
        if decided is not None and decided.scheduled > counts.scheduled:
            decided = None  # it counted members bound or binding the gang no longer has (deleted, moved away): stale
        phase = podgroup_phase(
            counts, min_member=min_member, satisfied=satisfied, timed_out=timed_out, reserved=reserved
        )
        if phase != Phase.PENDING and mem.start is None:
            mem.start = now_iso
        context = _Context(mem, generation, now_iso)
        conditions = self._conditions(context, phase, counts, len(members), min_member, decided, timed_out, invalid)
        if degraded is not None:
            conditions.append(degraded_condition(context, degraded))
        body = _body(phase, counts, generation, conditions, mem.start, decided)
        body.update(_placement(placed, decided, holding=reserved > 0 or counts.scheduled > counts.bound))
        if mem.occupied is not None:
            body["occupiedBy"] = mem.occupied
        if phase in SCHEDULED_PHASES or (decided is None and counts.scheduled):
            # the message says what the Scheduled condition says (not the binds decided; the members still placed)
            body["message"] = conditions[0]["message"]
        if phase == Phase.SUCCEEDED and self.compatibility == SCHEDULER_PLUGINS:
            body["phase"] = Phase.FINISHED.value
        if invalid:
            body["message"] = invalid
        if note:  # pods of other schedulers name this PodGroup (state/foreign.py)
            body["message"] = f"{body['message']}; {note}" if body["message"] else note
            if not members:
                conditions[0]["message"] += f"; {note}"
        if body == mem.body:
            return None
        mem.body = body
        mem.recent.append((body["phase"], body["message"]))
        return body

    def _conditions(
        self,
        context: _Context,
        phase: PodGroupPhase,
        counts: MemberCounts,
        present: int,
        min_member: int,
        decided: GangStatus | None,
        timed_out: bool,
        invalid: str | None,
    ) -> list[dict[str, Any]]:
        scheduled = phase in SCHEDULED_PHASES
        if scheduled:
            message = f"{counts.bound} of {present} members bound" + ("" if invalid else f" (minMember {min_member})")
            message += _progress(counts)
            conditions = [_condition(context, ConditionType.SCHEDULED, "True", "Scheduled", message)]
        elif invalid:  # nothing is scheduled while invalid: say why, not what the scheduler last said
            conditions = [_condition(context, ConditionType.SCHEDULED, "False", "Invalid", invalid)]
        elif decided is None and counts.scheduled:  # members left (deleted, moved to another gang) or failed to bind
            message = f"{counts.scheduled} of {present} members bound or binding, below minMember {min_member}"
            message += _progress(counts)
            conditions = [_condition(context, ConditionType.SCHEDULED, "False", "BelowMinMember", message)]
        else:
            reason = decided.reason if decided is not None else "WaitingForPods"
            message = (
                decided.message
                if decided is not None
                else f"{present} members present (minMember {min_member}); not scheduled yet"
            )
            conditions = [_condition(context, ConditionType.SCHEDULED, "False", reason, message)]
        if timed_out and not scheduled:
            message = "the waiting time ended before the quorum was placed"
            conditions.append(_condition(context, ConditionType.TIMEOUT, "True", "GangTimeout", message))
        if invalid:
            conditions.append(_condition(context, ConditionType.INVALID, "True", "InvalidSpec", invalid))
        return conditions


def _body(
    phase: PodGroupPhase,
    counts: MemberCounts,
    generation: int,
    conditions: list[dict[str, Any]],
    start: str | None,
    decided: GangStatus | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "phase": phase.value,
        "scheduled": counts.scheduled,
        "running": counts.running,
        "succeeded": counts.succeeded,
        "failed": counts.failed,
        "observedGeneration": generation,
        "conditions": conditions,
    }
    if start is not None:
        body["scheduleStartTime"] = start
    # always present: null removes (merge patch) a message that no longer applies
    body["message"] = decided.message if decided is not None and decided.message else None
    return body


def degraded_condition(context: _Context, degraded: DegradedCondition) -> dict[str, Any]:
    """The Degraded condition (runtime gang health, core/gang/health.py): True while the gang that ran has fewer than
    minMember members up (reason BelowMinMember, or StaleGangEvicted once its remaining members were evicted),
    False once it recovered (reason Recovered); absent for a gang never degraded."""
    status = "True" if degraded.status else "False"
    return _condition(context, ConditionType.DEGRADED, status, degraded.reason, degraded.message)


def _progress(counts: MemberCounts) -> str:
    """What the bound members are doing, for the Scheduled condition's message (e.g. "; 4 running")."""
    parts = [
        f"{n} {word}"
        for n, word in ((counts.running, "running"), (counts.succeeded, "succeeded"), (counts.failed, "failed"))
        if n
    ]
    return "; " + ", ".join(parts) if parts else ""


def _placement(placed: PlacedTiers | None, decided: GangStatus | None, *, holding: bool) -> dict[str, Any]:
    """placedTier / placedGroupTier as the members are placed now (state/placed_tiers.py); while none is bound but
    reservations or bindings in flight are held, the tier the core chose for them; otherwise null (merge patch:
    removed), so no tier outlives the pods placed in it."""
    if placed is not None:
        return {"placedTier": placed.whole, "placedGroupTier": placed.group}
    tier = decided.tier if decided is not None and holding else None
    return {"placedTier": tier, "placedGroupTier": None}


def _condition(context: _Context, type_: ConditionType, status: str, reason: str, message: str) -> dict[str, Any]:
    transitions = context.memory.transitions
    previous = transitions.get(type_)
    if previous is None or previous[0] != status:
        transitions[type_] = (status, context.now_iso)
    return {
        "type": type_.value,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": transitions[type_][1],
        "observedGeneration": context.generation,
    }
