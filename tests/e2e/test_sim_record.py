"""`gangsched sim record` against the emulator: gangs applied with the real kubectl, run by the operator
in-process and the simulated kubelet, recorded by the real CLI, read back with whatif's trace reader; and a live
cluster's nodes read as an inventory.

Oracles: the PodGroup API of scheduler-plugins (apis/scheduling/v1alpha1/types.go: minMember; the pod's
`scheduling.x-k8s.io/pod-group` label), the pod's effective requests as kube-scheduler computes them
(pkg/scheduler/framework/types.go `computePodResourceRequest`), and the kubelet's pod status times
(status.startTime, containerStatuses[].state.terminated.finishedAt, k8s.io/api/core/v1/types.go).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from gangsched.models.keys import EXPECTED_DURATION, ROLE
from gangsched.sim.serve import Cluster, running_cluster
from gangsched.whatif.inputs.nodes import live_nodes
from gangsched.whatif.inputs.traces import read_trace
from gangsched.whatif.model import RoleSpec
from tests.builders import NODE_8_GPUS
from tests.integration.harness import eventually, pod, podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = NODE_8_GPUS


@pytest.fixture
async def two_nodes() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        yield cluster


async def run(*args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(subprocess.run, list(args), capture_output=True, text=True, timeout=60)


async def test_record_writes_finished_and_waiting_gangs(two_nodes: Cluster, tmp_path: Path) -> None:
    done = [
        pod(f"done-{i}", group="done", gpu=4, cpu="3", annotations={"sim.gangsched.io/duration": "1s"})
        for i in range(2)
    ]
    waiting = [
        pod(f"wait-{i}", group="waiting", gpu=2, labels={ROLE: "worker"}, annotations={EXPECTED_DURATION: "90m"})
        for i in range(2)
    ]
    for member in waiting:  # no node has this model: the gang waits
        member["spec"]["nodeSelector"] = {"gangsched.io/gpu-model": "H100"}
    loose = pod("loose", scheduler="default-scheduler")
    manifest = tmp_path / "gangs.yaml"
    objs = [
        podgroup("done", min_member=2),
        podgroup("waiting", min_member=3, mode="NonStrict", roles=[{"name": "worker", "minMember": 2}]),
        podgroup("empty", min_member=1),
        *done,
        *waiting,
        loose,
    ]
    manifest.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    async with replica(two_nodes.kubeconfig):
        applied = await run("kubectl", f"--kubeconfig={two_nodes.kubeconfig}", "apply", "-f", str(manifest))
        assert applied.returncode == 0, applied.stderr

        async def finished() -> bool:
            listed = await pods(two_nodes.client)
            return all(listed[f"done-{i}"].get("status", {}).get("phase") == "Succeeded" for i in range(2))

        await eventually(finished, what="gang done succeeded")
    out = tmp_path / "trace.jsonl"
    gangsched = str(Path(sys.executable).with_name("gangsched"))
    result = await run(gangsched, "sim", "record", "--kubeconfig", two_nodes.kubeconfig, "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "recorded 2 jobs" in result.stderr
    assert "PodGroup default/empty left out: it has no pods" in result.stderr
    assert "1 pod(s) of no gang not recorded" in result.stderr
    assert "default/waiting: 1 member(s) of minMember 3 have no pod yet" in result.stderr
    jobs = {job.id: job for job in read_trace(out)}
    assert set(jobs) == {"default/done", "default/waiting"}
    finished_job, waiting_job = jobs["default/done"], jobs["default/waiting"]
    assert min(finished_job.submit, waiting_job.submit) == 0.0
    assert finished_job.roles == (RoleSpec(2, 3000, 1024, 4),)
    assert (finished_job.min_member, finished_job.mode) == (2, "Strict")
    assert 1.0 <= finished_job.duration <= 10.0  # from the pods' status times (second resolution)
    assert waiting_job.roles == (RoleSpec(3, 1000, 1024, 2, "worker", 2),)
    assert (waiting_job.min_member, waiting_job.mode, waiting_job.duration) == (3, "NonStrict", 5400.0)
    assert waiting_job.gpu_model == "H100"


async def test_live_nodes_read_through_the_api(two_nodes: Cluster) -> None:
    nodes, notes = await live_nodes(two_nodes.kubeconfig)
    assert notes == []
    assert sorted(n.name for n in nodes) == sorted(two_nodes.node_names)
    assert {(n.cpu_milli, n.memory_mib, n.gpus) for n in nodes} == {(32_000, 256 * 1024, 8)}


async def test_record_reports_an_unreachable_cluster(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    gangsched = str(Path(sys.executable).with_name("gangsched"))
    result = await run(gangsched, "sim", "record", "--kubeconfig", str(kubeconfig), "--out", str(tmp_path / "t.csv"))
    assert result.returncode == 3, result.stderr  # docs/cli.md: the API server cannot be reached
    assert result.stderr.startswith("gangsched sim record: cannot reach the API server: connection refused"), result
    assert "Traceback" not in result.stderr and "Error(" not in result.stderr, result.stderr
    assert not (tmp_path / "t.csv").exists()
