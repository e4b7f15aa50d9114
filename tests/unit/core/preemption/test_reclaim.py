"""Reservations of lower-priority waiting gangs are preemptable (issue 13 item 7 (b)).

Oracle: kube-scheduler's preemption rejects a lower-priority pod waiting in Permit instead of deleting it
(pkg/scheduler/framework/preemption/preemption.go `prepareCandidate`: `fh.GetWaitingPod(victim.UID)` then
`waitingPod.Reject(pluginName, "preempted")`; the waiting-pods map is pkg/scheduler/framework/runtime/
waiting_pods_map.go, `RejectWaitingPod` in framework.go). A NonStrict gang holding part of its quorum is such a
set of waiting pods: a higher-priority gang takes its reservations before any running pod is evicted.
"""

from __future__ import annotations

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.podstate import RESERVED
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode, GangSpec
from tests.builders import add_gang, add_nodes, add_pod

CFG = SchedulerConfig(max_units_per_cycle=8)


def gang(c: SchedulerState, name: str, n: int, min_member: int, *, priority: int, nonstrict: bool = False) -> list[str]:
    mode = GangMode.NON_STRICT if nonstrict else GangMode.STRICT
    return add_gang(c, name, n, min_member=min_member, mode=mode, gpu=8, priority=priority)


def reserving_setup() -> tuple[SchedulerState, list[str]]:
    """4 nodes: a low-priority NonStrict gang of 6 (minMember 6) reserves all 4 and waits for 2 more nodes."""
    c = SchedulerState()
    add_nodes(c, 4, prefix="node", gpu=8)
    low = gang(c, "low", 6, 6, priority=0, nonstrict=True)
    plan = step(c, CFG, 0.0)
    assert len(plan.reservations) == 4 and not plan.bindings
    return c, low


def test_a_higher_priority_gang_takes_the_reservations_of_a_lower_priority_nonstrict_gang() -> None:
    c, _low = reserving_setup()
    high = gang(c, "high", 2, 2, priority=1000)
    plan = step(c, CFG, 1.0)
    assert sorted(k for k, _ in plan.bindings) == high
    assert not plan.evictions
    assert len(plan.releases) >= 2
    lost = [e for e in plan.events if e.reason == "ReservationsReleased"]
    assert lost and lost[0].name == "low"
    assert lost[0].message.startswith("reservations released for higher-priority gang default/high")
    took = [e for e in plan.events if e.reason == "Preempting" and e.name == "high"]
    assert took and "default/low" in took[0].message
    # low keeps what still fits (2 nodes) and waits on
    assert len(c.store.pods_in(RESERVED)) == 2


def test_reservations_go_before_running_pods() -> None:
    """A running lower-priority pod and a lower-priority reservation: the reservation is taken, nothing evicted."""
    c = SchedulerState()
    add_nodes(c, 2, prefix="node", gpu=8)
    c.upsert_gang(GangSpec("default", "run", 1))
    c.mark_satisfied("default/run")
    add_pod(c, "run-0", gang="default/run", rank=0, node="node0", phase="Running", gpu=8)
    gang(c, "low", 3, 3, priority=0, nonstrict=True)
    step(c, CFG, 0.0)
    assert len(c.store.pods_in(RESERVED)) == 1
    high = gang(c, "high", 1, 1, priority=1000)
    plan = step(c, CFG, 1.0)
    assert [k for k, _ in plan.bindings] == high and plan.bindings[0][1] == "node1"
    assert not plan.evictions


def test_equal_priority_and_never_take_nothing() -> None:
    c, _ = reserving_setup()
    gang(c, "peer", 1, 1, priority=0)
    plan = step(c, CFG, 1.0)
    assert not plan.releases and not plan.bindings
    c2, _ = reserving_setup()
    c2.upsert_gang(GangSpec("default", "never", 1))
    add_pod(c2, "never-0", gang="default/never", rank=0, gpu=8, priority=1000, spec_extra={"preemptionPolicy": "Never"})
    plan = step(c2, CFG, 1.0)
    assert not plan.releases and not plan.bindings


def test_when_releasing_every_reservation_is_not_enough_nothing_is_released() -> None:
    c, _ = reserving_setup()
    gang(c, "huge", 5, 5, priority=1000)
    plan = step(c, CFG, 1.0)
    assert not plan.releases and not plan.bindings
    assert len(c.store.pods_in(RESERVED)) == 4
