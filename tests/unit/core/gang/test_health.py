"""Runtime gang health (issue 14 item 5, core/gang/health.py): a gang that ran and has fewer than minMember members
running, bound or finished for longer than its grace period is reported Degraded; with policy Evict its remaining
members are evicted; the report clears when minMember members run again.

Oracle: KAI Scheduler's stale-gang eviction, NVIDIA/KAI-Scheduler
pkg/scheduler/actions/stalegangeviction/stalegangeviction.go (`handleStaleJob`: the staleness timestamp is set by
the first cycle that sees the job stale, nothing happens before `stalenessGracePeriod` has passed since it, then
every active allocated task is evicted; `handleNonStaleJob`: the timestamp is cleared when the job is no longer
stale) and its test stalegangeviction_test.go. Members on a removed node count as lost, as Kubernetes' pod GC
(pkg/controller/podgc/gc_controller.go `gcOrphaned`) deletes pods bound to a node that no longer exists.
Time is virtual: every cycle gets an explicit `now`.
"""

from __future__ import annotations

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.plan import Plan
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec, StalePolicy
from tests.builders import add_nodes, add_pod

CFG = SchedulerConfig(max_units_per_cycle=10)
G = "default/g"
GRACE = 10.0
T0 = 1000.0


def _running_gang(policy: StalePolicy = StalePolicy.REPORT, grace: float | None = GRACE) -> SchedulerState:
    """A gang of 3 (minMember 3, 8 GPUs each) running on n0..n2 (a fourth node n3 is free)."""
    c = SchedulerState()
    add_nodes(c, 4, gpu=8)
    c.upsert_gang(GangSpec("default", "g", 3, stale_grace_seconds=grace, stale_policy=policy), created=0.0)
    for i in range(3):
        add_pod(c, f"g-{i}", gang=G, rank=i, gpu=8, node=f"n{i}", phase="Running")
    assert c.gangs[G].satisfied
    plan = step(c, CFG, T0)
    assert not _reasons(plan) and c.health.condition(G) is None
    return c


def _reasons(plan: Plan) -> list[str]:
    return [e.reason for e in plan.events if e.kind == "PodGroup" and e.name == "g"]


def test_degraded_only_after_the_grace_period() -> None:
    c = _running_gang()
    c.remove_pod("default/g-2")  # a member lost (deleted, or killed and not re-created yet)
    first = step(c, CFG, T0 + 1)
    assert not _reasons(first) and first.next_wakeup == T0 + 1 + GRACE  # the clock starts; woken at its end
    assert not _reasons(step(c, CFG, T0 + GRACE))  # before the grace ends: nothing reported
    assert c.health.condition(G) is None
    plan = step(c, CFG, T0 + 1 + GRACE)
    assert _reasons(plan) == ["GangDegraded"]
    warning = next(e for e in plan.events if e.reason == "GangDegraded")
    assert warning.type == "Warning" and "2 of minMember 3" in warning.message
    condition = c.health.condition(G)
    assert condition is not None and condition.status and condition.reason == "BelowMinMember"
    assert G in plan.health  # the runtime rewrites the PodGroup status
    assert not plan.evictions  # Report (the default policy): nothing evicted
    assert not _reasons(step(c, CFG, T0 + 100))  # reported once per degradation


def test_recovery_within_the_grace_reports_nothing() -> None:
    c = _running_gang()
    c.remove_pod("default/g-2")
    step(c, CFG, T0 + 1)
    add_pod(c, "g-2", gang=G, rank=2, gpu=8)  # its controller re-creates it: placed again, the gang recovers
    plan = step(c, CFG, T0 + 2)
    assert [k for k, _ in plan.bindings] == ["default/g-2"]
    later = step(c, CFG, T0 + 1 + GRACE)
    assert not _reasons(plan) and not _reasons(later) and c.health.condition(G) is None


def test_degraded_clears_when_min_member_run_again() -> None:
    c = _running_gang()
    c.remove_pod("default/g-1")
    step(c, CFG, T0 + 1)
    step(c, CFG, T0 + 1 + GRACE)
    add_pod(c, "g-1", gang=G, rank=1, gpu=8)
    plan = step(c, CFG, T0 + 20)  # bound with the two running members counting towards the quorum
    assert [k for k, _ in plan.bindings] == ["default/g-1"]
    plan = step(c, CFG, T0 + 21)
    assert _reasons(plan) == ["GangRecovered"]
    condition = c.health.condition(G)
    assert condition is not None and not condition.status and condition.reason == "Recovered"
    c.remove_pod("default/g-0")  # a new degradation is reported again
    step(c, CFG, T0 + 30)
    assert _reasons(step(c, CFG, T0 + 30 + GRACE)) == ["GangDegraded"]


def test_evict_policy_evicts_the_remaining_members_after_the_grace() -> None:
    c = _running_gang(StalePolicy.EVICT)
    c.remove_pod("default/g-0")
    step(c, CFG, T0 + 1)
    assert not step(c, CFG, T0 + GRACE).evictions  # not before the grace
    plan = step(c, CFG, T0 + 1 + GRACE)
    assert sorted(plan.evictions) == ["default/g-1", "default/g-2"]
    assert plan.preemptions[G] == ("default/g-1", "default/g-2")  # the path preemption victims take
    assert _reasons(plan) == ["GangDegraded", "StaleGangEvicted"]
    evicted = next(e for e in plan.events if e.reason == "StaleGangEvicted")
    assert "g-1" in evicted.message and "g-2" in evicted.message
    condition = c.health.condition(G)
    assert condition is not None and condition.status and condition.reason == "StaleGangEvicted"
    assert c.evicting.keys() == {"default/g-1", "default/g-2"}
    assert not step(c, CFG, T0 + 100).evictions  # never twice


def test_members_on_a_removed_node_count_as_lost() -> None:
    c = _running_gang(StalePolicy.EVICT)
    c.remove_node("n1")  # the node went away; its pod is still in the API until the pod GC deletes it
    assert c.gangs[G].satisfied  # the pods alone still show the quorum
    step(c, CFG, T0 + 1)
    plan = step(c, CFG, T0 + 1 + GRACE)
    degraded = next(e for e in plan.events if e.reason == "GangDegraded")
    assert "lost with their node: g-1" in degraded.message
    assert sorted(plan.evictions) == ["default/g-0", "default/g-1", "default/g-2"]  # every non-terminal member


def test_a_gang_that_never_ran_is_not_degraded() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)  # room for 2 of 3
    c.upsert_gang(GangSpec("default", "g", 3, stale_grace_seconds=GRACE, stale_policy=StalePolicy.EVICT))
    for i in range(3):
        add_pod(c, f"g-{i}", gang=G, rank=i, gpu=8)
    for t in (T0, T0 + 100, T0 + 200):
        plan = step(c, CFG, t)
        assert not plan.evictions and "GangDegraded" not in _reasons(plan)


def test_off_without_a_grace_period() -> None:
    c = _running_gang(StalePolicy.EVICT, grace=None)
    assert len(c.health) == 0  # not watched: no cost
    c.remove_pod("default/g-0")
    for t in (T0 + 1, T0 + 1000):
        plan = step(c, CFG, t)
        assert not plan.evictions and not _reasons(plan) and not plan.health


def test_a_gang_whose_members_are_all_gone_stops_its_clock() -> None:
    c = _running_gang()
    c.remove_pod("default/g-0")
    step(c, CFG, T0 + 1)
    for i in (1, 2):
        c.remove_pod(f"default/g-{i}")
    step(c, CFG, T0 + 2)
    assert c.health.record(G).since is None and not c.health.record(G).ran
    assert not _reasons(step(c, CFG, T0 + 100))  # nothing to report or evict


def test_evicted_gang_keeps_its_condition_until_it_runs_again() -> None:
    c = _running_gang(StalePolicy.EVICT)
    c.remove_pod("default/g-0")
    step(c, CFG, T0 + 1)
    assert step(c, CFG, T0 + 1 + GRACE).evictions
    for i in (1, 2):  # the evictions went through; the controller re-creates the whole gang
        c.remove_pod(f"default/g-{i}")
    step(c, CFG, T0 + 20)
    condition = c.health.condition(G)
    assert condition is not None and condition.reason == "StaleGangEvicted"
    for i in range(3):
        add_pod(c, f"g-{i}", gang=G, rank=i, gpu=8)
    plan = step(c, CFG, T0 + 21)
    assert len(plan.bindings) == 3  # gang-scheduled again, whole
    assert _reasons(step(c, CFG, T0 + 22)) == ["GangRecovered"]


def test_finished_members_hold_the_gang() -> None:
    c = _running_gang()
    for i in range(3):
        add_pod(c, f"g-{i}", gang=G, rank=i, gpu=8, node=f"n{i}", phase="Succeeded")
    for t in (T0 + 1, T0 + 100):
        assert not _reasons(step(c, CFG, t))
