"""Packing (core/placement/packing.py): a gang without a networkTopology goes into the lowest topology domain that
holds it, placed there by the binpack picker; what does not qualify is placed as before.

Oracles: the soft network topology's order of preference (DESIGN.md "Topology": the lowest tier that fits, the
best-fitting domain within it, as core/topology `place_network` orders them, whose own tests are
tests/unit/core/topology/test_place.py) and kube-scheduler's NodeResourcesFit MostAllocated for the node order inside
the domain (pkg/scheduler/framework/plugins/noderesources/most_allocated.go: the fullest node that fits first).
"""

from __future__ import annotations

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.topology import Domain, TopologyTree
from gangsched.core.values.config import SchedulerConfig
from tests.builders import add_gang, add_nodes, add_pod

PACK = SchedulerConfig(max_units_per_cycle=1)
NO_PACK = SchedulerConfig(max_units_per_cycle=1, pack_gangs=False)


def cluster() -> SchedulerState:
    """Two units of 4 nodes (8 GPUs each) in one leaf. Unit u0 has 20 GPUs free (n0 full, n1 4 free, n2 and n3
    empty: 4 + 16), unit u1 has 24 free (n4 fully free with 8, n5 4 free, n6 4 free, n7 8): filler pods taken."""
    c = SchedulerState()
    add_nodes(c, 8, gpu=8)
    units = [Domain(1, f"u{u}", ("l0",), tuple(f"n{u * 4 + i}" for i in range(4))) for u in range(2)]
    c.set_topology(TopologyTree.from_domains((*units, Domain(2, "l0", (), ("u0", "u1")))))
    return c


def bound_filler(c: SchedulerState, name: str, node: str, gpu: int) -> None:
    """A running pod of another job taking GPUs on a node (what binpack would otherwise fill first)."""
    key = add_pod(c, name, gpu=gpu, node=node, phase="Running")
    assert c.pods[key].node_name == node


def nodes_of(plan_bindings: list[tuple[str, str]]) -> set[str]:
    return {node for _, node in plan_bindings}


def test_a_gang_goes_into_one_unit_when_one_holds_it() -> None:
    c = cluster()
    bound_filler(c, "f0", "n0", 4)  # n0 half full: binpack alone would start there ...
    bound_filler(c, "f4", "n4", 4)  # ... and n4 too (as full): the 12-GPU gang would then span both units
    add_gang(c, "g", 12, gpu=1)
    plan = step(c, PACK, 0.0)
    assert len(plan.bindings) == 12
    used = nodes_of(plan.bindings)
    assert used <= {"n0", "n1", "n2", "n3"} or used <= {"n4", "n5", "n6", "n7"}  # one unit, never both
    assert len(used) == 2  # within the unit, the fullest nodes first: n0's 4 free GPUs, then one empty node


def test_without_packing_binpack_alone_may_span_units() -> None:
    c = cluster()
    bound_filler(c, "f0", "n0", 4)
    bound_filler(c, "f4", "n4", 4)
    add_gang(c, "g", 12, gpu=1)
    plan = step(c, NO_PACK, 0.0)
    used = nodes_of(plan.bindings)
    assert len(plan.bindings) == 12 and "n0" in used and "n4" in used  # the two fullest nodes first


def test_a_gang_too_big_for_any_unit_is_placed_as_usual() -> None:
    c = cluster()
    add_gang(c, "g", 40, gpu=1)  # 40 GPUs: more than a unit's 32, within the leaf
    plan = step(c, PACK, 0.0)
    assert len(plan.bindings) == 40
    assert plan.gang_status["default/g"].tier is None  # no networkTopology declared: no tier reported


def test_a_gang_under_the_spread_strategy_is_not_packed() -> None:
    c = cluster()
    add_gang(c, "g", 4, gpu=1)
    spread = SchedulerConfig(max_units_per_cycle=1, score_strategy="spread")
    plan = step(c, spread, 0.0)
    assert len(nodes_of(plan.bindings)) == 4  # spread deals one pod per node, across units as it goes


def test_a_pod_without_a_gang_is_not_packed() -> None:
    c = cluster()
    key = add_pod(c, "solo", gpu=1)
    plan = step(c, PACK, 0.0)
    assert [k for k, _ in plan.bindings] == [key]
