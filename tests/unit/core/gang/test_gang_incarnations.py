"""Gang incarnations (issue 13 item 5): a gang is satisfied only while at least minMember of its members are
bound or finished; below that its pending members are gang-scheduled again, their quorum counting the members
bound or finished plus the placeable ones.

Oracle: Koordinator's coscheduling, pkg/scheduler/plugins/coscheduling/core/gang.go, `isGangValidForPermit` with
`GangMatchPolicyWaitingAndRunning` (waiting-for-bind + bound children >= MinRequiredNumber) and `addBoundPod`
(a gang is resource-satisfied by its bound children); core/core.go `PreFilter` (a satisfied gang's pods pass, the
others go through the gang check again). The restarted-job case is a JobSet/TrainJob restart: every pod deleted
and re-created under the same names with new uids.
"""

from __future__ import annotations

import dataclasses

import pytest

from gangsched.core.cycle.scheduler import schedule
from gangsched.core.cycle.simulate import run_until_quiet, step
from gangsched.core.memory.gangs import GangTransition
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode, GangSpec
from tests.builders import add_gang, add_nodes, add_pod

CFG = SchedulerConfig(max_units_per_cycle=10)
G = "default/g"


def _running_gang(c: SchedulerState, pods: int = 4) -> list[str]:
    keys = add_gang(c, "g", pods, gpu=8)
    run_until_quiet(c, CFG)
    for k in keys:
        c.upsert_pod(dataclasses.replace(c.pods[k], phase="Running"))  # the watch shows them bound
    assert all(c.pods[k].node_name for k in keys) and c.gangs[G].satisfied
    return keys


def _recreate(c: SchedulerState, keys: list[str]) -> list[str]:
    """Delete every member and create it again under the same name (a new uid), unbound."""
    for key in keys:
        c.remove_pod(key)
    out = []
    for i, key in enumerate(keys):
        name = key.split("/")[1]
        out.append(add_pod(c, name, gang=G, rank=i, gpu=8))
        c.upsert_pod(dataclasses.replace(c.pods[out[-1]], uid=f"uid-{name}-2"))
    return out


def test_restarted_gang_starts_whole_or_not_at_all() -> None:
    c = SchedulerState()
    nodes = add_nodes(c, 4, gpu=8)
    keys = _running_gang(c)
    new = _recreate(c, keys)
    assert not c.gangs[G].satisfied  # quorum lost: every member gone
    add_pod(c, "blocker", node=nodes[0], phase="Running", gpu=8, ours=False)  # only 3 fit now
    for t in (1.0, 5.0, 30.0):
        plan = step(c, CFG, t)
        assert not plan.bindings and not plan.reservations
    assert all(c.pods[k].node_name is None for k in new)
    status = c.gangs[G].last_status
    assert status is not None and status.reason == "Unschedulable"
    c.remove_pod("default/blocker")
    plan = step(c, CFG, 60.0)
    assert sorted(k for k, _ in plan.bindings) == sorted(new) and plan.satisfied == [G]
    assert c.gangs[G].satisfied


def test_replacement_of_a_running_gang_needs_only_itself_to_fit() -> None:
    c = SchedulerState()
    add_nodes(c, 4, gpu=8)
    keys = _running_gang(c)
    c.remove_pod(keys[0])
    assert not c.gangs[G].satisfied  # 3 bound of minMember 4
    repl = add_pod(c, "g-new", gang=G, gpu=8)
    plan = step(c, CFG, 1.0)
    assert [k for k, _ in plan.bindings] == [repl]  # quorum: 3 bound + 1 placeable
    assert c.gangs[G].satisfied


def test_leaving_members_hold_no_quorum() -> None:
    """A restart with new names (Job pods): the old members are terminating; they do not count for the new
    incarnation, whose 3 placeable pods of minMember 4 wait."""
    c = SchedulerState()
    add_nodes(c, 7, gpu=8)
    keys = _running_gang(c)
    for key in keys:
        c.set_leaving(key, True)
    assert not c.gangs[G].satisfied
    new = [add_pod(c, f"g-b{i}", gang=G, rank=i, gpu=8) for i in range(4)]
    plan = step(c, CFG, 1.0)
    assert not plan.bindings and not plan.reservations
    for key in keys:
        c.remove_pod(key)
    plan = step(c, CFG, 30.0)
    assert sorted(k for k, _ in plan.bindings) == sorted(new)


@pytest.mark.parametrize(
    ("phase", "holds"),
    [
        pytest.param("Succeeded", True, id="succeeded-members-hold"),
        pytest.param("Failed", False, id="failed-members-do-not"),
        pytest.param("Running", True, id="running-members-hold"),
    ],
)
def test_finished_members_hold_the_quorum(phase: str, holds: bool) -> None:
    c = SchedulerState()
    nodes = add_nodes(c, 3, gpu=8)
    c.upsert_gang(GangSpec("default", "g", 2))
    for i in range(2):
        add_pod(c, f"g-{i}", gang=G, rank=i, node=nodes[i], phase=phase, gpu=8)
    assert c.gangs[G].satisfied is holds
    late = add_pod(c, "g-late", gang=G, gpu=8)
    plan = step(c, CFG, 0.0)
    assert [k for k, _ in plan.bindings] == ([late] if holds else [])


def test_binds_failing_below_quorum_lose_the_satisfied_mark() -> None:
    c = SchedulerState()
    add_nodes(c, 3, gpu=8)
    keys = add_gang(c, "g", 3, gpu=8)
    c.apply(schedule(c, 0.0, CFG))
    assert c.gangs[G].satisfied  # (bindings in flight hold it)
    c.bind_succeeded(keys[0])
    c.bind_failed(keys[1])
    assert not c.gangs[G].satisfied
    c.bind_failed(keys[2])
    assert not c.gangs[G].satisfied
    retry = step(c, CFG, 1.0)  # gang-scheduled again: 1 bound + 2 placeable
    assert sorted(k for k, _ in retry.bindings) == sorted(keys[1:]) and retry.satisfied == [G]


@pytest.mark.parametrize("spec_first", [True, False], ids=["podgroup-first", "pods-first"])
@pytest.mark.parametrize(("bound", "satisfied"), [(4, True), (3, False), (0, False)])
def test_startup_derives_satisfaction_from_the_pods(spec_first: bool, bound: int, satisfied: bool) -> None:
    """A new leader: the PodGroup says Running (mark_satisfied); only members bound count."""
    c = SchedulerState()
    nodes = add_nodes(c, 4, gpu=8)

    def podgroup() -> None:
        c.upsert_gang(GangSpec("default", "g", 4))
        c.mark_satisfied(G)

    if spec_first:
        podgroup()
    keys = [
        add_pod(c, f"g-{i}", gang=G, rank=i, gpu=8, node=nodes[i] if i < bound else None, phase="Running")
        for i in range(4)
    ]
    if not spec_first:
        podgroup()
    assert c.gangs[G].satisfied is satisfied
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.bindings) == sorted(keys[bound:])  # whole: the free nodes fit them all


def test_a_higher_min_member_loses_the_quorum() -> None:
    c = SchedulerState()
    add_nodes(c, 4, gpu=8)
    _running_gang(c, 2)
    c.upsert_gang(GangSpec("default", "g", 4))
    assert not c.gangs[G].satisfied
    c.upsert_gang(GangSpec("default", "g", 2))
    assert c.gangs[G].satisfied


def test_transitions_are_named_and_never_satisfy_without_the_pods() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    c.upsert_gang(GangSpec("default", "g", 2))
    table = c.store.gang_table
    assert not table.transition(G, GangTransition.SATISFY)  # nothing bound: refused
    assert not c.gangs[G].satisfied
    keys = [add_pod(c, f"g-{i}", gang=G, rank=i, node=f"n{i}", phase="Running", gpu=8) for i in range(2)]
    assert c.gangs[G].satisfied  # QUORUM_HELD, observed from the pods
    assert table.transition(G, GangTransition.PREEMPTED) and not c.gangs[G].satisfied
    c.upsert_pod(dataclasses.replace(c.pods[keys[0]], phase="Running"))  # an unrelated update
    assert not c.gangs[G].satisfied  # preempted stays unsatisfied while its victims still show bound
    c.remove_pod(keys[0])
    assert not c.gangs[G].satisfied
    assert not table.transition(G, GangTransition.QUORUM_LOST)  # (no change: False)


def test_nonstrict_reservations_hold_no_quorum() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    add_gang(c, "g", 3, mode=GangMode.NON_STRICT, gpu=8)
    plan = step(c, CFG, 0.0)
    assert len(plan.reservations) == 2 and not c.gangs[G].satisfied


def test_restarts_leave_nothing_behind() -> None:
    """Many incarnations of one gang, then its deletion: every structure back to its baseline (sizes())."""
    c = SchedulerState()
    add_nodes(c, 4, gpu=8)
    baseline = c.sizes()
    keys = _running_gang(c)
    for r in range(50):
        keys = _recreate(c, keys)
        assert sorted(k for k, _ in step(c, CFG, float(r + 1)).bindings) == sorted(keys)
    for k in keys:
        c.remove_pod(k)
    c.remove_gang(G)
    assert G not in c.gangs
    sizes = c.sizes()
    assert sizes.pop("change_log") <= 4 * 4 + 10_000  # (a bounded log, as in test_core_forgetting.py)
    baseline.pop("change_log")
    assert sizes == baseline
