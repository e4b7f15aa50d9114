"""Benchmarks of the what-if simulator (operator/gangsched/whatif/). Figures:
- whatif.sim_events_per_s: simulated events (arrivals, completions, the scheduler's wakeups) per wall second of a
  gangsched replay on the 4,278-node Alibaba 2026 inventory (whatif/inputs, synthetic topology) with one simulated
  day of arrivals of the synthetic model (whatif/inputs/synthetic.py) at load 0.8 (12,856 jobs), replayed to the end;
  median of 3 runs.
- whatif.useful_util_gain: gangsched's useful GPU utilization / pod-by-pod's, on the demo scenario at load 0.95
  (deterministic: one run).
- whatif.jct_ratio: gangsched's mean JCT / pod-by-pod's, same replay (lower is better).
- whatif.deadlocks_unresolved: deadlocks gangsched leaves unresolved in both replays above (target 0).
"""

from __future__ import annotations

import statistics

from bench.common import figure, log, summary
from gangsched.whatif.demo import demo_workload
from gangsched.whatif.engine import Replay, replay
from gangsched.whatif.inputs.synthetic import WorkloadModel
from gangsched.whatif.inputs.workload import build_workload, load_inventory
from gangsched.whatif.metrics import summarize
from gangsched.whatif.policies import make_policy

WAIT = 600.0


def _events_per_s() -> tuple[list[float], list[Replay], int]:
    workload = build_workload(load_inventory("alibaba-2026"), model=WorkloadModel(load=0.8, horizon=24 * 3600, seed=1))
    log(f"whatif: {len(workload.jobs)} jobs on {len(workload.nodes)} nodes")
    rates, replays = [], []
    for _ in range(3):
        result = replay(workload, make_policy("gangsched", workload, WAIT))
        rates.append(result.events / result.wall_seconds)
        replays.append(result)
    return rates, replays, len(workload.nodes)


def main() -> None:
    rates, big, nodes = _events_per_s()
    figure(
        "whatif.sim_events_per_s",
        statistics.median(rates),
        unit="events/s",
        target=None,
        better="higher",
        nodes=nodes,
        jobs=len(big[0].jobs),
        events=big[0].events,
        runs=summary(rates),
    )
    workload = demo_workload(0.95, 1)
    window = (workload.jobs[0].submit, workload.jobs[-1].submit)
    ours = summarize(replay(workload, make_policy("gangsched", workload, WAIT)), window)
    base = summarize(replay(workload, make_policy("pod-by-pod", workload, WAIT)), window)
    context = {"scenario": "demo", "load": 0.95, "jobs": len(workload.jobs)}
    figure(
        "whatif.useful_util_gain",
        ours["useful_util"] / base["useful_util"],
        unit="ratio",
        target=None,
        better="higher",
        gangsched=ours["useful_util"],
        pod_by_pod=base["useful_util"],
        **context,
    )
    figure(
        "whatif.jct_ratio",
        ours["jct"]["mean"] / base["jct"]["mean"],
        unit="ratio",
        target=None,
        better="lower",
        gangsched_s=ours["jct"]["mean"],
        pod_by_pod_s=base["jct"]["mean"],
        **context,
    )
    unresolved = ours["deadlocks"]["unresolved"] + sum(len([d for d in r.deadlocks if d.end is None]) for r in big[:1])
    resolved = ours["deadlocks"]["scheduler"]["resolved"] + len(big[0].resolved)  # by the core itself
    figure(
        "whatif.deadlocks_unresolved", unresolved, unit="count", target=0, better="lower", resolved=resolved, **context
    )
