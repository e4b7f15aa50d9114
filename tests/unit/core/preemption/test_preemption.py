"""Group preemption in the core (issue 6): seed 004's user story 3, whole victim gangs, priorities, Never, PDBs,
two preemptors, node reservation while victims terminate, refused evictions and giving up."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.plan import Plan
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.topology import Domain, TopologyTree
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec, NetworkTopology
from tests.builders import add_nodes, add_pod

CFG = SchedulerConfig(max_units_per_cycle=1)
HIGH = 1000


def story_tree() -> TopologyTree:
    """spine0 -> leaf0 -> unit0 (node0-3); spine0 -> leaf1 -> unit1 (node4-7), unit2 (node8-11)."""
    return TopologyTree.from_domains(
        [
            Domain(3, "spine0", (), ("leaf0", "leaf1")),
            Domain(2, "leaf0", ("spine0",), ("unit0",)),
            Domain(2, "leaf1", ("spine0",), ("unit1", "unit2")),
            Domain(1, "unit0", ("leaf0",), tuple(f"node{i}" for i in range(4))),
            Domain(1, "unit1", ("leaf1",), tuple(f"node{i}" for i in range(4, 8))),
            Domain(1, "unit2", ("leaf1",), tuple(f"node{i}" for i in range(8, 12))),
        ]
    )


def running_gang(
    c: SchedulerState, name: str, nodes: list[str], *, priority: int = 0, min_member: int | None = None, **kw: Any
) -> list[str]:
    c.upsert_gang(GangSpec("default", name, min_member if min_member is not None else len(nodes)))
    c.mark_satisfied(f"default/{name}")
    return [
        add_pod(
            c, f"{name}-{i}", gang=f"default/{name}", rank=i, node=n, phase="Running", gpu=8, priority=priority, **kw
        )
        for i, n in enumerate(nodes)
    ]


def pending_gang(
    c: SchedulerState,
    name: str,
    pods: int,
    *,
    priority: int = HIGH,
    min_member: int | None = None,
    group_size: int | None = None,
    policy: str | None = None,
) -> list[str]:
    nt = NetworkTopology(group_size=group_size) if group_size is not None else None
    c.upsert_gang(GangSpec("default", name, min_member if min_member is not None else pods, network_topology=nt))
    extra = {"preemptionPolicy": policy} if policy else None
    return [
        add_pod(c, f"{name}-{i}", gang=f"default/{name}", rank=i, gpu=8, priority=priority, spec_extra=extra)
        for i in range(pods)
    ]


def nodes(n: int, start: int = 0) -> list[str]:
    return [f"node{i}" for i in range(start, start + n)]


def story3() -> tuple[SchedulerState, list[str], list[str], list[str]]:
    c = SchedulerState()
    add_nodes(c, 12, prefix="node", gpu=8)
    c.set_topology(story_tree())
    g1 = running_gang(c, "gang1", nodes(4))
    g2 = running_gang(c, "gang2", nodes(4, 4))
    g3 = pending_gang(c, "gang3", 8, min_member=8, group_size=4)
    return c, g1, g2, g3


def evict(c: SchedulerState, keys: list[str]) -> None:
    for k in keys:
        c.remove_pod(k)


def test_user_story_3_evicts_exactly_gang2_and_lands_on_node4_to_11() -> None:
    c, g1, g2, g3 = story3()
    plan = step(c, CFG, 0.0)
    assert sorted(plan.evictions) == sorted(g2)
    assert not plan.bindings
    nominated = dict(plan.nominations)
    assert {n for _, n in plan.nominations} == set(nodes(8, 4)) and len(plan.nominations) == 8
    assert [k for k, _ in plan.nominations] == g3
    assert plan.gang_status["default/gang3"].reason == "Preempting"
    assert "for tier-2 placement" in plan.gang_status["default/gang3"].message
    victim_events = [e for e in plan.events if e.reason == "Preempted" and e.kind == "Pod"]
    assert sorted(f"{e.namespace}/{e.name}" for e in victim_events) == sorted(g2)
    assert victim_events[0].message == "Preempted by gang default/gang3 for tier-2 placement"
    assert any(e.kind == "PodGroup" and e.name == "gang2" and e.reason == "Preempted" for e in plan.events)
    assert plan.gang_status["default/gang2"].reason == "Preempted"
    assert "default/gang1" not in plan.gang_status
    # while the victims terminate: nothing new is evicted, the gang waits
    plan = step(c, CFG, 100.0)
    assert not plan.evictions and not plan.bindings
    evict(c, g2)
    plan = step(c, CFG, 101.0)
    assert {n for _, n in plan.bindings} == set(nodes(8, 4)) and len(plan.bindings) == 8  # one cycle
    assert dict(plan.bindings) == nominated  # each member goes where it was nominated
    assert plan.gang_status["default/gang3"].tier == 2
    assert all(c.pods[k].node_name for k in g1)


def test_reserved_nodes_are_not_taken_by_a_lower_priority_gang_meanwhile() -> None:
    c, _, g2, g3 = story3()
    step(c, CFG, 0.0)
    assert all(c.nomination_of(k) for k in g3)
    low = pending_gang(c, "late", 4, priority=0, group_size=None)
    for t in (1.0, 2.0, 3.0):
        plan = step(c, CFG, t)
        assert not plan.bindings and not plan.evictions  # equal priority to everyone running: no preemption
    evict(c, g2[:2])  # victims leave one by one; the latecomer still gets none of the freed nodes
    for t in (4.0, 5.0):
        plan = step(c, CFG, t)
        assert not any(k in low for k, _ in plan.bindings)
    evict(c, g2[2:])
    bound: list[tuple[str, str]] = []
    for t in (6.0, 7.0, 8.0):
        bound += step(c, CFG, t).bindings
    assert sorted(k for k, _ in bound) == sorted(g3)


@pytest.mark.parametrize(
    ("priority", "policy", "why"),
    [
        pytest.param(0, None, "equal priority", id="equal-priority-never-preempts"),
        pytest.param(HIGH, "Never", "preemptionPolicy Never", id="never-policy-never-preempts"),
        pytest.param(-5, None, "lower priority", id="lower-priority-never-preempts"),
    ],
)
def test_no_preemption(priority: int, policy: str | None, why: str) -> None:
    c = SchedulerState()
    add_nodes(c, 4, prefix="node", gpu=8)
    running_gang(c, "low", nodes(4))
    pending_gang(c, "want", 2, priority=priority, policy=policy)
    plan = step(c, CFG, 0.0)
    assert not plan.evictions and not plan.nominations, why
    assert plan.gang_status["default/want"].reason == "Unschedulable"


@pytest.mark.parametrize(
    ("need", "expected_victims"),
    [
        # gang b (min 2 of 4) may give 2 members singly; gang a (min 4) only whole
        pytest.param(1, 1, id="one-spare-member-of-b"),
        pytest.param(2, 2, id="two-spare-members-of-b"),
        pytest.param(3, 4, id="three-takes-a-whole-gang"),
        pytest.param(6, 6, id="six-takes-a-whole-gang-and-two-spares"),
    ],
)
def test_victim_gangs_are_never_left_below_quorum(need: int, expected_victims: int) -> None:
    c = SchedulerState()
    add_nodes(c, 8, prefix="node", gpu=8)
    a = running_gang(c, "a", nodes(4), min_member=4)
    b = running_gang(c, "b", nodes(4, 4), min_member=2)
    pending_gang(c, "want", need)
    plan = step(c, CFG, 0.0)
    assert len(plan.evictions) == expected_victims
    left_a = len([k for k in a if k not in plan.evictions])
    left_b = len([k for k in b if k not in plan.evictions])
    assert left_a in (0, 4)
    assert left_b == 0 or left_b >= 2


def test_disrupt_whole_gang_is_one_victim_unit() -> None:
    """Kubernetes' PodGroup disruptionMode: all: a gang above its quorum gives no member singly; it goes whole."""
    c = SchedulerState()
    add_nodes(c, 4, prefix="node", gpu=8)
    b = running_gang(c, "b", nodes(4), min_member=2)
    spec = c.gangs["default/b"].spec
    assert spec is not None
    c.upsert_gang(dataclasses.replace(spec, disrupt_whole=True))
    pending_gang(c, "want", 1)
    plan = step(c, CFG, 0.0)
    assert sorted(plan.evictions) == sorted(b)  # single (the default) would evict one spare member


def test_lowest_victim_priority_wins_over_fewer_pods() -> None:
    c = SchedulerState()
    add_nodes(c, 6, prefix="node", gpu=8)
    cheap = running_gang(c, "cheap", nodes(4), priority=1)
    running_gang(c, "dear", nodes(2, 4), priority=5)
    pending_gang(c, "want", 2)
    plan = step(c, CFG, 0.0)
    assert sorted(plan.evictions) == sorted(cheap)


def test_fewest_victim_pods_at_equal_priority() -> None:
    c = SchedulerState()
    add_nodes(c, 6, prefix="node", gpu=8)
    running_gang(c, "big", nodes(4))
    small = running_gang(c, "small", nodes(2, 4))
    pending_gang(c, "want", 2)
    assert sorted(step(c, CFG, 0.0).evictions) == sorted(small)


@pytest.mark.parametrize(
    ("protect", "pdb", "expected"),
    [
        pytest.param("small", "respect", "big", id="protected-victim-skipped-when-an-alternative-exists"),
        pytest.param("both", "prefer", "small", id="protected-victims-taken-when-nothing-else-fits-under-prefer"),
        # issue 22 item 2: under respect a victim gang a budget would cut short is never chosen
        pytest.param("both", "respect", None, id="protected-victim-gangs-never-taken-under-respect"),
        pytest.param("none", "respect", "small", id="no-pdb-fewest-pods"),
    ],
)
def test_pdb_protected_victims_are_avoided(protect: str, pdb: str, expected: str | None) -> None:
    c = SchedulerState()
    add_nodes(c, 6, prefix="node", gpu=8)
    gangs = {"big": running_gang(c, "big", nodes(4)), "small": running_gang(c, "small", nodes(2, 4))}
    for name, keys in gangs.items():
        if protect in (name, "both"):
            for k in keys[:1]:
                c.set_protected(k, True)
    pending_gang(c, "want", 2)
    plan = step(c, dataclasses.replace(CFG, preemption_pdb=pdb), 0.0)
    assert sorted(plan.evictions) == (sorted(gangs[expected]) if expected is not None else [])


def test_two_preemptors_never_take_the_same_victims() -> None:
    c = SchedulerState()
    add_nodes(c, 8, prefix="node", gpu=8)
    running_gang(c, "x", nodes(4))
    running_gang(c, "y", nodes(4, 4))
    pending_gang(c, "p1", 4)
    pending_gang(c, "p2", 4)
    first = step(c, SchedulerConfig(max_units_per_cycle=2), 0.0)
    second = step(c, CFG, 0.5)
    evicted = first.evictions + second.evictions
    assert len(evicted) == 8 and len(set(evicted)) == 8
    assert set(first.preemptions) == {"default/p1", "default/p2"}
    # a third preemptor finds nothing left to take
    pending_gang(c, "p3", 4)
    third = step(c, CFG, 1.0)
    assert not third.evictions


def test_other_schedulers_pods_are_victims_too() -> None:
    c = SchedulerState()
    add_nodes(c, 2, prefix="node", gpu=8)
    theirs = [add_pod(c, f"web-{i}", node=f"node{i}", phase="Running", gpu=8, ours=False) for i in range(2)]
    pending_gang(c, "want", 2)
    assert sorted(step(c, CFG, 0.0).evictions) == theirs


def test_refused_eviction_makes_the_core_choose_again() -> None:
    c = SchedulerState()
    add_nodes(c, 6, prefix="node", gpu=8)
    big = running_gang(c, "big", nodes(4))
    small = running_gang(c, "small", nodes(2, 4))
    want = pending_gang(c, "want", 2)
    assert sorted(step(c, CFG, 0.0).evictions) == sorted(small)
    for k in small:
        c.eviction_failed(k)  # 429: a PodDisruptionBudget the core did not know about
    assert not step(c, CFG, 0.1).evictions  # a refusal frees nothing: the preemptor's backoff runs on
    plan = step(c, CFG, 30.0)
    assert sorted(plan.evictions) == sorted(big)
    assert [k for k, _ in plan.nominations] == want


def test_giving_up_clears_nominations() -> None:
    c = SchedulerState()
    add_nodes(c, 2, prefix="node", gpu=8)
    running_gang(c, "low", nodes(2))
    c.upsert_gang(GangSpec("default", "want", 2, wait_seconds=30))
    want = [add_pod(c, f"want-{i}", gang="default/want", rank=i, gpu=8, priority=HIGH) for i in range(2)]
    plan = step(c, CFG, 0.0)
    assert len(plan.nominations) == 2
    # the victims never leave (e.g. a finalizer): the waiting time, suspended for their grace period (30 s, the
    # default terminationGracePeriodSeconds), ends, and the nominations go
    assert not step(c, CFG, 59.0).timeouts
    plan = step(c, CFG, 61.0)
    assert sorted(plan.nomination_clears) == want
    assert [t.gang_key for t in plan.timeouts] == ["default/want"]
    assert all(c.nomination_of(k) is None for k in want)
    assert not c.used.get("node0", {}).get("nvidia.com/gpu", 0) > 8


def test_deleted_podgroup_clears_nominations() -> None:
    c = SchedulerState()
    add_nodes(c, 2, prefix="node", gpu=8)
    running_gang(c, "low", nodes(2))
    want = pending_gang(c, "want", 2)
    step(c, CFG, 0.0)
    c.remove_gang("default/want")
    plan = step(c, CFG, 1.0)
    assert sorted(plan.nomination_clears) == want


def _plan_victim_units(plan: Plan) -> set[str]:
    return {e.name for e in plan.events if e.kind == "PodGroup" and e.reason == "Preempted"}


def test_whole_victim_gang_must_gather_its_quorum_again() -> None:
    c = SchedulerState()
    add_nodes(c, 2, prefix="node", gpu=8)
    low = running_gang(c, "low", nodes(2))
    pending_gang(c, "want", 2)
    plan = step(c, CFG, 0.0)
    assert _plan_victim_units(plan) == {"low"}
    assert not c.gangs["default/low"].satisfied
    assert sorted(plan.evictions) == low


# ------------------------------------------------------------------------------------- property: brute force

from itertools import product  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gangsched.core.preemption.victim_search import find_victims  # noqa: E402


@st.composite
def instances(draw: st.DrawFn) -> tuple[SchedulerState, list[tuple[str, list[str], int, int]], int, int]:
    """Up to 6 two-slot nodes (4 GPUs, pods of 2) holding up to 5 low gangs; a preemptor of `need` pods."""
    c = SchedulerState()
    n_nodes = draw(st.integers(2, 6))
    add_nodes(c, n_nodes, prefix="node", gpu=4)
    slots = [f"node{i}" for i in range(n_nodes) for _ in range(2)]
    free = list(slots)
    gangs = []
    for g in range(draw(st.integers(1, 5))):
        size = draw(st.integers(1, 3))
        if size > len(free):
            break
        quorum = draw(st.integers(1, size))
        prio = draw(st.integers(0, 3))
        where = [free.pop(draw(st.integers(0, len(free) - 1))) for _ in range(size)]
        c.upsert_gang(GangSpec("default", f"g{g}", quorum))
        keys = [
            add_pod(c, f"g{g}-{i}", gang=f"default/g{g}", rank=i, node=n, phase="Running", gpu=2, priority=prio)
            for i, n in enumerate(where)
        ]
        gangs.append((f"default/g{g}", keys, quorum, prio))
    need = draw(st.integers(1, len(slots)))
    return c, gangs, need, 10


def _fits(c: SchedulerState, gone: set[str], need: int) -> bool:
    used = dict.fromkeys(c.nodes, 0)
    for k, p in c.pods.items():
        if p.node_name and k not in gone:
            used[p.node_name] += 2
    return sum((4 - u) // 2 for u in used.values()) >= need


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_victims_are_valid_complete_and_of_minimal_priority(
    inst: tuple[SchedulerState, list[tuple[str, list[str], int, int]], int, int],
) -> None:
    c, gangs, need, prio = inst
    choice = find_victims(
        c.store,
        requests={"nvidia.com/gpu": 2, "pods": 1},
        count=need,
        priority=prio,
        feasible=list(c.nodes),
        extra={},
        topology=None,
        tree=None,
    )
    # brute force: every gang either keeps all members, is taken whole, or gives up to (bound - quorum) members
    best: tuple[int, int] | None = None
    options = []
    for _, keys, quorum, _p in gangs:
        opts = [set(keys[:k]) for k in range(len(keys) - quorum + 1)] + [set(keys)]
        options.append(opts)
    for combo in product(*options):
        gone = set().union(*combo) if combo else set()
        if gone and _fits(c, gone, need):
            top = max(p for (_, keys, _, p) in gangs if gone & set(keys))
            cost = (top, len(gone))
            best = cost if best is None or cost < best else best
    if _fits(c, set(), need):
        return  # no preemption needed: the scheduler would not ask
    if best is None:
        assert choice is None
        return
    assert choice is not None, f"brute force found {best}"
    gone = set(choice.victims)
    assert _fits(c, gone, need)
    assert choice.max_priority == best[0]  # the lowest highest-victim-priority possible
    for _, keys, quorum, _p in gangs:  # never below quorum
        left = len([k for k in keys if k not in gone])
        assert left == 0 or left >= quorum
    assert len(choice.nodes) == need


def test_one_larger_gang_beats_two_small_ones_when_it_is_fewer_pods() -> None:
    c = SchedulerState()
    add_nodes(c, 7, prefix="node", gpu=8)
    three = running_gang(c, "three", nodes(3))
    running_gang(c, "twoa", nodes(2, 3))
    running_gang(c, "twob", nodes(2, 5))
    pending_gang(c, "want", 3)
    assert sorted(step(c, CFG, 0.0).evictions) == sorted(three)


@pytest.mark.parametrize("units_per_cycle", [pytest.param(1, id="one-cycle-each"), pytest.param(2, id="same-cycle")])
def test_second_preemptor_takes_the_rest_of_a_gang_the_first_took_a_spare_of(units_per_cycle: int) -> None:
    c = SchedulerState()
    add_nodes(c, 4, prefix="node", gpu=8)
    x = running_gang(c, "x", nodes(2), min_member=2)
    y = running_gang(c, "y", nodes(2, 2), min_member=1)
    pending_gang(c, "p1", 1)
    pending_gang(c, "p2", 1)
    cfg = SchedulerConfig(max_units_per_cycle=units_per_cycle)
    first = step(c, cfg, 0.0)
    second = step(c, cfg, 0.5) if units_per_cycle == 1 else Plan()
    preemptions = {**first.preemptions, **second.preemptions}
    assert {g: len(v) for g, v in preemptions.items()} == {"default/p1": 1, "default/p2": 1}
    evicted = first.evictions + second.evictions
    assert sorted(evicted) == sorted(y)  # p2: the rest of y, never the same pod again, never x
    assert not set(evicted) & set(x)


def test_lowest_priority_follows_pod_updates_and_removals() -> None:
    c = SchedulerState()
    add_nodes(c, 1, prefix="node", gpu=8)
    assert c.lowest_priority() is None
    a = add_pod(c, "a", priority=5)
    b = add_pod(c, "b", priority=2)
    assert c.lowest_priority() == 2
    add_pod(c, "b", priority=7)  # the same pod, re-prioritised
    assert c.lowest_priority() == 5
    c.remove_pod(a)
    assert c.lowest_priority() == 7
    c.remove_pod(b)
    assert c.lowest_priority() is None


def test_a_higher_priority_gang_may_take_a_lower_preemptors_held_nodes() -> None:
    c = SchedulerState()
    add_nodes(c, 4, prefix="node", gpu=8)
    x = running_gang(c, "x", nodes(2))  # priority 0: the victims
    running_gang(c, "y", nodes(2, 2), priority=2000)  # never a victim here
    p1 = pending_gang(c, "p1", 2, priority=500)
    assert sorted(step(c, CFG, 0.0).evictions) == sorted(x)
    p2 = pending_gang(c, "p2", 2, priority=1000)
    plan = step(c, CFG, 0.5)
    assert not plan.bindings and not plan.evictions  # x still terminating; p1's victims are not taken twice
    evict(c, x)
    plan = step(c, CFG, 1.0)
    assert {k for k, _ in plan.bindings} == set(p2)  # the higher priority goes first, onto the held nodes
    assert sorted(plan.nomination_clears) == sorted(p1)
    assert any(e.reason == "NominationLost" and e.name == "p1" for e in plan.events)
    assert all(c.nomination_of(k) is None for k in p1)


def test_an_equal_priority_gang_ahead_in_the_queue_does_not_take_held_nodes() -> None:
    c = SchedulerState()
    add_nodes(c, 2, prefix="node", gpu=8)
    x = running_gang(c, "x", nodes(2))
    p1 = pending_gang(c, "p1", 2, priority=500)
    step(c, CFG, 0.0)
    pending_gang(c, "a-peer", 2, priority=500)  # sorts before p1: attempted first
    evict(c, x)
    bound = step(c, CFG, 1.0).bindings + step(c, CFG, 2.0).bindings
    assert {k for k, _ in bound} == set(p1)
