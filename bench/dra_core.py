"""The DRA figure of the core group (bench/bench_core.py calls it): core.dra_gang1000_ms.

A 1,000-pod gang, each pod with its own claim of 8 GPUs (class gpu.nvidia.com and one selector, memory >= 80Gi),
on 5,000 nodes publishing one ResourceSlice of 8 GPUs each (40,000 devices: model, a clique per rack of 18 nodes,
a PCIe root per pair, memory as a capacity). Not wired into the gang placement yet, the figure covers the device
side of the decision: per pod, `DeviceBook.fit` on the node the placement chose (the per-node fit check:
selectors, availability, allocation) and `Workspace.take_devices` (the tentative take). Warm: Allocator,
candidate lists and CEL results kept between runs (they change with the slices, not the pods); cold: the first
decision on a fresh Inventory, Allocator and CelCache. Beside it: `cel_runtime_load_ms` (importing celpy and
building its parser, once per process), `scan_5000_nodes_ms` (one pod's fit check on every node, 4,000 of them
seen for the first time) and the load average.
"""

from __future__ import annotations

import os
import statistics
import time
from fractions import Fraction

from bench.common import figure, summary
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


def bench_dra_gang1000() -> None:
    slices, specs = _slices(), _claims()
    t0 = time.perf_counter()
    CelCache().compile("true")  # celpy's parser: built once per process, on the first selector
    cel_load = (time.perf_counter() - t0) * 1000
    classes = {GPU: DeviceClass(GPU, (f'device.driver == "{GPU}"',))}
    ws = Workspace(SchedulerState().store, spread=False)
    t0 = time.perf_counter()
    alloc = Allocator(Inventory(slices), classes, CelCache())
    build = (time.perf_counter() - t0) * 1000
    cold = _decide(alloc, specs, ws)
    samples = [_decide(alloc, specs, ws) for _ in range(7)]
    one = {"bench/one": next(iter(specs.values()))}
    book = DeviceBook()
    t0 = time.perf_counter()
    fitting = sum(book.fit(alloc, f"node-{n:05d}", {}, ["bench/one"], one).fits for n in range(NODES))
    scan = (time.perf_counter() - t0) * 1000
    assert fitting == NODES
    figure(
        "core.dra_gang1000_ms",
        statistics.median(samples),
        unit="ms",
        target=50,
        better="lower",
        cold_first_decision_ms=round(cold, 2),
        inventory_build_ms=round(build, 2),
        cel_runtime_load_ms=round(cel_load, 2),
        scan_5000_nodes_ms=round(scan, 2),
        load_average_1m=round(os.getloadavg()[0], 2),  # the machine's load while measuring (2 cores shared)
        covers="fit + take of 1000 pods' claims (8 GPUs, 1 selector) on their chosen nodes; placement not included",
        **summary(samples),
    )
