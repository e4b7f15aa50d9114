"""Metrics of one replay (whatif/engine.py `Replay`), as a plain JSON-ready dict.

Contract: `summarize(replay, window) -> dict`: one window (t0, t1) for every metric (the CLI passes the arrival span
after the warm-up, the same for every policy); time-based figures over [t0, t1], job-based ones over the jobs that
arrived in it (judged by their whole life). Keys: `jobs`, `completed`, `unfinished`; `gpu_alloc_mean`,
`cpu_alloc_mean`, `useful_util` (GPU time of whole gangs at ideal speed, less lost work), `useful_cpu_util`;
`held_idle_gpu_hours` (reserved idle + starvation holds, an upper bound); `fragmented_gpus_mean`,
`fragmented_gpu_frac`; `jct`, `queue` ({mean, p50, p95, p99, max, n}, nearest-rank; lost run time is not waiting),
`by_size`, `by_priority`; `slowdown` and `fairness` (Jain's index); `started_partially`, `evictions`, `failures`,
`timeouts` and their lost GPU-hours; `permit_timeouts`, `deadlocks` (engine-detected and the scheduler's own),
`tiers`; `decision_ms`, `events`, `wall_seconds`, `events_per_s`. More: docs/modules.md#whatifmetricspy.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from gangsched.whatif.engine import JobResult, Replay

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
        "max": round(ordered[-1], 3) if n else 0.0,
        "n": n,
    }


def window_mean(timeline: Sequence[Sequence[float]], column: int, t0: float, t1: float) -> float:
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


def queue_delay(job: JobResult) -> float:
    """Start of the completing incarnation - first submit - run time lost by earlier incarnations."""
    assert job.start is not None
    return job.start - job.submit - job.lost_run_seconds


def _job_stats(jobs: Sequence[JobResult]) -> dict[str, Any]:
    return {
        "jct": stats([j.end - j.submit for j in jobs if j.end is not None]),
        "queue": stats([queue_delay(j) for j in jobs if j.start is not None]),
    }


def lost_work_mean(lost: Sequence[tuple[float, float, float]], t0: float, t1: float) -> float:
    """The work (GPUs) destroyed by evictions and node failures, averaged over [t0, t1]: each interval's rate times
    its overlap with the window."""
    if t1 <= t0:
        return 0.0
    return sum(rate * max(0.0, min(end, t1) - max(start, t0)) for start, end, rate in lost) / (t1 - t0)


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index of non-negative values; 1.0 when empty or all zero."""
    square_sum = sum(v * v for v in values)
    return sum(values) ** 2 / (len(values) * square_sum) if square_sum > 0 else 1.0


def summarize(replay: Replay, window: tuple[float, float]) -> dict[str, Any]:
    t0, t1 = window
    arrived = [j for j in replay.jobs if t0 <= j.submit <= t1]
    done = [j for j in arrived if j.end is not None]
    by_size = {
        name: _job_stats(js) for _, _, name in SIZE_BUCKETS if (js := [j for j in done if _bucket(j.members) == name])
    }
    by_priority = {str(p): _job_stats([j for j in done if j.priority == p]) for p in sorted({j.priority for j in done})}
    gpu_cap, cpu_cap = max(replay.gpu_capacity, 1), max(replay.cpu_capacity, 1)
    decisions = [s * 1000 for s in replay.decision_seconds]
    alloc, useful = window_mean(replay.timeline, 1, t0, t1), window_mean(replay.timeline, 2, t0, t1)
    useful -= lost_work_mean(replay.lost_work, t0, t1)
    whole = window_mean(replay.timeline, 5, t0, t1)
    hold = window_mean(replay.timeline, 6, t0, t1)
    fragmented = window_mean(replay.timeline, 7, t0, t1)
    span = max(t1 - t0, 0.0) / 3600
    slowdowns = [(j.end - j.submit) / j.duration for j in done if j.end is not None and j.duration > 0]
    evicted = sum(j.evicted_gpu_seconds for j in arrived) / 3600
    failed = sum(j.failed_gpu_seconds for j in arrived) / 3600
    return {
        "policy": replay.policy,
        "window": {"start": t0, "end": t1, "jobs": "arrivals in [start, end]; time figures over [start, end]"},
        "jobs": len(arrived),
        "jobs_replayed": len(replay.jobs),
        "completed": len(done),
        "unfinished": len(arrived) - len(done),
        "end_time": round(replay.end_time, 1),
        "gpu_alloc_mean": round(alloc / gpu_cap, 4),
        "useful_util": round(useful / gpu_cap, 4),
        "cpu_alloc_mean": round(window_mean(replay.timeline, 3, t0, t1) / cpu_cap, 4),
        "useful_cpu_util": round(window_mean(replay.timeline, 4, t0, t1) / cpu_cap, 4),
        "held_idle_gpu_hours": round((alloc - whole + hold) * span, 2),
        "reserved_idle_gpu_hours": round((alloc - whole) * span, 2),
        "starvation_hold_gpu_hours": round(hold * span, 2),
        "fragmented_gpus_mean": round(fragmented, 2),
        "fragmented_gpu_frac": round(fragmented / gpu_cap, 4),
        **_job_stats(done),
        "by_size": by_size,
        "by_priority": by_priority,
        "slowdown": stats(slowdowns),
        "fairness": round(jain_index(slowdowns), 4),
        "started_partially": sum(j.started_partially for j in arrived),
        "evictions": sum(j.evictions for j in arrived),
        "evicted_gpu_hours": round(evicted, 2),
        "failures": sum(j.failures for j in arrived),
        "failed_gpu_hours": round(failed, 2),
        "lost_gpu_hours": round(evicted + failed, 2),
        "timeouts": sum(j.timeouts for j in arrived),
        "permit_timeouts": replay.permit_timeouts,
        "deadlocks": _deadlocks(replay),
        "tiers": {str(k): v for k, v in sorted(Counter(j.tier for j in done if j.tier is not None).items())},
        "decision_ms": {**stats(decisions), "max": round(max(decisions, default=0.0), 3)},
        "events": replay.events,
        "wall_seconds": round(replay.wall_seconds, 3),
        "events_per_s": round(replay.events / replay.wall_seconds, 1) if replay.wall_seconds > 0 else 0.0,
    }
