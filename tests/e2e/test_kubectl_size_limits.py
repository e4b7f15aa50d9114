"""The emulator's size limits as kubectl users meet them on a real cluster (issue 22 item 15b).

Oracles (the messages real clusters print, from the sources cited in tests/conformance/test_size_limits.py):
`kubectl apply` of a ConfigMap whose last-applied annotation exceeds 256 KiB fails with `The ConfigMap "x" is
invalid: metadata.annotations: Too long: must have at most 262144 bytes` (objectmeta.go ValidateAnnotations),
while `kubectl create` of the same object succeeds (no annotation); a ConfigMap over 1 MiB fails with
`[]: Too long: must have at most 1048576 bytes` (validation.go ValidateConfigMap); a body over 3 MiB with
`Error from server (RequestEntityTooLarge): ... Request entity too large: limit is 3145728` (rest.go
limitedReadBody).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator

import pytest

from gangsched.sim.serve import Cluster, running_cluster
from tests.e2e.kubectl_run import kubectl
from tests.tools import need_tool

pytestmark = pytest.mark.e2e
KiB, MiB = 1024, 1024 * 1024


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    need_tool("kubectl")
    async with running_cluster(nodes=0, node_resources="cpu=8,memory=32Gi,pods=110") as c:
        yield c


def configmap(name: str, data: dict[str, str]) -> str:
    return json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": data}
    )


async def failing(cluster: Cluster, *args: str, input: str) -> str:
    result = await asyncio.to_thread(
        subprocess.run,
        ["kubectl", f"--kubeconfig={cluster.kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=60,
        input=input,
    )
    assert result.returncode != 0, result.stdout
    return result.stderr


async def test_kubectl_meets_the_real_limits(cluster: Cluster) -> None:
    dashboard = configmap("dashboard", {"d.json": "x" * (300 * KiB)})
    err = await failing(cluster, "apply", "-f", "-", input=dashboard)
    assert 'The ConfigMap "dashboard" is invalid: metadata.annotations: Too long: must have at most 262144 bytes' in err
    await kubectl(cluster, "create", "-f", "-", input=dashboard)  # no last-applied annotation: fits

    err = await failing(cluster, "create", "-f", "-", input=configmap("big", {"a": "x" * (MiB + 1)}))
    assert 'The ConfigMap "big" is invalid: []: Too long: must have at most 1048576 bytes' in err

    err = await failing(cluster, "create", "-f", "-", input=configmap("huge", {"a": "x" * (3 * MiB + 1)}))
    assert "Error from server (RequestEntityTooLarge)" in err and "Request entity too large: limit is 3145728" in err
