"""Property: over random clusters, gangs and binder outcomes, no node is ever over-committed, the incremental
accounting equals a from-scratch recount, and no gang is bound below its quorum."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gangsched.core.cycle.scheduler import schedule
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode, GangSpec
from gangsched.core.values.resources import add_into
from tests.builders import add_nodes, add_pod

gangs = st.lists(
    st.tuples(
        st.integers(1, 6),  # pods
        st.integers(1, 6),  # minMember (clamped to pods)
        st.sampled_from([GangMode.STRICT, GangMode.NON_STRICT]),
        st.integers(0, 4),  # gpus per pod
        st.integers(1, 8),  # cpus per pod
        st.integers(0, 2),  # priority
    ),
    min_size=1,
    max_size=8,
)


def _recount(c: SchedulerState) -> dict[str, dict[str, int]]:
    used: dict[str, dict[str, int]] = {}
    for key, pod in c.pods.items():
        if pod.terminal:
            continue
        node = pod.node_name
        if node is None:
            res = c.reservation_of(key)
            node = res[0] if res else None
        if node is not None:
            add_into(used.setdefault(node, {}), pod.requests)
    return {n: {r: q for r, q in u.items() if q} for n, u in used.items()}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(st.tuples(st.integers(0, 8), st.integers(2, 16)), min_size=1, max_size=6),
    gang_list=gangs,
    loners=st.integers(0, 4),
    fail_binds=st.lists(st.booleans(), max_size=40),
    strategy=st.sampled_from(["binpack", "spread"]),
)
def test_never_overcommitted(
    nodes: list[tuple[int, int]],
    gang_list: list[tuple[int, int, GangMode, int, int, int]],
    loners: int,
    fail_binds: list[bool],
    strategy: str,
) -> None:
    c = SchedulerState()
    for i, (gpu, cpu) in enumerate(nodes):
        add_nodes(c, 1, prefix=f"n{i}-", gpu=gpu, cpu=str(cpu), pods=8)
    for g, (size, minimum, mode, gpu, cpu, prio) in enumerate(gang_list):
        name = f"g{g}"
        c.upsert_gang(GangSpec("default", name, min(minimum, size), mode=mode, wait_seconds=20.0))
        for i in range(size):
            add_pod(c, f"{name}-{i}", gang=f"default/{name}", rank=i, gpu=gpu, cpu=str(cpu), priority=prio)
    for i in range(loners):
        add_pod(c, f"solo{i}", cpu="3")
    config = SchedulerConfig(score_strategy=strategy, max_units_per_cycle=3)
    outcomes = iter(fail_binds)
    now = 0.0
    bound_once: Counter[str] = Counter()
    for _ in range(40):
        plan = schedule(c, now, config)
        c.apply(plan)
        for key, _node in plan.bindings:
            gang = c.pods[key].gang
            if gang is not None:
                bound_once[gang] += 1
            if next(outcomes, False):
                c.bind_failed(key)
            else:
                c.bind_succeeded(key)
        for name, node in c.nodes.items():
            used = c.used.get(name, {})
            for r, q in used.items():
                assert q <= node.allocatable.get(r, 0), (name, r, q, node.allocatable)
        assert {n: u for n, u in c.used.items() if u} == _recount(c)
        now = plan.next_wakeup if plan.next_wakeup is not None else now + 1.0
    for gang, n in bound_once.items():
        spec = c.gangs[gang].spec
        assert spec is not None and n >= spec.min_member  # a first binding always carries the quorum
