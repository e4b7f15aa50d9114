"""Fixtures of the kubectl end-to-end tests (tests/conftest.py provides apiserver, kubeconfig, kube, kubectl).

- `kctl(*args, input=None, check=False)`: awaitable kubectl run in a worker thread, so the emulator, which runs on
  the test's event loop, keeps answering while kubectl waits for it.
- `cluster_nodes`: three simulated nodes (node-0..node-2, cpu=8, memory=32Gi, pods=110) created through the API.
- `sim_kubelet`: a running SimKubelet over those nodes, synced before the test starts; cancelled afterwards.
- `wait_for_pod(kube, namespace, name, predicate, timeout=10)`: watches one pod until predicate(pod) holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from gangsched.k8s.client import KubeClient
from gangsched.sim.cluster import create_nodes
from gangsched.sim.kubelet import SimKubelet

AsyncKubectl = Callable[..., Awaitable["subprocess.CompletedProcess[str]"]]
NODE_NAMES = ["node-0", "node-1", "node-2"]
NODE_RESOURCES = {"cpu": "8", "memory": "32Gi", "pods": "110"}


@pytest.fixture
def kctl(kubectl: Callable[..., subprocess.CompletedProcess[str]]) -> AsyncKubectl:
    async def run(*args: str, input: str | None = None, check: bool = False) -> subprocess.CompletedProcess[str]:
        return await asyncio.to_thread(kubectl, *args, input=input, check=check)

    return run


@pytest.fixture
async def cluster_nodes(kube: KubeClient) -> list[str]:
    await create_nodes(kube, NODE_NAMES, NODE_RESOURCES)
    return NODE_NAMES


@pytest.fixture
async def sim_kubelet(kube: KubeClient, cluster_nodes: list[str]) -> AsyncIterator[SimKubelet]:
    kubelet = SimKubelet(kube)
    task = asyncio.create_task(kubelet.run())
    async with asyncio.timeout(10):
        await kubelet.synced.wait()
    try:
        yield kubelet
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def wait_for_pod(
    kube: KubeClient, namespace: str, name: str, predicate: Callable[[dict[str, Any]], bool], *, timeout: float = 10.0
) -> dict[str, Any]:
    """The pod once predicate holds, seen through a watch (no polling sleeps); TimeoutError otherwise."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    async with asyncio.timeout(timeout):
        while True:
            listing = await kube.get(path, params={"fieldSelector": f"metadata.name={name}"})
            pod: dict[str, Any]
            for pod in listing.get("items") or []:
                if predicate(pod):
                    return pod
            rv = listing["metadata"]["resourceVersion"]
            async for kind, pod in kube.watch(
                path, resource_version=rv, params={"fieldSelector": f"metadata.name={name}"}, timeout_seconds=30
            ):
                if kind in ("ADDED", "MODIFIED") and predicate(pod):
                    return pod
