"""Time in a cycle: gangs whose waiting time ended, and when the next cycle must run.

Contract (over a CycleSession):
- `expire_waiting_times(session)`: a gang whose waiting time (from its first reservation; spec.wait_seconds or
  config.default_wait_seconds) has ended times out: reservations released, nominations cleared, reason GangTimeout
  (status Failed, an event), its pods listed for the timeout annotation. A preemptor's waiting time counts from
  the later of its start and `termination_deadline(gang)` (its victims' grace periods). A gang without a spec
  never times out; a partially bound Strict gang is not timed out (core/gang/partial_gangs.py restarts it).
- `next_wakeup(session) -> float | None`: the earliest time after `now` at which a waiting time or a backoff ends.
More: docs/modules.md#corecycletimerspy.
"""

from __future__ import annotations

from gangsched.core.gang.partial_gangs import evict_partial
from gangsched.core.memory.gangs import GangState
from gangsched.core.memory.plan import GangStatus
from gangsched.core.transaction.messages import conditions, event, report_status
from gangsched.core.transaction.session import CycleSession


def wait_seconds(session: CycleSession, gang: GangState) -> float:
    if gang.spec is not None and gang.spec.wait_seconds is not None:
        return gang.spec.wait_seconds
    return session.config.default_wait_seconds


def waiting_deadline(session: CycleSession, gang: GangState, start: float) -> float:
    """When a waiting time that started at `start` ends: suspended until the gang's victims must be gone."""
    held = session.state.termination_deadline(gang.key)
    chosen = session.plan.victim_deadlines.get(gang.key)
    for t in (held, chosen):
        if t is not None and t > start:
            start = t
    return start + wait_seconds(session, gang)


def expire_waiting_times(session: CycleSession) -> None:
    for gang_key in list(session.store.reserving()):
        gang = session.store.gangs.get(gang_key)
        if gang is None or gang.spec is None or gang.first_reserved is None or gang.satisfied:
            continue  # (a gang without a spec holds nothing and never times out: core/cycle/recheck.py)
        if waiting_deadline(session, gang, gang.first_reserved) > session.now:
            continue
        if not evict_partial(session, gang):  # a partially bound Strict gang starts again whole
            _time_out(session, gang)


def _time_out(session: CycleSession, gang: GangState) -> None:
    members = session.members(gang)
    for pod_key, node in members.reserved:
        session.release(pod_key, node)
    affected = tuple(k for k, _ in members.reserved) + tuple(p.key for p in members.pending)
    session.clear_nominations(p.key for p in members.pending)
    session.time_out(gang.key, affected)
    message = (
        f"waiting time {wait_seconds(session, gang):g}s{_suspended(session, gang)} ended with "
        f"{len(members.bound)} bound and "
        f"{len(members.reserved)} reserved members; released every reservation"
    )
    status = GangStatus(len(members.bound), 0, len(affected), "GangTimeout", message)
    report_status(session, gang, status)
    event(session, "PodGroup", gang.key, "Warning", "GangTimeout", message)
    pods = session.store.pods
    conditions(session, (pods[k] for k in affected), "GangTimeout", message)


def _suspended(session: CycleSession, gang: GangState) -> str:
    held = session.state.termination_deadline(gang.key)
    if held is None or gang.first_reserved is None or held <= gang.first_reserved:
        return ""
    return f" (suspended {held - gang.first_reserved:.0f}s while its victims terminated)"


def next_wakeup(session: CycleSession) -> float | None:
    now = session.now
    times: list[float] = []
    gangs = session.store.gangs
    for gang_key in session.store.reserving():
        gang = gangs[gang_key]
        if session.is_timed_out(gang) or session.is_satisfied(gang) or gang.first_reserved is None:
            continue
        times.append(waiting_deadline(session, gang, gang.first_reserved))
    for gang_key, start in session.plan.first_reserved.items():
        if start is not None and not session.is_satisfied(gangs[gang_key]):
            times.append(waiting_deadline(session, gangs[gang_key], start))
    times.extend(b.until for b in session.plan.unit_backoffs.values())
    queue = session.state.queue
    backing_off = session.plan.unit_backoffs
    for units, states in ((queue.queued_gang_units, queue.gang_backoffs), (queue.alone_units, queue.pod_backoffs)):
        for key in units:  # (the queued units: fewer than those with a queue record)
            state = states.get(key)
            if state is not None and state.key not in backing_off:
                times.append(state.backoff_until)
    return min((t for t in times if t > now), default=None)
