"""The simulated kubelet: how fast bound pods go Running (and, with a duration annotation, Succeeded).

Figures: `sim.kubelet_start_rate` (pods/s from the kubelet's start to every one of 1,600 bound pods Running,
median of runs) and `sim.kubelet_finish_rate` (pods/s for 1,600 pods with a 100ms duration to all reach Succeeded
after starting). Each run uses a fresh emulator on loopback, in this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import figure, log
from gangsched.k8s.client import KubeClient
from gangsched.sim.apiserver import ApiServer
from gangsched.sim.cluster import create_nodes
from gangsched.sim.kubelet import SimKubelet

PODS = 1600
NODES = 40
RUNS = 3


async def _bound_pods(client: KubeClient, *, annotations: dict[str, str]) -> None:
    limit = asyncio.Semaphore(64)

    async def one(i: int) -> None:
        name = f"p-{i}"
        body = {
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }
        async with limit:
            await client.create("/api/v1/namespaces/default/pods", body)
            await client.create(
                f"/api/v1/namespaces/default/pods/{name}/binding",
                {"metadata": {"name": name}, "target": {"kind": "Node", "name": f"node-{i % NODES}"}},
            )

    await asyncio.gather(*(one(i) for i in range(PODS)))


async def _wait_phase(client: KubeClient, phase: str) -> None:
    seen: set[str] = set()
    items, rv = await client.list_all("/api/v1/namespaces/default/pods")
    seen.update(p["metadata"]["name"] for p in items if p.get("status", {}).get("phase") == phase)
    while len(seen) < PODS:
        async for _kind, pod in client.watch(
            "/api/v1/namespaces/default/pods", resource_version=rv, timeout_seconds=60
        ):
            rv = pod["metadata"].get("resourceVersion", rv)
            if (pod.get("status") or {}).get("phase") == phase:
                seen.add(pod["metadata"]["name"])
                if len(seen) >= PODS:
                    return


async def _one_run(*, annotations: dict[str, str]) -> tuple[float, float]:
    server = ApiServer(history_limit=50_000, watch_queue_limit=50_000)
    await server.start(host="127.0.0.1", port=0)
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(server.write_kubeconfig(Path(tmp) / "kc"))
        client = await KubeClient.connect(kubeconfig)
        watcher = await KubeClient.connect(kubeconfig)
        try:
            await create_nodes(client, [f"node-{i}" for i in range(NODES)], {"cpu": "64", "pods": "110"})
            await _bound_pods(client, annotations=annotations)
            kubelet = SimKubelet(client)
            t0 = time.perf_counter()
            task = asyncio.create_task(kubelet.run())
            await _wait_phase(watcher, "Running")
            started = time.perf_counter() - t0
            finished = 0.0
            if annotations:
                t1 = time.perf_counter()
                await _wait_phase(watcher, "Succeeded")
                finished = time.perf_counter() - t1
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return started, finished
        finally:
            await client.close()
            await watcher.close()
            await server.stop()


def _rate(samples: list[float]) -> dict[str, Any]:
    return {
        "pods": PODS,
        "nodes": NODES,
        "runs": len(samples),
        "seconds_min": round(min(samples), 3),
        "seconds_median": round(statistics.median(samples), 3),
        "seconds_max": round(max(samples), 3),
    }


def main() -> None:
    starts, finishes = [], []
    for run in range(RUNS):
        started, _ = asyncio.run(_one_run(annotations={}))
        starts.append(started)
        log(f"simkubelet run {run}: {PODS} pods Running in {started:.3f}s")
    _, finished = asyncio.run(_one_run(annotations={"sim.gangsched.io/duration": "100ms"}))
    finishes.append(finished)
    figure(
        "sim.kubelet_start_rate",
        PODS / statistics.median(starts),
        unit="pods/s",
        target=None,
        better="higher",
        **_rate(starts),
    )
    figure(
        "sim.kubelet_finish_rate",
        PODS / statistics.median(finishes),
        unit="pods/s",
        target=None,
        better="higher",
        duration="100ms",
        **_rate(finishes),
    )


if __name__ == "__main__":
    main()
