"""Members that are not ready to be placed: scheduling gates (KEP-3521) and constraints gangsched does not evaluate
yet.

Contract (over a CycleSession):
- `gang_blocked(session, gang, members) -> bool`: a gang with an unready member waits ("unsupported: ...", or
  WaitingForResourceClaim), else one with a gated member waits ("N of M members gated", SchedulingGated); nothing
  is placed or reserved; status, events and conditions written only when the message changes.
- `ready_alone(session, unit, pods) -> pods to place`: the same for pods scheduled alone (unready pods kept out).
- Unusable volume claims (`PodRecord.unready_reasons`) make a pod unready the same way (at most MAX_REASONS).
- `report_unsupported(session)`: constraints only reported (preferred pod affinity, ReadWriteOncePod claims, inline
  disk volumes) get one Warning on each pod bound without evaluating them, and one on its PodGroup.
More: docs/modules.md#coregangreadinesspy.
"""

from __future__ import annotations

from collections.abc import Iterable

from gangsched.core.memory.gangs import GangState
from gangsched.core.memory.plan import GangStatus
from gangsched.core.records.records import PodRecord
from gangsched.core.transaction.messages import backoff, changed, conditions, event, report_status
from gangsched.core.transaction.session import CycleSession, Members
from gangsched.core.values.units import UnitKey

UNSUPPORTED = "Unsupported"
GATED = "SchedulingGated"
WAITING = "WaitingForResourceClaim"  # unready pods that only wait for their DRA claims to appear (`PodRecord.waits`)
MAX_REASONS = 3  # unready reasons shown in one message


def unsupported_message(pods: Iterable[PodRecord]) -> str:
    """The unsupported fields, then the other reasons the pods are unready (`unready_reasons`, the first MAX_REASONS
    of them: a gang of many members with a claim each stays readable), joined by "; "."""
    pods = list(pods)
    fields = sorted({f for pod in pods for f in pod.unsupported})
    reasons = sorted({r for pod in pods for r in pod.unready_reasons})
    if len(reasons) > MAX_REASONS:
        reasons = [*reasons[:MAX_REASONS], f"and {len(reasons) - MAX_REASONS} more"]
    parts = [f"unsupported: {', '.join(fields)} (gangsched does not evaluate it yet)"] if fields else []
    return "; ".join(parts + reasons)


def gang_blocked(session: CycleSession, gang: GangState, members: Members) -> bool:
    """Gated or unready members: the gang waits (see the module docstring)."""
    if not members.gated and not members.unready:
        return False
    total = (
        len(members.bound) + len(members.reserved) + len(members.pending) + len(members.gated) + len(members.unready)
    )
    quiet = bool(members.unready) and all(pod.waits for pod in members.unready)
    if quiet:
        reason, type_, message = WAITING, "Normal", unsupported_message(members.unready)
    elif members.unready:
        reason, type_, message = UNSUPPORTED, "Warning", unsupported_message(members.unready)
    else:
        reason, type_, message = GATED, "Normal", f"{len(members.gated)} of {total} members gated"
    if changed(session, gang.unit, message):
        conditions(session, [*members.pending, *members.unready], reason, message)
        waiting = total - len(members.bound) - len(members.reserved)
        report_status(session, gang, GangStatus(len(members.bound), len(members.reserved), waiting, reason, message))
        event(session, "PodGroup", gang.key, type_, reason, message)
        for pod in members.unready if not quiet else ():
            event(session, "Pod", pod.key, "Warning", UNSUPPORTED, unsupported_message([pod]))
    return True


def ready_alone(session: CycleSession, unit: UnitKey, pods: list[PodRecord]) -> list[PodRecord]:
    """The pods to place alone: unready pods are kept out, with a message when it changes."""
    unready = [pod for pod in pods if pod.unready]
    if not unready:
        return pods
    message = unsupported_message(unready)
    quiet = all(pod.waits for pod in unready)
    if changed(session, unit, message):
        conditions(session, unready, WAITING if quiet else UNSUPPORTED, message)
        for pod in unready if not quiet else ():
            event(session, "Pod", pod.key, "Warning", UNSUPPORTED, unsupported_message([pod]))
    rest = [pod for pod in pods if not pod.unready]
    if not rest:  # retried after a backoff, as an unschedulable pod is: it never takes every cycle's budget
        backoff(session, unit)
    return rest


def report_unsupported(session: CycleSession) -> None:
    """Warnings for the constraints the cycle's bindings were placed without (see the module docstring)."""
    pods = session.store.pods
    by_gang: dict[str, list[PodRecord]] = {}
    for pod_key, _node in session.plan.bindings:
        pod = pods.get(pod_key)
        if pod is None or not pod.unsupported or pod.unready:
            continue
        event(session, "Pod", pod.key, "Warning", UNSUPPORTED, unsupported_message([pod]))
        if pod.gang is not None:
            by_gang.setdefault(pod.gang, []).append(pod)
    for gang_key, members in by_gang.items():
        gang = session.store.gangs.get(gang_key)
        if gang is not None and gang.spec is not None:
            event(session, "PodGroup", gang_key, "Warning", UNSUPPORTED, unsupported_message(members))
