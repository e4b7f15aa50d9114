"""What a write to pods/status may change, against the emulator, as kube-apiserver does it.

Oracle: pkg/registry/core/pod/strategy.go, podStatusStrategy.PrepareForUpdate (kubernetes/kubernetes master):
`newPod.Spec = oldPod.Spec; newPod.DeletionTimestamp = nil; newPod.OwnerReferences = oldPod.OwnerReferences`, the
QOS class backfilled from the old status when the new one has none, and preserveOldObservedGeneration; the rest of
the metadata (labels, annotations, finalizers) is taken from the request. Then
staging/src/k8s.io/apiserver/pkg/registry/rest/update.go BeforeUpdate keeps generation, uid, creationTimestamp and
an existing deletionTimestamp, and apimachinery's ValidateObjectMetaUpdate refuses new finalizers on an object being
deleted. So the pods/status grant of kube-scheduler's ClusterRole can relabel and annotate a pod, never change what
it runs.
"""

from __future__ import annotations

import asyncio
from typing import Any

from gangsched.sim.apiserver import ApiServer
from tests.conformance._binding_helpers import call, pod
from tests.conftest import KubectlRunner

PODS = "/api/v1/namespaces/default/pods"
MERGE = "application/merge-patch+json"


async def _owner(server: ApiServer) -> dict[str, Any]:
    """An object that exists, so the garbage collector leaves its dependents alone."""
    status, owner = await call(server, "GET", "/api/v1/namespaces/default/configmaps/owner")
    if status == 404:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}
        status, owner = await call(server, "POST", "/api/v1/namespaces/default/configmaps", body)
    assert status in (200, 201), owner
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}


async def _created(server: ApiServer, name: str, **spec: Any) -> dict[str, Any]:
    body = pod(name, labels={"app": "a"}, annotations={"note": "old"}, **spec)
    body["metadata"]["ownerReferences"] = [await _owner(server)]
    status, created = await call(server, "POST", PODS, body)
    assert status == 201, created
    return created


async def test_status_writes_change_metadata_but_never_the_spec(apiserver: ApiServer) -> None:
    """A merge patch of pods/status carrying labels, annotations, a new image, other ownerReferences and a
    deletionTimestamp: the labels, annotations and status land; spec, ownerReferences, deletionTimestamp and
    generation stay as they were (PrepareForUpdate, BeforeUpdate)."""
    created = await _created(apiserver, "p")
    body = {
        "metadata": {
            "labels": {"app": "b"},
            "annotations": {"gang.scheduling.koordinator.sh/timeout": "true"},
            "ownerReferences": None,
            "deletionTimestamp": "2030-01-01T00:00:00Z",
        },
        "spec": {"containers": [{"name": "c", "image": "evil:1"}]},
        "status": {"phase": "Pending", "nominatedNodeName": "n1"},
    }
    status, answer = await call(apiserver, "PATCH", f"{PODS}/p/status", body, content_type=MERGE)
    assert status == 200, answer
    _, stored = await call(apiserver, "GET", f"{PODS}/p")
    for got in (answer, stored):
        meta = got["metadata"]
        assert meta["labels"] == {"app": "b"}
        assert meta["annotations"] == {"note": "old", "gang.scheduling.koordinator.sh/timeout": "true"}
        assert meta["ownerReferences"] == created["metadata"]["ownerReferences"]
        assert "deletionTimestamp" not in meta
        assert meta["generation"] == created["metadata"]["generation"]
        assert meta["uid"] == created["metadata"]["uid"]
        assert got["spec"] == created["spec"]
        assert got["status"]["nominatedNodeName"] == "n1"


async def test_metadata_written_through_status_is_validated(apiserver: ApiServer) -> None:
    """podStatusStrategy.ValidateUpdate -> ValidatePodStatusUpdate -> ValidateObjectMetaUpdate: annotations sent
    through pods/status obey apimachinery's TotalAnnotationSizeLimitB (256 KiB) as on the pod itself."""
    await _created(apiserver, "big")
    huge = {"metadata": {"annotations": {"example.com/blob": "x" * (256 * 1024)}}}
    status, answer = await call(apiserver, "PATCH", f"{PODS}/big/status", huge, content_type=MERGE)
    assert status == 422 and "annotations" in answer["message"], answer
    _, stored = await call(apiserver, "GET", f"{PODS}/big")
    assert "example.com/blob" not in stored["metadata"]["annotations"]


async def test_a_status_update_keeps_the_qos_class_and_the_deletion(apiserver: ApiServer) -> None:
    """PUT pods/status without status.qosClass keeps the stored one (PrepareForUpdate's backfill); on a pod being
    deleted (a finalizer holds it) the deletionTimestamp survives a status write, and a status write may remove
    finalizers but not add one (ValidateNoNewFinalizers)."""
    await _created(apiserver, "q", finalizers=["example.com/hold"])
    qos = {"status": {"qosClass": "BestEffort"}}
    status, answer = await call(apiserver, "PATCH", f"{PODS}/q/status", qos, content_type=MERGE)
    assert status == 200 and answer["status"]["qosClass"] == "BestEffort", answer
    status, answer = await call(apiserver, "DELETE", f"{PODS}/q")
    assert status == 200 and answer["metadata"]["deletionTimestamp"], answer
    deleting = answer
    replaced = {**deleting, "status": {"phase": "Pending"}}
    replaced["metadata"] = {**deleting["metadata"], "deletionTimestamp": None, "labels": {"app": "c"}}
    status, answer = await call(apiserver, "PUT", f"{PODS}/q/status", replaced)
    assert status == 200, answer
    assert answer["status"]["qosClass"] == "BestEffort"
    assert answer["metadata"]["deletionTimestamp"] == deleting["metadata"]["deletionTimestamp"]
    assert answer["metadata"]["labels"] == {"app": "c"}
    more = {"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}}
    status, answer = await call(apiserver, "PATCH", f"{PODS}/q/status", more, content_type=MERGE)
    assert status == 422 and "no new finalizers" in answer["message"], answer
    released = {"metadata": {"finalizers": None}}
    status, answer = await call(apiserver, "PATCH", f"{PODS}/q/status", released, content_type=MERGE)
    assert status == 200, answer
    status, _ = await call(apiserver, "GET", f"{PODS}/q")
    assert status == 404  # the last finalizer went away through status: the pod is deleted (shouldDeleteDuringUpdate)


async def test_kubectl_relabels_a_pod_through_its_status(apiserver: ApiServer, kubectl: KubectlRunner) -> None:
    """`kubectl patch --subresource=status` with a label and an image: the label lands, the image does not."""
    await _created(apiserver, "k")
    patch = '{"metadata":{"labels":{"tier":"x"}},"spec":{"containers":[{"name":"c","image":"evil:1"}]}}'
    done = await asyncio.to_thread(kubectl, "patch", "pod", "k", "--subresource=status", "--type=merge", "-p", patch)
    assert done.returncode == 0, done.stderr
    jsonpath = "jsonpath={.metadata.labels.tier} {.spec.containers[0].image}"
    got = await asyncio.to_thread(kubectl, "get", "pod", "k", "-o", jsonpath, check=True)
    assert got.stdout == "x busybox:1"
