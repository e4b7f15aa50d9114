"""A simulated NVIDIA GPU DRA driver: what `gangsched sim serve --dra` publishes for the nodes' GPUs.

Contract (pure apart from `publish`):
- `split_gpus(resources) -> (resources, count)`: the node resources without `nvidia.com/gpu`, and its count.
- `device_class()`: DeviceClass `gpu.nvidia.com` with the selector of NVIDIA's chart.
- `resource_slice(node, count, *, clique, model=H100)`: one ResourceSlice per node, devices gpu-0.. with the
  attributes NVIDIA's k8s-dra-driver-gpu publishes, plus `pcieRoot` and a simulated `cliqueID` (nodes of one tier-1
  domain share a clique).
- `CHANNEL_DRIVER`, `channel_class()`, `clique_slice(domain, label)`: one multi-node `channel-0` device per NVLink
  clique, what a gang's shared claim takes to keep every member in one clique.
- `async publish(client, nodes, count, *, cliques, clique_label=None)`: creates the classes and slices (an existing
  one is left alone). More: docs/modules.md#simdradriverpy.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gangsched.k8s.client import ApiError, KubeClient

DRIVER = "gpu.nvidia.com"
CHANNEL_DRIVER = "compute-domain.nvidia.com"
CHANNEL_CLASS = "compute-domain-default-channel.nvidia.com"
GPU_RESOURCE = "nvidia.com/gpu"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
SLICES_PATH = "/apis/resource.k8s.io/v1/resourceslices"
CLASSES_PATH = "/apis/resource.k8s.io/v1/deviceclasses"
_NAMESPACE = uuid.UUID("6f1d3c52-8f0e-4a55-9a49-0d5b7a1c0e11")  # stable fake GPU and cluster UUIDs


@dataclass(frozen=True)
class GpuModel:
    product_name: str = "NVIDIA H100 80GB HBM3"
    architecture: str = "Hopper"
    memory: str = "80Gi"
    compute_capability: str = "9.0.0"
    driver_version: str = "560.35.3"
    cuda_driver_version: str = "12.6.0"


H100 = GpuModel()


def split_gpus(resources: Mapping[str, str]) -> tuple[dict[str, str], int]:
    """See module docstring."""
    rest = dict(resources)
    count = int(rest.pop(GPU_RESOURCE, "0") or 0)
    return rest, count


def device_class() -> dict[str, Any]:
    """See module docstring."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DRIVER},
        "spec": {
            "selectors": [
                {"cel": {"expression": f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'gpu'"}}
            ]
        },
    }


def clique_id(domain: str) -> str:
    """`<clusterUUID>.<cliqueId>` of an NVLink domain (stable for a name)."""
    return f"{uuid.uuid5(_NAMESPACE, 'cluster')}.{uuid.uuid5(_NAMESPACE, domain).int % 32768}"


def _device(node: str, index: int, clique: str, model: GpuModel) -> dict[str, Any]:
    def string(value: str) -> dict[str, str]:
        return {"string": value}

    def version(value: str) -> dict[str, str]:
        return {"version": value}

    return {
        "name": f"gpu-{index}",
        "attributes": {
            "type": string("gpu"),
            "uuid": string(f"GPU-{uuid.uuid5(_NAMESPACE, f'{node}/{index}')}"),
            "productName": string(model.product_name),
            "brand": string("Nvidia"),
            "architecture": string(model.architecture),
            "cudaComputeCapability": version(model.compute_capability),
            "driverVersion": version(model.driver_version),
            "cudaDriverVersion": version(model.cuda_driver_version),
            "pcieBusID": string(f"0000:{0x18 + 0x10 * index:02x}:00.0"),
            "addressingMode": string("None"),
            PCIE_ROOT: string(f"pci0000:{0x10 * (index // 2):02x}"),
            "cliqueID": string(clique),
        },
        "capacity": {"memory": {"value": model.memory}},
    }


def resource_slice(node: str, count: int, *, clique: str, model: GpuModel = H100) -> dict[str, Any]:
    """See module docstring."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [_device(node, i, clique, model) for i in range(count)],
        },
    }


def channel_class() -> dict[str, Any]:
    """See module docstring."""
    expression = f"device.driver == '{CHANNEL_DRIVER}' && device.attributes['{CHANNEL_DRIVER}'].type == 'channel'"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CHANNEL_CLASS},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def clique_slice(domain: str, label: str) -> dict[str, Any]:
    """See module docstring."""
    term = {"matchExpressions": [{"key": label, "operator": "In", "values": [domain]}]}
    device = {
        "name": "channel-0",
        "attributes": {"type": {"string": "channel"}, "cliqueID": {"string": clique_id(domain)}},
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"clique-{domain}-{CHANNEL_DRIVER}"},
        "spec": {
            "driver": CHANNEL_DRIVER,
            "nodeSelector": {"nodeSelectorTerms": [term]},
            "pool": {"name": f"clique-{domain}", "generation": 1, "resourceSliceCount": 1},
            "devices": [device],
        },
    }


async def publish(
    client: KubeClient,
    nodes: Sequence[str],
    count: int,
    *,
    cliques: Mapping[str, str],
    clique_label: str | None = None,
    concurrency: int = 32,
) -> None:
    """See module docstring."""

    async def create(path: str, body: dict[str, Any]) -> None:
        try:
            await client.create(path, body)
        except ApiError as exc:
            if exc.status != 409:
                raise

    await create(CLASSES_PATH, device_class())
    if count <= 0:
        return
    if clique_label is not None:
        await create(CLASSES_PATH, channel_class())
        for domain in sorted({cliques[n] for n in nodes if n in cliques}):
            await create(SLICES_PATH, clique_slice(domain, clique_label))
    limit = asyncio.Semaphore(max(1, concurrency))

    async def one(node: str) -> None:
        async with limit:
            await create(SLICES_PATH, resource_slice(node, count, clique=clique_id(cliques.get(node, node))))

    await asyncio.gather(*(one(n) for n in nodes))
