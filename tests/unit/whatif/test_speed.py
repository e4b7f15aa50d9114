"""Placement-aware job speed (operator/gangsched/whatif/speed.py) and declared run times
(operator/gangsched/whatif/inputs/estimates.py), alone and through the engine with the real core and a baseline.

Oracles: the model's documented parameters (Horovod's scaling efficiencies for the communication share: Sergeev & Del
Balso 2018, 90% and 68%; NVLink against one 400G NIC per GPU for tier 0: NVIDIA DGX H100 datasheet) and arithmetic:
m(t) = (1 - c) + c x cost(t), slowdown = m(span) / m(ideal).
"""

from __future__ import annotations

import pytest

from gangsched.core.topology import Domain
from gangsched.whatif.engine import replay
from gangsched.whatif.inputs.estimates import declare_run_times
from gangsched.whatif.lineup import make_policy
from gangsched.whatif.model import Workload
from gangsched.whatif.speed import SpeedModel, TierMap, assign_comm_shares, slowdown
from tests.builders import whatif_job, whatif_nodes

GIB = 1024


def topology(n: int, unit: int = 2, leaf: int = 2) -> tuple[Domain, ...]:
    """Units of `unit` nodes, leaves of `leaf` units (the synthetic topology's shape)."""
    units = [Domain(1, f"u{i}", children=tuple(f"n{j}" for j in range(i * unit, min(n, (i + 1) * unit)))) for i in
             range(-(-n // unit))]  # fmt: skip
    leaves = [Domain(2, f"l{i}", children=tuple(u.name for u in units[i * leaf : (i + 1) * leaf])) for i in
              range(-(-len(units) // leaf))]  # fmt: skip
    return (*units, *leaves)


def test_the_span_is_the_lowest_tier_holding_every_node() -> None:
    tiers = TierMap(whatif_nodes(8), topology(8))
    assert tiers.span(["n0"]) == tiers.span(["n0", "n0"]) == 0
    assert tiers.span(["n0", "n1"]) == 1  # one unit
    assert tiers.span(["n0", "n3"]) == 2  # two units of one leaf
    assert tiers.span(["n0", "n7"]) == 3  # two leaves: through the spine
    flat = TierMap(whatif_nodes(4), ())
    assert (flat.span(["n0"]), flat.span(["n0", "n1"])) == (0, 1)  # no topology known: one node or the network


def test_the_ideal_tier_is_the_lowest_whose_largest_domain_holds_the_job() -> None:
    tiers = TierMap(whatif_nodes(8), topology(8))
    assert [tiers.ideal(g) for g in (1, 8, 9, 16, 17, 32, 33, 64, 65)] == [0, 0, 1, 1, 2, 2, 3, 3, 3]


def test_slowdown_follows_the_communication_share_and_the_tier_costs() -> None:
    model = SpeedModel()
    comm = whatif_job("a", 0, 100, 8, 1, comm_share=0.32)
    # spread over the network (tier 1) when one node (NVLink) could hold it: 1 / (0.68 + 0.32 / 9)
    assert slowdown(model, comm, 1, 0) == pytest.approx(1 / (0.68 + 0.32 / 9))
    assert slowdown(model, comm, 2, 1) == 1.0  # the leaf is non-blocking like the unit
    assert slowdown(model, comm, 3, 1) == pytest.approx(0.68 + 0.32 * 2.0)  # through a 2:1 spine
    assert slowdown(model, comm, 0, 0) == 1.0
    assert slowdown(SpeedModel.off(), comm, 3, 0) == 1.0
    assert slowdown(model, whatif_job("b", 0, 100, 1, 8), 3, 0) == 1.0  # no communication share: never slower


def test_comm_shares_are_drawn_in_the_documented_range_and_only_for_multi_member_jobs() -> None:
    jobs = [whatif_job(f"j{i}", i, 100, 1 + i % 3, 1) for i in range(300)]
    shared = assign_comm_shares(jobs, SpeedModel(), seed=4)
    assert shared == assign_comm_shares(jobs, SpeedModel(), seed=4)  # reproducible
    multi = [j.comm_share for j in shared if j.members > 1]
    assert all(0.10 <= c <= 0.32 for c in multi) and min(multi) < 0.13 and max(multi) > 0.29
    assert all(j.comm_share == 0 for j in shared if j.members == 1)


def test_declared_run_times_are_loose_upper_bounds_for_the_share_asked() -> None:
    jobs = [whatif_job(f"j{i}", i, 100 + i, 2, 1) for i in range(400)]
    declared = declare_run_times(jobs, 0.5, 2.0, seed=1)
    some = [j for j in declared if j.declared_seconds is not None]
    assert 150 < len(some) < 250
    assert all(j.declared_seconds == 2 * j.duration for j in some)
    assert all(j.declared_seconds is None for j in declare_run_times(jobs, 0.0, 2.0, seed=1))
    with pytest.raises(ValueError, match=r"--declared-slack: 0\.5 must be >= 1"):
        declare_run_times(jobs, 0.5, 0.5, seed=1)
    with pytest.raises(ValueError, match=r"--declared-share: 1.5 must be a fraction in \[0, 1\]"):
        declare_run_times(jobs, 1.5, 2.0, seed=1)


@pytest.mark.parametrize("policy", ["gangsched", "pod-by-pod"])
def test_the_engine_runs_a_job_as_long_as_its_placement_makes_it(policy: str) -> None:
    # n0 half taken by `filler` (4 of 8 GPUs, long): the 8 x 1-GPU job `a` cannot fit one node, so it spans the
    # unit n0+n1 (tier 1) while its ideal tier is 0: it runs 100 x 1 / (0.8 + 0.2 / 9) s
    filler = whatif_job("filler", 0, 10_000, 1, 4)
    a = whatif_job("a", 1, 100, 8, 1, comm_share=0.2)
    workload = Workload((filler, a), whatif_nodes(2), topology(2))
    by_id = {j.id: j for j in replay(workload, make_policy(policy, workload, 600.0)).jobs}
    result = by_id["a"]
    assert result.span_tier == 1
    assert result.start is not None and result.end is not None
    assert result.end - result.start == pytest.approx(100 / (0.8 + 0.2 / 9))
    off = {j.id: j for j in replay(workload, make_policy(policy, workload, 600.0), speed=SpeedModel.off()).jobs}
    assert off["a"].end is not None and off["a"].start is not None and off["a"].end - off["a"].start == 100


def test_a_job_packed_on_one_node_runs_at_its_trace_speed() -> None:
    a = whatif_job("a", 0, 100, 8, 1, comm_share=0.3)
    workload = Workload((a,), whatif_nodes(2), topology(2))
    result = replay(workload, make_policy("gangsched", workload, 600.0)).jobs[0]
    assert (result.span_tier, result.placement_slowdown, result.end) == (0, 1.0, 100)  # binpack: all 8 on one node


def test_useful_work_counts_a_slowed_job_at_its_ideal_speed() -> None:
    # the same placement as above, alone with the filler: `a` holds 8 GPUs for 100 x slowdown s, but its work is
    # 8 x 100 GPU-seconds; nothing is held by an incomplete gang
    filler = whatif_job("filler", 0, 200, 1, 4)
    a = whatif_job("a", 1, 100, 8, 1, comm_share=0.2)
    workload = Workload((filler, a), whatif_nodes(2), topology(2))
    result = replay(workload, make_policy("gangsched", workload, 600.0))
    factor = 1 / (0.8 + 0.2 / 9)
    assert result.whole_gpu_seconds == pytest.approx(4 * 200 + 8 * 100 * factor)
    assert result.useful_gpu_seconds == pytest.approx(4 * 200 + 8 * 100)
    assert result.gpu_seconds == pytest.approx(result.whole_gpu_seconds)
