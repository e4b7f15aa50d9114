"""Property: after the deadlock step no wait-for cycle remains among the NonStrict gangs still holding
reservations, only NonStrict reservations are released (never a Strict gang's, never a bound pod), and every victim
was in a cycle (issue 15 item 4).

Oracle: the wait-for graph (Coffman, Elphick, Shoshani, "System Deadlocks", 1971): resolving a deadlock leaves a
graph without cycles; only the processes rolled back lose what they hold.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from gangsched.core.gang.deadlock import (
    _add_coming,
    _blocked,
    _cycles,
    _graph,
    _room,
    _slots,
    _take,
    _waiters,
    resolve_deadlocks,
)
from gangsched.core.memory.plan import Plan
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode, GangSpec
from tests.builders import add_nodes, add_pod

CFG = SchedulerConfig(max_units_per_cycle=8)

gangs_st = st.lists(
    st.tuples(
        st.integers(2, 4),  # members (= minMember)
        st.integers(0, 2),  # priority
        st.booleans(),  # strict (a Strict gang of a group: reservations waiting for the group)
        st.integers(1, 8),  # GPUs per member
    ),
    min_size=2,
    max_size=5,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.integers(2, 6), running=st.integers(0, 2), gangs=gangs_st, rnd=st.randoms(use_true_random=False))
def test_no_cycle_remains_and_only_nonstrict_reservations_go(
    nodes: int, running: int, gangs: list[tuple[int, int, bool, int]], rnd: random.Random
) -> None:
    c = SchedulerState()
    names = add_nodes(c, nodes, gpu=8)
    free = dict.fromkeys(names, 8)
    for i in range(min(running, nodes)):
        add_pod(c, f"run-{i}", node=names[i], phase="Running", gpu=8)
        free[names[i]] = 0
    reservations: list[tuple[str, str]] = []
    strict: set[str] = set()
    for g, (size, priority, is_strict, gpu) in enumerate(gangs):
        name = f"g{g}"
        mode = GangMode.STRICT if is_strict else GangMode.NON_STRICT
        group = (f"default/{name}", "default/absent") if is_strict else ()
        c.upsert_gang(GangSpec("default", name, size, mode=mode, group=group), created=float(g))
        keys = [
            add_pod(c, f"{name}-{i}", gang=f"default/{name}", rank=i, gpu=gpu, priority=priority) for i in range(size)
        ]
        if is_strict:
            strict.update(keys)
        for key in keys[: rnd.randint(1, size - 1) if size > 1 else 1]:
            fits = [n for n in names if free[n] >= gpu]
            if fits:
                node = rnd.choice(fits)
                free[node] -= gpu
                reservations.append((key, node))
    gang_keys = {c.pods[k].gang for k, _ in reservations}
    c.apply(Plan(reservations=reservations, first_reserved={g: 0.0 for g in gang_keys if g is not None}))
    session = CycleSession(c, 1.0, CFG)
    _, victims = resolve_deadlocks(session, set())
    plan = session.plan
    assert not plan.evictions and not plan.bindings
    assert not set(plan.releases) & strict
    assert {v.key for v in victims} == {d.victim for d in plan.deadlocks}
    released_gangs = {c.pods[k].gang for k in plan.releases}
    assert released_gangs == {d.victim for d in plan.deadlocks}
    event("deadlocks found" if plan.deadlocks else "no deadlock")
    for d in plan.deadlocks:
        assert d.victim in d.cycle and len(d.cycle) >= 2 and len(set(d.cycle)) == len(d.cycle)
    left = _waiters(session)
    assert not set(left) & released_gangs
    room = _room(session)
    graph = _graph(session, left)
    for key, w in left.items():
        if not _blocked(session, w.need, room):
            graph[key] = []
    assert not _cycles(graph, left)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pods=st.lists(st.tuples(st.integers(0, 5), st.integers(1, 8), st.booleans()), max_size=12),
    releases=st.lists(st.tuples(st.integers(0, 5), st.booleans()), max_size=4),
    gpu=st.integers(1, 8),
    later=st.lists(st.tuples(st.sampled_from(["end", "start", "evict", "leave"]), st.integers(0, 11)), max_size=4),
)
@example(pods=[(0, 4, False), (0, 3, True)], releases=[], gpu=5, later=[("end", 0)])  # (only `used` moved on n0)
def test_room_counts_equal_a_pass_over_every_node(
    pods: list[tuple[int, int, bool]], releases: list[tuple[int, bool]], gpu: int, later: list[tuple[str, int]]
) -> None:
    """How many pods of a class fit on free + coming capacity after releases: the workspace view's counts plus what
    the coming capacity adds (kept per class in the store, core/gang/coming_fit.py), corrected where the cycle
    differs (deadlock.py `_slots`), equal one pass over every eligible node (`_take`); and again in a later cycle,
    after pods ended, started, were chosen as victims or began leaving (the memo follows the change logs)."""
    c = SchedulerState()
    names = add_nodes(c, 6, gpu=8)
    for i, (node, gpus, timed) in enumerate(pods):
        extra = {"activeDeadlineSeconds": 60} if timed else None  # a declared run time: coming
        add_pod(c, f"p{i}", node=names[node], phase="Running", gpu=gpus, cpu="1", spec_extra=extra)
    c.upsert_gang(GangSpec("default", "r", 9, mode=GangMode.NON_STRICT), created=0.0)
    held = [(add_pod(c, f"r-{i}", gang="default/r", rank=i, gpu=1), names[i]) for i in range(6)]
    c.apply(Plan(reservations=held, first_reserved={"default/r": 0.0}))
    probe = c.store.pods[add_pod(c, "probe", gpu=gpu, cpu="1")].sclass
    session = CycleSession(c, 1.0, CFG)
    room = _room(session)
    for node, read_first in releases:
        pod_key, where = held[node]
        if read_first:
            room.at(where)  # (a node read before the release: its cached room must follow)
        if pod_key not in session.plan.releases:
            session.release(pod_key, where)
            room.released(where, c.store.pods[pod_key].requests)
    for coming in (False, True):
        if coming:
            _add_coming(room)
        counted, whole = _slots(session, probe, 1 << 62, room)  # (all of them, also when node filters apply)
        assert whole and counted == _take(session, probe, 1 << 62, room, {})
    for op, i in later:
        key = f"default/p{i}"
        if op == "start":
            add_pod(c, f"q{i}", node=names[i % 6], phase="Running", gpu=1, spec_extra={"activeDeadlineSeconds": 60})
        elif key not in c.pods:
            continue
        elif op == "end":
            node, gpus, timed = pods[i]
            add_pod(c, f"p{i}", node=names[node], phase="Succeeded", gpu=gpus, cpu="1")
        elif op == "evict":
            c.victims.add_victim(key, "default/r")
        else:
            c.set_leaving(key, True)
    session = CycleSession(c, 2.0, CFG)
    room = _room(session)
    _add_coming(room)
    counted, whole = _slots(session, probe, 1 << 62, room)
    assert whole and counted == _take(session, probe, 1 << 62, room, {})
