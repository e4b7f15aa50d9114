"""`kubectl gang` (issue 14 item 6) run by the real kubectl, which finds the `kubectl-gang` executable the package
installs on PATH (kubectl's plugin mechanism: staging/src/k8s.io/kubectl/pkg/cmd/plugin, executables named
`kubectl-*`; every argument after the plugin's name is passed through), against the emulator with a replica.

A gang group of two gangs with roles on a topology of two units, and a gang that can never fit: the tree shows the
group, both gangs, their roles and pods with nodes and units; `why` names the waiting gang's blocker; `top` lists only
the waiting gang with what blocks it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.sim.serve import Cluster, running_cluster
from tests.builders import podgroup_manifest
from tests.integration.harness import bound, eventually, get_podgroup, pods, replica
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

NODE = {"cpu": "8", "memory": "32Gi", "pods": "110"}
TREE = [
    {"layer": 1, "name": "unit0", "children": ["n0", "n1"]},
    {"layer": 1, "name": "unit1", "children": ["n2", "n3"]},
]
ROLE = "scheduling.gangsched.io/role"


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=0, node_resources=NODE, topology=TREE) as c:
        yield c


def _run(cluster: Cluster, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """kubectl with the cluster's kubeconfig in $KUBECONFIG (kubectl refuses flags before a plugin's name) and the
    package's executables first on PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = dict(os.environ, PATH=path, KUBECONFIG=cluster.kubeconfig)
    command = ["kubectl", *args]
    return subprocess.run(command, check=False, capture_output=True, text=True, timeout=60, input=input, env=env)


async def kubectl(cluster: Cluster, *args: str, input: str | None = None) -> str:
    result = await asyncio.to_thread(_run, cluster, *args, input=input)
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stdout}{result.stderr}"
    return result.stdout


def _pod(name: str, gang: str, *, cpu: str, role: str | None = None) -> dict[str, Any]:
    labels = {"scheduling.x-k8s.io/pod-group": gang}
    if role:
        labels[ROLE] = role
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {
            "schedulerName": "gangsched",
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


async def test_kubectl_gang_shows_trees_explains_pending_pods_and_lists_waiting_gangs(cluster: Cluster) -> None:
    k = cluster.client
    group = ["default/train", "default/evaluate"]
    docs = [
        podgroup_manifest(
            "train",
            min_member=3,
            gangGroup=group,
            roles=[{"name": "ps", "minMember": 1}, {"name": "worker", "minMember": 2}],
        ),
        podgroup_manifest("evaluate", min_member=1, gangGroup=group),
        podgroup_manifest("huge", min_member=2),
        _pod("train-ps-0", "train", cpu="1", role="ps"),
        _pod("train-worker-0", "train", cpu="1", role="worker"),
        _pod("train-worker-1", "train", cpu="1", role="worker"),
        _pod("evaluate-0", "evaluate", cpu="1"),
        _pod("huge-0", "huge", cpu="7"),
        _pod("huge-1", "huge", cpu="70"),  # fits no node: the gang waits for good
    ]
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "gangsched-topology", "namespace": "gangsched-system"},
        "data": {"topology.json": json.dumps(TREE)},
    }
    async with replica(cluster.kubeconfig):
        await kubectl(cluster, "apply", "-f", "-", input=json.dumps(configmap))
        await kubectl(cluster, "apply", "-f", "-", input=yaml.safe_dump_all(docs))

        async def group_bound() -> dict[str, str] | None:
            placed = bound(await pods(k))
            return placed if len([n for n in placed if not n.startswith("huge")]) == 4 else None

        placed = await eventually(group_bound, what="the gang group bound")

        async def huge_reported() -> bool:
            status = ((await get_podgroup(k, "huge")) or {}).get("status") or {}
            return bool(status.get("conditions"))

        await eventually(huge_reported, what="the waiting gang's condition")

        # independent reads of a settled state: run side by side (each is a process start, mostly CPU)
        not_found = asyncio.ensure_future(asyncio.to_thread(_run, cluster, "gang", "why", "nope"))
        tree, everything, why, blocker_json, top_out, waiting_json = await asyncio.gather(
            kubectl(cluster, "gang", "train"),
            kubectl(cluster, "gang", "tree"),
            kubectl(cluster, "gang", "why", "huge-1"),
            kubectl(cluster, "get", "podgroups.scheduling.x-k8s.io", "huge", "-o", "json"),
            kubectl(cluster, "gang", "top"),
            kubectl(cluster, "gang", "top", "-o", "json"),
        )
        missing = await not_found
        assert tree.splitlines()[0] == "group [default/evaluate, default/train]", tree
        assert "gang default/train" in tree and "gang default/evaluate" in tree
        assert "role ps (1)" in tree and "role worker (2)" in tree
        units = {"n0": "unit0", "n1": "unit0", "n2": "unit1", "n3": "unit1"}
        for name in ("train-ps-0", "train-worker-0", "train-worker-1", "evaluate-0"):
            node = placed[name]
            assert f"- {name}  node={node}  unit={units[node]}" in tree, tree
        assert "huge" not in tree

        assert "gang default/huge" in everything and "huge-1  node=-" in everything

        assert why.startswith("pod default/huge-1 is pending (schedulerName gangsched)."), why
        blocker = json.loads(blocker_json)["status"]
        scheduled = next(c for c in blocker["conditions"] if c["type"] == "Scheduled")
        assert f"gang default/huge: {blocker['phase']}; {scheduled['message']}" in why, why

        top = top_out.splitlines()
        assert top[0].split()[:4] == ["GANG", "PHASE", "BOUND/MIN", "WAITING"], top
        assert len(top) == 2 and top[1].startswith("default/huge"), top
        assert all(len(line) <= 120 for line in top), top  # BLOCKED BY is cut to fit; -o json keeps it whole
        message = scheduled["message"]
        assert message in top[1] if len(top[1]) < 120 else top[1].endswith("...") and message[:20] in top[1], top
        waiting = json.loads(waiting_json)["gangs"]
        assert [(g["name"], g["blockedBy"]) for g in waiting] == [("huge", message)], waiting

        assert missing.returncode == 4 and 'pod "nope" not found in namespace default' in missing.stderr
