"""The PodTopologySpread figure of the core group (bench/bench_core.py calls it): core.spread_gang256_ms, the
decision for a 256-pod gang with a DoNotSchedule zone spread constraint (maxSkew 1) on 5,000 nodes (4 zones) with
100k bound pods that match its selector (so the constraint counts every one of them)."""

from __future__ import annotations

import statistics
import time

from bench.bench_core import _cluster, _pod
from bench.common import figure, summary
from gangsched.core.cycle.scheduler import schedule
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec
from gangsched.models.pod import pod_from_api

ZONE = "topology.kubernetes.io/zone"
SPREAD = {
    "maxSkew": 1,
    "topologyKey": ZONE,
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "train"}},
}


def _spread_gang(c: SchedulerState, name: str, size: int) -> None:
    c.upsert_gang(GangSpec("bench", name, size))
    for r in range(size):
        obj = _pod(f"{name}-{r}", gpu=1)
        obj["spec"]["topologySpreadConstraints"] = [SPREAD]
        c.upsert_pod(pod_from_api(obj, gang=f"bench/{name}", rank=r, ours=True, classes=c.classes))


def bench_spread_gang256() -> None:
    c = _cluster(5000)
    for i in range(100_000):  # 20 per node, same namespace and labels as the gang: every one counts
        c.upsert_pod(
            pod_from_api(
                _pod(f"bound-{i}", gpu=0, node=f"node-{i % 5000:05d}"), gang=None, ours=False, classes=c.classes
            )
        )
    _spread_gang(c, "spread", 256)
    config = SchedulerConfig()
    t0 = time.perf_counter()
    plan = schedule(c, 0.0, config)
    cold = (time.perf_counter() - t0) * 1000
    zones: dict[str, int] = {}
    for _, node in plan.bindings:
        zone = c.nodes[node].labels[ZONE]
        zones[zone] = zones.get(zone, 0) + 1
    assert len(plan.bindings) == 256 and max(zones.values()) - min(zones.values()) <= 1, zones
    samples = []
    for _ in range(7):
        t0 = time.perf_counter()
        schedule(c, 0.0, config)
        samples.append((time.perf_counter() - t0) * 1000)
    figure(
        "core.spread_gang256_ms",
        statistics.median(samples),
        unit="ms",
        target=100,
        better="lower",
        cold_first_decision_ms=round(cold, 2),
        per_zone=sorted(zones.values()),
        **summary(samples),
    )
