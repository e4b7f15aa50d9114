"""`gangsched sim serve --dra` as a whole cluster: the simulated GPU driver's ResourceSlices and DeviceClass, nodes
without the extended resource, and the simulated kubelet holding a pod until its claim is allocated and reserved.

Oracles:
- NVIDIA/k8s-dra-driver-gpu cmd/gpu-kubelet-plugin/deviceinfo.go GpuInfo.GetDevice (device names gpu-<minor>,
  attributes type/uuid/productName/brand/architecture/cudaComputeCapability/driverVersion/cudaDriverVersion/
  pcieBusID/addressingMode, capacity memory); its chart's DeviceClass gpu.nvidia.com; k8s.io/dynamic-resource-
  allocation/deviceattribute `resource.kubernetes.io/pcieRoot`.
- kubernetes pkg/kubelet/cm/dra/manager.go PrepareResources: a pod whose claim is not reserved for it fails to
  prepare ("is not allowed to use ResourceClaim"), the pod does not start; it starts once the claim is allocated
  and reserved.
"""

from __future__ import annotations

from typing import Any

from gangsched.sim.serve import running_cluster
from tests.conformance._binding_helpers import eventually

NS = "/api/v1/namespaces/default"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
TEMPLATES = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates"
NODE = "cpu=32,memory=256Gi,nvidia.com/gpu=8,pods=110"


async def test_driver_publishes_gpus_and_kubelet_waits_for_reserved_claims() -> None:
    async with running_cluster(nodes=2, node_resources=NODE, dra=True, auth=False, install_manifests=False) as cluster:
        kube = cluster.client
        for node in (await kube.get("/api/v1/nodes"))["items"]:
            assert "nvidia.com/gpu" not in node["status"]["allocatable"]  # counted once: as DRA devices only
        slices = (await kube.get("/apis/resource.k8s.io/v1/resourceslices"))["items"]
        assert sorted(s["spec"]["nodeName"] for s in slices) == ["node-0", "node-1"]
        spec = slices[0]["spec"]
        assert spec["driver"] == "gpu.nvidia.com" and spec["pool"]["name"] == spec["nodeName"]
        assert [d["name"] for d in spec["devices"]] == [f"gpu-{i}" for i in range(8)]
        attributes = spec["devices"][3]["attributes"]
        assert attributes["productName"] == {"string": "NVIDIA H100 80GB HBM3"}
        assert attributes["resource.kubernetes.io/pcieRoot"] == {"string": "pci0000:10"}
        assert attributes["cliqueID"]["string"] and attributes["type"] == {"string": "gpu"}
        assert spec["devices"][3]["capacity"] == {"memory": {"value": "80Gi"}}
        device_class = await kube.get("/apis/resource.k8s.io/v1/deviceclasses/gpu.nvidia.com")
        assert "device.driver == 'gpu.nvidia.com'" in device_class["spec"]["selectors"][0]["cel"]["expression"]

        request = {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}
        await kube.create(
            TEMPLATES, {"metadata": {"name": "two"}, "spec": {"spec": {"devices": {"requests": [request]}}}}
        )
        pod: dict[str, Any] = {
            "metadata": {"name": "w"},
            "spec": {
                "nodeName": "node-0",
                "containers": [{"name": "c", "image": "x"}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "two"}],
            },
        }
        created = await kube.create(f"{NS}/pods", pod)

        async def waiting() -> dict[str, Any] | None:
            current = await kube.get(f"{NS}/pods/w")
            statuses = current.get("status", {}).get("containerStatuses") or []
            return current if statuses and "waiting" in statuses[0]["state"] else None

        held = await eventually(waiting, what="the pod held in ContainerCreating")
        assert held["status"]["phase"] == "Pending"
        assert held["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"

        async def not_allowed() -> bool:  # (a first event may say the claim was not seen yet: the kubelet's watch)
            events = (await kube.get(f"{NS}/events"))["items"]
            return any(
                e.get("reason") == "FailedPrepareDynamicResources"
                and "is not allowed to use ResourceClaim" in e["message"]
                for e in events
            )

        await eventually(not_allowed, what="a FailedPrepareDynamicResources event: not allowed to use the claim")

        name = held["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        claim = await kube.get(f"{CLAIMS}/{name}")
        results = [
            {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "node-0", "device": f"gpu-{i}"} for i in range(2)
        ]
        status = {
            "allocation": {"devices": {"results": results}},
            "reservedFor": [{"resource": "pods", "name": "w", "uid": created["metadata"]["uid"]}],
        }
        await kube.replace(f"{CLAIMS}/{name}/status", dict(claim, status=status))

        async def running() -> bool:
            return bool((await kube.get(f"{NS}/pods/w")).get("status", {}).get("phase") == "Running")

        await eventually(running, what="the pod started once its claim is allocated and reserved")
