"""The PodGroup protection finalizer of Kubernetes 1.37, over HTTP (issue 25).

Sources (kubernetes/kubernetes, 1.37):
- plugin/pkg/admission/podgroupprotection/admission.go Admit: on create of a PodGroup (GenericWorkload on), the
  finalizer `scheduling.k8s.io/podgroup-protection` is appended unless present.
- pkg/controller/podgroupprotection/podgroup_protection_controller.go processPodGroup / hasActivePods /
  isPodTerminated: a PodGroup being deleted keeps the finalizer while a pod of its namespace that is not Succeeded
  or Failed names it in spec.schedulingGroup.podGroupName; then the controller removes it (removeFinalizer) and
  the deletion completes.
"""

from __future__ import annotations

import asyncio
from typing import Any

from gangsched.sim.apiserver import ApiServer
from tests.conformance.test_scheduling_podgroup import PGS, call, podgroup

PODS = "/api/v1/namespaces/default/pods"
FINALIZER = "scheduling.k8s.io/podgroup-protection"


def member(name: str, group: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"schedulingGroup": {"podGroupName": group}, "containers": [{"name": "c", "image": "pause"}]},
    }


async def settled(server: ApiServer, path: str) -> tuple[int, Any]:
    """The object after the controller's queued work ran (it runs at the next loop iterations, never in a write)."""
    status, body = await call(server, "GET", path)
    for _ in range(50):
        await asyncio.sleep(0)
        status, body = await call(server, "GET", path)
        if status == 404:
            break
    return status, body


async def test_created_podgroup_carries_the_finalizer(apiserver: ApiServer) -> None:
    status, created = await call(apiserver, "POST", PGS, podgroup("g"))
    assert status == 201, created
    assert created["metadata"]["finalizers"] == [FINALIZER]
    body = podgroup("h")
    body["metadata"]["finalizers"] = ["example.com/keep", FINALIZER]
    status, created = await call(apiserver, "POST", PGS, body)
    assert created["metadata"]["finalizers"] == ["example.com/keep", FINALIZER]  # not added twice


async def test_podgroup_in_use_stays_until_its_last_active_pod_goes(apiserver: ApiServer) -> None:
    await call(apiserver, "POST", PGS, podgroup("g"))
    for name in ("a", "b"):
        status, body = await call(apiserver, "POST", PODS, member(name, "g"))
        assert status == 201, body
    status, deleting = await call(apiserver, "DELETE", f"{PGS}/g")
    assert status == 200 and deleting["metadata"].get("deletionTimestamp"), deleting
    status, body = await settled(apiserver, f"{PGS}/g")
    assert status == 200 and body["metadata"]["finalizers"] == [FINALIZER]  # pods a and b use it
    await call(apiserver, "DELETE", f"{PODS}/a")
    # b finishes: a Succeeded pod no longer counts (isPodTerminated)
    _, pod = await call(apiserver, "GET", f"{PODS}/b")
    pod["status"] = {"phase": "Succeeded"}
    status, body = await call(apiserver, "PUT", f"{PODS}/b/status", pod)
    assert status == 200, body
    status, body = await settled(apiserver, f"{PGS}/g")
    assert status == 404, body


async def test_unused_podgroup_is_deleted_at_once_and_other_finalizers_still_hold(apiserver: ApiServer) -> None:
    await call(apiserver, "POST", PGS, podgroup("free"))
    await call(apiserver, "DELETE", f"{PGS}/free")
    status, _ = await settled(apiserver, f"{PGS}/free")
    assert status == 404
    body = podgroup("kept")
    body["metadata"]["finalizers"] = ["example.com/keep"]
    await call(apiserver, "POST", PGS, body)
    await call(apiserver, "DELETE", f"{PGS}/kept")
    status, body = await settled(apiserver, f"{PGS}/kept")
    assert status == 200 and body["metadata"]["finalizers"] == ["example.com/keep"]  # only ours was removed


async def test_a_namespace_with_a_podgroup_in_use_still_goes(apiserver: ApiServer) -> None:
    """The namespace controller deletes the pods and the PodGroup (namespaced_resources_deleter.go); the PodGroup
    waits for its pod, then loses the finalizer, and the namespace is removed once empty."""
    from tests.conformance._binding_helpers import eventually

    status, body = await call(apiserver, "POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
    assert status == 201, body
    pgs = "/apis/scheduling.k8s.io/v1beta1/namespaces/team/podgroups"
    assert (await call(apiserver, "POST", pgs, podgroup("g")))[0] == 201
    assert (await call(apiserver, "POST", "/api/v1/namespaces/team/pods", member("a", "g")))[0] == 201
    assert (await call(apiserver, "DELETE", "/api/v1/namespaces/team"))[0] == 200

    async def gone() -> bool:
        status, _ = await call(apiserver, "GET", "/api/v1/namespaces/team")
        return bool(status == 404)

    await eventually(gone, what="the namespace removed, its PodGroup's finalizer lifted")
    assert (await call(apiserver, "GET", f"{pgs}/g"))[0] == 404
