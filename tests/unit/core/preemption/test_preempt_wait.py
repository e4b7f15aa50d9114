"""A preemptor's waiting time does not run out while its victims terminate (issue 13 item 7 (a)).

Oracle: kube-scheduler nominates a preemptor (status.nominatedNodeName) and leaves it in the scheduling queue
while its victims terminate gracefully (pkg/scheduler/framework/preemption/preemption.go, `prepareCandidate`
deletes the victims; the preemptor only reaches Permit, where coscheduling's scheduleTimeout runs, once it fits).
A victim is gone at the latest when its grace period ends: the apiserver sets metadata.deletionTimestamp to the
deletion time plus the grace period (pkg/registry/core/pod/strategy.go `CheckGracefulDelete`, default
terminationGracePeriodSeconds 30: pkg/apis/core/v1/defaults.go). So the waiting time is suspended until the
victims' grace periods end, and no longer.
"""

from __future__ import annotations

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec
from tests.builders import add_nodes, add_pod

CFG = SchedulerConfig(max_units_per_cycle=4)


def setup(grace: int | None = None, wait: float = 10.0) -> tuple[SchedulerState, list[str], list[str]]:
    c = SchedulerState()
    add_nodes(c, 2, prefix="node", gpu=8)
    c.upsert_gang(GangSpec("default", "low", 2))
    c.mark_satisfied("default/low")
    extra = {"terminationGracePeriodSeconds": grace} if grace is not None else None
    low = [
        add_pod(c, f"low-{i}", gang="default/low", rank=i, node=f"node{i}", phase="Running", gpu=8, spec_extra=extra)
        for i in range(2)
    ]
    c.upsert_gang(GangSpec("default", "high", 2, wait_seconds=wait))
    high = [add_pod(c, f"high-{i}", gang="default/high", rank=i, gpu=8, priority=1000) for i in range(2)]
    return c, low, high


def test_victims_with_the_default_grace_period_are_waited_for_beyond_the_waiting_time() -> None:
    """The issue's case: default 30 s grace, scheduleTimeoutSeconds 10: the victims leave at 25 s."""
    c, low, high = setup()
    plan = step(c, CFG, 0.0)
    assert sorted(plan.evictions) == low
    assert c.termination_deadline("default/high") == 30.0
    for t in (5.0, 11.0, 20.0, 24.0):
        assert not step(c, CFG, t).timeouts
    for key in low:
        c.remove_pod(key)
    plan = step(c, CFG, 25.0)
    assert not plan.timeouts
    assert sorted(k for k, _ in plan.bindings) == high
    assert c.termination_deadline("default/high") is None  # satisfied: the deadline is forgotten


def test_the_suspension_is_bounded_by_the_victims_grace_period() -> None:
    """Victims with a 5 s grace that never leave (a finalizer): the waiting time runs from 5 s and ends at 15 s."""
    c, _low, high = setup(grace=5)
    step(c, CFG, 0.0)
    assert c.termination_deadline("default/high") == 5.0
    assert not step(c, CFG, 14.0).timeouts
    plan = step(c, CFG, 15.5)
    assert [t.gang_key for t in plan.timeouts] == ["default/high"]
    assert "suspended 5s while its victims terminated" in plan.gang_status["default/high"].message
    assert sorted(plan.nomination_clears) == high


def test_a_later_deletion_timestamp_extends_the_wait() -> None:
    """An eviction accepted late (retried after a 429) gets a later deletionTimestamp: it moves the deadline."""
    c, low, _high = setup(grace=5)
    step(c, CFG, 0.0)
    for key in low:
        c.set_leaving(key, True, 12.0)
    assert c.termination_deadline("default/high") == 12.0
    assert not step(c, CFG, 21.0).timeouts
    assert step(c, CFG, 22.5).timeouts


def test_next_wakeup_is_the_suspended_deadline() -> None:
    c, _, _ = setup(grace=5)
    plan = step(c, CFG, 0.0)
    assert plan.next_wakeup is not None and plan.next_wakeup <= 15.0
    plan = step(c, CFG, 11.0)  # (the unsuspended deadline, 10 s, is past: a wakeup is still due by 15 s)
    assert plan.next_wakeup is not None and 11.0 < plan.next_wakeup <= 15.0


def test_grace_is_parsed_bounded_and_defaulted() -> None:
    c = SchedulerState()
    keys = {
        g: add_pod(c, f"p{i}", spec_extra={"terminationGracePeriodSeconds": g} if g is not None else None)
        for i, g in enumerate((None, 0, -3, 10**30, "x"))
    }
    assert [c.pods[k].grace for k in keys.values()] == [30.0, 0.0, 1.0, 1e9, 30.0]


def test_giving_up_forgets_the_old_deadline() -> None:
    """A preemptor that finds nothing to preempt any more (its victims refused) clears its waiting time: a later
    waiting time is not suspended by the old choice's deadline."""
    c, low, _ = setup(grace=50)
    step(c, CFG, 0.0)
    assert c.termination_deadline("default/high") == 50.0
    for key in low:
        c.eviction_failed(key)
    plan = step(c, CFG, 30.0)  # nothing else to preempt: the Strict gang fails and gives its waiting time up
    assert not plan.timeouts and plan.first_reserved.get("default/high", 0.0) is None
    assert c.termination_deadline("default/high") is None
