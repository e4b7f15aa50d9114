"""k8s/claims.py against the emulator: a claim's status.allocation and reservedFor written before a binding, a 409
read again and reconciled, and the reservation taken back.

Oracle: kubernetes pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go: PreBind -> bindClaim
(UpdateStatus with the allocation and the pod added to reservedFor; on a conflict the claim is read again and the
update retried, and a claim allocated meanwhile to other devices is an error), Unreserve (the pod removed from
reservedFor, the allocation cleared when the scheduler made it and nobody is left).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.k8s.claims import ClaimWriter
from gangsched.k8s.client import KubeClient
from gangsched.sim.serve import Cluster, running_cluster

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
POD: dict[str, str] = {}
OTHER: dict[str, str] = {}  # (filled with real pods: the resourceclaim controller drops entries of pods not there)


def allocation(device: str) -> dict[str, Any]:
    results = [{"request": "gpus", "driver": "gpu.nvidia.com", "pool": "node-0", "device": device}]
    terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-0"]}]}]
    return {"devices": {"results": results}, "nodeSelector": {"nodeSelectorTerms": terms}}


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with running_cluster(nodes=1, node_resources="cpu=8,memory=64Gi,nvidia.com/gpu=8,pods=110", dra=True) as c:
        exactly = {"deviceClassName": "gpu.nvidia.com", "count": 1}
        claim = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpus", "exactly": exactly}]}},
        }
        await c.client.create(CLAIMS, claim)
        for ref, name in ((POD, "p"), (OTHER, "q")):
            body = {
                "metadata": {"name": name},
                "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "x"}]},
            }
            made = await c.client.create("/api/v1/namespaces/default/pods", body)
            ref.update(resource="pods", name=name, uid=made["metadata"]["uid"])
        yield c


class Interfering:
    """The real client, with someone else's status update landing between the writer's read and its PUT, once."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.done = False

    async def get(self, path: str, **kw: Any) -> dict[str, Any]:
        return await self.client.get(path, **kw)

    async def replace(self, path: str, body: Any, **kw: Any) -> dict[str, Any]:
        if not self.done:
            self.done = True
            fresh = await self.client.get(f"{CLAIMS}/c")
            fresh["status"] = {"reservedFor": [OTHER], "allocation": body["status"]["allocation"]}
            await self.client.replace(f"{CLAIMS}/c/status", fresh)
        return await self.client.replace(path, body, **kw)


async def test_allocation_and_reserved_for_written(cluster: Cluster) -> None:
    writer = ClaimWriter(cluster.client)
    assert await writer.reserve("default/c", allocation("gpu-0"), POD) is None
    status = (await cluster.client.get(f"{CLAIMS}/c"))["status"]
    assert status["allocation"] == allocation("gpu-0") and status["reservedFor"] == [POD]
    assert await writer.reserve("default/c", allocation("gpu-0"), POD) is None  # a retry: nothing twice
    assert (await cluster.client.get(f"{CLAIMS}/c"))["status"]["reservedFor"] == [POD]


async def test_a_conflict_is_read_again_and_reconciled(cluster: Cluster) -> None:
    """Someone reserved the same allocation for another pod meanwhile: the 409 is reconciled, both consumers kept."""
    writer = ClaimWriter(Interfering(cluster.client))  # type: ignore[arg-type]
    assert await writer.reserve("default/c", allocation("gpu-0"), POD) is None
    status = (await cluster.client.get(f"{CLAIMS}/c"))["status"]
    assert status["reservedFor"] == [OTHER, POD]


async def test_a_claim_allocated_meanwhile_to_other_devices_is_refused(cluster: Cluster) -> None:
    writer = ClaimWriter(cluster.client)
    assert await writer.reserve("default/c", allocation("gpu-3"), OTHER) is None
    why = await writer.reserve("default/c", allocation("gpu-0"), POD)
    assert why == "ResourceClaim default/c was allocated meanwhile by someone else"


async def test_release_takes_the_pod_out_and_clears_our_allocation(cluster: Cluster) -> None:
    writer = ClaimWriter(cluster.client)
    assert await writer.reserve("default/c", allocation("gpu-0"), POD) is None
    await writer.release("default/c", POD, ours=True)
    assert not (await cluster.client.get(f"{CLAIMS}/c")).get("status")
