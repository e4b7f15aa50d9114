"""The operator end to end: 200 gangs of 8 pods (1,600 pods) created at once on 500 simulated nodes.

Three processes, as in a real deployment: the emulator with its simulated kubelet (`gangsched sim serve`), the
operator (`gangsched run --config FILE`, leader election on), and this process, which creates the objects,
watches the pods and measures. Keeping them apart means the operator's CPU time is its own and its memory is
its process's RSS (read from /proc/PID/status).

Per run (a fresh namespace each; earlier runs' pods stay bound, as in a busy cluster; each phase starts once the
previous one has settled: pods Running, PodGroups Running):
1. raw: 1,600 pods for another scheduler, then bound from a bare KubeClient with the operator's bind concurrency
   (`e2e.raw_bind_rate`: bindings/s the emulator accepts, measured in the same run, the kubelet running too);
2. e2e: 200 PodGroups (minMember 8), then their 1,600 pods (label scheduling.x-k8s.io/pod-group), created with
   the same concurrency while the operator process is stopped (SIGSTOP); SIGCONT then hands it the whole burst
   at once, as if every create had landed in the same instant (its watches queue the events on the server). A
   watch here records when each pod is first seen bound. `e2e.settle_s`: release (= last create) -> last pod
   seen bound, which includes ingesting the burst and deciding; `e2e.bind_rate`: pods bound / (last bind - first
   bind); `e2e.bind_ratio`: bind_rate / raw_bind_rate. (GANGSCHED_E2E_FLOW=pods-first instead keeps the operator
   running and creates the pods first, then the PodGroups, which release the gangs; the pods meanwhile get
   PodScheduled=False WaitingForPodGroup.)
Figures are medians over RUNS runs, with min/max. `operator.rss_mb`: the operator's RSS after the last run.
`e2e.operator_cpu_ms_per_pod` and `e2e.emulator_cpu_ms_per_pod` (CPU seconds from /proc/PID/stat, from the first
PodGroup create until the run settled) are the figures to compare changes by on a shared machine: wall-clock rates
move with whatever else runs, CPU per pod hardly does.

Environment: GANGSCHED_E2E_RUNS (default 5); GANGSCHED_E2E_PROFILE=PATH runs the operator under cProfile and
writes the stats to PATH when it stops (for finding hot spots; the figures are then not representative).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from bench.common import figure, log
from gangsched.k8s.client import ApiError, KubeClient

NODES = 500
GANGS = 200
GANG_SIZE = 8
PODS = GANGS * GANG_SIZE
CONCURRENCY = 64  # the operator's default bindConcurrency; the bench's clients use the same
RUNS = int(os.environ.get("GANGSCHED_E2E_RUNS", "5"))
NODE_RESOURCES = "cpu=32,memory=256Gi,nvidia.com/gpu=8,pods=110"
PG = "/apis/scheduling.x-k8s.io/v1alpha1"
SETTLE_TIMEOUT = 60.0
FLOW = os.environ.get("GANGSCHED_E2E_FLOW", "paused")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    env = dict(os.environ)
    operator_dir = str(Path(__file__).resolve().parent.parent / "operator")
    env["PYTHONPATH"] = operator_dir + os.pathsep + env.get("PYTHONPATH", "")
    env["GANGSCHED_LOG_LEVEL"] = "WARNING"
    return env


def _start_emulator(tmp: Path) -> tuple[subprocess.Popen[str], Path]:
    kubeconfig = tmp / "sim.kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gangsched",
            "sim",
            "serve",
            "--nodes",
            str(NODES),
            "--node-resources",
            NODE_RESOURCES,
            "--port",
            "0",
            "--kubeconfig",
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        stderr=(tmp / "sim.log").open("w"),
        text=True,
        env=_env(),
    )  # the emulator's log goes to a file: it reports every watch cut at shutdown
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    for line in proc.stdout:
        if line.startswith("kubeconfig written"):
            return proc, kubeconfig
        if time.monotonic() > deadline:
            break
    proc.kill()
    raise RuntimeError("the emulator (gangsched sim serve) did not start")


def _start_operator(tmp: Path, kubeconfig: Path) -> tuple[subprocess.Popen[str], int]:
    probe_port, metrics_port = _free_port(), _free_port()
    _PROBE["metrics"] = metrics_port
    config = tmp / "operator.yaml"
    config.write_text(
        "namespace: default\n"
        f"bindConcurrency: {CONCURRENCY}\n"
        f"probesPort: {probe_port}\n"
        f"metricsPort: {metrics_port}\n"
        "leaderElection: {enabled: true}\n"
    )
    command = [sys.executable, "-m", "gangsched", "run", "--kubeconfig", str(kubeconfig), "--config", str(config)]
    profile = os.environ.get("GANGSCHED_E2E_PROFILE")
    if profile:
        command = [
            sys.executable,
            "-m",
            "cProfile",
            "-o",
            profile,
            "-m",
            "gangsched",
            "run",
            "--kubeconfig",
            str(kubeconfig),
            "--config",
            str(config),
        ]
    return subprocess.Popen(command, env=_env(), text=True), probe_port


async def _wait_leader(proc: subprocess.Popen[str], probe_port: int) -> None:
    """Poll the operator's probe endpoint until it reports that it leads (a real condition, with a deadline)."""
    deadline = time.monotonic() + 60
    async with aiohttp.ClientSession() as http:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the operator exited with {proc.returncode}")
            try:
                async with http.get(f"http://127.0.0.1:{probe_port}/healthz") as resp:
                    body = await resp.json(content_type=None)
                    if resp.status == 200 and (body.get("scheduler") or {}).get("leader"):
                        return
            except (aiohttp.ClientError, ValueError):
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError("the operator did not become leader within 60s")


def _pod(name: str, *, namespace: str, group: str | None, scheduler: str) -> dict[str, Any]:
    labels = {"scheduling.x-k8s.io/pod-group": group} if group else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
                }
            ],
        },
    }


async def _bounded(items: list[Any], fn: Any) -> float:
    """Run fn(item) for every item with CONCURRENCY in flight; returns the perf_counter when the last one ended."""
    it = iter(items)

    async def worker() -> None:
        for item in it:
            await fn(item)

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return time.perf_counter()


async def _namespace(kube: KubeClient, name: str) -> None:
    await kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


async def _raw_bind_rate(kube: KubeClient, run: int) -> dict[str, float]:
    ns = f"raw-{run}"
    await _namespace(kube, ns)
    names = [f"raw-{i}" for i in range(PODS)]
    await _bounded(
        names,
        lambda n: kube.create(f"/api/v1/namespaces/{ns}/pods", _pod(n, namespace=ns, group=None, scheduler="nobody")),
    )
    t0, cpu0 = time.perf_counter(), _cpu()
    end = await _bounded(
        list(enumerate(names)),
        lambda item: kube.create(
            f"/api/v1/namespaces/{ns}/pods/{item[1]}/binding",
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": item[1], "namespace": ns},
                "target": {"apiVersion": "v1", "kind": "Node", "name": f"node-{item[0] % NODES}"},
            },
        ),
    )
    cpu = _cpu_delta(cpu0)
    return {"rate": PODS / (end - t0), "emulator_cpu_ms_per_pod": cpu["emulator"] * 1000 / PODS}


class _BindWatch:
    """Watches one namespace's pods; records when each is first seen with spec.nodeName."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        self.kube = kube
        self.path = f"/api/v1/namespaces/{namespace}/pods"
        self.bound_at: dict[str, float] = {}
        self.all_bound = asyncio.Event()
        self.started = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        listing = await self.kube.get(self.path)
        rv = listing["metadata"]["resourceVersion"]
        self.task = asyncio.create_task(self._run(rv))

    async def _run(self, rv: str) -> None:
        while True:
            try:
                async for kind, obj in self.kube.watch(self.path, resource_version=rv, timeout_seconds=300):
                    meta = obj.get("metadata") or {}
                    rv = meta.get("resourceVersion") or rv
                    if kind in ("ADDED", "MODIFIED") and (obj.get("spec") or {}).get("nodeName"):
                        name = meta["name"]
                        if name not in self.bound_at:
                            self.bound_at[name] = time.perf_counter()
                            if len(self.bound_at) >= PODS:
                                self.all_bound.set()
                                return
            except ApiError as exc:
                log(f"bench watch restarted: {exc}")

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()


async def _e2e(kube: KubeClient, run: int) -> dict[str, float]:
    ns = f"e2e-{run}"
    await _namespace(kube, ns)
    watch = _BindWatch(kube, ns)
    await watch.start()
    pgs = [
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": f"g{g}", "namespace": ns},
            "spec": {"minMember": GANG_SIZE},
        }
        for g in range(GANGS)
    ]
    pods = [
        _pod(f"g{g}-{i}", namespace=ns, group=f"g{g}", scheduler="gangsched")
        for g in range(GANGS)
        for i in range(GANG_SIZE)
    ]
    pod_path, pg_path = f"/api/v1/namespaces/{ns}/pods", f"{PG}/namespaces/{ns}/podgroups"
    requests0 = await _operator_requests()
    first_create = time.perf_counter()
    if FLOW == "paused":
        # The operator is stopped (SIGSTOP) while the PodGroups and then their pods are created, in the order a job
        # controller uses; SIGCONT hands it the whole burst at once (queued on its watches by the server).
        os.kill(_PIDS["operator"], signal.SIGSTOP)
        try:
            await _bounded(pgs, lambda body: kube.create(pg_path, body))
            pods_created = await _bounded(pods, lambda body: kube.create(pod_path, body))
        finally:
            early = len(watch.bound_at)
            pg_start, cpu0 = time.perf_counter(), _cpu()
            last_create = pg_start
            os.kill(_PIDS["operator"], signal.SIGCONT)
    else:
        # pods-first: the pods wait for their PodGroup (a gang named by label has no spec until it exists), so the
        # 200 PodGroups created next release all 200 gangs at once.
        pods_created = await _bounded(pods, lambda body: kube.create(pod_path, body))
        early = len(watch.bound_at)
        pg_start, cpu0 = time.perf_counter(), _cpu()
        last_create = await _bounded(pgs, lambda body: kube.create(pg_path, body))
    try:
        await asyncio.wait_for(watch.all_bound.wait(), SETTLE_TIMEOUT)
    except TimeoutError:
        raise RuntimeError(
            f"run {run}: only {len(watch.bound_at)} of {PODS} pods bound within {SETTLE_TIMEOUT}s"
        ) from None
    finally:
        watch.stop()
    cpu = _cpu_delta(cpu0)
    await _quiet(kube, ns, podgroups=True)
    cpu_all = _cpu_delta(cpu0)
    requests_now = await _requests_settled()
    by_verb = {verb: requests_now.get(verb, 0) - requests0.get(verb, 0) for verb in requests_now}
    requests = sum(by_verb.values())
    times = sorted(watch.bound_at.values())
    first_bind, last_bind = times[0], times[-1]
    return {
        "settle_s": last_bind - last_create,
        "bind_rate": PODS / (last_bind - first_bind),
        "first_bind_s": first_bind - last_create,
        "pods_create_s": pods_created - first_create,
        "podgroups_create_s": last_create - pg_start,
        "bound_before_podgroups": early,
        "bound_by_last_create": sum(1 for t in times if t <= last_create),
        # CPU from the first PodGroup create to the last bind, and to the end of the run's writes (settled)
        "operator_cpu_ms_per_pod": cpu["operator"] * 1000 / PODS,
        "emulator_cpu_ms_per_pod": cpu["emulator"] * 1000 / PODS,
        "operator_cpu_ms_per_pod_settled": cpu_all["operator"] * 1000 / PODS,
        "emulator_cpu_ms_per_pod_settled": cpu_all["emulator"] * 1000 / PODS,
        "api_requests_per_pod": requests / PODS,
        **{f"api_{verb.lower()}_per_pod": n / PODS for verb, n in sorted(by_verb.items())},
    }


async def _quiet(kube: KubeClient, ns: str, *, podgroups: bool) -> None:
    """Wait until the namespace has settled (a real condition, polled with a deadline): every pod Running (the
    kubelet is done) and, with podgroups, every PodGroup's status phase Running (the operator's writes are done),
    so that the next measurement does not pay for this one's tail."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while time.monotonic() < deadline:
        done = True
        if podgroups:  # the small list first: while it is not done, the pods need not be listed
            groups = (await kube.get(f"{PG}/namespaces/{ns}/podgroups"))["items"]
            done = all((g.get("status") or {}).get("phase") == "Running" for g in groups)
        if done:
            pods = (await kube.get(f"/api/v1/namespaces/{ns}/pods"))["items"]
            done = all((p.get("status") or {}).get("phase") == "Running" for p in pods)
        if done:
            return
        await asyncio.sleep(0.2)
    raise RuntimeError(f"namespace {ns} did not settle within {SETTLE_TIMEOUT}s")


_PIDS: dict[str, int] = {}  # "operator" / "emulator" -> pid, for CPU accounting
_PROBE: dict[str, int] = {}  # "metrics" -> the operator's metrics port (gangsched_api_requests_total)


async def _requests_settled(timeout: float = 10.0) -> dict[str, int]:
    """The operator's request counts once its trailing writes (events, deferred statuses) are done: polled until
    they grow by no more than the lease's renewals (a get and an update every retryPeriod) over a second."""
    last = await _operator_requests()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await asyncio.sleep(1.0)
        now = await _operator_requests()
        if sum(now.values()) - sum(last.values()) <= 2:
            return now
        last = now
    return last


async def _operator_requests() -> dict[str, int]:
    """API requests the operator process has sent so far, by verb (its KubeClient's counter, from /metrics)."""
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{_PROBE['metrics']}/metrics") as resp:
        text = await resp.text()
    out: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("gangsched_api_requests_total{"):
            labels, _, value = line.rpartition(" ")
            verb = labels.partition('verb="')[2].partition('"')[0]
            out[verb] = out.get(verb, 0) + int(float(value))
    return out


def _cpu() -> dict[str, float]:
    """CPU seconds (user + system) used so far by the operator and the emulator processes."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for name, pid in _PIDS.items():
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        out[name] = (int(fields[11]) + int(fields[12])) / tick
    return out


def _cpu_delta(before: dict[str, float]) -> dict[str, float]:
    now = _cpu()
    return {name: now[name] - before[name] for name in before}


def _rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MiB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


async def _measure(kubeconfig: Path, operator: subprocess.Popen[str], probe_port: int) -> dict[str, Any]:
    await _wait_leader(operator, probe_port)
    raws: list[dict[str, float]] = []
    runs: list[dict[str, float]] = []
    async with await KubeClient.connect(str(kubeconfig), max_connections=CONCURRENCY) as kube:
        for run in range(RUNS):
            raws.append(await _raw_bind_rate(kube, run))
            await _quiet(kube, f"raw-{run}", podgroups=False)
            runs.append(await _e2e(kube, run))
            log(
                f"e2e run {run}: raw {raws[-1]['rate']:.0f}/s, "
                + ", ".join(f"{k} {v:.3f}" for k, v in runs[-1].items())
            )
    return {"raw": raws, "runs": runs}


def _stop(proc: subprocess.Popen[str], sig: int) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _report(name: str, samples: list[float], *, unit: str, target: float | None, better: str, **context: Any) -> None:
    figure(
        name,
        statistics.median(samples),
        unit=unit,
        target=target,
        better=better,
        min=round(min(samples), 4),
        max=round(max(samples), 4),
        runs=len(samples),
        **context,
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        emulator, kubeconfig = _start_emulator(tmp)
        operator = None
        try:
            operator, probe_port = _start_operator(tmp, kubeconfig)
            _PIDS.update(operator=operator.pid, emulator=emulator.pid)
            result = asyncio.run(_measure(kubeconfig, operator, probe_port))
            rss, hwm = _rss_mb(operator.pid)
        finally:
            if operator is not None:
                _stop(operator, signal.SIGINT)
            _stop(emulator, signal.SIGTERM)
    ctx = {
        "flow": FLOW,
        "gangs": GANGS,
        "gang_size": GANG_SIZE,
        "pods": PODS,
        "nodes": NODES,
        "concurrency": CONCURRENCY,
    }
    runs = result["runs"]
    raw_rates = [raw["rate"] for raw in result["raw"]]
    ratios = [r["bind_rate"] / raw for r, raw in zip(runs, raw_rates, strict=True)]

    def med(key: str, rows: list[dict[str, float]]) -> float:
        return round(statistics.median(r[key] for r in rows), 3)

    _report(
        "e2e.settle_s",
        [r["settle_s"] for r in runs],
        unit="s",
        target=None,
        better="lower",
        pods_create_s_median=round(statistics.median(r["pods_create_s"] for r in runs), 3),
        podgroups_create_s_median=round(statistics.median(r["podgroups_create_s"] for r in runs), 3),
        bound_by_last_create_median=statistics.median(r["bound_by_last_create"] for r in runs),
        **ctx,
    )
    _report("e2e.bind_rate", [r["bind_rate"] for r in runs], unit="pods/s", target=None, better="higher", **ctx)
    _report("e2e.raw_bind_rate", raw_rates, unit="bindings/s", target=None, better="higher", **ctx)
    _report("e2e.bind_ratio", ratios, unit="ratio", target=0.5, better="higher", **ctx)
    # CPU time is far less sensitive than wall time to other load on the machine: the figures to compare changes by
    _report(
        "e2e.operator_cpu_ms_per_pod",
        [r["operator_cpu_ms_per_pod_settled"] for r in runs],
        unit="ms",
        target=None,
        better="lower",
        until_last_bind_median=med("operator_cpu_ms_per_pod", runs),
        note="operator CPU from the first PodGroup create until the run settled (all writes done), per pod",
        **ctx,
    )
    _report(
        "e2e.emulator_cpu_ms_per_pod",
        [r["emulator_cpu_ms_per_pod_settled"] for r in runs],
        unit="ms",
        target=None,
        better="lower",
        until_last_bind_median=med("emulator_cpu_ms_per_pod", runs),
        raw_binding_median=med("emulator_cpu_ms_per_pod", result["raw"]),
        note="emulator CPU (API server + simulated kubelet) per pod: the operator's requests cost it this much",
        **ctx,
    )
    _report(
        "e2e.api_requests_per_pod",
        [r["api_requests_per_pod"] for r in runs],
        unit="requests",
        target=2.5,
        better="lower",
        **{
            k + "_median": round(statistics.median(r.get(k, 0.0) for r in runs), 3)
            for k in sorted({k for r in runs for k in r})
            if k.startswith("api_") and k != "api_requests_per_pod"
        },
        note="every API request the operator sent (its client's counter: binds, status and "
        "condition patches, events, lease, lists, watches) from the PodGroups' creation until the run settled, "
        "per pod bound",
        **ctx,
    )
    figure(
        "operator.rss_mb",
        rss,
        unit="MiB",
        target=None,
        better="lower",
        peak_mb=round(hwm, 1),
        pods_in_cluster=2 * PODS * RUNS,
        **ctx,
    )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
