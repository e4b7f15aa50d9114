"""Benchmark of preferred inter-pod affinity (core/fit/pod_score.py, core/placement/score_place.py):
core.prefaffinity_gang256_ms, a 256-pod gang preferring the zone of a cache (preferred pod affinity on the zone, weight
50) and avoiding its own members per node (preferred anti-affinity on the hostname, weight 10), on 5,000 nodes running
100k pods of which the 25k in zone-1 are the cache."""

from __future__ import annotations

import statistics
import time
from collections import Counter

from bench.bench_core import _cluster, _pod
from bench.common import figure, summary
from gangsched.core.cycle.scheduler import schedule
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec
from gangsched.models.pod import pod_from_api

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
PREFER = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": ZONE}}
        ]
    },
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "pref"}}, "topologyKey": HOST}}
        ]
    },
}


def bench_preferred_gang256() -> None:
    c = _cluster(5000)
    for i in range(100_000):  # node i % 5000 is in zone-(i % 4): the pods of zone-1 are the cache
        obj = _pod(f"bound-{i}", gpu=0, namespace="bench", node=f"node-{i % 5000:05d}")
        obj["metadata"]["labels"] = {"app": "cache" if i % 4 == 1 else "other"}
        c.upsert_pod(pod_from_api(obj, gang=None, ours=False, classes=c.classes))
    c.upsert_gang(GangSpec("bench", "pref", 256))
    for r in range(256):
        obj = _pod(f"pref-{r}", gpu=1)
        obj["metadata"]["labels"] = {"app": "pref"}
        obj["spec"]["affinity"] = PREFER
        c.upsert_pod(pod_from_api(obj, gang="bench/pref", rank=r, ours=True, classes=c.classes))
    config = SchedulerConfig()
    t0 = time.perf_counter()
    plan = schedule(c, 0.0, config)
    cold = (time.perf_counter() - t0) * 1000
    zones = Counter(c.nodes[node].labels[ZONE] for _, node in plan.bindings)
    assert zones == {"zone-1": 256}, zones
    assert len({node for _, node in plan.bindings}) == 256, "one member per node (binpacking alone: 8 per node)"
    samples = []
    for _ in range(7):
        t0 = time.perf_counter()
        schedule(c, 0.0, config)
        samples.append((time.perf_counter() - t0) * 1000)
    figure(
        "core.prefaffinity_gang256_ms",
        statistics.median(samples),
        unit="ms",
        target=100,
        better="lower",
        cold_first_decision_ms=round(cold, 2),
        nodes=5000,
        bound=100_000,
        **summary(samples),
    )
