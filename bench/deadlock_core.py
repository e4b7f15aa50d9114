"""The NonStrict deadlock figure of the core group (bench/bench_core.py calls it): core.deadlock_check_ms, the
deadlock step of one cycle (core/gang/deadlock.py) with 200 NonStrict gangs (8 x 8 GPUs, minMember 8) holding 4
reservations each on 1,000 nodes and 10k bound pods: every gang could use every other's capacity (the graph of
suspects is complete, 200 x 199 edges), so the step reads the nodes and finds who is blocked; 200 nodes are free,
so nobody is, and nothing is released. Context: `resolve_ms`, the same with 5 reservations each (the cluster full:
a 200-gang deadlock, one victim released, then no cycle); `coming_ms`, the same with 4 reservations each, the 200
free nodes taken by 8-GPU pods and every bound pod declaring a run time (10,200): nothing fits on the free capacity,
so the step reads the capacity that is coming (core/memory/coming.py, core/gang/coming_fit.py), finds the 200 nodes'
GPUs there, and nobody is blocked."""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench.bench_core import _cluster, _pod
from bench.common import figure, summary
from gangsched.core.gang.deadlock import resolve_deadlocks
from gangsched.core.memory.plan import Plan
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode, GangSpec
from gangsched.models.pod import pod_from_api

GANGS = 200


def _timed(name: str, gpu: int, node: str, run_seconds: int | None) -> dict[str, Any]:
    pod = _pod(name, gpu=gpu, node=node)
    if run_seconds is not None:
        pod["spec"]["activeDeadlineSeconds"] = run_seconds
    return pod


def _reserving(held: int, *, coming: bool = False) -> SchedulerState:
    c = _cluster(1000)
    run = 3600 if coming else None
    for i in range(10_000):
        c.upsert_pod(
            pod_from_api(_timed(f"run-{i}", 0, f"node-{i % 1000:05d}", run), gang=None, ours=True, classes=c.classes)
        )
    for i in range(GANGS * held, 1000 if coming else 0):
        c.upsert_pod(pod_from_api(_timed(f"big-{i}", 8, f"node-{i:05d}", run), gang=None, ours=True, classes=c.classes))
    reservations = []
    for g in range(GANGS):
        c.upsert_gang(GangSpec("bench", f"g{g}", 8, mode=GangMode.NON_STRICT), created=float(g))
        for r in range(8):
            key = f"bench/g{g}-{r}"
            c.upsert_pod(
                pod_from_api(_pod(f"g{g}-{r}", gpu=8), gang=f"bench/g{g}", rank=r, ours=True, classes=c.classes)
            )
            if r < held:
                reservations.append((key, f"node-{g * held + r:05d}"))
    c.apply(Plan(reservations=reservations, first_reserved={f"bench/g{g}": 0.0 for g in range(GANGS)}))
    return c


def _check_ms(c: SchedulerState, runs: int) -> tuple[list[float], int]:
    config = SchedulerConfig()
    out, found = [], 0
    for _ in range(runs):
        session = CycleSession(c, 1.0, config)
        t0 = time.perf_counter()
        resolve_deadlocks(session, set())
        out.append((time.perf_counter() - t0) * 1000)
        found = len(session.plan.deadlocks)
    return out, found


def bench_deadlock_check() -> None:
    samples, found = _check_ms(_reserving(4), 9)
    assert found == 0, found
    resolve, found = _check_ms(_reserving(5), 5)
    assert found == 1, found
    coming, found = _check_ms(_reserving(4, coming=True), 9)
    assert found == 0, found
    figure(
        "core.deadlock_check_ms",
        statistics.median(samples),
        unit="ms",
        target=25,
        better="lower",
        resolve_ms=round(statistics.median(resolve), 2),
        coming_ms=round(statistics.median(coming), 2),
        **summary(samples),
    )
