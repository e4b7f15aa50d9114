"""The operator's log as an operator of the scheduler reads it (issue 27 item 5): `gangsched run` in its own process
against the emulator, its log captured.

- one INFO start line: version (package metadata), identity, API server, leader election (the Lease), where metrics
  and probes listen; then a "ready" line;
- Volcano's PodGroup kind, whose CRD the emulator does not install, is named once at INFO ("optional kind ... is
  not installed"), and Kopf's WARNING about it ("Unresolved resources") is not shown;
- each gang scheduled, preempting or timed out is one INFO line (runtime/activity.py; its rate limit is tested in
  tests/unit/runtime/test_activity_log.py).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from importlib.metadata import version
from pathlib import Path

import pytest

from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.processes import free_port
from tests.integration.harness import create, eventually, pod, podgroup

pytestmark = pytest.mark.e2e

PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=1, node_resources="cpu=8,memory=32Gi,pods=110") as c:
        yield c


class Log:
    """The lines a process writes, read in a thread as they come."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._proc = proc

    def read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def having(self, needle: str) -> list[str]:
        return [line for line in self.lines if needle in line]


async def test_start_ready_gang_lines_and_optional_kinds_named_once(cluster: Cluster, tmp_path: Path) -> None:
    k = cluster.client
    metrics, probes = free_port(), free_port()
    config = tmp_path / "config.yaml"
    config.write_text(f"namespace: default\nmetricsPort: {metrics}\nprobesPort: {probes}\n")
    command = [sys.executable, "-m", "gangsched", "run", "--kubeconfig", cluster.kubeconfig, "--config", str(config)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # noqa: ASYNC220
    log = Log(proc)
    reader = asyncio.create_task(asyncio.to_thread(log.read))
    try:

        async def logged(needle: str) -> list[str] | None:
            return log.having(needle) or None

        await eventually(lambda: logged(" ready: caches synced"), timeout=30, what="the ready line")
        start = log.having(" starting as ")
        assert len(start) == 1 and " INFO " in start[0], log.lines
        assert f"gangsched {version('gangsched')} starting as " in start[0], start
        # (the probe paths themselves never appear in the log: test_cli_run.py checks that requests are not logged)
        assert f"against {cluster.url}" in start[0] and "leader election on Lease default/gangsched" in start[0]
        assert f"metrics on 0.0.0.0:{metrics}/metrics" in start[0], start
        assert f"probes on 0.0.0.0:{probes} (livez, readyz)" in start[0], start

        low = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": -100}
        await k.create(PRIORITY_CLASSES, {**low, "metadata": {"name": "low"}})
        await k.create(PRIORITY_CLASSES, {**low, "metadata": {"name": "high"}, "value": 1000})
        await create(
            k,
            podgroup("batch", min_member=2),
            *(pod(f"batch-{i}", group="batch", cpu="3", priority_class="low") for i in range(2)),
        )
        await eventually(lambda: logged("gang default/batch scheduled: 2 members"), timeout=30, what="batch")
        await create(
            k,
            podgroup("urgent", min_member=2),
            *(pod(f"urgent-{i}", group="urgent", cpu="3", priority_class="high") for i in range(2)),
        )
        preempts = await eventually(lambda: logged("gang default/urgent preempts 2 pods: "), timeout=30, what="preempt")
        assert "default/batch-0" in preempts[0] and "default/batch-1" in preempts[0], preempts
        await eventually(lambda: logged("gang default/urgent scheduled: 2 members"), timeout=30, what="urgent")

        await create(  # NonStrict: one member holds a reservation, the other never fits, the waiting time ends
            k,
            podgroup("stuck", min_member=2, mode="NonStrict", scheduleTimeoutSeconds=1),
            pod("stuck-0", group="stuck", cpu="1"),
            pod("stuck-1", group="stuck", cpu="70"),
        )
        timed_out = await eventually(lambda: logged("gang default/stuck timed out"), timeout=30, what="timeout")
        assert "its waiting time ended before quorum" in timed_out[0], timed_out
    finally:
        proc.terminate()
        await asyncio.to_thread(proc.wait, 30)
        await reader
    assert proc.returncode == 0, log.lines
    volcano = log.having("scheduling.volcano.sh")
    assert len(volcano) == 1 and " INFO " in volcano[0], volcano
    assert "optional kind PodGroup scheduling.volcano.sh/v1beta1 is not installed" in volcano[0], volcano
    assert not log.having("Unresolved resources"), log.lines
    assert not log.having("Traceback"), log.lines
