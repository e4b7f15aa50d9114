"""The synthetic workload model (fixed before any result was looked at; docs/whatif.md "Synthetic workload" describes
it with its sources): gang jobs for a node inventory at a target offered load.

Contract:
- `WorkloadModel`: the model's parameters, all documented defaults (see the field comments).
- `synthetic_workload(nodes, model, *, domains=None, runtimes=None) -> Workload`: jobs drawn independently (size,
  GPU model weighted by the inventory, shape, run time, mode, topology, priority) until the offered load reaches
  `model.load`, submitted as a Poisson process over the horizon; reproducible (random.Random(model.seed)).
- `load_runtimes(path)`: the run times of a one-column CSV `runtime`.
- `offered_load(jobs, gpu_capacity, horizon)`: sum(GPUs x duration) / (capacity x horizon).
More: docs/modules.md#whatifinputssyntheticpy.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from gangsched.core import Domain
from gangsched.whatif.inputs.files import InputError, csv_rows, number
from gangsched.whatif.inputs.nodes import shipped
from gangsched.whatif.inputs.topogen import synthetic_topology
from gangsched.whatif.model import GangMode, JobSpec, NodeSpec, RoleSpec, TopologyMode, Workload

# Total GPUs per job (docs/whatif.md: the shape reported by Jeon et al. ATC'19 (Philly), Hu et al. SC'21 (Helios) and
# Weng et al. NSDI'22 (PAI): most jobs use one GPU, multi-GPU jobs come in powers of two, few exceed 8 GPUs but
# those hold much of the GPU time). Fixed before any replay result was seen.
SIZE_PMF: Final = ((1, 0.50), (2, 0.10), (4, 0.12), (8, 0.16), (16, 0.06), (32, 0.04), (64, 0.02))
RUNTIMES_FILE: Final = "philly-runtime.csv"


@dataclass(frozen=True, slots=True)
class WorkloadModel:
    load: float = 0.8  # offered load: a fraction of GPU capacity x horizon
    horizon: float = 7 * 86400.0  # seconds of arrivals
    seed: int = 0
    size_pmf: tuple[tuple[int, float], ...] = field(default=SIZE_PMF)
    one_gpu_per_worker: float = 0.5  # multi-GPU jobs with one GPU per member (else whole-node members)
    max_job_share: float = 0.25  # a job asks at most this share of its GPU model's GPUs
    host_share: float = 0.5  # per-member cpu/memory: this share of the node's per-GPU cpu/memory
    min_duration: float = 60.0
    max_duration: float = 2 * 86400.0
    nonstrict_share: float = 0.2  # of gangs with more than one member
    topology_share: float = 0.3  # of gangs with more than one member
    hard_share: float = 0.5  # of the topology-asking gangs; hard ones allow up to tier 2 (a leaf)
    high_priority_share: float = 0.1
    high_priority: int = 100


@dataclass(frozen=True, slots=True)
class _Pool:
    model: str | None
    gpus: int
    node_gpus: int  # the largest node's GPUs
    cpu_per_gpu: int  # millicores, the smallest share among the pool's nodes
    mem_per_gpu: int  # MiB, likewise


def load_runtimes(path: str | Path | None = None) -> tuple[float, ...]:
    """Run times in seconds from a CSV with the header `runtime` (default: the shipped philly-runtime.csv)."""
    source = path if path is not None else shipped(RUNTIMES_FILE)
    out = tuple(
        number(row["runtime"], path=source, line=line, column="runtime", kind="float", minimum=0, maximum=1e10)
        for line, row in csv_rows(source, required=("runtime",))
    )
    if not out:
        raise InputError(source, 0, "runtime", "", "must hold at least one run time")
    return out


def offered_load(jobs: Iterable[JobSpec], gpu_capacity: int, horizon: float) -> float:
    return sum(job.gpus * job.duration for job in jobs) / (gpu_capacity * horizon)


def _pools(nodes: Sequence[NodeSpec]) -> list[_Pool]:
    by_model: dict[str | None, list[NodeSpec]] = {}
    for node in nodes:
        if node.gpus > 0:
            by_model.setdefault(node.gpu_model, []).append(node)
    return [
        _Pool(
            model,
            sum(n.gpus for n in group),
            max(n.gpus for n in group),
            min(n.cpu_milli // n.gpus for n in group),
            min(n.memory_mib // n.gpus for n in group),
        )
        for model, group in sorted(by_model.items(), key=lambda item: item[0] or "")
    ]


def _roles(rng: random.Random, model: WorkloadModel, size: int, pool: _Pool) -> RoleSpec:
    whole_nodes = size > 1 and rng.random() >= model.one_gpu_per_worker
    per = math.gcd(size, pool.node_gpus) if whole_nodes else 1
    cpu = max(100, int(per * pool.cpu_per_gpu * model.host_share) // 100 * 100)
    mem = max(1024, int(per * pool.mem_per_gpu * model.host_share) // 1024 * 1024)
    return RoleSpec(size // per, cpu, mem, per)


def _job(rng: random.Random, model: WorkloadModel, pools: list[_Pool], runtimes: Sequence[float]) -> JobSpec:
    sizes, weights = zip(*model.size_pmf, strict=True)
    while True:
        size = rng.choices(sizes, weights)[0]
        fits = [p for p in pools if p.gpus * model.max_job_share >= size]
        if fits:
            break
    pool = rng.choices(fits, [p.gpus for p in fits])[0]
    role = _roles(rng, model, size, pool)
    duration = min(model.max_duration, max(model.min_duration, rng.choice(runtimes)))
    mode: GangMode = "Strict"
    topology: TopologyMode = "none"
    tier = None
    if role.count > 1:
        if rng.random() < model.nonstrict_share:
            mode = "NonStrict"
        if rng.random() < model.topology_share:
            topology, tier = ("hard", 2) if rng.random() < model.hard_share else ("soft", None)
    priority = model.high_priority if rng.random() < model.high_priority_share else 0
    return JobSpec("", 0.0, duration, (role,), role.count, priority, mode, topology, tier, pool.model)


def synthetic_workload(
    nodes: Sequence[NodeSpec],
    model: WorkloadModel,
    *,
    domains: Sequence[Domain] | None = None,
    runtimes: Sequence[float] | None = None,
) -> Workload:
    """Jobs for `nodes` at `model.load` (see the module docstring)."""
    pools = _pools(nodes)
    capacity = sum(p.gpus for p in pools)
    if not capacity:
        raise ValueError("the inventory has no GPUs: the synthetic model sets load as a share of GPU capacity")
    if not 0 < model.load <= 10 or model.horizon <= 0:
        raise ValueError(f"load must be in (0, 10] and horizon > 0 (got {model.load}, {model.horizon})")
    if not any(p.gpus * model.max_job_share >= min(s for s, _ in model.size_pmf) for p in pools):
        raise ValueError("no GPU model of the inventory can hold the smallest job size")
    rng = random.Random(model.seed)
    times = tuple(runtimes) if runtimes is not None else load_runtimes()
    target = model.load * capacity * model.horizon
    drawn: list[JobSpec] = []
    offered = 0.0
    while offered < target:
        job = _job(rng, model, pools, times)
        drawn.append(job)
        offered += job.gpus * job.duration
    arrivals = sorted(rng.uniform(0.0, model.horizon) for _ in drawn)
    jobs = tuple(
        JobSpec(
            f"job-{i:06d}",
            round(at, 3),
            job.duration,
            job.roles,
            job.min_member,
            job.priority,
            job.mode,
            job.topology,
            job.highest_tier,
            job.gpu_model,
        )
        for i, (at, job) in enumerate(zip(arrivals, drawn, strict=True))
    )
    source = f"synthetic(load={model.load}, horizon={model.horizon:g}s, seed={model.seed}, jobs={len(jobs)})"
    topo = tuple(domains) if domains is not None else synthetic_topology(nodes)
    return Workload(jobs, tuple(nodes), topo, source)
