"""Metrics of one replay (whatif/engine.py `Replay`), as a plain JSON-ready dict.

Contract: `summarize(replay, window) -> dict`. `window` (t0, t1) is the interval utilization is averaged over (the
CLI uses the trace's arrival span, the same for every policy, so policies that finish later are not favoured).
- `gpu_alloc_mean`, `cpu_alloc_mean`: mean fraction of capacity allocated (HELD or RUNNING) over the window;
  `useful_util`: the work done, GPU time of gangs running whole at their ideal speed (whatif/speed.py: a job slowed
  by its placement counts its GPUs divided by its slowdown); `useful_cpu_util`: CPU held by gangs running whole.
- `held_idle_gpu_hours`: GPU-hours held by incomplete gangs over the whole replay (allocated - held whole).
- `jct`, `queue`: {mean, p50, p95, p99, n} in seconds over completed jobs (JCT: completion - first submit; queueing
  delay: start of the completing incarnation - first submit); `by_size`: the same per gang-size bucket (members:
  `SIZE_BUCKETS`). Percentiles are nearest-rank. `unfinished`: jobs not completed when the replay ended.
- `started_partially`: jobs of which some member ran while fewer than minMember did; `evictions`, `evicted_gpu_hours`
  (work lost by victims); `failures`, `failed_gpu_hours` (incarnations a node going down ended, and their lost work);
  `timeouts` (incarnations ended at their waiting time), `permit_timeouts` (baseline
  releases at the timeout); `deadlocks` {found, resolved, unresolved, mean_seconds_to_resolve, held_gpus_at_detection}
  (episodes detected by the engine, any policy) and `deadlocks.scheduler` {resolved, mean_seconds_to_resolve (from
  forming to release), held_gpu_hours_while_deadlocked, held_gpus_before, held_gpus_after} (those the scheduler
  found and resolved itself: gangsched's core/gang/deadlock.py); `tiers`: {tier: jobs} placement tier per gang (as the
  scheduler reported it).
- `decision_ms`: {mean, p50, p99, max, n} wall time per scheduler call; `events`, `wall_seconds`, `events_per_s`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from gangsched.whatif.engine import Replay

SIZE_BUCKETS = ((1, 1, "1"), (2, 4, "2-4"), (5, 8, "5-8"), (9, 10**9, "9+"))


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of already sorted values; 0.0 when empty."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return float(sorted_values[rank - 1])


def stats(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    n = len(ordered)
    return {
        "mean": round(sum(ordered) / n, 3) if n else 0.0,
        "p50": round(percentile(ordered, 50), 3),
        "p95": round(percentile(ordered, 95), 3),
        "p99": round(percentile(ordered, 99), 3),
        "n": n,
    }


def window_mean(timeline: Sequence[tuple[float, int, float, int, int]], column: int, t0: float, t1: float) -> float:
    """Time-weighted mean of `timeline[i][column]` over [t0, t1] (the value holds until the next point; 0 before
    the first)."""
    if t1 <= t0:
        return 0.0
    area = 0.0
    for i, point in enumerate(timeline):
        start = max(point[0], t0)
        end = min(timeline[i + 1][0] if i + 1 < len(timeline) else t1, t1)
        if end > start:
            area += point[column] * (end - start)
    return area / (t1 - t0)


def _bucket(members: int) -> str:
    return next(name for lo, hi, name in SIZE_BUCKETS if lo <= members <= hi)


def _deadlocks(replay: Replay) -> dict[str, Any]:
    resolved = [d for d in replay.deadlocks if d.end is not None]
    return {
        "found": len(replay.deadlocks),
        "resolved": len(resolved),
        "unresolved": len(replay.deadlocks) - len(resolved),
        "mean_seconds_to_resolve": round(sum(d.end - d.start for d in resolved if d.end) / len(resolved), 1)
        if resolved
        else 0.0,
        "held_gpus_at_detection": sum(d.held_gpus for d in replay.deadlocks),
        "scheduler": _resolved(replay),
    }


def _resolved(replay: Replay) -> dict[str, Any]:
    found = replay.resolved
    return {
        "resolved": len(found),
        "mean_seconds_to_resolve": round(sum(d.resolved - d.formed for d in found) / len(found), 1) if found else 0.0,
        "held_gpu_hours_while_deadlocked": round(sum(d.held_gpus * (d.resolved - d.formed) for d in found) / 3600, 2),
        "held_gpus_before": sum(d.held_gpus for d in found),
        "held_gpus_after": sum(d.held_gpus - d.released_gpus for d in found),
    }


def summarize(replay: Replay, window: tuple[float, float]) -> dict[str, Any]:
    t0, t1 = window
    done = [j for j in replay.jobs if j.end is not None]
    by_size: dict[str, dict[str, Any]] = {}
    for _, _, name in SIZE_BUCKETS:
        jobs = [j for j in done if _bucket(j.members) == name]
        if jobs:
            by_size[name] = {
                "jct": stats([j.end - j.submit for j in jobs if j.end is not None]),
                "queue": stats([j.start - j.submit for j in jobs if j.start is not None]),
            }
    gpu_cap, cpu_cap = max(replay.gpu_capacity, 1), max(replay.cpu_capacity, 1)
    decisions = [s * 1000 for s in replay.decision_seconds]
    return {
        "policy": replay.policy,
        "jobs": len(replay.jobs),
        "completed": len(done),
        "unfinished": len(replay.jobs) - len(done),
        "end_time": round(replay.end_time, 1),
        "gpu_alloc_mean": round(window_mean(replay.timeline, 1, t0, t1) / gpu_cap, 4),
        "useful_util": round(window_mean(replay.timeline, 2, t0, t1) / gpu_cap, 4),
        "cpu_alloc_mean": round(window_mean(replay.timeline, 3, t0, t1) / cpu_cap, 4),
        "useful_cpu_util": round(window_mean(replay.timeline, 4, t0, t1) / cpu_cap, 4),
        "held_idle_gpu_hours": round((replay.gpu_seconds - replay.whole_gpu_seconds) / 3600, 2),
        "jct": stats([j.end - j.submit for j in done if j.end is not None]),
        "queue": stats([j.start - j.submit for j in done if j.start is not None]),
        "by_size": by_size,
        "started_partially": sum(j.started_partially for j in replay.jobs),
        "evictions": sum(j.evictions for j in replay.jobs),
        "evicted_gpu_hours": round(sum(j.evicted_gpu_seconds for j in replay.jobs) / 3600, 2),
        "failures": sum(j.failures for j in replay.jobs),
        "failed_gpu_hours": round(sum(j.failed_gpu_seconds for j in replay.jobs) / 3600, 2),
        "timeouts": sum(j.timeouts for j in replay.jobs),
        "permit_timeouts": replay.permit_timeouts,
        "deadlocks": _deadlocks(replay),
        "tiers": {str(k): v for k, v in sorted(Counter(j.tier for j in done if j.tier is not None).items())},
        "decision_ms": {**stats(decisions), "max": round(max(decisions, default=0.0), 3)},
        "events": replay.events,
        "wall_seconds": round(replay.wall_seconds, 3),
        "events_per_s": round(replay.events / replay.wall_seconds, 1) if replay.wall_seconds > 0 else 0.0,
    }
