"""The runtime gang-health figure of the core group (bench/bench_core.py calls it): core.health_watched1000_ms, the
extra time a cycle with nothing else to do spends when 1,000 running gangs of 8 (8,000 bound pods on 1,000 nodes)
all set a stale grace period (core/gang/health.py checks every watched gang each cycle); `unwatched_ms` is the same
cycle with no grace period set (the default: nothing is checked)."""

from __future__ import annotations

import statistics
import time

from bench.bench_core import _cluster, _pod
from bench.common import figure
from gangsched.core.cycle.scheduler import schedule
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec
from gangsched.models.pod import pod_from_api

GANGS, SIZE = 1000, 8


def _running(grace: float | None) -> SchedulerState:
    c = _cluster(GANGS)
    for g in range(GANGS):
        c.upsert_gang(GangSpec("bench", f"g{g}", SIZE, stale_grace_seconds=grace))
        for r in range(SIZE):
            obj = _pod(f"g{g}-{r}", gpu=1, node=f"node-{g:05d}")
            c.upsert_pod(pod_from_api(obj, gang=f"bench/g{g}", rank=r, ours=True, classes=c.classes))
    c.apply(schedule(c, 0.0, SchedulerConfig()))  # (the first cycle records that they ran)
    return c


def _cycle_ms(c: SchedulerState, runs: int = 21) -> float:
    config = SchedulerConfig()
    samples = []
    for i in range(runs):
        t0 = time.perf_counter()
        plan = schedule(c, 1.0 + i, config)
        samples.append((time.perf_counter() - t0) * 1000)
        assert not plan.events and not plan.health
    return statistics.median(samples)


def bench_health_watched1000() -> None:
    unwatched = _cycle_ms(_running(None))
    watched_state = _running(60.0)
    assert all(watched_state.health.record(f"bench/g{g}").ran for g in range(GANGS))
    watched = _cycle_ms(watched_state)
    figure(
        "core.health_watched1000_ms",
        watched - unwatched,
        unit="ms",
        target=5,
        better="lower",
        watched_ms=round(watched, 3),
        unwatched_ms=round(unwatched, 3),
        note="extra cycle time with 1000 running gangs of 8 watched",
    )
