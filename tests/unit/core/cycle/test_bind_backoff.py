"""A failed binding backs its gang off in the core's queue (core/scheduler_state.py `bind_failed(retry_at=)`).

Oracle: kube-scheduler. A pod whose binding failed is requeued through `handleSchedulingFailure` into the backoffQ
(pkg/scheduler/schedule_one.go `handleBindingCycleError`; pkg/scheduler/backend/queue/scheduling_queue.go
`AddUnschedulableIfNotPresent`: an error status, not Unschedulable, goes to the backoffQ), and it leaves the
backoffQ only when its backoff expires (`flushBackoffQCompleted`): `MoveAllToActiveOrBackoffQueue` on cluster
events moves pods out of the unschedulable pool, not out of the backoffQ. So capacity freed meanwhile does not end
the wait, unlike a gang that failed to fit (core/queue.py: freed capacity ends that backoff early). Before, a failed
binding left the gang pending with no backoff: the next cycle bound it again at once.
"""

from __future__ import annotations

from gangsched.core.cycle.scheduler import schedule
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from tests.builders import add_gang, add_nodes, add_pod

CFG = SchedulerConfig(max_units_per_cycle=4)


def _failed_binding(retry_at: float | None) -> tuple[SchedulerState, list[str]]:
    c = SchedulerState()
    add_nodes(c, 3, gpu=8)
    keys = add_gang(c, "g", 2, gpu=8)
    plan = schedule(c, 0.0, CFG)
    c.apply(plan)
    assert sorted(k for k, _ in plan.bindings) == sorted(keys)
    for key in keys:
        c.bind_failed(key, now=1.0, retry_at=retry_at)
    return c, keys


def test_without_a_retry_time_the_gang_is_bound_again_at_once() -> None:
    c, keys = _failed_binding(None)
    assert sorted(k for k, _ in schedule(c, 1.0, CFG).bindings) == sorted(keys)


def test_a_gang_whose_binding_failed_waits_until_its_retry_time_whatever_is_freed() -> None:
    c, keys = _failed_binding(11.0)
    other = add_pod(c, "other", gpu=8, node="n2", phase="Running")
    freed = c.store.freed_gen
    c.remove_pod(other)  # capacity freed meanwhile
    assert c.store.freed_gen > freed
    early = schedule(c, 5.0, CFG)
    c.apply(early)
    assert not early.bindings and early.next_wakeup == 11.0  # the loop wakes when the backoff ends
    retry = schedule(c, 11.0, CFG)
    assert sorted(k for k, _ in retry.bindings) == sorted(keys)


def test_a_lone_pod_backs_off_too() -> None:
    c = SchedulerState()
    add_nodes(c, 1)
    key = add_pod(c, "solo", cpu="1")
    c.apply(schedule(c, 0.0, CFG))
    c.bind_failed(key, now=1.0, retry_at=3.0)
    assert not schedule(c, 2.0, CFG).bindings
    assert [k for k, _ in schedule(c, 3.0, CFG).bindings] == [key]
