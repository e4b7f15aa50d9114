"""After a crash (issue 13 item 11): a Strict gang found bound below minMember whose bound members never reached
Running (the leader died in the middle of its bind burst) is completed within its waiting time, counted from the
restart, or else its bound members are evicted (Warning event naming them) so that it starts again whole.

Oracles (gang semantics): scheduler-plugins' coscheduling, pkg/coscheduling/coscheduling.go `PostFilter` (a member
that cannot be placed rejects the whole gang: the waiting members are rejected, none is left holding its node)
and `Permit` (members wait at most the gang's scheduleTimeoutSeconds for the quorum, then all are rejected);
Koordinator's coscheduling, pkg/scheduler/plugins/coscheduling/core/gang.go (a gang is "once-satisfied" only when
minMember children were bound; below that its bound children do not make it satisfied and the rest go through the
gang check again). Time is virtual: every cycle gets an explicit `now`.
"""

from __future__ import annotations

import dataclasses

from gangsched.core.cycle.scheduler import schedule
from gangsched.core.cycle.simulate import step
from gangsched.core.memory.plan import Plan
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode, GangSpec
from tests.builders import add_nodes, add_pod

CFG = SchedulerConfig(max_units_per_cycle=10)
G = "default/g"
WAIT = 60.0
RESTART = 1000.0


def _crashed_burst(
    c: SchedulerState, *, nodes: int, mode: GangMode = GangMode.STRICT, phase: str = "Pending"
) -> list[str]:
    """A gang of 4 (minMember 4, 8 GPUs each) whose crashed leader bound members 0 and 1 (to n0, n1) and not the
    others; the new leader's cache is fed from the API (pods first, then the PodGroup), then it restores."""
    add_nodes(c, nodes, gpu=8)
    keys = [
        add_pod(
            c, f"g-{i}", gang=G, rank=i, gpu=8, node=f"n{i}" if i < 2 else None, phase=phase if i < 2 else "Pending"
        )
        for i in range(4)
    ]
    c.upsert_gang(GangSpec("default", "g", 4, mode=mode, wait_seconds=WAIT), created=0.0)
    c.restore_wait_start(G, 0.0)  # its PodGroup said Scheduling since long ago: the restart counts instead
    c.restore_nominations(now=RESTART)
    return keys


def test_partially_bound_gang_is_completed_when_the_rest_fits() -> None:
    c = SchedulerState()
    keys = _crashed_burst(c, nodes=4)
    assert not c.gangs[G].satisfied  # 2 bound of minMember 4: not satisfied
    plan = step(c, CFG, RESTART)
    assert sorted(k for k, _ in plan.bindings) == keys[2:]  # the bound members count towards the quorum
    assert plan.satisfied == [G] and not plan.evictions
    assert c.gangs[G].satisfied


def _until(c: SchedulerState, end: float) -> list[tuple[float, Plan]]:
    """Cycles at every wakeup until `end`; returns (time, plan) of each."""
    out: list[tuple[float, Plan]] = []
    now = RESTART
    while now <= end:
        plan = step(c, CFG, now)
        out.append((now, plan))
        if plan.next_wakeup is None or plan.next_wakeup > end:
            break
        now = plan.next_wakeup
    return out


def test_partially_bound_gang_without_room_is_evicted_after_its_waiting_time_from_the_restart() -> None:
    c = SchedulerState()
    keys = _crashed_burst(c, nodes=2)  # no room for members 2 and 3
    plan = step(c, CFG, RESTART)
    assert not plan.bindings and not plan.evictions
    assert c.gangs[G].first_reserved == RESTART  # the waiting time runs from the restart, not from 0
    assert plan.next_wakeup is not None and plan.next_wakeup <= RESTART + WAIT
    early = step(c, CFG, RESTART + WAIT - 1)
    assert not early.evictions
    plan = step(c, CFG, RESTART + WAIT)
    assert sorted(plan.evictions) == keys[:2]  # the bound members that never ran
    warning = [e for e in plan.events if e.kind == "PodGroup" and e.reason == "PartialGangEvicted"]
    assert len(warning) == 1 and warning[0].type == "Warning"
    assert "g-0" in warning[0].message and "g-1" in warning[0].message
    assert not plan.timeouts and not c.gangs[G].timed_out  # it starts again whole, it is not given up
    assert c.gangs[G].first_reserved is None
    status = c.gangs[G].last_status
    assert status is not None and "g-0" in status.message
    again = step(c, CFG, RESTART + WAIT + 1)
    assert not again.evictions  # evicted once, never twice
    for key in keys[:2]:  # the evictions land: the pods go (a controller re-creates them, unbound)
        c.remove_pod(key)
    for i in range(2):
        add_pod(c, f"g-{i}", gang=G, rank=i, gpu=8)
    plan = step(c, CFG, RESTART + WAIT + 100)
    assert not plan.bindings and not plan.evictions  # 2 nodes for 4 members: nothing binds, nothing is held
    assert c.gangs[G].first_reserved is None
    add_nodes(c, 2, prefix="m", gpu=8)
    plan = step(c, CFG, RESTART + WAIT + 200)
    assert len(plan.bindings) == 4 and plan.satisfied == [G]  # whole


def test_evicted_members_still_terminating_are_waited_for() -> None:
    c = SchedulerState()
    keys = _crashed_burst(c, nodes=4)
    add_pod(c, "blocker-2", node="n2", phase="Running", gpu=8, ours=False)
    add_pod(c, "blocker-3", node="n3", phase="Running", gpu=8, ours=False)
    step(c, CFG, RESTART)
    plan = step(c, CFG, RESTART + WAIT)
    assert sorted(plan.evictions) == keys[:2]
    c.remove_pod("default/blocker-2")
    c.remove_pod("default/blocker-3")  # room now, but members 0 and 1 are being evicted: no quorum with them
    plan = step(c, CFG, RESTART + WAIT + 1)
    assert not plan.bindings
    status = c.gangs[G].last_status
    assert status is not None and "evicted" in status.message


def test_partial_gang_that_ran_is_left_to_the_gang_health_policy() -> None:
    c = SchedulerState()
    _crashed_burst(c, nodes=2, phase="Running")  # its bound members ran: not a bind burst cut short
    _until(c, RESTART + 10 * WAIT)
    plan = step(c, CFG, RESTART + 10 * WAIT)
    assert not plan.evictions


def test_nonstrict_partial_gang_is_not_evicted() -> None:
    c = SchedulerState()
    _crashed_burst(c, nodes=2, mode=GangMode.NON_STRICT)
    for t, plan in _until(c, RESTART + 3 * WAIT):
        assert not plan.evictions, t


def test_partial_gang_detected_without_a_restart_when_binds_fail() -> None:
    """The same rule in the gang rules: binds of a quorum partly fail and the capacity goes meanwhile."""
    c = SchedulerState()
    add_nodes(c, 4, gpu=8)
    keys = [add_pod(c, f"g-{i}", gang=G, rank=i, gpu=8) for i in range(4)]
    c.upsert_gang(GangSpec("default", "g", 4, wait_seconds=WAIT), created=0.0)
    plan = schedule(c, 0.0, CFG)
    c.apply(plan)
    nodes = dict(plan.bindings)
    for key in keys[:2]:
        c.bind_succeeded(key)
        c.upsert_pod(dataclasses.replace(c.pods[key], node_name=nodes[key]))
    for key in keys[2:]:
        c.bind_failed(key)
    for key in keys[2:]:  # another scheduler's pods take the freed nodes
        add_pod(c, f"other-{key[-1]}", node=nodes[key], phase="Running", gpu=8, ours=False)
    assert not c.gangs[G].satisfied
    step(c, CFG, 1.0)
    assert c.gangs[G].first_reserved == 1.0
    plan = step(c, CFG, 1.0 + WAIT)
    assert sorted(plan.evictions) == keys[:2]
