"""Group preemption: a 256-pod high-priority gang (groupSize 16) that must preempt on 4,096 busy nodes.

Instance: 4 spines x 8 leaves x 8 units x 16 nodes, 8 GPUs per node; 2,000 running low-priority gangs (1 to 3
pods of 8 GPUs, each gang inside one unit, quorum = all its pods) and other schedulers' pods fill the cluster
except a few free nodes in one unit in five. The preemptor asks 256 pods x 8 GPUs, networkTopology groupSize 16 (a DP
group is a whole unit).

Figures:
- `preempt.gang256_ms`: decision time of one schedule() cycle that chooses the victims (median of runs; target
  500 ms).
- `preempt.victims_over_min`: victim pods chosen minus the minimum possible for the instance. The minimum is
  computed independently from the layout: the best placement keeps the gang in one spine with every DP group
  in one unit (16 whole units), gangs never cross units and are taken whole, so the cheapest choice is, over
  spines, the sum of the 16 smallest per-unit occupied-node counts.
"""

from __future__ import annotations

import random

from bench.common import figure, log, summary, timed_runs
from gangsched.core.cycle.scheduler import schedule
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.topology import Domain, TopologyTree
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec, NetworkTopology
from gangsched.models.node import node_from_api
from gangsched.models.pod import pod_from_api

SPINES, LEAVES, UNITS, NODES = 4, 8, 8, 16
GANGS = 2000
COUNT = 256
GROUP = 16
HIGH = 1000


def _node(s: int, leaf: int, u: int, n: int) -> str:
    return f"s{s}-l{leaf}-u{u}-n{n}"


def build(seed: int) -> tuple[SchedulerState, dict[str, int]]:
    """The instance, and the occupied-node count of every unit (for the independent minimum)."""
    rng = random.Random(seed)
    c = SchedulerState()
    domains = []
    units: list[list[str]] = []
    for s in range(SPINES):
        domains.append(Domain(3, f"s{s}", (), tuple(f"s{s}-l{leaf}" for leaf in range(LEAVES))))
        for leaf in range(LEAVES):
            domains.append(Domain(2, f"s{s}-l{leaf}", (f"s{s}",), tuple(f"s{s}-l{leaf}-u{u}" for u in range(UNITS))))
            for u in range(UNITS):
                names = [_node(s, leaf, u, n) for n in range(NODES)]
                units.append(names)
                domains.append(Domain(1, f"s{s}-l{leaf}-u{u}", (f"s{s}-l{leaf}",), tuple(names)))
    c.set_topology(TopologyTree.from_domains(domains))
    for names in units:
        for name in names:
            c.upsert_node(
                node_from_api(
                    {
                        "metadata": {"name": name},
                        "status": {
                            "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}
                        },
                    }
                )
            )
    # 2,000 gangs dealt round the units; each unit keeps a free node or two now and then
    occupied = {f"u{i}": 0 for i in range(len(units))}
    fill = [0] * len(units)
    holes = [rng.randint(1, 4) if rng.random() < 0.2 else 0 for _ in units]  # free nodes left per unit
    gang = 0
    order = list(range(len(units)))
    while gang < GANGS:
        rng.shuffle(order)
        progressed = False
        for ui in order:
            if gang >= GANGS:
                break
            size = rng.choice((1, 1, 2, 2, 3))
            if fill[ui] + size > NODES - holes[ui]:
                continue
            name = f"low{gang}"
            c.upsert_gang(GangSpec("batch", name, size))
            c.mark_satisfied(f"batch/{name}")
            for i in range(size):
                node = units[ui][fill[ui]]
                fill[ui] += 1
                c.upsert_pod(
                    pod_from_api(
                        {
                            "metadata": {"name": f"{name}-{i}", "namespace": "batch", "uid": f"u-{name}-{i}"},
                            "spec": {
                                "schedulerName": "gangsched",
                                "priority": 1,
                                "nodeName": node,
                                "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}],
                            },
                            "status": {"phase": "Running"},
                        },
                        gang=f"batch/{name}",
                        rank=i,
                        ours=True,
                        classes=c.classes,
                    )
                )
            occupied[f"u{ui}"] += size
            gang += 1
            progressed = True
        if not progressed:
            raise RuntimeError("the instance does not hold 2,000 gangs")
    for ui, names in enumerate(units):  # the rest of each unit: other schedulers' pods (single victims)
        while fill[ui] < NODES - holes[ui]:
            c.upsert_pod(
                pod_from_api(
                    {
                        "metadata": {
                            "name": f"web-{ui}-{fill[ui]}",
                            "namespace": "web",
                            "uid": f"u-web-{ui}-{fill[ui]}",
                        },
                        "spec": {
                            "schedulerName": "default-scheduler",
                            "priority": 0,
                            "nodeName": names[fill[ui]],
                            "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}],
                        },
                        "status": {"phase": "Running"},
                    },
                    gang=None,
                    ours=False,
                    classes=c.classes,
                )
            )
            fill[ui] += 1
            occupied[f"u{ui}"] += 1
    c.upsert_gang(GangSpec("train", "big", COUNT, network_topology=NetworkTopology(group_size=GROUP)))
    for i in range(COUNT):
        c.upsert_pod(
            pod_from_api(
                {
                    "metadata": {"name": f"big-{i}", "namespace": "train", "uid": f"u-big-{i}"},
                    "spec": {
                        "schedulerName": "gangsched",
                        "priority": HIGH,
                        "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}],
                    },
                    "status": {"phase": "Pending"},
                },
                gang="train/big",
                rank=i,
                ours=True,
                classes=c.classes,
            )
        )
    return c, occupied


def minimum_victims(occupied: dict[str, int]) -> int:
    """Independent of the scheduler: the cheapest spine's 16 least-occupied units."""
    per_spine = LEAVES * UNITS
    best = None
    for s in range(SPINES):
        costs = sorted(occupied[f"u{s * per_spine + k}"] for k in range(per_spine))
        total = sum(costs[: COUNT // GROUP])
        best = total if best is None else min(best, total)
    assert best is not None
    return best


def main() -> None:
    config = SchedulerConfig()
    samples: list[float] = []
    over: list[int] = []
    for seed in range(3):
        c, occupied = build(seed)
        plans = []
        samples += timed_runs(lambda c=c, plans=plans: plans.append(schedule(c, 0.0, config)), runs=3, warmup=1)
        plan = plans[-1]
        chosen = len(plan.evictions)
        minimum = minimum_victims(occupied)
        log(f"seed {seed}: {chosen} victim pods, minimum {minimum}, {len(plan.nominations)} nominations")
        assert len(plan.nominations) == COUNT, "the gang must be nominated whole"
        over.append(chosen - minimum)
    s = summary(samples, scale=1000)
    figure(
        "preempt.gang256_ms",
        s["median"],
        unit="ms",
        target=500,
        better="lower",
        nodes=4096,
        low_gangs=GANGS,
        gang=COUNT,
        group_size=GROUP,
        **s,
    )
    figure(
        "preempt.victims_over_min",
        max(over),
        unit="pods",
        target=0,
        better="lower",
        instances=len(over),
        per_instance=over,
    )


if __name__ == "__main__":
    main()
