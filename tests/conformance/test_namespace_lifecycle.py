"""Namespace deletion against the emulator, as kube-apiserver v1.32 and kube-controller-manager do it.

Mirrors pkg/registry/core/namespace/storage/storage.go (REST.Delete: the first DELETE sets deletionTimestamp and
status.phase Terminating, spec.finalizers ["kubernetes"] stay), staging/src/k8s.io/apiserver/pkg/admission/
plugin/namespace/lifecycle/admission.go (403 for creates in a terminating namespace, with a NamespaceTerminating
cause; the immortal namespaces default, kube-system, kube-public) and
pkg/controller/namespace/deletion/namespaced_resources_deleter.go (contents deleted, pods gracefully, objects with
finalizers waited for, NamespaceContentRemaining / NamespaceFinalizersRemaining conditions, then the
"kubernetes" finalizer removed and the namespace gone).
"""

from __future__ import annotations

from typing import Any

from gangsched.sim.apiserver import ApiServer
from tests.conformance._binding_helpers import binding, call, eventually, pod

NS = "/api/v1/namespaces"


async def _namespace(server: ApiServer, name: str) -> None:
    status, answer = await call(server, "POST", NS, {"metadata": {"name": name}})
    assert status == 201, answer
    assert answer["spec"] == {"finalizers": ["kubernetes"]} and answer["status"] == {"phase": "Active"}


async def _get(server: ApiServer, path: str) -> dict[str, Any] | None:
    status, got = await call(server, "GET", path)
    return got if status == 200 else None


async def test_deleted_namespace_terminates_then_disappears(apiserver: ApiServer) -> None:
    await _namespace(apiserver, "team")
    pods = f"{NS}/team/pods"
    assert (await call(apiserver, "POST", f"{NS}/team/configmaps", {"metadata": {"name": "cm"}}))[0] == 201
    assert (
        await call(apiserver, "POST", pods, pod("slow", annotations={"sim.gangsched.io/termination-delay": "500ms"}))
    )[0] == 201
    assert (await call(apiserver, "POST", f"{pods}/slow/binding", binding("slow", "node-1")))[0] == 201
    status, answer = await call(apiserver, "DELETE", f"{NS}/team")
    assert status == 200, answer
    assert answer["status"]["phase"] == "Terminating" and answer["metadata"]["deletionTimestamp"]
    assert answer["spec"]["finalizers"] == ["kubernetes"]

    async def pod_terminating() -> bool:
        got = await _get(apiserver, f"{pods}/slow")
        return got is not None and bool(got["metadata"].get("deletionTimestamp"))

    await eventually(pod_terminating, what="the bound pod deleted gracefully")
    assert await _get(apiserver, f"{NS}/team/configmaps/cm") is None
    status, answer = await call(apiserver, "POST", f"{NS}/team/configmaps", {"metadata": {"name": "late"}})
    assert status == 403 and answer["reason"] == "Forbidden", answer
    assert answer["message"] == (
        'configmaps "late" is forbidden: unable to create new content in namespace team because it is being terminated'
    )
    assert (answer["details"]["name"], answer["details"]["kind"]) == ("late", "configmaps")
    assert answer["details"]["causes"] == [
        {
            "reason": "NamespaceTerminating",
            "message": "namespace team is being terminated",
            "field": "metadata.namespace",
        }
    ]
    ns = await _get(apiserver, f"{NS}/team")
    assert ns is not None and ns["status"]["phase"] == "Terminating"
    await eventually(lambda: _gone(apiserver, f"{NS}/team"), what="the namespace removed once empty")
    assert await _get(apiserver, f"{pods}/slow") is None


async def _gone(server: ApiServer, path: str) -> bool:
    return await _get(server, path) is None


async def test_finalizers_hold_the_namespace(apiserver: ApiServer) -> None:
    await _namespace(apiserver, "held")
    cms = f"{NS}/held/configmaps"
    assert (await call(apiserver, "POST", cms, {"metadata": {"name": "cm", "finalizers": ["example.com/x"]}}))[0] == 201
    assert (await call(apiserver, "DELETE", f"{NS}/held"))[0] == 200

    async def reported() -> dict[str, Any] | None:
        ns = await _get(apiserver, f"{NS}/held")
        conds = {c["type"]: c for c in (ns or {}).get("status", {}).get("conditions") or []}
        return conds if "NamespaceFinalizersRemaining" in conds else None

    conds = await eventually(reported, what="the namespace's conditions")
    assert (
        conds["NamespaceContentRemaining"]["message"]
        == "Some resources are remaining: configmaps has 1 resource instances"
    )
    assert conds["NamespaceFinalizersRemaining"]["status"] == "True"
    assert (
        conds["NamespaceFinalizersRemaining"]["message"]
        == "Some content in the namespace has finalizers remaining: example.com/x in 1 resource instances"
    )
    cm = await _get(apiserver, f"{cms}/cm")
    assert cm is not None and cm["metadata"]["deletionTimestamp"]
    status, _ = await call(
        apiserver, "PATCH", f"{cms}/cm", {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json"
    )
    assert status == 200
    await eventually(lambda: _gone(apiserver, f"{NS}/held"), what="the namespace removed after the finalizer")


async def test_immortal_namespaces_and_missing_ones(apiserver: ApiServer) -> None:
    for name in ("default", "kube-system", "kube-public"):
        status, answer = await call(apiserver, "DELETE", f"{NS}/{name}")
        assert status == 403, answer
        assert answer["message"] == f'namespaces "{name}" is forbidden: this namespace may not be deleted'
    status, answer = await call(apiserver, "POST", f"{NS}/nowhere/configmaps", {"metadata": {"name": "cm"}})
    assert status == 404 and answer["message"] == 'namespaces "nowhere" not found'
