"""`gangsched run` stopped by SIGTERM while the API server answers nothing exits within the Deployment's grace period.

The kubelet sends SIGTERM, waits `terminationGracePeriodSeconds` (30 s by default), then SIGKILLs
(pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer). On stop the leader releases its Lease
(client-go's `ReleaseOnCancel`, tools/leaderelection/leaderelection.go `release`): with the API stalled that
request used to wait out the client's 30 s request timeout, 31.75 s in all (issue 22, item 13). The release is now
bounded (`leaderElection.releaseTimeoutSeconds`); a leader that cannot release lets the Lease expire, which is
what any follower waits for anyway. The stall is the emulator's hold switch (sim/requestlog.py, as in
tests/integration/test_leader_stall.py): every request arriving during the hold waits until it is over.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.k8s.client import ApiError
from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.processes import free_port
from tests.integration.harness import eventually

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
RELEASE_TIMEOUT = 1.0  # scaled down from the default 2 s
# the worst case manifests/deployment.yaml's terminationGracePeriodSeconds is computed from (its comment), with the
# release scaled down: Kopf's 5 s for tasks still running after its cleanup, its 1 s forced-cancel round, 2 s to
# close connections and exit (measured: about 0.2 s beyond the release)
STOP_BOUND = RELEASE_TIMEOUT + 5 + 1 + 2


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=1, node_resources="cpu=8,memory=32Gi,pods=110") as c:
        yield c


async def _lease_holder(cluster: Cluster) -> str | None:
    try:
        lease = await cluster.client.get("/apis/coordination.k8s.io/v1/namespaces/default/leases/gangsched")
    except ApiError:
        return None
    holder = (lease.get("spec") or {}).get("holderIdentity")
    return str(holder) if holder else None


async def test_sigterm_during_an_api_stall_exits_within_the_grace_period(cluster: Cluster, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    settings: dict[str, Any] = {
        "namespace": "default",
        "metricsPort": free_port(),
        "probesPort": free_port(),
        "leaderElection": {"enabled": True, "releaseTimeoutSeconds": RELEASE_TIMEOUT},
    }
    config.write_text(yaml.safe_dump(settings))
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "gangsched", "run", "--kubeconfig", cluster.kubeconfig, "--config", str(config)),
        env=dict(os.environ, GANGSCHED_LOG_LEVEL="INFO"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        await eventually(lambda: _lease_holder(cluster), timeout=30, what="the process leads")
        cluster.server.requests.hold(40.0)  # longer than the client's 30 s request timeout
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), timeout=STOP_BOUND)
        except TimeoutError:
            pytest.fail(f"still running {STOP_BOUND}s after SIGTERM during the stall")
        took = time.monotonic() - started
        assert proc.returncode == 0, proc.returncode
        assert took < STOP_BOUND
    finally:
        cluster.server.requests.hold(0)
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        output = (await proc.stdout.read()).decode() if proc.stdout else ""
    assert "Traceback" not in output, output
