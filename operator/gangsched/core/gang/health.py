"""Runtime gang health: a gang that ran and lost members below its minMember for longer than its grace period is
reported Degraded and, if its policy says so, its remaining members are evicted (stale-gang eviction).

Only gangs with a grace period (GangSpec.stale_grace_seconds) are watched; others cost nothing.
Contract (pure):
- `check_health(session)`: per watched gang, in Plan.health the records that change; degraded (ran, then fewer than
  minMember up, a gone node's pods counted lost) for its grace period: Warning `GangDegraded` and condition Degraded
  (BelowMinMember); policy Evict also evicts its remaining bound members with the gang as preemptor (Warning
  `StaleGangEvicted`). Back at minMember: condition False (Recovered), Normal `GangRecovered`. Once per degradation.
- `health_wakeup(session)`: when the next grace period ends. `HealthBook` (core/memory/health_book.py) keeps state.
Cost per cycle, only with watched gangs: O(watched gangs + nodes + pods on removed nodes).
More: docs/modules.md#coreganghealthpy.
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
