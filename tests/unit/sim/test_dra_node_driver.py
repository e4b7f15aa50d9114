"""The simulated kubelet's DRA check and the simulated GPU driver's objects (sim/dra/node.py, sim/dra/driver.py).

Oracles: kubernetes pkg/kubelet/cm/dra/manager.go PrepareResources (resourceclaim.Name resolves a pod claim through
pod.status.resourceClaimStatuses; a claim that cannot be fetched fails with "failed to fetch ResourceClaim"; one not
reserved for the pod with "pod <name>(<uid>) is not allowed to use ResourceClaim <name>(<uid>)"); 1.37's PodGroup
claims are reserved for the PodGroup (core/v1 PodResourceClaim docs: "reserved for the PodGroup in
ResourceClaimStatus.ReservedFor rather than for individual Pods"). NVIDIA/k8s-dra-driver-gpu
cmd/gpu-kubelet-plugin/deviceinfo.go GpuInfo.GetDevice for the device's attribute names.
"""

from __future__ import annotations

from typing import Any

from gangsched.sim.dra import driver, node


def pod(**status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "w", "namespace": "ns", "uid": "pod-uid"},
        "spec": {
            "schedulingGroup": {"podGroupName": "gang"},
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
        },
        "status": status,
    }


def claim(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "w-gpu-abcde", "uid": "claim-uid"}, "status": status}


GENERATED = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "w-gpu-abcde"}]}
ALLOCATION: dict[str, Any] = {"devices": {"results": []}}


def test_claims_resolve_through_the_pod_status() -> None:
    assert node.claim_names(pod()) == [None]
    assert node.claim_names(pod(**GENERATED)) == ["w-gpu-abcde"]
    assert "to be created" in (node.unprepared(pod(), {}) or "")


def test_prepare_fails_until_allocated_and_reserved() -> None:
    assert node.unprepared(pod(**GENERATED), {}) == (
        "failed to fetch ResourceClaim w-gpu-abcde referenced by pod w: "
        'resourceclaims.resource.k8s.io "w-gpu-abcde" not found'
    )
    not_allowed = "pod w(pod-uid) is not allowed to use ResourceClaim w-gpu-abcde(claim-uid)"
    assert node.unprepared(pod(**GENERATED), {("ns", "w-gpu-abcde"): claim()}) == not_allowed
    other = {"resource": "pods", "name": "x", "uid": "x"}
    assert (
        node.unprepared(pod(**GENERATED), {("ns", "w-gpu-abcde"): claim(allocation=ALLOCATION, reservedFor=[other])})
        == not_allowed
    )
    mine = {"resource": "pods", "name": "w", "uid": "pod-uid"}
    assert (
        node.unprepared(pod(**GENERATED), {("ns", "w-gpu-abcde"): claim(allocation=ALLOCATION, reservedFor=[mine])})
        is None
    )
    group = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "gang", "uid": "g"}
    assert (
        node.unprepared(pod(**GENERATED), {("ns", "w-gpu-abcde"): claim(allocation=ALLOCATION, reservedFor=[group])})
        is None
    )


def test_waiting_status_is_container_creating() -> None:
    p = pod()
    p["spec"]["containers"] = [{"name": "main", "image": "x"}]
    status = node.waiting_status(p, "2026-01-01T00:00:00Z")
    assert status["phase"] == "Pending"
    assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}


def test_driver_objects() -> None:
    assert driver.split_gpus({"cpu": "32", "nvidia.com/gpu": "8"}) == ({"cpu": "32"}, 8)
    made = driver.resource_slice("node-3", 4, clique=driver.clique_id("rack-1"))
    assert made["spec"]["pool"] == {"name": "node-3", "generation": 1, "resourceSliceCount": 1}
    device = made["spec"]["devices"][2]
    assert device["name"] == "gpu-2" and device["capacity"]["memory"] == {"value": "80Gi"}
    names = {"type", "uuid", "productName", "brand", "architecture", "cudaComputeCapability", "driverVersion"}
    names |= {"cudaDriverVersion", "pcieBusID", "addressingMode", "resource.kubernetes.io/pcieRoot", "cliqueID"}
    assert set(device["attributes"]) == names
    assert (
        device["attributes"]["cliqueID"]
        == {"string": driver.clique_id("rack-1")}
        != {"string": driver.clique_id("rack-2")}
    )
