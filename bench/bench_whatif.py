"""Benchmarks of the what-if simulator (operator/gangsched/whatif/). Figures:
- whatif.sim_events_per_s: simulated events (arrivals, completions, the scheduler's wakeups) per wall second of a
  gangsched replay on the 4,278-node Alibaba 2026 inventory (whatif/inputs, synthetic topology) with one simulated
  day of arrivals of the synthetic model (whatif/inputs/synthetic.py) at load 0.8 (12,856 jobs), replayed to the end;
  median of 3 runs.
- whatif.useful_util_gain: gangsched's useful GPU utilization / the best faithful baseline's (kube-scheduler,
  coscheduling, kube-scheduler-gang: the highest useful utilization), on the demo scenario at load 0.95
  (deterministic: one run each).
- whatif.jct_ratio: gangsched's mean JCT / the best faithful baseline's (the lowest mean JCT), same replays (lower is
  better).
- whatif.queue_p99_ratio: gangsched's p99 queueing delay / the best faithful baseline's (the lowest), same replays.
The demo replays are the CLI's (`gangsched sim replay --demo --load 0.95`): placement-aware speed, half of the jobs
declaring run times, seed 1.
- whatif.deadlocks_unresolved: deadlocks gangsched leaves unresolved in both replays above (target 0).
"""

from __future__ import annotations

import statistics

from bench.common import figure, log, summary
from gangsched.whatif.demo import demo_workload
from gangsched.whatif.engine import Replay, replay
from gangsched.whatif.inputs.estimates import with_traits
from gangsched.whatif.inputs.synthetic import WorkloadModel
from gangsched.whatif.inputs.workload import build_workload, load_inventory
from gangsched.whatif.lineup import FAITHFUL_BASELINES, make_policy
from gangsched.whatif.metrics import summarize
from gangsched.whatif.speed import SpeedModel

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
    workload = with_traits(demo_workload(0.95, 1), SpeedModel(), seed=1)
    window = (workload.jobs[0].submit, workload.jobs[-1].submit)
    ours = summarize(replay(workload, make_policy("gangsched", workload, WAIT)), window)
    bases = {n: summarize(replay(workload, make_policy(n, workload, WAIT)), window) for n in FAITHFUL_BASELINES}
    util_best = max(bases, key=lambda name: bases[name]["useful_util"])
    jct_best = min(bases, key=lambda name: bases[name]["jct"]["mean"])
    queue_best = min(bases, key=lambda name: bases[name]["queue"]["p99"])
    context = {"scenario": "demo", "load": 0.95, "jobs": len(workload.jobs)}
    figure(
        "whatif.useful_util_gain",
        ours["useful_util"] / bases[util_best]["useful_util"],
        unit="ratio",
        target=1.0,
        better="higher",
        gangsched=ours["useful_util"],
        best_baseline=util_best,
        baselines={name: s["useful_util"] for name, s in bases.items()},
        **context,
    )
    figure(
        "whatif.jct_ratio",
        ours["jct"]["mean"] / bases[jct_best]["jct"]["mean"],
        unit="ratio",
        target=1.0,
        better="lower",
        gangsched_s=ours["jct"]["mean"],
        best_baseline=jct_best,
        baselines_s={name: s["jct"]["mean"] for name, s in bases.items()},
        **context,
    )
    figure(
        "whatif.queue_p99_ratio",
        ours["queue"]["p99"] / max(bases[queue_best]["queue"]["p99"], 1e-9),
        unit="ratio",
        target=1.0,
        better="lower",
        gangsched_s=ours["queue"]["p99"],
        best_baseline=queue_best,
        baselines_s={name: s["queue"]["p99"] for name, s in bases.items()},
        **context,
    )
    unresolved = ours["deadlocks"]["unresolved"] + sum(len([d for d in r.deadlocks if d.end is None]) for r in big[:1])
    resolved = ours["deadlocks"]["scheduler"]["resolved"] + len(big[0].resolved)  # by the core itself
    figure(
        "whatif.deadlocks_unresolved", unresolved, unit="count", target=0, better="lower", resolved=resolved, **context
    )
