"""A preemptor that loses its held nodes to a higher-priority gang, attempted later in the same cycle.

Found by the soak test (maxUnitsPerCycle 64, as the operator runs): the higher-priority gang released the
preemptor's holds and used them; the preemptor, attempted next in the same cycle, released its nominations a
second time and went to its nominated nodes as if they were still held: both gangs were bound onto the same
GPUs. The existing preemption tests ran one unit per cycle, which hides it.
"""

from __future__ import annotations

import pytest

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode, GangSpec
from tests.builders import add_nodes, add_pod
from tests.unit.core.preemption.test_preemption import evict, nodes, pending_gang, running_gang


@pytest.mark.parametrize(
    "units", [pytest.param(1, id="one-unit-per-cycle"), pytest.param(64, id="many-units-per-cycle")]
)
@pytest.mark.parametrize(
    "mode", [pytest.param(GangMode.STRICT, id="strict-taker"), pytest.param(GangMode.NON_STRICT, id="nonstrict-taker")]
)
def test_a_preemptor_that_lost_its_held_nodes_is_not_bound_onto_them_in_the_same_cycle(
    units: int, mode: GangMode
) -> None:
    cfg = SchedulerConfig(max_units_per_cycle=units)
    c = SchedulerState()
    add_nodes(c, 2, prefix="node", gpu=8)
    victims = running_gang(c, "x", nodes(2))  # priority 0
    p1 = pending_gang(c, "p1", 2, priority=500)  # preempts x, holds node0 and node1
    assert sorted(step(c, cfg, 0.0).evictions) == sorted(victims)
    c.upsert_gang(GangSpec("default", "p2", 2, mode=mode))
    p2 = [add_pod(c, f"p2-{i}", gang="default/p2", gpu=8, priority=1000) for i in range(2)]
    evict(c, victims)
    plan = step(c, cfg, 1.0)
    assert {k for k, _ in plan.bindings} == set(p2)  # the higher priority takes the held nodes
    assert sorted(plan.nomination_clears) == sorted(p1)  # once
    for node in nodes(2):
        assert c.used[node]["nvidia.com/gpu"] <= 8
    assert all(c.nomination_of(k) is None for k in p1)
    later = step(c, cfg, 10.0)
    assert not {k for k, _ in later.bindings} & set(p1)  # no room: p1 waits (p2 has the higher priority)
