"""A real Kopf operator (unmodified Kopf, its own aiohttp client) against the emulator: it logs in through a login
handler built from the kubeconfig, watches ConfigMaps and a CRD, and sees create/update/delete; its delete handler
works through a finalizer, its progress through annotations (merge patches)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import kopf

from gangsched.k8s.client import ApiError, KubeClient
from gangsched.sim.apiserver import ApiServer

CMS = "/api/v1/namespaces/default/configmaps"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GADGETS = "/apis/example.com/v1/namespaces/default/gadgets"

GADGET_CRD: dict[str, Any] = {
    "metadata": {"name": "gadgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}


async def wait_for(predicate: Any, *, timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "Kopf did not get there before the deadline"
        await asyncio.sleep(0.02)


async def test_kopf_operator_sees_create_update_delete(apiserver: ApiServer, kube: KubeClient) -> None:
    await kube.create(CRDS, GADGET_CRD)
    registry = kopf.OperatorRegistry()
    seen: list[tuple[str, str, str]] = []

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=apiserver.url, insecure=True, default_namespace="default")

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage()
        settings.persistence.finalizer = "example.com/kopf-test"
        settings.posting.level = logging.ERROR
        settings.watching.server_timeout = 10
        settings.scanning.disabled = True

    @kopf.on.create("configmaps", registry=registry)
    def created(name: str, **_: Any) -> dict[str, str]:
        seen.append(("create", "configmap", name))
        return {"ok": "yes"}

    @kopf.on.update("configmaps", field="data", registry=registry)
    def updated(name: str, new: Any, **_: Any) -> None:
        seen.append(("update", "configmap", name))

    @kopf.on.delete("configmaps", registry=registry)
    def deleted(name: str, **_: Any) -> None:
        seen.append(("delete", "configmap", name))

    @kopf.on.event("example.com", "v1", "gadgets", registry=registry)
    def gadget_event(type: str | None, name: str, **_: Any) -> None:
        seen.append((str(type), "gadget", name))

    stop = asyncio.Event()
    ready = asyncio.Event()
    task = asyncio.create_task(
        kopf.operator(registry=registry, namespaces=["default"], standalone=True, stop_flag=stop, ready_flag=ready)
    )
    try:
        await asyncio.wait_for(ready.wait(), 15)
        await kube.create(CMS, {"metadata": {"name": "cm"}, "data": {"a": "1"}})
        await wait_for(lambda: ("create", "configmap", "cm") in seen)
        # Kopf put its finalizer on and recorded the handler's result in the status it keeps in annotations
        cm = await kube.get(f"{CMS}/cm")
        assert "example.com/kopf-test" in cm["metadata"]["finalizers"]
        await kube.patch(f"{CMS}/cm", {"data": {"a": "2"}})
        await wait_for(lambda: ("update", "configmap", "cm") in seen)
        await kube.delete(f"{CMS}/cm")
        await wait_for(lambda: ("delete", "configmap", "cm") in seen)

        async def cm_gone() -> bool:
            try:
                await kube.get(f"{CMS}/cm")
            except ApiError as exc:
                return exc.status == 404
            return False

        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while not await cm_gone():  # the finalizer is removed by Kopf, then the object goes
            assert loop.time() < deadline
            await asyncio.sleep(0.02)

        await kube.create(GADGETS, {"metadata": {"name": "g"}, "spec": {"x": 1}})
        await kube.patch(f"{GADGETS}/g", {"spec": {"x": 2}})
        await kube.delete(f"{GADGETS}/g")
        await wait_for(lambda: ("DELETED", "gadget", "g") in seen)
        gadget_types = [t for t, kind, _ in seen if kind == "gadget"]
        assert gadget_types[0] == "ADDED" and "MODIFIED" in gadget_types
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)
