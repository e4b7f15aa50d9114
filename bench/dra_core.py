"""The DRA figure of the core group (bench/bench_core.py calls it): core.dra_gang1000_ms.

A 1,000-pod gang (a PodGroup), each pod with its own claim of 8 GPUs (class gpu.nvidia.com and one selector,
memory >= 80Gi), on 5,000 nodes publishing one ResourceSlice of 8 GPUs each as `gangsched sim serve --dra`'s
driver does (40,000 devices), fed through the operator's cache (state/dra.py). The figure is the whole gang
decision, `schedule()`: the placement on the per-node free device counts, then each member's claims allocated
on its node in the gang's transaction. Warm: the capacity indexes, the allocator's candidate lists and CEL
results kept between runs (they change with the slices, not the pods); cold: the first decision. Beside it:
`first_flush_ms` (the cache's first DRA flush: claims' demand, per-node counts, the DeviceState),
`devices_only_fit_take_ms` (the device side alone, fit + take on the chosen nodes), `cel_runtime_load_ms`
(importing celpy and building its parser, once per process) and the load average.
"""

from __future__ import annotations

import os
import statistics
import time
from fractions import Fraction

from bench.bench_core import _node, _pod
from bench.common import figure, summary
from gangsched.core.cycle.scheduler import schedule
from gangsched.core.devices import (
    Allocator,
    AttrValue,
    CelCache,
    Claim,
    Device,
    DeviceBook,
    DeviceClass,
    DeviceRequest,
    ExactRequest,
    Inventory,
    ResourceSlice,
)
from gangsched.core.fit.capacity import Workspace
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.sim.dra import driver
from gangsched.state.cache import ClusterCache
from gangsched.state.dra_feed import flush_devices

GPU = "gpu.nvidia.com"
SELECTOR = f'device.capacity["{GPU}"].memory.compareTo(quantity("80Gi")) >= 0'
NODES, PODS, PER_NODE = 5000, 1000, 8


def _slices() -> list[ResourceSlice]:
    out = []
    for n in range(NODES):
        node = f"node-{n:05d}"
        devices = tuple(
            Device(
                f"gpu-{g}",
                {
                    "model": AttrValue("string", "H100"),
                    "clique": AttrValue("string", f"clique-{n // 18}"),
                    "pcieRoot": AttrValue("string", f"pci0000:{g // 2:02x}"),
                    "driverVersion": AttrValue("version", "570.86.15"),
                },
                {"memory": Fraction(80 * 2**30)},
            )
            for g in range(PER_NODE)
        )
        out.append(ResourceSlice(f"{node}-gpu", GPU, node, node_name=node, devices=devices))
    return out


def _claims() -> dict[str, Claim]:
    req = ExactRequest("gpus", GPU, (SELECTOR,), count=PER_NODE)
    return {f"bench/pod-{i}-gpus": Claim(f"bench/pod-{i}-gpus", (DeviceRequest("gpus", req),)) for i in range(PODS)}


def _decide(alloc: Allocator, specs: dict[str, Claim], ws: Workspace) -> float:
    book = DeviceBook()
    t0 = time.perf_counter()
    mark = ws.begin()
    for i, key in enumerate(specs):
        fit = book.fit(alloc, f"node-{i * (NODES // PODS):05d}", {}, [key], specs)
        assert fit.fits, fit.reason
        ws.take_devices(book, fit)
    elapsed = (time.perf_counter() - t0) * 1000
    assert len(book.in_use) == PODS * PER_NODE
    ws.rollback(mark)
    assert not book.in_use
    return elapsed


def _wired_cluster() -> tuple[ClusterCache, float]:
    """5,000 DRA nodes (8 H100s each as the simulated driver publishes them, no nvidia.com/gpu), and a PodGroup of
    1,000 pods each with its own template claim of 8 GPUs (one selector), through the operator's cache; the time
    of the first DRA flush (claims' demand, per-node free counts of 40,000 devices, the DeviceState) beside."""
    cache = ClusterCache(scheduler_name="gangsched")
    for n in range(NODES):
        node = _node(n)
        del node["status"]["allocatable"]["nvidia.com/gpu"]
        cache.on_node(None, node)
        cache.on_resource_slice(None, driver.resource_slice(f"node-{n:05d}", PER_NODE, clique=f"rack-{n // 18}"))
    cache.on_device_class(None, driver.device_class())
    pg = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup"}
    pg["metadata"] = {"name": "big", "namespace": "bench", "uid": "pg-big", "generation": 1}
    cache.on_podgroup(None, {**pg, "spec": {"minMember": PODS}})
    exactly = {"deviceClassName": GPU, "count": PER_NODE, "selectors": [{"cel": {"expression": SELECTOR}}]}
    for i in range(PODS):
        name = f"big-{i}"
        ref = [{"apiVersion": "v1", "kind": "Pod", "name": name, "uid": f"uid-bench-{name}", "controller": True}]
        claim = {
            "metadata": {"name": f"{name}-gpus", "namespace": "bench", "ownerReferences": ref},
            "spec": {"devices": {"requests": [{"name": "gpus", "exactly": exactly}]}},
        }
        cache.on_resource_claim(None, claim)
        obj = _pod(name, gpu=0)
        obj["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "big"
        obj["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "eight"}]
        obj["status"]["resourceClaimStatuses"] = [{"name": "gpus", "resourceClaimName": f"{name}-gpus"}]
        cache.on_pod_event("ADDED", obj)
    t0 = time.perf_counter()
    flush_devices(cache)
    return cache, (time.perf_counter() - t0) * 1000


def _whole_decision_ms(cache: ClusterCache) -> float:
    t0 = time.perf_counter()
    plan = schedule(cache.cluster, 0.0, SchedulerConfig())
    elapsed = (time.perf_counter() - t0) * 1000
    assert len(plan.bindings) == PODS and len(plan.device_fits) == PODS, len(plan.bindings)
    return elapsed


def bench_dra_gang1000() -> None:
    t0 = time.perf_counter()
    CelCache().compile("true")  # celpy's parser: built once per process, on the first selector
    cel_load = (time.perf_counter() - t0) * 1000
    cache, flush = _wired_cluster()
    cold = _whole_decision_ms(cache)  # capacity indexes, allocator candidates: first use
    samples = [_whole_decision_ms(cache) for _ in range(7)]  # schedule() is pure: the same decision, warm
    slices, specs = _slices(), _claims()
    classes = {GPU: DeviceClass(GPU, (f'device.driver == "{GPU}"',))}
    alloc = Allocator(Inventory(slices), classes, CelCache())
    ws = Workspace(SchedulerState().store, spread=False)
    _decide(alloc, specs, ws)
    devices_only = statistics.median([_decide(alloc, specs, ws) for _ in range(5)])
    figure(
        "core.dra_gang1000_ms",
        statistics.median(samples),
        unit="ms",
        target=50,
        better="lower",
        cold_first_decision_ms=round(cold, 2),
        first_flush_ms=round(flush, 2),
        devices_only_fit_take_ms=round(devices_only, 2),
        cel_runtime_load_ms=round(cel_load, 2),
        load_average_1m=round(os.getloadavg()[0], 2),  # the machine's load while measuring (2 cores shared)
        covers="the whole gang decision (schedule(): placement, per-node device counts, allocation of 1000 claims)",
        **summary(samples),
    )
