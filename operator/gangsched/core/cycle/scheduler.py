"""One scheduling cycle as a pure function: `schedule(state, now, config) -> Plan`.

Contract:
- Sees the state through read-only views and never changes it (only the store's capacity memos are refreshed);
  the runtime records the Plan (`state.apply(plan)`), then carries it out. A session: failed attempts roll back.
- Order: (0) recheck reservations and nominations (core/cycle/recheck.py); (1) waiting times end
  (core/cycle/timers.py); (1b) NonStrict deadlocks resolved (core/gang/deadlock.py); starvation holds
  (core/gang/starvation.py); (2) the queue in order (priority, creation or last failure, gangs before pods, key;
  queueing hints, core/hints); (3) up to config.max_units_per_cycle units (a gang tree's gangs as one) attempted
  on one shared workspace (gang rules, placement, preemption); (4) Warnings for constraints bound pods were
  placed without; (5) gang health; (6) the next wakeup. Events and conditions follow a change of a unit's message only.
More: docs/modules.md#corecycleschedulerpy.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from gangsched.core.cycle.recheck import podgroup_missing, recheck
from gangsched.core.cycle.timers import expire_waiting_times, next_wakeup
from gangsched.core.gang.deadlock import resolve_deadlocks
from gangsched.core.gang.gang_rules import attempt_gang, schedule_alone
from gangsched.core.gang.health import check_health, health_wakeup
from gangsched.core.gang.readiness import report_unsupported
from gangsched.core.gang.starvation import finish, first_in_level, hold_capacity, hold_wakeup, lifted
from gangsched.core.hints.queue_hints import queue_skip
from gangsched.core.memory.plan import Plan
from gangsched.core.memory.views import StateView
from gangsched.core.transaction.messages import wait
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.units import UnitKey


def schedule(state: StateView, now: float, config: SchedulerConfig) -> Plan:
    """One cycle; see the module docstring."""
    session = CycleSession(state, now, config)
    retry = recheck(session)  # reservations and nominations that no longer fit are released (core/cycle/recheck.py)
    expire_waiting_times(session)
    retry, victims = resolve_deadlocks(session, retry)  # NonStrict wait-for cycles (core/gang/deadlock.py)
    holds = hold_capacity(session)
    budget = config.max_units_per_cycle
    hintable: set[UnitKey] = set()  # backed off, but capacity was freed since: attempted unless the hint says no
    order = first_in_level(session, holds, queue_order(session, retry, hintable))
    done: set[UnitKey] = set()  # gangs of a tree attempted with the first of their tree
    for unit in order:
        if budget <= 0:
            break
        if unit in victims or unit in done:  # (victims: reservations just released for a deadlock)
            continue
        attempted = False
        for one in [unit, *_tree_mates(session, unit, order, done | victims)]:
            done.add(one)
            if holds.active:
                with lifted(session, holds, one):  # (the hint sees the capacity the unit may use: held or not)
                    attempted = _attempt(session, one, hintable) or attempted
            else:
                attempted = _attempt(session, one, hintable) or attempted
        if attempted:
            budget -= 1
    finish(session, holds)
    report_unsupported(session)
    health = state.health
    if len(health):  # (only gangs with a grace period are watched: nothing to do by default)
        check_health(session, health)
    wake = (next_wakeup(session), hold_wakeup(session), health_wakeup(session, health) if len(health) else None)
    wakeups = [t for t in wake if t is not None]
    session.plan.next_wakeup = min(wakeups, default=None)
    return session.plan


def queue_order(
    session: CycleSession, retry: AbstractSet[UnitKey] = frozenset(), hintable: set[UnitKey] | None = None
) -> list[UnitKey]:
    """The units to attempt this cycle, in order (see the module docstring); units in `retry` (their reservations
    or nominations were just released) are attempted even if backed off or without a pending member yet. Gangs
    backed off whose backoff ends early only because capacity was freed since are added to `hintable`."""
    store = session.store
    queue = session.state.queue
    now = session.now
    freed_gen = store.freed_gen
    gangs = store.gangs
    items: list[tuple[int, float, int, str, UnitKey]] = []  # (ties: gangs before pods, then by key)
    backoffs = queue.gang_backoffs
    timed_out_now = session.timed_out_now
    for gang_key, unit in queue.queued_gang_units.items():
        gang = gangs[gang_key]
        if gang.timed_out or gang_key in timed_out_now:
            continue
        if gang.spec is None and not gang.satisfied:
            invalid = session.state.no_spec_reason(gang_key)  # its PodGroup exists but is invalid: say why
            if invalid:
                wait(session, gang, "InvalidPodGroup", f"PodGroup {gang_key} is invalid: {invalid}")
            else:
                wait(session, gang, "WaitingForPodGroup", podgroup_missing(gang_key))
            session.clear_nominations(gang.pending)
            continue
        backoff = backoffs.get(gang_key)
        if backoff is None:
            created = gang.created if gang.created is not None else gang.member_created
        elif backoff.backoff_until > now and backoff.freed_gen >= freed_gen and unit not in retry:
            continue
        elif backoff.failed_at is not None:
            created = backoff.failed_at
            if hintable is not None and backoff.backoff_until > now and unit not in retry:
                hintable.add(unit)
        else:
            created = gang.created if gang.created is not None else gang.member_created
        items.append((-gang.priority, created, 0, gang_key, unit))
    for unit in retry:  # every member was reserved: not queued (yet, for the store)
        moved = gangs.get(unit.key) if not unit.is_pod and unit.key not in queue.queued_gang_units else None
        if moved is not None and moved.spec is not None and not session.is_timed_out(moved):
            created = moved.created if moved.created is not None else moved.member_created
            items.append((-moved.priority, created, 0, unit.key, moved.unit))
    backoffs = queue.pod_backoffs
    for pod_key, unit in queue.alone_units.items():
        backoff = backoffs.get(pod_key)
        if backoff is not None and backoff.backoff_until > now and backoff.freed_gen >= freed_gen and unit not in retry:
            continue
        pod = store.pods[pod_key]
        created = backoff.failed_at if backoff is not None and backoff.failed_at is not None else pod.created
        items.append((-pod.priority, created, 1, pod_key, unit))
    items.sort()
    return [item[4] for item in items]


def _tree_mates(
    session: CycleSession, unit: UnitKey, order: list[UnitKey], skip: AbstractSet[UnitKey]
) -> list[UnitKey]:
    """The other queued gangs of the unit's gang tree (spec.tree), in queue order: attempted right after it, as one
    unit (kube-scheduler 1.37 schedules a CompositePodGroup tree from its root as one entity)."""
    gang = None if unit.is_pod else session.store.gangs.get(unit.key)
    tree = gang.spec.tree if gang is not None and gang.spec is not None else None
    if tree is None:
        return []
    leaves = set(tree.leaves()) - {unit.key}
    return [u for u in order if not u.is_pod and u.key in leaves and u not in skip]


def _attempt(session: CycleSession, unit: UnitKey, hintable: AbstractSet[UnitKey] = frozenset()) -> bool:
    """Attempt one unit; False when it only waited, or the queueing hint skipped it (core/hints/queue_hints.py: the
    capacity freed since it backed off cannot help it); such units do not count against the cycle's budget."""
    if unit in hintable and queue_skip(session, session.store.gangs[unit.key]):
        session.plan.hint_skips[unit] = session.store.freed_gen
        return False
    if unit.is_pod:
        schedule_alone(session, unit, [session.store.pods[unit.key]], gang=None)
        return True
    gang = session.store.gangs[unit.key]
    if gang.satisfied:
        members = session.members(gang)
        if not members.pending and not members.unready:
            return False
        schedule_alone(session, unit, members.pending + members.unready, gang=gang)
        return True
    return attempt_gang(session, gang)
