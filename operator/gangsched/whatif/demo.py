"""The `--demo` scenario: a small synthetic cluster and workload, built inline, reproducible from a seed.

Contract: `demo_workload(load, seed, *, nodes=32, hours=8.0) -> Workload`: `nodes` nodes of 8 GPUs ("demo-gpu"),
96 CPUs, 1 TiB, in 8-node units under one leaf per 8 units; jobs sized as published for shared GPU clusters
(mostly 1 GPU, few large ones holding most GPU-hours), log-normal durations (median 20 min), 20% NonStrict, soft
topology from 8 pods, 10% priority 100, drawn until their GPU-seconds reach `load` x capacity x `hours`, arriving
uniformly over `hours`. More: docs/modules.md#whatifdemopy.
"""

from __future__ import annotations

import dataclasses
import math
import random

from gangsched.core import Domain
from gangsched.whatif.model import GangMode, JobSpec, NodeSpec, RoleSpec, TopologyMode, Workload

SIZES = ((1, 1, 0.45), (1, 4, 0.15), (1, 8, 0.10), (2, 8, 0.12), (4, 8, 0.10), (8, 8, 0.06), (16, 8, 0.02))
MEDIAN_SECONDS = 1200.0
SIGMA = 1.0
MIN_SECONDS, MAX_SECONDS = 60.0, 6 * 3600.0


def demo_nodes(count: int) -> tuple[NodeSpec, ...]:
    return tuple(NodeSpec(f"node-{i:03d}", 96_000, 1 << 20, 8, "demo-gpu") for i in range(count))


def demo_domains(nodes: tuple[NodeSpec, ...]) -> tuple[Domain, ...]:
    units = [tuple(n.name for n in nodes[i : i + 8]) for i in range(0, len(nodes), 8)]
    out = [Domain(1, f"unit-{u}", (f"leaf-{u // 8}",), names) for u, names in enumerate(units)]
    leaves = sorted({d.parents[0] for d in out})
    out += [Domain(2, leaf, (), tuple(d.name for d in out if d.parents[0] == leaf)) for leaf in leaves]
    return tuple(out)


def _duration(rng: random.Random) -> float:
    return min(MAX_SECONDS, max(MIN_SECONDS, rng.lognormvariate(math.log(MEDIAN_SECONDS), SIGMA)))


def _job(i: int, t: float, rng: random.Random) -> JobSpec:
    pods, gpus, _ = rng.choices(SIZES, weights=[s[2] for s in SIZES])[0]
    role = RoleSpec(pods, 8000 * gpus or 1000, 65536 * gpus or 4096, gpus)
    mode: GangMode = "NonStrict" if pods > 1 and rng.random() < 0.2 else "Strict"
    topology: TopologyMode = "soft" if pods >= 8 else "none"
    priority = 100 if rng.random() < 0.1 else 0
    return JobSpec(f"job-{i:05d}", t, round(_duration(rng)), (role,), pods, priority, mode, topology)


DEMO_HOURS = 8.0  # hours of arrivals


def demo_workload(load: float, seed: int, *, nodes: int = 32, hours: float = DEMO_HOURS) -> Workload:
    rng = random.Random(seed)
    inventory = demo_nodes(nodes)
    span = hours * 3600
    target = load * sum(n.gpus for n in inventory) * span  # GPU-seconds the jobs ask for in all
    shapes: list[JobSpec] = []
    work = 0.0
    while work < target:
        job = _job(len(shapes), 0.0, rng)
        shapes.append(job)
        work += job.gpus * job.duration
    times = sorted(round(rng.uniform(0, span), 3) for _ in shapes)  # Poisson arrivals given their number
    jobs = tuple(dataclasses.replace(job, submit=t) for job, t in zip(shapes, times, strict=True))
    return Workload(jobs, inventory, demo_domains(inventory), f"demo(load={load}, seed={seed})")
