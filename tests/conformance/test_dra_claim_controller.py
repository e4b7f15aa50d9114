"""The emulator's resourceclaim controller against kube-controller-manager's, over HTTP (issue 26 item 1).

Sources (kubernetes/kubernetes pkg/controller/resourceclaim/controller.go):
- handleClaim: generateName `<pod>-<claim>-` (both cut proportionally past 57 characters), ownerReference to the
  pod (controller, blockOwnerDeletion), annotation resource.kubernetes.io/pod-claim-name, the template's labels and
  spec; syncPod writes pod status.resourceClaimStatuses; a missing template is a Warning event
  FailedResourceClaimCreation on the pod.
- syncPod's tail: a bound pod's allocated claim not reserved for it gets the pod in reservedFor.
- syncClaim: reservedFor entries of done pods (isPodDone: Succeeded/Failed) are removed; with none left the
  allocation is cleared and the delete-protection finalizer removed; an unreserved claim generated for a done pod
  is deleted.
- 1.37 PodGroup claims: staging/src/k8s.io/api/core/v1/types.go PodResourceClaim.ResourceClaimTemplateName and
  scheduling/v1beta1 PodGroupResourceClaim (DRAWorkloadResourceClaims): the PodGroup gets the claim (owned by it,
  podgroup status.resourceClaimStatuses); a pod's equal claim resolves to the PodGroup's claim.
"""

from __future__ import annotations

from typing import Any

from gangsched.k8s.client import KubeClient
from tests.conformance._binding_helpers import eventually

NS = "/api/v1/namespaces/default"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
TEMPLATES = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates"
PODGROUPS = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups"
ANNOTATION = "resource.kubernetes.io/pod-claim-name"
FINALIZER = "resource.kubernetes.io/delete-protection"


def template(name: str = "gpu8") -> dict[str, Any]:
    request = {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8}}
    return {
        "metadata": {"name": name},
        "spec": {"metadata": {"labels": {"team": "a"}}, "spec": {"devices": {"requests": [request]}}},
    }


def pod(name: str, claim: str = "gpu", template_name: str = "gpu8", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": "x"}],
            "resourceClaims": [{"name": claim, "resourceClaimTemplateName": template_name}],
            **spec,
        },
    }


async def claim_of(kube: KubeClient, pod_name: str, claim: str = "gpu") -> str:
    async def probe() -> str | None:
        statuses = (await kube.get(f"{NS}/pods/{pod_name}")).get("status", {}).get("resourceClaimStatuses") or []
        return next((s.get("resourceClaimName") for s in statuses if s["name"] == claim), None)

    name: str = await eventually(probe, what=f"pod {pod_name} status.resourceClaimStatuses")
    return name


async def test_claim_generated_from_template(kube: KubeClient) -> None:
    await kube.create(TEMPLATES, template())
    created = await kube.create(f"{NS}/pods", pod("worker-0"))
    name = await claim_of(kube, "worker-0")
    claim = await kube.get(f"{CLAIMS}/{name}")
    meta = claim["metadata"]
    assert meta["generateName"] == "worker-0-gpu-" and len(name) == len("worker-0-gpu-") + 5
    assert meta["annotations"] == {ANNOTATION: "gpu"} and meta["labels"] == {"team": "a"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "worker-0",
            "uid": created["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["count"] == 8


async def test_long_names_are_cut_proportionally(kube: KubeClient) -> None:
    await kube.create(TEMPLATES, template())
    pod_name, claim_name = "p" * 60, "c" * 20
    await kube.create(f"{NS}/pods", pod(pod_name, claim=claim_name))
    name = await claim_of(kube, pod_name, claim_name)
    base = "p" * (60 * 57 // 82) + "-" + "c" * (20 * 57 // 82)
    assert name.startswith(base) and len(name) == len(base) + 5


async def test_missing_template_is_an_event_then_created(kube: KubeClient) -> None:
    await kube.create(f"{NS}/pods", pod("worker-0", template_name="later"))

    async def event() -> list[dict[str, Any]]:
        items = (await kube.get(f"{NS}/events")).get("items") or []
        return [e for e in items if e.get("reason") == "FailedResourceClaimCreation"]

    found = await eventually(event, what="a FailedResourceClaimCreation event")
    assert 'resource claim template "later"' in found[0]["message"] and found[0]["type"] == "Warning"
    await kube.create(TEMPLATES, template("later"))
    assert (await claim_of(kube, "worker-0")).startswith("worker-0-gpu-")


async def test_bound_pod_reserved_then_released_and_claim_deleted_when_done(kube: KubeClient) -> None:
    await kube.create(TEMPLATES, template())
    created = await kube.create(f"{NS}/pods", pod("worker-0", nodeName="node-0"))
    name = await claim_of(kube, "worker-0")
    claim = await kube.get(f"{CLAIMS}/{name}")
    result = {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "node-0", "device": "gpu-0"}
    allocation = {"devices": {"results": [result]}}
    claim["metadata"]["finalizers"] = [FINALIZER]
    claim = await kube.replace(f"{CLAIMS}/{name}", claim)
    await kube.replace(f"{CLAIMS}/{name}/status", dict(claim, status={"allocation": allocation}))

    async def reserved() -> list[dict[str, Any]]:
        return list((await kube.get(f"{CLAIMS}/{name}")).get("status", {}).get("reservedFor") or [])

    refs = await eventually(reserved, what="the bound pod in reservedFor")
    assert refs == [{"resource": "pods", "name": "worker-0", "uid": created["metadata"]["uid"]}]
    await kube.patch(f"{NS}/pods/worker-0/status", {"status": {"phase": "Succeeded"}})

    async def gone() -> bool:
        listing = await kube.get(CLAIMS)
        return not any(c["metadata"]["name"] == name for c in listing.get("items") or [])

    await eventually(gone, what="the done pod's claim released, deallocated and deleted")


async def test_podgroup_claim_shared_by_its_pods(kube: KubeClient) -> None:
    await kube.create(TEMPLATES, template())
    group = {
        "metadata": {"name": "gang"},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": 2}},
            "resourceClaims": [{"name": "shared", "resourceClaimTemplateName": "gpu8"}],
        },
    }
    created = await kube.create(PODGROUPS, group)

    async def group_claim() -> str | None:
        statuses = (await kube.get(f"{PODGROUPS}/gang")).get("status", {}).get("resourceClaimStatuses") or []
        return next((s.get("resourceClaimName") for s in statuses if s["name"] == "shared"), None)

    name = await eventually(group_claim, what="the PodGroup's status.resourceClaimStatuses")
    claim = await kube.get(f"{CLAIMS}/{name}")
    assert name.startswith("gang-shared-")
    owner = claim["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("PodGroup", "gang", created["metadata"]["uid"])
    for i in range(2):
        await kube.create(f"{NS}/pods", pod(f"m-{i}", claim="shared", schedulingGroup={"podGroupName": "gang"}))
        assert await claim_of(kube, f"m-{i}", "shared") == name
    claims = [c["metadata"]["name"] for c in (await kube.get(CLAIMS)).get("items") or []]
    assert claims == [name]  # no per-pod claim


async def test_deleted_pod_released_from_a_shared_claim(kube: KubeClient) -> None:
    """syncClaim: a deleted pod's reservedFor entry is removed; with no consumer left the allocation is cleared and
    the delete-protection finalizer removed; a claim not generated for a pod is kept."""
    body = {
        "metadata": {"name": "shared", "finalizers": [FINALIZER]},
        "spec": template()["spec"]["spec"],
    }
    claim = await kube.create(CLAIMS, body)
    spec = {
        "containers": [{"name": "c", "image": "x"}],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "shared"}],
    }
    uids = [
        (await kube.create(f"{NS}/pods", {"metadata": {"name": f"u-{i}"}, "spec": spec}))["metadata"]["uid"]
        for i in range(2)
    ]
    result = {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "node-0", "device": "gpu-0"}
    reserved = [{"resource": "pods", "name": f"u-{i}", "uid": uid} for i, uid in enumerate(uids)]
    status = {"allocation": {"devices": {"results": [result]}}, "reservedFor": reserved}
    await kube.replace(f"{CLAIMS}/shared/status", dict(claim, status=status))
    await kube.delete(f"{NS}/pods/u-0")

    async def one_left() -> list[dict[str, Any]] | None:
        refs = (await kube.get(f"{CLAIMS}/shared")).get("status", {}).get("reservedFor") or []
        return refs if len(refs) == 1 else None

    assert await eventually(one_left, what="u-0 released") == [reserved[1]]
    await kube.delete(f"{NS}/pods/u-1")

    async def released() -> dict[str, Any] | None:
        current = await kube.get(f"{CLAIMS}/shared")
        done = not current.get("status", {}).get("allocation") and not current["metadata"].get("finalizers")
        return current if done else None

    current = await eventually(released, what="the allocation cleared and the finalizer removed")
    assert not current.get("status", {}).get("reservedFor")
