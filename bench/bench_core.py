"""Benchmarks of the scheduling core: decision time, drain rate, independence from bound pods,
memory per cached pod and node, pod anti-affinity. Figures: core.gang1000_nodes5000_ms, core.drain_pods_per_s,
core.tree_gang1000_ms (bench/tree_core.py), core.bound100k_ratio, core.recheck_reserved1000_ms, core.bytes_per_pod,
core.bytes_per_node,
core.affinity_gang256_ms, core.spread_gang256_ms (bench/spread_core.py), core.deadlock_check_ms
(bench/deadlock_core.py), core.health_watched1000_ms (bench/health_core.py), core.prefaffinity_gang256_ms
(bench/prefaff_core.py), core.dra_gang1000_ms (bench/dra_core.py)."""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections import Counter
from typing import Any

from bench.common import figure, log, summary
from gangsched.core.cycle.scheduler import schedule
from gangsched.core.cycle.simulate import run_until_quiet
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode, GangSpec
from gangsched.models.node import node_from_api
from gangsched.models.pod import pod_from_api


def _node(i: int) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"node-{i:05d}",
            "labels": {
                "kubernetes.io/hostname": f"node-{i:05d}",
                "topology.kubernetes.io/zone": f"zone-{i % 4}",
                "node.kubernetes.io/instance-type": "p5.48xlarge",
                "kubernetes.io/os": "linux",
            },
        },
        "spec": {},
        "status": {
            "allocatable": {
                "cpu": "192",
                "memory": "2000Gi",
                "pods": "110",
                "nvidia.com/gpu": "8",
                "ephemeral-storage": "3500Gi",
            }
        },
    }


def _pod(name: str, *, gpu: int, namespace: str = "bench", node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "gangsched",
        "priority": 0,
        "containers": [
            {
                "name": "main",
                "image": "trainer:latest",
                "resources": {
                    "requests": {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": str(gpu)},
                    "limits": {"nvidia.com/gpu": str(gpu)},
                },
            }
        ],
    }
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{namespace}-{name}",
            "creationTimestamp": "2024-05-01T12:00:00Z",
            "labels": {"app": "train"},
        },
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def _cluster(nodes: int) -> SchedulerState:
    c = SchedulerState()
    for i in range(nodes):
        c.upsert_node(node_from_api(_node(i)))
    return c


def _gang(c: SchedulerState, name: str, size: int, *, gpu: int) -> None:
    c.upsert_gang(GangSpec("bench", name, size))
    for r in range(size):
        c.upsert_pod(
            pod_from_api(_pod(f"{name}-{r}", gpu=gpu), gang=f"bench/{name}", rank=r, ours=True, classes=c.classes)
        )


def _decision_ms(c: SchedulerState, config: SchedulerConfig, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        plan = schedule(c, 0.0, config)
        out.append((time.perf_counter() - t0) * 1000)
        assert plan.bindings, "the gang must fit"
    return out


def bench_gang1000() -> None:
    c = _cluster(5000)
    _gang(c, "big", 1000, gpu=8)
    config = SchedulerConfig()
    t0 = time.perf_counter()
    schedule(c, 0.0, config)
    cold = (time.perf_counter() - t0) * 1000
    samples = _decision_ms(c, config, 9)  # schedule() is pure: the same decision, capacity index warm
    figure(
        "core.gang1000_nodes5000_ms",
        statistics.median(samples),
        unit="ms",
        target=25,
        better="lower",
        cold_first_decision_ms=round(cold, 2),
        **summary(samples),
    )


def bench_drain() -> None:
    rates = []
    for _ in range(3):
        c = _cluster(5000)
        for g in range(1250):
            _gang(c, f"g{g:04d}", 8, gpu=1)
        config = SchedulerConfig(max_units_per_cycle=64)
        gc.collect()
        t0 = time.perf_counter()
        result = run_until_quiet(c, config, keep_plans=True)
        elapsed = time.perf_counter() - t0
        placed = len(result.bound)
        assert placed == 10_000, placed
        rates.append(placed / elapsed)
    c = _cluster(5000)
    for g in range(1250):
        _gang(c, f"g{g:04d}", 8, gpu=1)
    t0 = time.perf_counter()
    single = len(run_until_quiet(c, SchedulerConfig(max_units_per_cycle=1)).bound) / (time.perf_counter() - t0)
    figure(
        "core.drain_pods_per_s",
        statistics.median(rates),
        unit="pods/s",
        target=5000,
        better="higher",
        gangs=1250,
        gang_size=8,
        nodes=5000,
        min=round(min(rates)),
        max=round(max(rates)),
        runs=len(rates),
        max_units_per_cycle=64,
        one_unit_per_cycle_pods_per_s=round(single),
        note="includes cluster.apply and bind_succeeded",
    )


def bench_bound100k() -> None:
    empty = _cluster(5000)
    loaded = _cluster(5000)
    for c in (empty, loaded):
        _gang(c, "probe", 64, gpu=1)
    for i in range(100_000):  # 20 per node, using cpu/memory but no GPUs
        node = f"node-{i % 5000:05d}"
        obj = _pod(f"bound-{i}", gpu=0, namespace="other", node=node)
        loaded.upsert_pod(pod_from_api(obj, gang=None, ours=False, classes=loaded.classes))
    config = SchedulerConfig()
    a: list[float] = []
    b: list[float] = []
    for _ in range(7):  # side by side, interleaved
        a += _decision_ms(empty, config, 1)
        b += _decision_ms(loaded, config, 1)
    ratio = statistics.median(b) / statistics.median(a)
    figure(
        "core.bound100k_ratio",
        ratio,
        unit="x",
        target=1.2,
        better="lower",
        ms_0_bound=round(statistics.median(a), 3),
        ms_100k_bound=round(statistics.median(b), 3),
    )


def bench_recheck() -> None:
    """A cycle with nothing to decide while a NonStrict gang holds 1000 reservations: the cost of re-checking
    every reservation against its node and usage (core/cycle/recheck.py), paid by every cycle."""
    c = _cluster(1000)
    c.upsert_gang(GangSpec("bench", "wait", 1200, mode=GangMode.NON_STRICT))
    for r in range(1200):
        c.upsert_pod(pod_from_api(_pod(f"wait-{r}", gpu=8), gang="bench/wait", rank=r, ours=True, classes=c.classes))
    config = SchedulerConfig()
    c.apply(schedule(c, 0.0, config))
    held = sum(1 for key in c.pods if c.reservation_of(key) is not None)
    assert held == 1000, held
    samples = []
    for _ in range(21):
        t0 = time.perf_counter()
        plan = schedule(c, 0.5, config)  # (the gang is backed off: nothing but the re-check to do)
        samples.append((time.perf_counter() - t0) * 1000)
        assert not plan.releases
    figure(
        "core.recheck_reserved1000_ms",
        statistics.median(samples),
        unit="ms",
        target=5,
        better="lower",
    )


ANTI_HOSTNAME = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "anti256"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
}
ZONE_SPREAD = {
    "maxSkew": 1,
    "topologyKey": "topology.kubernetes.io/zone",
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "anti256"}},
}


def bench_affinity_gang256() -> None:
    """A 256-pod gang, one member per node (required anti-affinity on the hostname), on 5,000 nodes running
    100k pods, and a zone topologySpreadConstraint (maxSkew 1, DoNotSchedule) over the members. Run last: once a
    pod selector exists, every class of our pods carries its labels."""
    c = _cluster(5000)
    for i in range(100_000):
        obj = _pod(f"bound-{i}", gpu=0, namespace="other", node=f"node-{i % 5000:05d}")
        c.upsert_pod(pod_from_api(obj, gang=None, ours=False, classes=c.classes))
    c.upsert_gang(GangSpec("bench", "anti", 256))
    for r in range(256):
        obj = _pod(f"anti-{r}", gpu=1)
        obj["metadata"]["labels"] = {"app": "anti256"}
        obj["spec"]["affinity"] = ANTI_HOSTNAME
        obj["spec"]["topologySpreadConstraints"] = [ZONE_SPREAD]
        c.upsert_pod(pod_from_api(obj, gang="bench/anti", rank=r, ours=True, classes=c.classes))
    config = SchedulerConfig()
    t0 = time.perf_counter()
    plan = schedule(c, 0.0, config)
    cold = (time.perf_counter() - t0) * 1000
    assert len({node for _, node in plan.bindings}) == 256, "one member per node"
    zones = Counter(c.nodes[node].labels["topology.kubernetes.io/zone"] for _, node in plan.bindings)
    assert max(zones.values()) - min(zones.values()) <= 1, zones
    samples = _decision_ms(c, config, 9)
    figure(
        "core.affinity_gang256_ms",
        statistics.median(samples),
        unit="ms",
        target=100,
        better="lower",
        cold_first_decision_ms=round(cold, 2),
        nodes=5000,
        bound=100_000,
        **summary(samples),
    )


def _bytes_per(build: Any, n: int) -> float:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    keep = build(n)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del keep
    return (after - before) / n


def bench_memory() -> None:
    def pods(n: int) -> SchedulerState:
        c = _cluster(0)
        for g in range(n // 8):
            _gang(c, f"m{g:05d}", 8, gpu=1)
        return c

    def nodes(n: int) -> SchedulerState:
        return _cluster(n)

    pod_samples = [_bytes_per(pods, 16_000) for _ in range(3)]
    node_samples = [_bytes_per(nodes, 5_000) for _ in range(3)]
    figure(
        "core.bytes_per_pod",
        statistics.median(pod_samples),
        unit="bytes",
        target=2048,
        better="lower",
        note="PodRecord + SchedulerState indexes (gang membership, pending sets)",
    )
    figure("core.bytes_per_node", statistics.median(node_samples), unit="bytes", target=2048, better="lower")


def main() -> None:
    log("core: gang of 1000 on 5000 nodes")
    bench_gang1000()
    from bench.tree_core import bench_tree_gang1000  # (imports this module)

    log("core: a 1000-pod gang as a 3-level tree (20 leaf gangs) on 5000 nodes")
    bench_tree_gang1000()
    log("core: drain 1250 x 8")
    bench_drain()
    log("core: 0 vs 100k bound pods")
    bench_bound100k()
    log("core: a cycle with 1000 reservations held")
    bench_recheck()
    log("core: memory")
    bench_memory()
    log("core: anti-affine gang of 256 on 5000 nodes, 100k bound")
    bench_affinity_gang256()
    from bench.spread_core import bench_spread_gang256  # (imports this module)

    log("core: a 256-pod gang with a zone spread constraint, 100k matching bound pods")
    bench_spread_gang256()
    from bench.deadlock_core import bench_deadlock_check  # (imports this module)

    log("core: the deadlock step with 200 NonStrict gangs holding reservations")
    bench_deadlock_check()

    from bench.health_core import bench_health_watched1000  # (imports this module)

    log("core: runtime gang health, 1000 running gangs of 8 watched")
    bench_health_watched1000()

    from bench.prefaff_core import bench_preferred_gang256  # (imports this module)

    log("core: a 256-pod gang with preferred pod affinity (zone) and anti-affinity (hostname), 100k bound")
    bench_preferred_gang256()

    from bench.dra_core import bench_dra_gang1000

    log("core: DRA, a 1000-pod gang of 8-GPU claims on 5000 nodes' ResourceSlices (allocation and fit check)")
    bench_dra_gang1000()


if __name__ == "__main__":
    main()
