"""Mixed-size and role gangs (issue 13, item 3): placement finds a quorum whenever one exists on the free
capacity (exactly within core/placement/quorum.py's bound), meets every role's minimum, and names what is short.

Oracles: Koordinator's coscheduling counts a gang's quorum over all its members whatever their size
(pkg/scheduler/plugins/coscheduling/core/gang.go: `MinRequiredNumber` against every child pod of the gang);
Volcano's gang plugin (pkg/scheduler/plugins/gang/gang.go) checks task-role minimums (`minTaskMember`,
`CheckTaskMinAvailable`) besides minAvailable; kube-scheduler's NodeResourcesFit
(pkg/scheduler/framework/plugins/noderesources/fit.go) decides whether a pod fits a node's free resources —
the brute force below applies exactly that rule to every assignment of pods to nodes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.placement.quorum import Candidate, Group, search
from gangsched.core.topology import Domain, TopologyTree
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode, GangSpec, NetworkTopology, TopologyMode
from tests.builders import add_nodes, add_pod

CFG = SchedulerConfig(max_units_per_cycle=1)


def test_strict_gang_of_two_sizes_takes_the_quorum_that_fits() -> None:
    """Issue 13 "Why": room for a 6-GPU and two 1-GPU members of a Strict gang (minMember 3, two 6-GPU and two
    1-GPU members): the gang is placed (today's placement stopped at the 6-GPU size that did not fully fit)."""
    c = SchedulerState()
    add_nodes(c, 1, gpu=8)
    c.upsert_gang(GangSpec("default", "mix", 3))
    big = [add_pod(c, f"big{i}", gang="default/mix", rank=i, gpu=6) for i in range(2)]
    small = [add_pod(c, f"small{i}", gang="default/mix", rank=2 + i, gpu=1) for i in range(2)]
    plan = step(c, CFG, 0.0)
    bound = sorted(k for k, _ in plan.bindings)
    assert len(bound) == 3 and set(small) <= set(bound) and len(set(big) & set(bound)) == 1
    assert plan.gang_status["default/mix"].reason == "Binding"  # Scheduled once the binds succeeded


def test_mixed_sizes_where_the_first_greedy_pass_wastes_room() -> None:
    """Binpack of the 1-GPU workers first leaves no node with 6 GPUs for the ps: the search places the ps and
    8 workers (the quorum), then the other workers fill what is left."""
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    c.upsert_gang(GangSpec("default", "mix", 9, roles=(("ps", 1),)))
    small = [add_pod(c, f"s{i}", gang="default/mix", role="worker", rank=i, gpu=1) for i in range(12)]
    big = add_pod(c, "big", gang="default/mix", role="ps", rank=12, gpu=6)
    plan = step(c, CFG, 0.0)
    bound = {k for k, _ in plan.bindings}
    assert big in bound and len(bound & set(small)) == 10


def test_exact_search_where_greedy_fails() -> None:
    """Nodes of 4 and 6 cpus; members of 4, 3 and 3 cpus (minMember 3): the 4-cpu member must take the 4-cpu node.
    Greedy (larger first, binpack ties by name) puts it on the 6-cpu node and fits 2: found by hypothesis against
    the brute force with the exact search switched off."""
    c = SchedulerState()
    add_nodes(c, 1, prefix="a", cpu="6")
    add_nodes(c, 1, prefix="b", cpu="4")
    c.upsert_gang(GangSpec("default", "g", 3))
    add_pod(c, "p0", gang="default/g", rank=0, cpu="3")
    add_pod(c, "p1", gang="default/g", rank=1, cpu="3")
    add_pod(c, "p2", gang="default/g", rank=2, cpu="4")
    plan = step(c, CFG, 0.0)
    assert sorted(plan.bindings) == [("default/p0", "a0"), ("default/p1", "a0"), ("default/p2", "b0")]


def test_roles_placed_first_when_room_is_short() -> None:
    """Issue 13 "Why": a gang needing 1 ps + 2 workers with room for 3 pods places 1 ps + 2 workers."""
    c = SchedulerState()
    add_nodes(c, 3, gpu=1)
    c.upsert_gang(GangSpec("default", "job", 3, roles=(("ps", 1), ("worker", 2))))
    workers = [add_pod(c, f"w{i}", gang="default/job", role="worker", rank=i, gpu=1) for i in range(3)]
    ps = add_pod(c, "ps", gang="default/job", role="ps", rank=3, gpu=1)
    plan = step(c, CFG, 0.0)
    bound = {k for k, _ in plan.bindings}
    assert ps in bound and len(bound & set(workers)) == 2


def test_message_names_the_short_role() -> None:
    """No room for the ps (it needs a GPU node none has): the message says which role is short."""
    c = SchedulerState()
    add_nodes(c, 3, gpu=0)
    c.upsert_gang(GangSpec("default", "job", 3, roles=(("ps", 1), ("worker", 2))))
    for i in range(2):
        add_pod(c, f"w{i}", gang="default/job", role="worker", rank=i)
    add_pod(c, "ps", gang="default/job", role="ps", rank=2, gpu=1)
    plan = step(c, CFG, 0.0)
    assert not plan.bindings
    message = plan.gang_status["default/job"].message
    assert "role ps: 0 of minimum 1 placeable" in message, message
    assert "needs 1 pod x {cpu: 1, nvidia.com/gpu: 1}" in message, message


def test_message_names_the_short_size_class() -> None:
    c = SchedulerState()
    add_nodes(c, 1, gpu=8)
    c.upsert_gang(GangSpec("default", "mix", 3))
    for i in range(3):
        add_pod(c, f"big{i}", gang="default/mix", rank=i, gpu=6 if i < 2 else 4)
    plan = step(c, CFG, 0.0)
    assert not plan.bindings
    message = plan.gang_status["default/mix"].message
    assert "needs 2 pods x {cpu: 1, nvidia.com/gpu: 6}" in message, message


def test_search_gives_up_beyond_its_bound() -> None:
    nodes = [Candidate(f"n{i}", {"gpu": 1}, frozenset({0})) for i in range(65)]
    result = search([{"gpu": 1}], [Group(0, None, 3)], {}, 3, nodes)
    assert not result.exact and result.quorum is None
    result = search([{"gpu": 1}], [Group(0, None, 3)], {}, 3, nodes[:64])
    assert result.exact and result.quorum is not None


# ---------------------------------------------------------------------------------------------------------------
# Property: the scheduler against a brute force over every assignment of pods to nodes (small instances).

_ROLES = [None, "ps", "worker"]


def _fits(req: Mapping[str, int], free: Mapping[str, int]) -> bool:
    return all(q <= free.get(r, 0) for r, q in req.items() if q > 0)


def _quorum_exists(
    reqs: list[Mapping[str, int]], roles: list[str | None], free: list[dict[str, int]], spec: GangSpec
) -> bool:
    """Any assignment of pods to nodes (or nowhere) that fits and makes a valid quorum."""
    counts: Counter[str | None] = Counter()

    def valid() -> bool:
        return counts.total() >= spec.min_member and all(counts[r] >= m for r, m in spec.roles)

    def walk(i: int) -> bool:
        if valid():
            return True
        if i == len(reqs):
            return False
        for node in free:
            if _fits(reqs[i], node):
                for r, q in reqs[i].items():
                    node[r] = node.get(r, 0) - q
                counts[roles[i]] += 1
                ok = walk(i + 1)
                counts[roles[i]] -= 1
                for r, q in reqs[i].items():
                    node[r] += q
                if ok:
                    return True
        return walk(i + 1)

    return walk(0)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(st.tuples(st.integers(0, 8), st.integers(1, 8)), min_size=1, max_size=3),
    classes=st.lists(st.tuples(st.integers(0, 6), st.integers(1, 4)), min_size=1, max_size=3),
    pods=st.lists(st.tuples(st.integers(0, 2), st.sampled_from(_ROLES)), min_size=1, max_size=7),
    min_member=st.integers(1, 7),
    ps_min=st.integers(0, 2),
    worker_min=st.integers(0, 3),
    strategy=st.sampled_from(["binpack", "spread"]),
    mode=st.sampled_from([GangMode.STRICT, GangMode.NON_STRICT]),
)
def test_quorum_found_iff_one_exists(
    nodes: list[tuple[int, int]],
    classes: list[tuple[int, int]],
    pods: list[tuple[int, str | None]],
    min_member: int,
    ps_min: int,
    worker_min: int,
    strategy: str,
    mode: GangMode,
) -> None:
    c = SchedulerState()
    for i, (gpu, cpu) in enumerate(nodes):
        add_nodes(c, 1, prefix=f"n{i}-", gpu=gpu, cpu=str(cpu))
    roles = tuple((r, m) for r, m in (("ps", ps_min), ("worker", worker_min)) if m)
    spec = GangSpec("default", "g", min(min_member, len(pods)), mode=mode, roles=roles)
    c.upsert_gang(spec)
    keys = []
    for i, (cls, role) in enumerate(pods):
        gpu, cpu = classes[cls % len(classes)]
        keys.append(add_pod(c, f"p{i}", gang="default/g", role=role, rank=i, gpu=gpu, cpu=str(cpu)))
    reqs = [c.pods[k].requests for k in keys]
    free = [dict(node.allocatable) for node in c.nodes.values()]
    exists = _quorum_exists(reqs, [c.pods[k].role for k in keys], free, spec)
    plan = step(c, SchedulerConfig(score_strategy=strategy, max_units_per_cycle=1), 0.0)
    # never over-committed
    for name, node in c.nodes.items():
        for r, q in c.used.get(name, {}).items():
            assert q <= node.allocatable.get(r, 0), (name, r, q)
    bound: Counter[str | None] = Counter(c.pods[k].role for k, _ in plan.bindings)
    if plan.bindings:  # never an invalid quorum
        assert bound.total() >= spec.min_member
        assert all(bound[r] >= m for r, m in spec.roles), (bound, spec.roles)
    assert bool(plan.bindings) == exists, (exists, plan.bindings, plan.gang_status.get("default/g"))


@settings(max_examples=100, deadline=None)
@given(
    nodes=st.lists(st.tuples(st.integers(0, 8), st.integers(0, 16)), min_size=1, max_size=12),
    classes=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 6)), min_size=1, max_size=5),
    counts=st.lists(st.integers(0, 6), min_size=5, max_size=5),
    need=st.integers(1, 12),
)
def test_search_never_returns_an_invalid_quorum(
    nodes: list[tuple[int, int]], classes: list[tuple[int, int]], counts: list[int], need: int
) -> None:
    reqs = [{"gpu": g, "cpu": cpu, "pods": 1} for g, cpu in classes]
    groups = [Group(i, "a" if i % 2 else None, counts[i]) for i in range(len(classes))]
    demands = {"a": 1} if any(g.role == "a" for g in groups) else {}
    cands = [
        Candidate(f"n{i}", {"gpu": g, "cpu": cpu, "pods": 4}, frozenset(range(len(classes))))
        for i, (g, cpu) in enumerate(nodes)
    ]
    result = search(reqs, groups, demands, need, cands, budget=2000)
    if result.quorum is None:
        return
    q = result.quorum
    assert sum(q.taken) == need and all(t <= g.available for t, g in zip(q.taken, groups, strict=True))
    assert sum(t for t, g in zip(q.taken, groups, strict=True) if g.role == "a") >= demands.get("a", 0)
    per_class = Counter[int]()
    for g, t in zip(groups, q.taken, strict=True):
        per_class[g.cls] += t
    placed = Counter[int]()
    used: dict[str, Counter[str]] = {}
    for node, cls, k in q.assignment:
        placed[cls] += k
        for r, v in reqs[cls].items():
            used.setdefault(node, Counter())[r] += v * k
    assert +placed == +per_class
    for cand in cands:
        for r, v in used.get(cand.name, Counter()).items():
            assert v <= cand.free.get(r, 0)


# ---------------------------------------------------------------------------------------------------------------
# Item 4: gangs of several scheduling classes use the topology tier ladder (issue 13 "Why": "Topology is dropped
# for gangs with more than one scheduling class (MPI launcher + workers ...)").


def _tree() -> TopologyTree:
    return TopologyTree.from_domains(
        [
            Domain(1, "tor-a", parents=("spine",), children=("n0", "n1")),
            Domain(1, "tor-b", parents=("spine",), children=("n2", "n3")),
            Domain(2, "spine"),
        ]
    )


def _two_tors(c: SchedulerState) -> None:
    add_nodes(c, 4, gpu=8, cpu="16")
    c.set_topology(_tree())


def _launcher_and_workers(c: SchedulerState, mode: TopologyMode, workers: int) -> list[str]:
    c.upsert_gang(GangSpec("default", "mpi", 1 + workers, network_topology=NetworkTopology(mode, 1)))
    keys = [add_pod(c, "mpi-launcher", gang="default/mpi", rank=0, cpu="2")]
    keys += [add_pod(c, f"mpi-w{i}", gang="default/mpi", rank=1 + i, gpu=4, cpu="1") for i in range(workers)]
    return keys


def test_hard_tier1_gang_of_two_classes_stays_in_one_tor() -> None:
    """Launcher (cpu only) + 4 workers of 4 GPUs, hard tier 1, tor-a partly used: all in tor-b, tier 1."""
    c = SchedulerState()
    _two_tors(c)
    add_pod(c, "blocker", gpu=8, node="n0", phase="Running")
    keys = _launcher_and_workers(c, TopologyMode.HARD, 4)
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.bindings) == sorted(keys)
    assert {node for _, node in plan.bindings} <= {"n2", "n3"}
    assert plan.gang_status["default/mpi"].tier == 1


def test_hard_tier1_gang_of_two_classes_waits_when_no_tor_holds_it() -> None:
    c = SchedulerState()
    _two_tors(c)
    _launcher_and_workers(c, TopologyMode.HARD, 5)  # 20 GPUs: more than a tor's 16
    plan = step(c, CFG, 0.0)
    assert not plan.bindings
    message = plan.gang_status["default/mpi"].message
    assert "no domain of tier <= 1 can hold the gang's 6 members" in message, message


def test_soft_gang_of_two_classes_reports_the_tier_it_got() -> None:
    c = SchedulerState()
    _two_tors(c)
    keys = _launcher_and_workers(c, TopologyMode.SOFT, 5)
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.bindings) == sorted(keys)
    assert plan.gang_status["default/mpi"].tier == 2


def test_hard_topology_is_never_dropped_when_no_topology_is_known() -> None:
    """Issue 13 item 4: `hard` is never dropped; with no topology known the gang waits and says why."""
    c = SchedulerState()
    add_nodes(c, 4, gpu=8)
    _launcher_and_workers(c, TopologyMode.HARD, 2)
    plan = step(c, CFG, 0.0)
    assert not plan.bindings
    status = plan.gang_status["default/mpi"]
    assert "hard network topology requested but no topology is known" in status.message, status.message
    assert any(e.type == "Warning" and "no topology is known" in e.message for e in plan.events)


def test_hard_gang_retries_as_soon_as_a_topology_is_known() -> None:
    """The gang backed off for want of a topology is tried again when one arrives (not after its backoff)."""
    c = SchedulerState()
    keys = _launcher_and_workers(c, TopologyMode.HARD, 2)
    add_nodes(c, 4, gpu=8, cpu="16")
    assert not step(c, CFG, 0.0).bindings
    c.set_topology(_tree())
    plan = step(c, CFG, 0.1)
    assert sorted(k for k, _ in plan.bindings) == sorted(keys)
    assert plan.gang_status["default/mpi"].tier == 1


def _satisfied_tier1_gang(c: SchedulerState, mode: TopologyMode) -> list[str]:
    """A satisfied 2-member gang of 4-GPU pods in tor-b (tor-a is taken by blockers on n0 but has n1 free)."""
    _two_tors(c)
    add_pod(c, "blocker", gpu=8, node="n0", phase="Running")
    add_pod(c, "blocker2", gpu=8, node="n1", phase="Running")
    c.upsert_gang(GangSpec("default", "g", 2, network_topology=NetworkTopology(mode, 1)))
    keys = [add_pod(c, f"g-{i}", gang="default/g", rank=i, gpu=8) for i in range(2)]
    plan = step(c, CFG, 0.0)
    assert {node for _, node in plan.bindings} == {"n2", "n3"}
    return keys


def test_replacement_of_a_hard_gang_stays_in_its_domain() -> None:
    """Issue 13 "Why": a replacement of a hard tier-1 gang landed in another unit. Now it waits for room in tor-b
    although tor-a has room again."""
    c = SchedulerState()
    _satisfied_tier1_gang(c, TopologyMode.HARD)
    c.remove_pod("default/blocker2")  # n1 (tor-a) is free again
    add_pod(c, "g-late", gang="default/g", rank=2, gpu=4)
    plan = step(c, CFG, 1.0)
    assert not plan.bindings
    assert any("no room left in the gang's tier-1 domain tor-b" in e.message for e in plan.pod_events), plan.pod_events


def test_replacement_of_a_soft_gang_goes_near_it() -> None:
    c = SchedulerState()
    _satisfied_tier1_gang(c, TopologyMode.SOFT)
    c.remove_pod("default/blocker2")
    add_pod(c, "g-late", gang="default/g", rank=2, gpu=4)
    plan = step(c, CFG, 1.0)
    assert plan.bindings == [("default/g-late", "n1")]  # tor-b is full: the nearest room, in the spine


def test_soft_topology_with_no_topology_known_is_said() -> None:
    """Issue 13 "Why": a gang asking for topology when none is known was placed without a word."""
    c = SchedulerState()
    add_nodes(c, 4, gpu=8)
    keys = _launcher_and_workers(c, TopologyMode.SOFT, 2)
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.bindings) == sorted(keys)
    assert any(e.type == "Warning" and e.reason == "TopologyUnknown" for e in plan.events), plan.events


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    gpus=st.lists(st.integers(0, 8), min_size=4, max_size=4),
    classes=st.lists(st.tuples(st.integers(0, 6), st.integers(1, 4)), min_size=2, max_size=3),
    pods=st.lists(st.integers(0, 2), min_size=2, max_size=6),
)
def test_hard_tier1_mixed_gang_fits_one_tor_iff_it_is_bound(
    gpus: list[int], classes: list[tuple[int, int]], pods: list[int]
) -> None:
    """Every member within one tier-1 domain, never across; bound whenever some tor holds them all (brute force)."""
    c = SchedulerState()
    for i, gpu in enumerate(gpus):
        add_nodes(c, 1, prefix=f"n{i}", gpu=gpu, cpu="8")  # n00 n10 n20 n30
    tree = TopologyTree.from_domains(
        [
            Domain(1, "tor-a", parents=("spine",), children=("n00", "n10")),
            Domain(1, "tor-b", parents=("spine",), children=("n20", "n30")),
            Domain(2, "spine"),
        ]
    )
    c.set_topology(tree)
    c.upsert_gang(GangSpec("default", "g", len(pods), network_topology=NetworkTopology(TopologyMode.HARD, 1)))
    keys = []
    for i, cls in enumerate(pods):
        gpu, cpu = classes[cls % len(classes)]
        keys.append(add_pod(c, f"p{i}", gang="default/g", rank=i, gpu=gpu, cpu=str(cpu)))
    reqs = [c.pods[k].requests for k in keys]
    spec = c.gangs["default/g"].spec
    assert spec is not None
    fits = any(
        _quorum_exists(reqs, [None] * len(keys), [dict(c.nodes[n].allocatable) for n in tor], spec)
        for tor in (("n00", "n10"), ("n20", "n30"))
    )
    plan = step(c, CFG, 0.0)
    nodes = {node for _, node in plan.bindings}
    assert bool(plan.bindings) == fits, (fits, plan.bindings)
    assert nodes <= {"n00", "n10"} or nodes <= {"n20", "n30"}
