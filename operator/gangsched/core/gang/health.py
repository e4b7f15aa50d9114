"""Runtime gang health: a gang that ran and lost members below its minMember for longer than its grace period is
reported Degraded and, if its policy says so, its remaining members are evicted (stale-gang eviction).

Only gangs whose spec sets a grace period (GangSpec.stale_grace_seconds: PodGroup spec.staleGracePeriodSeconds or
the annotation scheduling.gangsched.io/stale-grace-period) are watched; others cost nothing.

Cost per cycle (only with watched gangs): O(watched gangs + nodes + pods on removed nodes).

Definitions (per watched gang, every cycle; `now` is the cycle's time, so tests use virtual time):
- *up* members: those holding its quorum (core/memory/gangs.py `holding`: bound, binding or assumed, or Succeeded),
  minus the bound ones whose node is gone (a removed node's pods count as lost, as the pod GC would delete them).
- the gang *ran* once at least minMember members were up while watched (replacements being placed count, so a
  gang being re-placed whole recovers as soon as its quorum is bound again).
- it is *degraded* while it ran, has members, and fewer than minMember are up; `since` is the first cycle that saw
  it so. A gang whose members are all gone (evicted, or a finished and cleaned-up or deleted workload) stops
  being degraded silently (its condition stays as last reported) until it runs again.

Contract (pure):
- `HealthBook` (core/memory/health_book.py): what the cycles decided, kept by SchedulerState (watched specs, records,
  the Degraded condition each PodGroup shows: state/status.py `degraded_condition`).
- `check_health(session)` (core/cycle/scheduler.py, after the queue): for each watched gang, in Plan.health the records
  that change; when it has been degraded for its grace period: a Warning event `GangDegraded` on the PodGroup and
  the Degraded condition (True, reason BelowMinMember; the message says for how long; its lastTransitionTime is
  when it was reported); with policy Evict also its
  remaining non-terminal bound members are evicted in the plan's evictions with the gang as their preemptor (the
  path preemption victims take: runtime/preemption.py; core/gang/partial_gangs.py then makes the gang wait for them and
  start again whole) and a Warning `StaleGangEvicted` names them; the condition's reason is then StaleGangEvicted.
  When minMember members are up again the condition turns False (reason Recovered) and a Normal `GangRecovered`
  event is emitted. Each report happens once per degradation.
- `health_wakeup(session)`: the earliest time a watched gang's grace period ends (the cycle must run then).
Reference: KAI Scheduler's stale-gang eviction (NVIDIA/KAI-Scheduler pkg/scheduler/actions/stalegangeviction/
stalegangeviction.go: a job is stale while fewer than its minAvailable tasks are active; the staleness timestamp is
set on the first cycle that sees it and cleared when it is no longer stale; once `stalenessGracePeriod` passed,
every active allocated task is evicted). Here reporting is separate from evicting, and both are off by default.
Restart: the book is in memory; a new leader learns which gangs ran from their pods (a gang degraded across the
restart is watched again once it runs).
"""

from __future__ import annotations

from dataclasses import replace

from gangsched.core.memory.gangs import GangState
from gangsched.core.memory.health_book import DegradedCondition, GangHealth, HealthBook
from gangsched.core.memory.podstate import BOUND, TERMINAL
from gangsched.core.transaction.messages import event, pod_names
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.gangspec import GangSpec, StalePolicy


def lost_members(session: CycleSession) -> dict[str, list[str]]:
    """gang -> its bound members whose node is gone (the store still charges them to that node's name)."""
    store = session.store
    nodes, pods = store.nodes, store.pods
    out: dict[str, list[str]] = {}
    for node, keys in store.pods_on.items():
        if keys and node not in nodes:
            for key in keys:
                pod = pods.get(key)
                if pod is not None and pod.gang is not None and store.state_of(key) is BOUND:
                    out.setdefault(pod.gang, []).append(key)
    return out


def _evictable(session: CycleSession, gang: GangState) -> list[str]:
    store = session.store
    out = []
    for key in gang.members:
        pod = store.pods.get(key)
        state = store.state_of(key)
        if pod is None or state is TERMINAL or pod.node_name is None or session.is_evicting(key):
            continue
        if key not in session.state.leaving:
            out.append(key)
    return sorted(out)


def check_health(session: CycleSession, book: HealthBook) -> None:
    """See the module docstring."""
    gangs = session.store.gangs
    lost = lost_members(session)
    for spec in book.watched():
        gang = gangs.get(spec.key)
        record = book.record(spec.key)
        if gang is None or not gang.members:  # nothing left to run or evict: watched again once it runs
            idle = GangHealth(condition=record.condition)
            if record != idle:
                session.plan.health[spec.key] = idle
            continue
        new = _next(session, gang, spec, record, sorted(lost.get(spec.key, ())))
        if new != record:
            session.plan.health[spec.key] = new


def _next(session: CycleSession, gang: GangState, spec: GangSpec, record: GangHealth, lost: list[str]) -> GangHealth:
    up = len(gang.holding) - len(lost)
    if up >= spec.min_member:
        if record.condition is not None and record.condition.status:
            message = f"{up} members running or finished again (minMember {spec.min_member})"
            event(session, "PodGroup", gang.key, "Normal", "GangRecovered", message)
            return GangHealth(ran=True, condition=DegradedCondition(False, "Recovered", message))
        return record if record.ran and record.since is None else replace(record, ran=True, since=None)
    if not record.ran:
        return record
    if record.since is None:
        return replace(record, since=session.now)
    assert spec.stale_grace_seconds is not None
    if record.reported or session.now < record.since + spec.stale_grace_seconds:
        return record
    return _report(session, gang, spec, record, up, lost)


def _report(
    session: CycleSession, gang: GangState, spec: GangSpec, record: GangHealth, up: int, lost: list[str]
) -> GangHealth:
    assert record.since is not None
    message = (
        f"{up} of minMember {spec.min_member} members running or finished for {session.now - record.since:.0f}s "
        f"(grace period {spec.stale_grace_seconds:g}s)"
    )
    if lost:
        message += f"; lost with their node: {pod_names(lost)}"
    event(session, "PodGroup", gang.key, "Warning", "GangDegraded", message)
    reason = "BelowMinMember"
    if spec.stale_policy is StalePolicy.EVICT:
        victims = _evictable(session, gang)
        if victims:
            session.evict(gang.key, tuple(victims))
            evicted = (
                f"evicted its {len(victims)} member(s) still bound ({pod_names(victims)}) so their resources are freed"
            )
            event(session, "PodGroup", gang.key, "Warning", "StaleGangEvicted", evicted)
            message = f"{message}; {evicted}"
            reason = "StaleGangEvicted"
    condition = DegradedCondition(True, reason, message)
    # evicted: it starts again whole and is watched again once it runs; reported: once per degradation
    ran = reason != "StaleGangEvicted"
    return GangHealth(ran=ran, since=record.since if ran else None, reported=ran, condition=condition)


def health_wakeup(session: CycleSession, book: HealthBook) -> float | None:
    """The earliest end of a running grace period (this cycle's records first)."""
    plan = session.plan.health
    best: float | None = None
    for spec in book.watched():
        record = plan[spec.key] if spec.key in plan else book.record(spec.key)
        if record is None or record.since is None or record.reported or spec.stale_grace_seconds is None:
            continue
        due = record.since + spec.stale_grace_seconds
        best = due if best is None or due < best else best
    return best
