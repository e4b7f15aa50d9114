"""core/session: a cycle's operations are recorded; rollback() to a checkpoint undoes them all (plan, the
cycle's view, the workspace's capacity), commit() keeps them, and outside a checkpoint nothing is recorded."""

from __future__ import annotations

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.plan import Plan
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec
from tests.builders import add_gang, add_nodes, add_pod


def _state() -> SchedulerState:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    add_gang(c, "g", 2, gpu=8)
    add_pod(c, "lone", gpu=8)
    return c


def _plan_lists(plan: Plan) -> tuple[object, ...]:
    return (
        plan.bindings,
        plan.reservations,
        plan.releases,
        plan.nominations,
        plan.nomination_clears,
        plan.evictions,
        plan.preemptions,
        plan.satisfied,
        plan.first_reserved,
        plan.timeouts,
    )


def test_rollback_undoes_every_operation_since_the_checkpoint() -> None:
    c = _state()
    s = CycleSession(c, 0.0, SchedulerConfig())
    gang = c.gangs["default/g"]
    before = repr(_plan_lists(s.plan))
    free_before = s.workspace.free("n0")
    mark = s.checkpoint()
    s.workspace.place("n0", c.pods["default/g-0"].requests)
    s.place([("default/g-0", "n0"), ("default/g-1", "n1")])
    s.reserve([("default/g-0", "n0")])
    s.bind([("default/g-0", "n0"), ("default/g-1", "n1")])
    s.satisfy("default/g")
    s.set_wait_start("default/g", 0.0)
    s.nominate("default/g", [c.pods["default/lone"]], ["n1"])
    s.evict("default/g", ("default/x",))
    s.time_out("default/other", ("default/y",))
    assert s.is_satisfied(gang) and s.is_placed("default/g-0") and s.is_evicting("default/x")
    s.rollback(mark)
    assert repr(_plan_lists(s.plan)) == before
    assert not s.is_satisfied(gang) and not s.is_placed("default/g-0") and not s.is_evicting("default/x")
    assert s.nominated == {} and s.timed_out_now == set()
    assert s.workspace.free("n0") == free_before
    assert [p.name for p in s.members(gang).pending] == ["g-0", "g-1"]


def test_nested_checkpoints_and_commit() -> None:
    c = _state()
    s = CycleSession(c, 0.0, SchedulerConfig())
    outer = s.checkpoint()
    s.place([("default/g-0", "n0")])
    inner = s.checkpoint()
    s.place([("default/g-1", "n1")])
    s.commit(inner)  # kept, but the outer transaction can still undo it
    assert s.is_placed("default/g-1")
    s.rollback(outer)
    assert not s.is_placed("default/g-0") and not s.is_placed("default/g-1")
    s.place([("default/g-0", "n0")])  # no checkpoint open: done, nothing recorded to undo
    mark = s.checkpoint()
    s.rollback(mark)
    assert s.is_placed("default/g-0")


def test_a_strict_gang_that_fails_leaves_nothing_but_its_failure() -> None:
    c = SchedulerState()
    add_nodes(c, 1, gpu=8)
    c.upsert_gang(GangSpec("default", "g", 2))
    for i in range(2):
        add_pod(c, f"g-{i}", gang="default/g", gpu=8)
    plan = step(c, SchedulerConfig(), 0.0)
    assert (plan.bindings, plan.reservations, plan.first_reserved, c.used) == ([], [], {}, {})
    assert plan.gang_status["default/g"].reason == "Unschedulable"
