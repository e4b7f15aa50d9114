"""Members that are not ready to be placed: scheduling gates (KEP-3521) and constraints gangsched does not
evaluate yet.

Contract (over a CycleSession):
- `gang_blocked(session, gang, members) -> bool`: a gang with a held member (a required pod affinity or
  anti-affinity term, or a DoNotSchedule topology spread constraint: gangsched does not evaluate them, and a
  silently violated requirement is worse than a pod that waits) waits with "unsupported: <fields> (gangsched
  does not evaluate it yet)" (Warning events on the PodGroup and the held pods, PodScheduled=False reason
  Unsupported); else a gang with a gated member waits with "N of M members gated" (reason SchedulingGated,
  one Normal event on the PodGroup). Nothing is placed or reserved for it; its other members get the
  condition, gated pods keep the apiserver's SchedulingGated condition (core/messages.py `conditions`). The
  status, event and conditions are written when the message changes, not per cycle; once the gates (or the
  held pods) are gone, the gang is placed as a whole by the gang rules.
- `held_alone(session, unit, pods) -> pods to place`: the same for pods scheduled alone: held pods are kept
  out (condition and Warning event when the unit's message changes).
- `report_unsupported(session, unit, gang, pods)`: constraints that are only reported (preferred pod
  affinity/anti-affinity, ScheduleAnyway spread, PVC and ephemeral volumes) get a Warning event on the pod and
  its PodGroup when the unit is first tried (no attempt or waiting reason recorded yet): the pod is placed
  without them.
"""

from __future__ import annotations

from collections.abc import Iterable

from gangsched.core.gangs import GangState
from gangsched.core.messages import changed, conditions, event, report_status
from gangsched.core.plan import GangStatus
from gangsched.core.records import PodRecord
from gangsched.core.session import CycleSession, Members
from gangsched.core.units import UnitKey

UNSUPPORTED = "Unsupported"
GATED = "SchedulingGated"


def unsupported_message(pods: Iterable[PodRecord]) -> str:
    fields = sorted({f for pod in pods for f in pod.unsupported})
    return f"unsupported: {', '.join(fields)} (gangsched does not evaluate it yet)"


def gang_blocked(session: CycleSession, gang: GangState, members: Members) -> bool:
    """Gated or held members: the gang waits (see the module docstring)."""
    if not members.gated and not members.held:
        return False
    total = len(members.bound) + len(members.reserved) + len(members.pending) + len(members.gated) + len(members.held)
    if members.held:
        reason, type_, message = UNSUPPORTED, "Warning", unsupported_message(members.held)
    else:
        reason, type_, message = GATED, "Normal", f"{len(members.gated)} of {total} members gated"
    if changed(session, gang.unit, message):
        conditions(session, [*members.pending, *members.held], reason, message)
        waiting = total - len(members.bound) - len(members.reserved)
        report_status(session, gang, GangStatus(len(members.bound), len(members.reserved), waiting, reason, message))
        event(session, "PodGroup", gang.key, type_, reason, message)
        for pod in members.held:
            event(session, "Pod", pod.key, "Warning", UNSUPPORTED, unsupported_message([pod]))
    return True


def held_alone(session: CycleSession, unit: UnitKey, pods: list[PodRecord]) -> list[PodRecord]:
    """The pods to place alone: held pods are kept out, with a message when it changes."""
    held = [pod for pod in pods if pod.holds]
    if not held:
        return pods
    message = unsupported_message(held)
    if changed(session, unit, message):
        conditions(session, held, UNSUPPORTED, message)
        for pod in held:
            event(session, "Pod", pod.key, "Warning", UNSUPPORTED, unsupported_message([pod]))
    return [pod for pod in pods if not pod.holds]


def report_unsupported(session: CycleSession, unit: UnitKey, gang: GangState | None, pods: list[PodRecord]) -> None:
    """Warnings for constraints placed without (see the module docstring)."""
    reported = [pod for pod in pods if pod.unsupported and not pod.holds]
    if not reported:
        return
    state = session.state.queue.unit_state(unit)
    if state is not None and (state.attempts or state.waiting_reason is not None):
        return
    for pod in reported:
        event(session, "Pod", pod.key, "Warning", UNSUPPORTED, unsupported_message([pod]))
    if gang is not None and gang.spec is not None:
        event(session, "PodGroup", gang.key, "Warning", UNSUPPORTED, unsupported_message(reported))
