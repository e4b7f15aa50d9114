"""Emulator throughput: pod creates/s and pods/binding calls/s from one KubeClient (raw JSON, orjson, 64 requests
in flight), and create-to-watch-event latency. The API server runs in a separate process (as a real one would;
`python -m gangsched.sim.apiserver`), and, side by side for comparison, in-process with the client."""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import figure, log
from gangsched.k8s.client import KubeClient
from gangsched.sim.apiserver import ApiServer

PODS = "/api/v1/namespaces/default/pods"
CONCURRENCY = 64
N_PODS = 2000
RUNS = 5
LATENCY_SAMPLES = 200


def _pod(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"bench": "yes"}},
        "spec": {
            "schedulerName": "gangsched",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
        },
    }


async def _bounded(n: int, fn: Any) -> float:
    """Run fn(i) for i in range(n) with CONCURRENCY in flight; returns the rate per second."""
    queue = iter(range(n))

    async def worker() -> None:
        for i in queue:
            await fn(i)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return n / (time.perf_counter() - t0)


async def _rates(kube: KubeClient, run: int) -> tuple[float, float]:
    prefix = f"r{run}-"
    create = await _bounded(N_PODS, lambda i: kube.create(PODS, _pod(f"{prefix}{i}")))
    bind = await _bounded(
        N_PODS,
        lambda i: kube.create(
            f"{PODS}/{prefix}{i}/binding", {"metadata": {"name": f"{prefix}{i}"}, "target": {"name": f"node-{i % 50}"}}
        ),
    )
    return create, bind


async def _latency(kube: KubeClient) -> list[float]:
    rv = (await kube.get(PODS, params={"limit": "1"}))["metadata"]["resourceVersion"]
    sent: dict[str, float] = {}
    samples: list[float] = []
    done = asyncio.Event()

    async def watch() -> None:
        async for kind, obj in kube.watch(
            PODS, resource_version=rv, timeout_seconds=120, params={"labelSelector": "lat=yes"}
        ):
            if kind == "ADDED":
                samples.append(time.perf_counter() - sent[obj["metadata"]["name"]])
                if len(samples) >= LATENCY_SAMPLES:
                    done.set()
                    return

    task = asyncio.create_task(watch())
    await asyncio.sleep(0.2)  # let the watch request reach the server before timing starts (bench only)
    for i in range(LATENCY_SAMPLES):
        body = _pod(f"lat-{i}")
        body["metadata"]["labels"] = {"lat": "yes"}
        sent[body["metadata"]["name"]] = time.perf_counter()
        await kube.create(PODS, body)
    await asyncio.wait_for(done.wait(), 30)
    task.cancel()
    return samples


async def _measure(kubeconfig: Path) -> dict[str, Any]:
    async with await KubeClient.connect(str(kubeconfig), max_connections=CONCURRENCY) as kube:
        await _bounded(200, lambda i: kube.create(PODS, _pod(f"warm-{i}")))  # warm-up
        creates, binds = [], []
        for run in range(RUNS):
            c, b = await _rates(kube, run)
            creates.append(c)
            binds.append(b)
        lat = await _latency(kube)
    return {"create": creates, "bind": binds, "latency": lat}


def _subprocess_server(tmp: Path) -> tuple[subprocess.Popen[str], Path]:
    kubeconfig = tmp / "sub.kubeconfig"
    env = dict(os.environ)
    operator_dir = str(Path(__file__).resolve().parent.parent / "operator")
    env["PYTHONPATH"] = operator_dir + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gangsched.sim.apiserver", "--kubeconfig", str(kubeconfig), "--history-limit", "20000"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("http"):
        proc.kill()
        raise RuntimeError(f"the API server subprocess did not start: {line!r}")
    return proc, kubeconfig


async def _in_process(tmp: Path) -> dict[str, Any]:
    server = ApiServer(history_limit=20000)
    await server.start()
    try:
        return await _measure(server.write_kubeconfig(tmp / "inproc.kubeconfig"))
    finally:
        await server.stop()


def _report(
    name: str, samples: list[float], *, unit: str, target: float | None, better: str, scale: float = 1.0, **context: Any
) -> None:
    scaled = [s * scale for s in samples]
    figure(
        name,
        statistics.median(scaled),
        unit=unit,
        target=target,
        better=better,
        min=round(min(scaled), 3),
        max=round(max(scaled), 3),
        runs=len(scaled),
        **context,
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        proc, kubeconfig = _subprocess_server(tmp)
        try:
            sub = asyncio.run(_measure(kubeconfig))
        finally:
            proc.terminate()
            proc.wait(10)
        log("emulator: server in a separate process done; now in-process for comparison")
        inproc = asyncio.run(_in_process(tmp))
    ctx = {"pods": N_PODS, "concurrency": CONCURRENCY, "server": "subprocess"}
    _report(
        "emulator.create_rate",
        sub["create"],
        unit="pods/s",
        target=None,
        better="higher",
        in_process_median=round(statistics.median(inproc["create"]), 1),
        **ctx,
    )
    _report(
        "emulator.bind_rate",
        sub["bind"],
        unit="bindings/s",
        target=1500,
        better="higher",
        in_process_median=round(statistics.median(inproc["bind"]), 1),
        **ctx,
    )
    _report(
        "emulator.watch_latency_ms",
        sub["latency"],
        unit="ms",
        target=None,
        better="lower",
        scale=1000.0,
        in_process_median=round(statistics.median(inproc["latency"]) * 1000, 3),
        latency_samples=LATENCY_SAMPLES,
        server="subprocess",
    )
    checks, files = _conformance_checks()
    figure(
        "emulator.conformance_checks",
        checks,
        unit="tests",
        target=None,
        better="higher",
        files=files,
        suite="tests/conformance: each test names the kube-apiserver behaviour it checks",
    )


def _conformance_checks() -> tuple[int, int]:
    """How many conformance tests there are (collected by pytest, not run), and in how many files."""
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests/conformance"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    ).stdout
    per_file: dict[str, int] = {}  # with the project's `-q` addopts, `-q` again prints "path: count" per file
    for line in out.splitlines():
        path, _, count = line.rpartition(": ")
        if path.startswith("tests/conformance/") and count.isdigit():
            per_file[path] = int(count)
    return sum(per_file.values()), len(per_file)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
