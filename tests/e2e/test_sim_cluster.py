"""A whole simulated cluster: running_cluster() with a topology file, and `gangsched sim serve` as users run it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gangsched.sim.serve import running_cluster
from tests.e2e.conftest import wait_for_pod
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGY = [
    {"layer": 2, "name": "leaf0", "children": ["unit0", "unit1"]},
    {"layer": 1, "name": "unit0", "parents": ["leaf0"], "children": ["gpu-a", "gpu-b"]},
    {"layer": 1, "name": "unit1", "parents": ["leaf0"], "children": ["gpu-c"]},
]


def _kubectl(kubeconfig: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    binary = need_tool("kubectl")
    env = dict(os.environ, HOME=str(tmp_path))
    return subprocess.run(
        [binary, f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp_path / 'cache'}", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


async def test_running_cluster_names_and_labels_nodes_after_the_topology(tmp_path: Path) -> None:
    topology = tmp_path / "topology.json"
    topology.write_text(json.dumps(TOPOLOGY))
    async with running_cluster(nodes=8, node_resources="cpu=16,nvidia.com/gpu=8", topology=str(topology)) as cluster:
        assert cluster.node_names == ["gpu-a", "gpu-b", "gpu-c"]
        assert Path(cluster.kubeconfig).exists()
        result = await asyncio.to_thread(
            _kubectl,
            cluster.kubeconfig,
            tmp_path,
            "get",
            "nodes",
            "-L",
            "topology.gangsched.io/tier-1,topology.gangsched.io/tier-2",
        )
        assert result.returncode == 0, result.stderr
        rows = [line.split() for line in result.stdout.splitlines()[1:]]
        assert [(r[0], r[1], r[-2], r[-1]) for r in rows] == [
            ("gpu-a", "Ready", "unit0", "leaf0"),
            ("gpu-b", "Ready", "unit0", "leaf0"),
            ("gpu-c", "Ready", "unit1", "leaf0"),
        ]
        gpus = await cluster.client.get("/api/v1/nodes/gpu-c")
        assert gpus["status"]["allocatable"]["nvidia.com/gpu"] == "8"
        if (ROOT / "crds").is_dir():  # the CRDs of the repository are installed and served
            await cluster.client.get("/apis/scheduling.x-k8s.io/v1alpha1/podgroups")
        # the kubelet runs: a bound pod starts
        await cluster.client.create(
            "/api/v1/namespaces/default/pods",
            {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        )
        await cluster.client.create(
            "/api/v1/namespaces/default/pods/p/binding",
            {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "gpu-b"}},
        )
        await wait_for_pod(cluster.client, "default", "p", lambda pod: pod.get("status", {}).get("phase") == "Running")
        kubeconfig = cluster.kubeconfig
    assert not Path(kubeconfig).exists()  # the temporary kubeconfig is removed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--node-resources", "cpu=lots"], '--node-resources cpu: invalid value "lots"', id="bad-resources"
        ),
        pytest.param(["--topology", "/nonexistent/topology.json"], "--topology", id="missing-topology"),
    ],
)
def test_sim_serve_rejects_bad_arguments(args: list[str], message: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gangsched", "sim", "serve", "--kubeconfig", str(tmp_path / "kc"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert message in result.stderr


async def test_sim_serve_serves_until_sigint(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gangsched",
        "sim",
        "serve",
        "--nodes",
        "2",
        "--kubeconfig",
        str(kubeconfig),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        async with asyncio.timeout(30):
            while not lines or not lines[-1].startswith("try:"):
                line = (await proc.stdout.readline()).decode()
                assert line, (
                    f"sim serve exited early: {lines} {(await proc.stderr.read()).decode() if proc.stderr else ''}"
                )
                lines.append(line.strip())
        assert f"kubeconfig written to {kubeconfig}" in lines
        assert lines[-1] == f"try: kubectl --kubeconfig {kubeconfig} get nodes"
        result = await asyncio.to_thread(_kubectl, str(kubeconfig), tmp_path, "get", "nodes", "-o", "name")
        assert result.stdout.split() == ["node/node-0", "node/node-1"]
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        async with asyncio.timeout(30):
            code = await proc.wait()
    assert code == 0
