"""What a pod watch event costs: Kopf's per-object machinery vs the operator's lean reflector (k8s/reflector.py).

Why pods are watched by the reflector, not by Kopf (docs/architecture.md, "From a watch event to a binding").

Setup: a bare API server emulator in a subprocess (`python -m gangsched.sim.apiserver`). Each measurement gets
a fresh namespace and a consumer watching only it:
- kopf: `kopf.operator` with one `kopf.on.event` handler on pods (posting off, scanning off, no peering, quiet
  logging, unlimited queue workers, short idle timeout), counting pods seen in their final state;
- reflector: `Reflector` on the namespace's pods, its sink feeding the operator's real `ClusterCache`
  (the path production takes), counting the same.
Once the consumer has seen a sentinel pod (its watch is live), this process blocks its own event loop while a
producer subprocess makes PODS creates and then PODS label patches (N = 2 * PODS watch events); the server
queues them on the watch. Timing starts when the producer is done and ends when the consumer has seen every
pod's final state, so the figure is the consumer's own drain rate, not the producer's. Consumer CPU seconds per
event (process_time) are reported alongside.

Figures (medians of RUNS alternating runs): `ingest.kopf_events_per_s`, `ingest.reflector_events_per_s`,
`ingest.reflector_to_kopf_ratio`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import kopf

from bench.common import figure, log
from gangsched.k8s.client import KubeClient
from gangsched.k8s.reflector import Reflector
from gangsched.state.cache import ClusterCache

PODS = 1500
EVENTS = 2 * PODS
RUNS = int(os.environ.get("GANGSCHED_INGEST_RUNS", "3"))
CONCURRENCY = 64
DRAIN_TIMEOUT = 120.0
ROOT = Path(__file__).resolve().parent.parent


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "operator"), str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"step": "1", "scheduling.x-k8s.io/pod-group": f"g{int(name.rpartition('-')[2]) % 200}"},
        },
        "spec": {
            "schedulerName": "gangsched",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
        },
    }


async def _produce(kubeconfig: str, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods"
    async with await KubeClient.connect(kubeconfig, max_connections=CONCURRENCY) as kube:

        async def each(fn: Callable[[int], Awaitable[Any]]) -> None:
            it = iter(range(PODS))

            async def worker() -> None:
                for i in it:
                    await fn(i)

            await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))

        await each(lambda i: kube.create(path, _pod(f"p-{i}")))
        await each(lambda i: kube.patch(f"{path}/p-{i}", {"metadata": {"labels": {"step": "2"}}}))


def produce_main(kubeconfig: str, namespace: str) -> None:
    """Entry point of the producer subprocess."""
    asyncio.run(_produce(kubeconfig, namespace))


def _run_producer(kubeconfig: str, namespace: str) -> None:
    """Blocks the caller (and so its event loop) until the producer subprocess is done."""
    code = f"from bench.bench_ingest import produce_main; produce_main({kubeconfig!r}, {namespace!r})"
    subprocess.run([sys.executable, "-c", code], env=_env(), check=True, cwd=str(ROOT))


class _Tally:
    """Counts deliveries and the pods seen in their final state (label step=2)."""

    def __init__(self) -> None:
        self.delivered = 0
        self.final: set[str] = set()
        self.sentinel = asyncio.Event()
        self.done = asyncio.Event()

    def see(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        name = meta.get("name", "")
        if name == "sentinel":
            self.sentinel.set()
            return
        self.delivered += 1
        if (meta.get("labels") or {}).get("step") == "2":
            self.final.add(name)
            if len(self.final) >= PODS:
                self.done.set()


async def _timed_drain(kubeconfig: str, namespace: str, kube: KubeClient, tally: _Tally) -> dict[str, float]:
    await kube.create(
        f"/api/v1/namespaces/{namespace}/pods",
        {"metadata": {"name": "sentinel"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
    )
    await asyncio.wait_for(tally.sentinel.wait(), 30)
    _run_producer(kubeconfig, namespace)  # blocks this loop: the events queue up on the server's watch
    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.wait_for(tally.done.wait(), DRAIN_TIMEOUT)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {"rate": EVENTS / wall, "cpu_us": cpu / EVENTS * 1e6, "delivered": tally.delivered}


async def _namespace(kube: KubeClient, name: str) -> None:
    await kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


async def _reflector_run(kubeconfig: str, namespace: str) -> dict[str, float]:
    tally = _Tally()
    async with await KubeClient.connect(kubeconfig) as kube:
        await _namespace(kube, namespace)
        cache = ClusterCache(scheduler_name="gangsched")

        def on_event(kind: str, obj: dict[str, Any]) -> None:
            cache.on_pod_event(kind, obj)
            tally.see(obj)

        reflector = Reflector(
            kube, f"/api/v1/namespaces/{namespace}/pods", on_list=cache.on_pod_list, on_event=on_event
        )
        task = asyncio.create_task(reflector.run())
        try:
            await asyncio.wait_for(reflector.synced.wait(), 30)
            return await _timed_drain(kubeconfig, namespace, kube, tally)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def _kopf_settings(settings: kopf.OperatorSettings) -> None:
    settings.posting.enabled = False
    settings.scanning.disabled = True
    settings.queueing.worker_limit = None  # a worker per object, as many as needed
    settings.queueing.idle_timeout = 0.5
    settings.queueing.exit_timeout = 0.5
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330


async def _kopf_run(kubeconfig: str, namespace: str) -> dict[str, float]:
    tally = _Tally()
    async with await KubeClient.connect(kubeconfig) as kube:
        await _namespace(kube, namespace)
        registry = kopf.OperatorRegistry()
        s = kube.settings

        @kopf.on.login(registry=registry)
        def login(**_: Any) -> kopf.ConnectionInfo:
            return kopf.ConnectionInfo(
                server=s.server,
                ca_path=s.ca_path,
                insecure=not s.verify,
                token=s.token,
                certificate_path=s.cert_path,
                private_key_path=s.key_path,
            )

        @kopf.on.startup(registry=registry)
        def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
            _kopf_settings(settings)

        @kopf.on.event("", "v1", "pods", registry=registry)
        def pod_event(event: kopf.RawEvent, **_: Any) -> None:
            tally.see(cast(dict[str, Any], event["object"]))

        settings = kopf.OperatorSettings()
        _kopf_settings(settings)
        stop = asyncio.Event()
        task = asyncio.create_task(
            kopf.operator(
                registry=registry,
                settings=settings,
                namespaces=[namespace],
                clusterwide=False,
                standalone=True,
                stop_flag=stop,
            )
        )
        try:
            return await _timed_drain(kubeconfig, namespace, kube, tally)
        finally:
            stop.set()
            await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 30)


def _server(tmp: Path) -> tuple[subprocess.Popen[str], str]:
    kubeconfig = tmp / "ingest.kubeconfig"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gangsched.sim.apiserver", "--kubeconfig", str(kubeconfig), "--history-limit", "50000"],
        stdout=subprocess.PIPE,
        stderr=(tmp / "sim.log").open("w"),
        text=True,
        env=_env(),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("http"):
        proc.kill()
        raise RuntimeError(f"the API server subprocess did not start: {line!r}")
    return proc, str(kubeconfig)


def main() -> None:
    logging.getLogger("kopf").setLevel(logging.ERROR)
    results: dict[str, list[dict[str, float]]] = {"kopf": [], "reflector": []}
    with tempfile.TemporaryDirectory() as tmpdir:
        proc, kubeconfig = _server(Path(tmpdir))
        try:
            for run in range(RUNS):
                for name, fn in (("kopf", _kopf_run), ("reflector", _reflector_run)):
                    r = asyncio.run(fn(kubeconfig, f"{name}-{run}"))
                    results[name].append(r)
                    log(
                        f"ingest {name} run {run}: {r['rate']:.0f} events/s, {r['cpu_us']:.0f} us CPU/event, "
                        f"{r['delivered']:.0f} deliveries"
                    )
        finally:
            proc.terminate()
            proc.wait(10)
    ctx: dict[str, Any] = {"events": EVENTS, "pods": PODS, "runs": RUNS}

    def report(name: str, key: str) -> float:
        samples = [r["rate"] for r in results[key]]
        value = statistics.median(samples)
        figure(
            name,
            value,
            unit="events/s",
            target=None,
            better="higher",
            min=round(min(samples), 1),
            max=round(max(samples), 1),
            cpu_us_per_event=round(statistics.median(r["cpu_us"] for r in results[key]), 1),
            deliveries=statistics.median(r["delivered"] for r in results[key]),
            **ctx,
        )
        return value

    kopf_rate = report("ingest.kopf_events_per_s", "kopf")
    reflector_rate = report("ingest.reflector_events_per_s", "reflector")
    ratios = [r["rate"] / k["rate"] for r, k in zip(results["reflector"], results["kopf"], strict=True)]
    figure(
        "ingest.reflector_to_kopf_ratio",
        statistics.median(ratios),
        unit="ratio",
        target=None,
        better="higher",
        min=round(min(ratios), 2),
        max=round(max(ratios), 2),
        of_medians=round(reflector_rate / kopf_rate, 2),
        **ctx,
    )
