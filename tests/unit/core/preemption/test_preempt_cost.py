"""Preemption counts the work it destroys: among victims of equal priority, the ones that ran least go first
(core/preemption/victim_tracker.py `work_lost`, core/preemption/victim_search.py order of preference).

Oracles: kube-scheduler's DefaultPreemption prefers, among candidate nodes of equal victim priorities and counts,
the one whose highest-priority victims started latest (pkg/scheduler/framework/preemption/preemption.go
`pickOneNodeForPreemption`: "the latest start time of all highest priority pods"): the work a restart loses grows
with the victim's run time; here the same rule reaches whole victim gangs and counts devices.
"""

from __future__ import annotations

import dataclasses

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.preemption.victim_tracker import work_lost
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec
from tests.builders import add_gang, add_nodes, pod_obj, pod_record

CFG = SchedulerConfig(max_units_per_cycle=1)
HOUR = 3600.0


def running_gang(c: SchedulerState, name: str, nodes: list[str], *, started: float) -> None:
    """A priority-0 gang of one 8-GPU member per node, running since `started`."""
    c.upsert_gang(GangSpec("default", name, len(nodes)))
    for i, node in enumerate(nodes):
        obj = pod_obj(f"{name}-{i}", gpu=8, node=node, phase="Running")
        pod = pod_record(obj, c, gang=f"default/{name}", rank=i, ours=True)
        c.upsert_pod(dataclasses.replace(pod, started=started))


def test_the_younger_of_two_equal_victim_gangs_is_evicted() -> None:
    for old_nodes, young_nodes in ((["n0"], ["n1"]), (["n1"], ["n0"])):  # whichever node each runs on
        c = SchedulerState()
        add_nodes(c, 2, gpu=8)
        running_gang(c, "old", old_nodes, started=0.0)
        running_gang(c, "young", young_nodes, started=9 * HOUR)
        add_gang(c, "urgent", 1, gpu=8, priority=100)
        plan = step(c, CFG, 10 * HOUR)
        assert plan.evictions == ["default/young-0"], (old_nodes, plan.evictions)


def test_work_lost_counts_devices_and_run_time() -> None:
    c = SchedulerState()
    add_nodes(c, 1, gpu=8)
    running_gang(c, "g", ["n0"], started=HOUR)
    pod = c.pods["default/g-0"]
    assert work_lost(pod, 3 * HOUR) == 2 * HOUR * 8  # 2 h x 8 GPUs
    assert work_lost(pod, None) == 0.0
    assert work_lost(dataclasses.replace(pod, started=None), 3 * HOUR) == 0.0  # bound, not started: nothing lost
