"""whatif/inputs/synthetic.py: the synthetic workload model hits its target load, follows its documented job
size distribution and GPU model mix, and is reproducible with a seed.

Oracles: the offered-load definition of issue 15 (sum(GPUs x duration) / (GPU capacity x horizon)), computed
here from the jobs; the size distribution documented in docs/whatif.md (SIZE_PMF, fixed before results); the
run times of philly-runtime.csv (Jeon et al., ATC'19, as published in alibaba/clusterdata), read here with the
csv module.
"""

from __future__ import annotations

import csv
import math
from collections import Counter

import pytest

from gangsched.whatif.inputs.nodes import load_nodes, shipped
from gangsched.whatif.inputs.synthetic import SIZE_PMF, WorkloadModel, load_runtimes, offered_load, synthetic_workload
from gangsched.whatif.model import NodeSpec

SPOT = load_nodes(shipped("alibaba-2026-spot-gpu-nodes.csv"))
DAY = 86400.0


@pytest.mark.parametrize("load", [0.6, 0.8, 0.95])
def test_target_load_reached_on_the_spot_inventory(load: float) -> None:
    workload = synthetic_workload(SPOT, WorkloadModel(load=load, horizon=DAY, seed=1))
    measured = offered_load(workload.jobs, 10412, DAY)
    largest = max(job.gpus * job.duration for job in workload.jobs) / (10412 * DAY)
    assert load <= measured <= load + largest  # drawn until the target: overshoot at most one job
    assert measured == pytest.approx(load, rel=0.02)
    assert all(0 <= job.submit < DAY for job in workload.jobs)
    assert [job.submit for job in workload.jobs] == sorted(job.submit for job in workload.jobs)


def test_reproducible_with_a_seed() -> None:
    model = WorkloadModel(load=0.6, horizon=DAY / 4, seed=7)
    assert synthetic_workload(SPOT, model) == synthetic_workload(SPOT, model)
    other = synthetic_workload(SPOT, WorkloadModel(load=0.6, horizon=DAY / 4, seed=8))
    assert other.jobs != synthetic_workload(SPOT, model).jobs


def test_job_sizes_follow_the_documented_distribution() -> None:
    jobs = synthetic_workload(SPOT, WorkloadModel(load=0.95, horizon=2 * DAY, seed=3)).jobs
    counts = Counter(job.gpus for job in jobs)
    n = len(jobs)
    assert set(counts) == {size for size, _ in SIZE_PMF}
    for size, p in SIZE_PMF:  # every size fits some model of this inventory: no redraws, so the PMF holds
        assert abs(counts[size] / n - p) <= 4 * math.sqrt(p * (1 - p) / n) + 1e-9, (size, counts[size] / n, p)


def test_gpu_models_follow_the_inventory_mix_and_fit_their_nodes() -> None:
    jobs = synthetic_workload(SPOT, WorkloadModel(load=0.8, horizon=DAY, seed=5)).jobs
    capacity = Counter[str]()
    node_gpus: dict[str, int] = {}
    for node in SPOT:
        assert node.gpu_model is not None
        capacity[node.gpu_model] += node.gpus
        node_gpus[node.gpu_model] = max(node_gpus.get(node.gpu_model, 0), node.gpus)
    demand: dict[str, float] = {}
    for job in jobs:
        assert job.gpu_model is not None and job.gpu_model in capacity
        (role,) = job.roles
        assert role.gpus <= node_gpus[job.gpu_model] and job.min_member == job.members
        assert job.gpus <= capacity[job.gpu_model] * 0.25
        demand[job.gpu_model] = demand.get(job.gpu_model, 0.0) + job.gpus * job.duration
    total_demand, total_capacity = sum(demand.values()), sum(capacity.values())
    for model, gpus in capacity.items():  # each model's share of the load within a few points of its capacity share
        assert demand[model] / total_demand == pytest.approx(gpus / total_capacity, abs=0.06), model


def test_durations_are_philly_run_times_clamped() -> None:
    with shipped("philly-runtime.csv").open() as f:
        published = {float(row["runtime"]) for row in csv.DictReader(f)}
    assert len(load_runtimes()) == 83154
    jobs = synthetic_workload(SPOT, WorkloadModel(load=0.6, horizon=DAY / 2, seed=2)).jobs
    assert all(60.0 <= job.duration <= 2 * DAY for job in jobs)
    inside = [job.duration for job in jobs if 60.0 < job.duration < 2 * DAY]
    assert inside and all(d in published for d in inside)
    assert any(job.duration == 60.0 for job in jobs)  # the trace's many sub-minute runs are raised to the floor


def test_shares_of_nonstrict_topology_and_priority() -> None:
    jobs = synthetic_workload(SPOT, WorkloadModel(load=0.95, horizon=2 * DAY, seed=4)).jobs
    gangs = [job for job in jobs if job.members > 1]
    singles = [job for job in jobs if job.members == 1]
    assert all(job.mode == "Strict" and job.topology == "none" for job in singles)
    nonstrict = sum(job.mode == "NonStrict" for job in gangs) / len(gangs)
    topo = [job for job in gangs if job.topology != "none"]
    assert nonstrict == pytest.approx(0.2, abs=0.03) and len(topo) / len(gangs) == pytest.approx(0.3, abs=0.03)
    assert all((job.topology, job.highest_tier) in {("hard", 2), ("soft", None)} for job in topo)
    assert sum(job.priority == 100 for job in jobs) / len(jobs) == pytest.approx(0.1, abs=0.02)


def test_inventory_without_gpus_is_refused() -> None:
    with pytest.raises(ValueError, match="no GPUs"):
        synthetic_workload([NodeSpec("c", 1000, 1024, 0)], WorkloadModel())
