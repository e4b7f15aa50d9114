"""Arithmetic of the what-if metrics (operator/gangsched/whatif/metrics.py) and the baselines' node choice
(whatif/freecap.py).

Oracles: nearest-rank percentiles (NIST/Hyndman-Fan definition 1: the ceil(q/100 * n)-th smallest value); a time
average of a piecewise-constant series is its integral over the window divided by the window's length; best fit
(the node with the fewest free GPUs that still fit) as kube-scheduler's MostAllocated scoring prefers
(pkg/scheduler/framework/plugins/noderesources/most_allocated.go).
"""

from __future__ import annotations

from gangsched.whatif.engine import Deadlock, JobResult, Replay, SchedulerDeadlock
from gangsched.whatif.freecap import FreeIndex
from gangsched.whatif.metrics import percentile, stats, summarize, window_mean
from gangsched.whatif.model import NodeSpec


def test_nearest_rank_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert (percentile(values, 50), percentile(values, 95), percentile(values, 99)) == (50, 95, 99)
    assert percentile([7.0], 99) == 7 and percentile([], 50) == 0
    assert stats([4.0, 1.0, 3.0, 2.0]) == {"mean": 2.5, "p50": 2.0, "p95": 4.0, "p99": 4.0, "n": 4}


def test_window_mean_integrates_the_step_function() -> None:
    timeline = [(0.0, 10, 0, 0, 0), (10.0, 20, 0, 0, 0), (30.0, 0, 0, 0, 0)]
    assert window_mean(timeline, 1, 0, 40) == (10 * 10 + 20 * 20) / 40
    assert window_mean(timeline, 1, 5, 15) == (10 * 5 + 20 * 5) / 10
    assert window_mean(timeline, 1, 50, 50) == 0


def test_summary_figures_from_a_known_replay() -> None:
    jobs = [
        JobResult("a", 1, 8, submit=0, start=0, end=100, incarnations=1),
        JobResult("b", 4, 32, submit=10, start=40, end=240, incarnations=2, evictions=1, evicted_gpu_seconds=3600),
        JobResult("c", 2, 16, submit=20, started_partially=True, incarnations=1),
    ]
    replay = Replay("p", jobs, 300, 64, 1000, gpu_seconds=7200 + 3600, useful_gpu_seconds=7200, whole_gpu_seconds=7200)
    replay.timeline = [(0.0, 32, 16, 0, 0), (100.0, 64, 32, 0, 0)]
    replay.deadlocks = [Deadlock(50, 24, 2, end=80), Deadlock(200, 16, 2)]
    replay.resolved = [SchedulerDeadlock(10, 10, 2, 16, 8), SchedulerDeadlock(20, 110, 3, 40, 8)]
    s = summarize(replay, (0, 200))
    assert (s["completed"], s["unfinished"], s["started_partially"]) == (2, 1, 1)
    assert s["jct"]["mean"] == (100 + 230) / 2 and s["queue"]["mean"] == (0 + 30) / 2
    assert s["gpu_alloc_mean"] == 0.75 and s["useful_util"] == 0.375  # (32*100 + 64*100) / 200 / 64, half useful
    assert s["held_idle_gpu_hours"] == 1.0 and s["evicted_gpu_hours"] == 1.0 and s["evictions"] == 1
    assert s["deadlocks"] == {
        "found": 2, "resolved": 1, "unresolved": 1, "mean_seconds_to_resolve": 30.0, "held_gpus_at_detection": 40,
        "scheduler": {
            "resolved": 2, "mean_seconds_to_resolve": 45.0, "held_gpu_hours_while_deadlocked": 1.0,
            "held_gpus_before": 56, "held_gpus_after": 40,
        },
    }  # fmt: skip
    assert set(s["by_size"]) == {"1", "2-4"}


def test_free_index_takes_the_fullest_node_that_fits_and_gives_back() -> None:
    index = FreeIndex([NodeSpec("a", 8000, 1024, 8), NodeSpec("b", 8000, 1024, 8), NodeSpec("c", 8000, 1024, 4)])
    assert index.take(2, 1000, 100, None) == "c"  # 4 free GPUs: the fullest that fits
    assert index.take(4, 1000, 100, None) == "a"  # c has 2 left now
    assert index.take(4, 1000, 100, None) == "a"
    assert index.take(8, 1000, 100, None) == "b"
    assert index.take(4, 1000, 100, None) is None
    assert index.take(1, 7000, 100, None) == "c"  # c (2 GPUs left) is the fullest; its 7000m CPU left just fit
    index.give("a", 4, 1000, 100)
    assert index.take(4, 1000, 100, "other-model") is None  # no node of that model
    assert index.take(4, 1000, 100, None) == "a"
