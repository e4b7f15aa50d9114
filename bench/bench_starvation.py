"""Benchmark of capacity held for a starving gang (core/gang/starvation.py): the cost of a cycle while a hold is active.

Figure: core.held_cycle_ms: one cycle (64 units) on 5000 nodes of 8 GPUs with 7 busy (35,000 running 1-GPU pods
with declared run times) while a 64-GPU gang holds 8 nodes and 1000 1-GPU gangs with declared run times wait:
every unit asks whether it may backfill (one start estimate per cycle: a pass over the pods), then binds on a free
GPU elsewhere (the held gang itself is backed off: its own failing attempt costs the same with or without a hold).
Context: the same cycle with holds off, side by side, and their ratio.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench.common import figure, log, summary
from gangsched.core.cycle.scheduler import schedule
from gangsched.core.cycle.simulate import step
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec
from gangsched.models.node import node_from_api
from gangsched.models.pod import pod_from_api

NODES = 5000
RUN = {"scheduling.gangsched.io/expected-duration": "10m"}


def _node(i: int) -> dict[str, Any]:
    alloc = {"cpu": "192", "memory": "2000Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {"metadata": {"name": f"node-{i:05d}"}, "spec": {}, "status": {"allocatable": alloc}}


def _pod(name: str, *, gpu: int, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "gangsched",
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpu)}}}],
    }
    if node:
        spec["nodeName"] = node
    status = {"phase": "Running", "startTime": "1970-01-01T00:00:00Z"} if node else {"phase": "Pending"}
    meta = {"name": name, "namespace": "bench", "uid": f"uid-{name}", "creationTimestamp": "1970-01-01T00:00:00Z"}
    return {"metadata": {**meta, "annotations": RUN if gpu == 1 else {}}, "spec": spec, "status": status}


def _gang(c: SchedulerState, name: str, size: int, gpu: int, node: str | None = None) -> None:
    c.upsert_gang(GangSpec("bench", name, size))
    for r in range(size):
        pod = _pod(f"{name}-{r}", gpu=gpu, node=node)
        c.upsert_pod(pod_from_api(pod, gang=f"bench/{name}", rank=r, ours=True, classes=c.classes))


def _held_cluster(config: SchedulerConfig) -> SchedulerState:
    c = SchedulerState()
    for i in range(NODES):
        c.upsert_node(node_from_api(_node(i)))
        for g in range(7):
            _gang(c, f"r{i}-{g}", 1, 1, node=f"node-{i:05d}")
    _gang(c, "big", 8, 8)
    for s in range(1000):
        _gang(c, f"s{s:04d}", 1, 1)
    step(c, config, 0.0)  # everything fails and backs off
    step(c, config, 61.0)  # the hold starts
    step(c, config, 199.0)  # the held gang fails again and backs off (its failure message costs the same either way)
    return c


def _cycle_ms(c: SchedulerState, config: SchedulerConfig, now: float, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        schedule(c, now, config)  # pure: the same cycle each time
        out.append((time.perf_counter() - t0) * 1000)
    return out


def bench_held_cycle() -> None:
    held_cfg = SchedulerConfig(max_units_per_cycle=64, hold_after_seconds=60.0)
    c = _held_cluster(held_cfg)
    assert "bench/big" in c.queue.holds, "the big gang must hold capacity"
    off_cfg = SchedulerConfig(max_units_per_cycle=64, hold_after_seconds=0.0)
    held = _cycle_ms(c, held_cfg, 200.0, 9)  # backoffs over: 64 units attempted
    off = _cycle_ms(c, off_cfg, 200.0, 9)
    figure(
        "core.held_cycle_ms",
        statistics.median(held),
        unit="ms",
        target=25,
        better="lower",
        nodes=NODES,
        running_pods=NODES * 7,
        waiting_gangs=1001,
        holds_off_ms=round(statistics.median(off), 3),
        ratio_to_holds_off=round(statistics.median(held) / statistics.median(off), 3),
        **summary(held),
    )


def main() -> None:
    log("starvation: a cycle with a hold active, 5000 nodes, 1000 waiting gangs")
    bench_held_cycle()


if __name__ == "__main__":
    main()
