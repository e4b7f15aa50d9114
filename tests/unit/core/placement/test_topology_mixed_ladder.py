"""Gangs of several scheduling classes walk the shared topology ladder (core/topology/ladder.py `climb`, issue 23
item 3: "one topology placer with a pluggable fit"), core/placement/topology_mixed.py `place_mixed_topology`.

Oracle, for the merge itself: the walk as it was before it (a FROZEN REFERENCE copy below of `place_mixed_topology`
and `_domains` from operator/gangsched/core/placement/topology_mixed.py at commit ff4743c): no decision may change.
The fit it calls (`_fit`, `_fit_groups`, `_apply`) is the shared one; the ladder's own order is checked against seed
004's strategy table in tests/unit/core/topology/test_ladder.py.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.placement import topology_mixed as tm
from gangsched.core.placement.pickers import Outcome
from gangsched.core.placement.quorum import Candidate
from gangsched.core.placement.quorum_placement import class_order, fitting_candidates, place_quorum
from gangsched.core.records.records import PodRecord, SchedulingClass
from gangsched.core.topology import TopologyTree, natural_key
from gangsched.core.transaction.messages import Shortfall
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec, NetworkTopology, TopologyMode
from gangsched.models.node import node_from_api
from tests.builders import add_pod, node_obj
from tests.unit.core.topology.test_place import scenarios


def _frozen_place_mixed_topology(
    session: CycleSession, tree: TopologyTree, spec: GangSpec, pods: list[PodRecord], counted: Counter[str | None]
) -> Outcome:
    """FROZEN REFERENCE, do not edit or reuse: `place_mixed_topology` verbatim from ff4743c."""
    network = spec.network_topology
    assert network is not None
    classes = class_order(pods)
    index = {cls.id: i for i, cls in enumerate(classes)}
    need = Counter(index[pod.sclass.id] for pod in pods)
    nodes = fitting_candidates(session, classes, tree)
    highest = network.highest_tier_allowed if network.mode == TopologyMode.HARD else None
    size = network.group_size
    chunks = [Counter(index[p.sclass.id] for p in pods[i : i + size]) for i in range(0, len(pods), size)]
    for tier in range(1, tree.tiers + 2):
        if highest is not None and tier > highest:
            break
        domains = _frozen_domains(tree, nodes, tier, classes[0])
        for group_tier in range(1, tier if size > 1 and len(chunks) > 1 else 1):
            for members in domains:
                grouped = tm._fit_groups(tree, classes, chunks, members, group_tier)
                if grouped is not None:
                    return tm._apply(session, pods, classes, grouped), [], tier
        for members in domains:
            assignment = tm._fit(classes, need, members)
            if assignment is not None:
                return tm._apply(session, pods, classes, assignment), [], tier
    if highest is None:
        return place_quorum(session, spec, pods, counted)
    reason = f"topology: hard network topology: no domain of tier <= {highest} can hold the gang's {len(pods)} members"
    return [], [Shortfall(cls, need[i], 0, reason) for i, cls in enumerate(classes)], None


def _frozen_domains(
    tree: TopologyTree, nodes: list[Candidate], tier: int, largest: SchedulingClass
) -> list[list[Candidate]]:
    """FROZEN REFERENCE, do not edit or reuse: `_domains` verbatim from ff4743c."""
    by_domain: dict[int, list[Candidate]] = {}
    for cand in nodes:
        by_domain.setdefault(tree.domain_index(tree.node_index[cand.name], tier), []).append(cand)

    def room(members: list[Candidate]) -> int:
        return sum(tm._count(largest.requests, c.free) for c in members)

    names = tree.level_names[min(tier, tree.tiers + 1)]
    order = sorted(by_domain, key=lambda d: (room(by_domain[d]), natural_key(names[d])))
    return [by_domain[d] for d in order]


def _outcome(outcome: Outcome) -> tuple[object, ...]:
    placed, short, tier = outcome
    return [(pod.key, node) for pod, node in placed], [(s.cls.id, s.need, s.placed, s.reason) for s in short], tier


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scenarios(),
    st.sampled_from([2, 4, 8]),
    st.sampled_from([TopologyMode.SOFT, TopologyMode.HARD]),
    st.one_of(st.none(), st.integers(1, 4)),
)
def test_mixed_topology_decides_as_the_frozen_walk(
    scenario: tuple[TopologyTree, dict[str, int], int, int], gpu: int, mode: TopologyMode, highest: int | None
) -> None:
    """Random small trees, nodes of 0..12 GPUs, a cpu-only launcher (rank 0) and `count` GPU workers, any groupSize,
    hard or soft: the same pods on the same nodes, the same shortfalls and tier as before the merge."""
    tree, capacity, count, g = scenario
    c = SchedulerState()
    for node, slots in capacity.items():
        c.upsert_node(node_from_api(node_obj(node, cpu="16", gpu=4 * slots)))
    c.set_topology(tree)
    network = NetworkTopology(mode, highest, group_size=g)
    spec = GangSpec("default", "mpi", 1 + count, network_topology=network)
    c.upsert_gang(spec)
    add_pod(c, "mpi-launcher", gang="default/mpi", rank=0, cpu="2")
    for i in range(count):
        add_pod(c, f"mpi-w{i}", gang="default/mpi", rank=1 + i, gpu=gpu, cpu="1")
    outcomes = []
    for placer in (tm.place_mixed_topology, _frozen_place_mixed_topology):
        session = CycleSession(c, 0.0, SchedulerConfig())
        pods = session.members(c.gangs["default/mpi"]).pending
        outcomes.append(_outcome(placer(session, tree, spec, pods, Counter())))
    assert outcomes[0] == outcomes[1]
