"""`kubectl gang` as scripts and people meet it (issue 27 item 6), run by the real kubectl (the `kubectl-gang`
executable on PATH, kubectl's plugin mechanism) against the emulator:

- `-o json|yaml`: the tree, `top` and `why` as data with the stable keys of plugin/records.py (docs/cli.md);
- an unknown gang or pod: exit 4 (gangsched/exits.py) and a line saying so, nothing printed as a result;
- a server that cannot be reached: exit 3 and one short line with the fix, no Python repr, no traceback;
- `--topology` must be NS/NAME (exit 2), and one named explicitly must exist (exit 4);
- `top` fits 120 columns (BLOCKED BY cut with "..."), `-o wide` and `-o json` keep the whole message.

No operator runs: the PodGroups' status is written as the operator writes it (the status subresource), so what is
shown is exactly what the test wrote.
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

from gangsched.exits import ExitCode
from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.processes import free_port
from tests.integration.harness import service_account_kubeconfig
from tests.tools import need_tool

pytestmark = pytest.mark.e2e

GROUP = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"
LONG = "waiting for 3 more members: " + "insufficient nvidia.com/gpu on every node of unit0, unit1 and unit2; " * 4


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=1, node_resources="cpu=8,memory=32Gi,pods=110") as c:
        yield c


def kubectl_gang(kubeconfig: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`kubectl gang ARGS` with the kubeconfig in $KUBECONFIG (kubectl refuses flags before a plugin's name) and
    the package's executables first on PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = dict(os.environ, PATH=path, KUBECONFIG=kubeconfig)
    command = ["kubectl", "gang", *args]
    return subprocess.run(command, check=False, capture_output=True, text=True, timeout=60, env=env)


async def gang(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(kubectl_gang, cluster.kubeconfig, *args)


def assert_failed(result: subprocess.CompletedProcess[str], code: ExitCode, problem: str) -> None:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert lines[0] == f"kubectl gang: {problem}", result.stderr
    assert len(lines) <= 2 and all(line.startswith("  fix: ") for line in lines[1:]), result.stderr
    assert "Traceback" not in result.stderr and "Error(" not in result.stderr, result.stderr


def _pod(name: str, gang_name: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "gangsched", "containers": [{"name": "c", "image": "pause"}]}
    if node:
        spec["nodeName"] = node
    labels = {"scheduling.x-k8s.io/pod-group": gang_name}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": spec}


async def waiting_gang(cluster: Cluster) -> None:
    """PodGroup `train` (minMember 4) with two pods, waiting with a long Scheduled=False message."""
    k = cluster.client
    body = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup"}
    await k.create(GROUP, {**body, "metadata": {"name": "train"}, "spec": {"minMember": 4}})
    condition = {"type": "Scheduled", "status": "False", "reason": "Unschedulable", "message": LONG}
    status = {"phase": "Pending", "scheduled": 0, "conditions": [condition]}
    await k.patch(f"{GROUP}/train/status", {"status": status})
    for name in ("train-0", "train-1"):
        await k.create("/api/v1/namespaces/default/pods", _pod(name, "train"))


async def test_output_json_and_yaml_have_stable_keys(cluster: Cluster) -> None:
    await waiting_gang(cluster)
    # independent reads: run side by side (each is a process start, mostly CPU: a second core is used)
    tree, as_yaml, top_run, why_run = await asyncio.gather(
        gang(cluster, "train", "-o", "json"),
        gang(cluster, "tree", "-o", "yaml"),
        gang(cluster, "top", "-o", "json"),
        gang(cluster, "why", "train-1", "-o", "json"),
    )
    assert tree.returncode == 0, tree.stderr
    record = json.loads(tree.stdout)
    assert record["kind"] == "GangList" and len(record["gangs"]) == 1
    train = record["gangs"][0]
    assert {k: train[k] for k in ("namespace", "name", "phase", "minMember", "scheduled", "podGroup", "group")} == {
        "namespace": "default",
        "name": "train",
        "phase": "Pending",
        "minMember": 4,
        "scheduled": 0,
        "podGroup": True,
        "group": [],
    }
    assert train["message"] == LONG
    assert [p["name"] for p in train["pods"]] == ["train-0", "train-1"]
    assert train["pods"][0] == {
        "name": "train-0",
        "role": "",
        "node": None,
        "unit": None,
        "phase": "Pending",
        "gated": False,
        "terminating": False,
    }

    assert as_yaml.returncode == 0 and yaml.safe_load(as_yaml.stdout) == record, as_yaml.stdout

    top = json.loads(top_run.stdout)
    assert top["kind"] == "WaitingGangList"
    assert [(g["name"], g["bound"], g["minMember"], g["blockedBy"]) for g in top["gangs"]] == [("train", 0, 4, LONG)]

    why = json.loads(why_run.stdout)
    assert why["kind"] == "PodExplanation" and why["name"] == "train-1" and why["node"] is None
    assert why["gang"] == {"namespace": "default", "name": "train", "phase": "Pending", "blockedBy": LONG}


async def test_top_fits_120_columns_and_wide_shows_everything(cluster: Cluster) -> None:
    await waiting_gang(cluster)
    top, wide_run = await asyncio.gather(gang(cluster, "top"), gang(cluster, "top", "-o", "wide"))
    assert top.returncode == 0, top.stderr
    lines = top.stdout.splitlines()
    assert lines[0].split()[:4] == ["GANG", "PHASE", "BOUND/MIN", "WAITING"], lines
    assert all(len(line) <= 120 for line in lines), [len(line) for line in lines]
    assert lines[1].startswith("default/train") and lines[1].endswith("...") and LONG[:40] in lines[1], lines
    wide = wide_run.stdout.splitlines()
    assert wide[1].endswith(LONG.strip()) or wide[1].endswith(LONG), wide


async def test_an_unknown_gang_or_pod_is_not_found(cluster: Cluster) -> None:
    await waiting_gang(cluster)
    result, everywhere, partly, pod, empty = await asyncio.gather(
        gang(cluster, "nope"),
        gang(cluster, "tree", "nope", "-A"),
        gang(cluster, "tree", "train", "nope"),  # what exists is shown, the rest is an error
        gang(cluster, "why", "nope-0"),
        gang(cluster, "-n", "kube-system"),  # nothing asked by name: not an error
    )
    assert_failed(result, ExitCode.NOT_FOUND, 'gang "nope" not found in namespace default')
    assert result.stdout == "", result.stdout
    assert_failed(everywhere, ExitCode.NOT_FOUND, 'gang "nope" not found in any namespace')
    assert_failed(partly, ExitCode.NOT_FOUND, 'gang "nope" not found in namespace default')
    assert partly.stdout.startswith("gang default/train"), partly.stdout
    assert_failed(pod, ExitCode.NOT_FOUND, 'pod "nope-0" not found in namespace default')
    assert empty.returncode == 0 and empty.stdout.strip() == "No gangs found.", empty


async def test_topology_and_usage_are_checked(cluster: Cluster) -> None:
    await waiting_gang(cluster)
    bad, missing, fine, two = await asyncio.gather(
        gang(cluster, "--topology", "bad"),
        gang(cluster, "--topology", "default/no-such-topology"),
        gang(cluster),  # the default ConfigMap missing: units are simply not shown
        gang(cluster, "why", "train-0", "train-1"),
    )
    assert_failed(bad, ExitCode.USAGE, "--topology 'bad': must be NAMESPACE/NAME of a ConfigMap")
    assert_failed(missing, ExitCode.NOT_FOUND, "topology ConfigMap default/no-such-topology not found")
    assert fine.returncode == 0 and "gang default/train" in fine.stdout, fine
    assert_failed(two, ExitCode.USAGE, "why: name exactly one pod")


def test_a_server_that_cannot_be_reached(tmp_path: Path) -> None:
    need_tool("kubectl")
    port = free_port()  # nothing listens there
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "default"}}],
        "current-context": "x",
    }
    kubeconfig = tmp_path / "down.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    result = kubectl_gang(str(kubeconfig), "top")
    assert_failed(result, ExitCode.API, f"cannot reach the API server at https://127.0.0.1:{port}: connection refused")
    missing = kubectl_gang(str(tmp_path / "absent.kubeconfig"), "top")
    assert missing.returncode == ExitCode.USAGE and "Traceback" not in missing.stderr, missing.stderr  # bad input


async def test_an_identity_that_may_not_read_gangs(cluster: Cluster) -> None:
    await cluster.client.create(
        "/api/v1/namespaces/default/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nobody"}},
    )
    kubeconfig = await service_account_kubeconfig(cluster.kubeconfig, namespace="default", name="nobody")
    result = await asyncio.to_thread(kubectl_gang, kubeconfig, "top")
    assert result.returncode == ExitCode.API, result.stderr
    assert result.stderr.startswith(f"kubectl gang: forbidden by the API server at {cluster.url}: "), result.stderr
    assert "kubectl auth can-i" in result.stderr and "Traceback" not in result.stderr, result.stderr
