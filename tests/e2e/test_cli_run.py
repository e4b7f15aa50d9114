"""`gangsched run` as a user starts it: its own process, a kubeconfig, a config file; probes and metrics served."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from gangsched.sim.serve import Cluster, running_cluster
from tests.integration.harness import bound, create, eventually, pod, podgroup, pods

pytestmark = pytest.mark.e2e


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=2, node_resources="cpu=8,memory=32Gi,pods=110") as c:
        yield c


async def get_text(url: str) -> str | None:
    try:
        async with aiohttp.ClientSession() as session, session.get(url, timeout=aiohttp.ClientTimeout(total=2)) as resp:
            return await resp.text() if resp.status == 200 else None
    except aiohttp.ClientError:
        return None


async def test_gangsched_run_schedules_and_serves_probes_and_metrics(cluster: Cluster, tmp_path: Path) -> None:
    metrics, probes = free_port(), free_port()
    config = tmp_path / "config.yaml"
    config.write_text(
        f"namespace: default\nmetricsPort: {metrics}\nprobesPort: {probes}\nleaderElection: {{enabled: true}}\n"
    )
    env = dict(os.environ, GANGSCHED_LOG_LEVEL="INFO")  # probes must not show up in the log even at INFO
    proc = subprocess.Popen(  # noqa: ASYNC220 (Popen returns once the process started)
        [sys.executable, "-m", "gangsched", "run", "--kubeconfig", cluster.kubeconfig, "--config", str(config)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        health = await eventually(
            lambda: get_text(f"http://127.0.0.1:{probes}/healthz"), timeout=30, what="/healthz answering"
        )
        assert "scheduler" in health
        k = cluster.client
        await create(k, podgroup("cli", min_member=2), pod("cli-0", group="cli"), pod("cli-1", group="cli"))

        async def both_bound() -> bool:
            placed = bound(await pods(k))
            return "cli-0" in placed and "cli-1" in placed

        await eventually(both_bound, timeout=30, what="gang bound by the gangsched process")

        async def both_counted() -> str | None:
            # the counter moves when the binder reads the API's answer, which the pods' watch may show first
            text = await get_text(f"http://127.0.0.1:{metrics}/metrics")
            return text if text is not None and "gangsched_bound_pods_total 2.0" in text else None

        text = await eventually(both_counted, what="/metrics counting both bindings")
        assert "gangsched_leader 1.0" in text
        livez = await get_text(f"http://127.0.0.1:{probes}/livez")
        readyz = await get_text(f"http://127.0.0.1:{probes}/readyz")
        assert livez is not None and '"ok":true' in livez
        assert readyz is not None and '"ready":true' in readyz and '"leader":true' in readyz
    finally:
        proc.terminate()
        try:
            out, _ = await asyncio.to_thread(proc.communicate, timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    assert proc.returncode == 0, out  # SIGTERM is a graceful stop (lease released, tasks ended)
    for endpoint in (b"/healthz", b"/livez", b"/readyz"):
        assert endpoint not in out, out  # probes are not logged
