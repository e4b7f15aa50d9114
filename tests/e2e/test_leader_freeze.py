"""A leader frozen mid-burst (SIGSTOP past the lease duration, then SIGCONT) never sends a binding, an eviction
or a status write after it resumes; a second replica takes over and completes the gangs.

Two real `gangsched run` processes against the in-process emulator, whose request log (sim/requestlog.py)
records every request with its User-Agent (`gangsched/<identity>`). The first leader is frozen by the request
log's listener at the exact moment its first binding arrives, so its other bindings are queued or in flight.
References: client-go `tools/leaderelection/leaderelection.go` (a follower takes over after LeaseDuration of its
own clock since it last saw the record change; the leader stops when it cannot renew within RenewDeadline);
kube-scheduler exits on losing its lease (`cmd/kube-scheduler/app/server.go`, OnStoppedLeading), gangsched
cancels its work and rebuilds as a follower; either way nothing decided before the pause is sent after it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gangsched.core.values.resources import parse_quantity
from gangsched.sim.requestlog import LoggedRequest
from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.test_cli_run import free_port, get_text
from tests.integration.harness import bound, create, eventually, pod, podgroup, pods

pytestmark = pytest.mark.e2e

LEASE = "/apis/coordination.k8s.io/v1/namespaces/default/leases/gangsched"
NODES, CPU, GANGS, SIZE = 6, 8, 12, 4


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=NODES, node_resources=f"cpu={CPU},memory=64Gi,pods=110") as c:
        yield c


def start(cluster: Cluster, tmp_path: Path, name: str) -> tuple[subprocess.Popen[bytes], int]:
    probes = free_port()
    config = tmp_path / f"{name}.yaml"
    config.write_text(
        f"namespace: default\nmetricsPort: {free_port()}\nprobesPort: {probes}\nbindConcurrency: 2\n"
        "leaderElection: {enabled: true, leaseDurationSeconds: 2, renewDeadlineSeconds: 1.5, retryPeriodSeconds: "
        "0.25}\n"
    )
    env = dict(os.environ, GANGSCHED_LOG_LEVEL=os.environ.get("FREEZE_LOG", "WARNING"), POD_NAME=name)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gangsched", "run", "--kubeconfig", cluster.kubeconfig, "--config", str(config)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    return proc, probes


async def readyz(port: int) -> dict[str, Any] | None:
    import orjson

    text = await get_text(f"http://127.0.0.1:{port}/readyz")
    return orjson.loads(text) if text else None


def is_write(r: LoggedRequest) -> bool:
    return r.method != "GET"


async def test_frozen_leader_sends_nothing_after_resuming_and_the_other_replica_completes(
    cluster: Cluster, tmp_path: Path
) -> None:
    log = cluster.server.requests
    log.enabled = True
    frozen, frozen_probes = start(cluster, tmp_path, "frozen")
    procs = [frozen]
    try:
        await eventually(lambda: readyz(frozen_probes), timeout=30, what="frozen's /readyz")
        await eventually(lambda: _leads(frozen_probes), timeout=30, what="frozen leads")
        standby, standby_probes = start(cluster, tmp_path, "standby")
        procs.append(standby)
        body = await eventually(lambda: readyz(standby_probes), timeout=30, what="standby's /readyz")
        assert body is not None and body["ready"] and not body["leader"]

        froze: list[int] = []

        def freeze_on_first_binding(r: LoggedRequest) -> None:
            if not froze and r.user_agent.startswith("gangsched/frozen-") and r.path.endswith("/binding"):
                os.kill(frozen.pid, signal.SIGSTOP)
                froze.append(len(log.entries))

        log.listeners.append(freeze_on_first_binding)
        k = cluster.client
        objs: list[dict[str, Any]] = []
        for g in range(GANGS):
            objs.append(podgroup(f"g{g}", min_member=SIZE))
            objs += [pod(f"g{g}-{i}", group=f"g{g}", cpu="1") for i in range(SIZE)]
        await create(k, *objs)
        await eventually(lambda: _true(bool(froze)), timeout=30, what="the leader frozen at its first binding")
        await eventually(lambda: _holder_is(k, "standby-"), timeout=30, what="standby takes the lease over")
        await eventually(lambda: _all_bound(k), timeout=60, what="every gang bound by the new leader")
        standby_bindings = [
            r for r in log.entries if r.user_agent.startswith("gangsched/standby-") and r.path.endswith("/binding")
        ]
        assert standby_bindings, "the burst was not cut: the frozen leader had sent every binding"

        resumed_at = len(log.entries)
        os.kill(frozen.pid, signal.SIGCONT)
        # it answers again, as a follower, and has read the Lease since resuming (twice: at least a retry period)
        await eventually(lambda: _follower(frozen_probes), timeout=30, what="the resumed replica is a ready follower")
        await eventually(
            lambda: _true(
                sum(
                    1
                    for r in log.entries[resumed_at:]
                    if r.user_agent.startswith("gangsched/frozen-") and r.path == LEASE
                )
                >= 2
            ),
            timeout=10,
            what="two Lease reads after resuming",
        )
        after = [r for r in log.entries[resumed_at:] if r.user_agent.startswith("gangsched/frozen-")]
        # no binding, eviction, status write or event (a Lease update is fenced by its resourceVersion: never here)
        assert [(r.method, r.path) for r in after if is_write(r)] == []
        # nothing over-committed, every pod bound once
        objs_now = await pods(k)
        used: dict[str, float] = {}
        for obj in objs_now.values():
            node = obj["spec"].get("nodeName")
            if node:
                used[node] = used.get(node, 0.0) + float(
                    parse_quantity(obj["spec"]["containers"][0]["resources"]["requests"]["cpu"], field="cpu")
                )
        assert all(v <= CPU for v in used.values()), used
        assert len(bound(objs_now)) == GANGS * SIZE
    finally:
        for proc in procs:
            with _suppress():
                os.kill(proc.pid, signal.SIGCONT)
            proc.terminate()
        for proc in procs:
            try:
                out, _ = await asyncio.to_thread(proc.communicate, timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            print(
                f"--- replica {proc.pid} (exit {proc.returncode}):\n{out.decode(errors='replace')[-5000:]}"
            )  # shown on failure
    assert [p.returncode for p in procs] == [0, 0]


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


async def _true(value: bool) -> bool:
    return value


async def _leads(port: int) -> bool:
    body = await readyz(port)
    return bool(body and body["leader"])


async def _follower(port: int) -> bool:
    body = await readyz(port)
    return bool(body and body["ready"] and not body["leader"])


async def _holder_is(k: Any, prefix: str) -> bool:
    lease = await k.get(LEASE)
    return str((lease.get("spec") or {}).get("holderIdentity") or "").startswith(prefix)


async def _all_bound(k: Any) -> bool:
    return len(bound(await pods(k))) == GANGS * SIZE
