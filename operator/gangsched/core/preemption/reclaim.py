"""Reservations are preemptable: a gang below its quorum, or a pod that does not fit, takes the reservations of
lower-priority gangs still waiting before any bound pod is evicted (kube-scheduler rejects Permit-waiting victims).

Contract (over a CycleSession; pure):
- `lower_reservations(session, own, pending)`: gangs other than `own`, not satisfied, of lower priority than the
  pending members (preemptionPolicy Never: none), with reservations from earlier cycles; lowest priority, then the
  most recently started waiting time, then key; at most `MAX_GANGS`.
- `reclaim(session, own, pending, try_place) -> (Checkpoint, Attempt, released) | None`: in a checkpoint, releases
  those gangs' reservations one whole gang at a time and tries to place after each; on success the caller commits
  and calls `report(session, kind, key, released)` (Warning `ReservationsReleased` on the losers, `Preempting` on
  the preemptor). None: everything rolled back; bound victims are searched as before.
More: docs/modules.md#corepreemptionreclaimpy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from gangsched.core.memory.gangs import GangState
from gangsched.core.memory.plan import GangStatus
from gangsched.core.records.records import PodRecord
from gangsched.core.transaction.messages import event, report_status
from gangsched.core.transaction.session import Checkpoint, CycleSession

MAX_GANGS = 32  # lower-priority reserving gangs considered per attempt (each costs one placement)


class Attempt(Protocol):
    @property
    def mark(self) -> Checkpoint: ...
    @property
    def quorum(self) -> bool: ...


A = TypeVar("A", bound=Attempt)
Released = list[tuple[GangState, list[tuple[str, str]]]]


def lower_reservations(session: CycleSession, own: str, pending: list[PodRecord]) -> Released:
    if not pending or any(p.preemption_policy == "Never" for p in pending):
        return []
    priority = min(p.priority for p in pending)
    store = session.store
    lowest = store.lowest_priority()
    if lowest is None or lowest >= priority:
        return []  # (the common case, all priorities equal, costs nothing)
    found: list[tuple[tuple[int, float, str], GangState, list[tuple[str, str]]]] = []
    for key in store.reserving():
        other = store.gangs.get(key)
        if other is None or key == own or other.priority >= priority or session.is_satisfied(other):
            continue
        if session.is_timed_out(other):
            continue
        held = []
        for pod_key, node in session.members(other).reserved:
            reservation = store.reservation_of(pod_key)
            if reservation is not None and not reservation[1] and not session.is_placed(pod_key):
                held.append((pod_key, node))
        if held:
            started = other.first_reserved if other.first_reserved is not None else 0.0
            found.append(((other.priority, -started, key), other, held))
    found.sort(key=lambda x: x[0])
    return [(other, held) for _, other, held in found[:MAX_GANGS]]


def reclaim(
    session: CycleSession, own: str, pending: list[PodRecord], try_place: Callable[[], A]
) -> tuple[Checkpoint, A, Released] | None:
    candidates = lower_reservations(session, own, pending)
    if not candidates:
        return None
    mark = session.checkpoint()
    released: Released = []
    for other, held in candidates:
        for pod_key, node in held:
            session.release(pod_key, node)
        released.append((other, held))
        attempt = try_place()
        if attempt.quorum:
            return mark, attempt, released
        session.rollback(attempt.mark)
    session.rollback(mark)
    return None


def report(session: CycleSession, kind: str, key: str, released: Released) -> None:
    who = f"{'gang' if kind == 'PodGroup' else 'pod'} {key}"
    for other, held in released:
        message = f"reservations released for higher-priority {who} ({len(held)} member(s))"
        event(session, "PodGroup", other.key, "Warning", "ReservationsReleased", message)
        m = session.members(other)
        status = GangStatus(len(m.bound), 0, len(m.pending), "ReservationsReleased", message)
        report_status(session, other, status)
    names = ", ".join(other.key for other, _ in released)
    count = sum(len(held) for _, held in released)
    message = f"took {count} reservation(s) of lower-priority gang(s) {names}; no running pod was evicted"
    event(session, kind, key, "Normal", "Preempting", message)
