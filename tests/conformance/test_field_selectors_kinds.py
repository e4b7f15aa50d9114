"""Field selectors accept only the labels the real apiserver supports per kind (400 otherwise).

Sources: pkg/apis/core/v1/conversion.go (AddFieldLabelConversionFunc for Pod, Node, Namespace, Secret, Event,
...: `field label not supported: X`), staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/conversion.go
(DefaultMetaV1FieldSelectorConversion: metadata.name and metadata.namespace for every other kind),
pkg/registry/core/pod/strategy.go (PodToSelectableFields: spec.hostNetwork as "true"/"false", status.podIP from
podIPs[0]), pkg/registry/core/node/strategy.go (spec.unschedulable), staging/src/k8s.io/apiserver/pkg/endpoints/
handlers/get.go (a label the conversion refuses -> 400 BadRequest), and
staging/src/k8s.io/apiextensions-apiserver (CRD selectableFields).
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from gangsched.sim.apiserver import ApiServer


async def _get(server: ApiServer, path: str, selector: str) -> tuple[int, dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{server.url}{path}", params={"fieldSelector": selector}) as resp,
    ):
        return resp.status, await resp.json()


@pytest.mark.parametrize(
    ("path", "selector"),
    [
        pytest.param("/api/v1/pods", "spec.nodeName=a,spec.restartPolicy=Always,spec.schedulerName=x", id="pod-spec"),
        pytest.param("/api/v1/pods", "spec.serviceAccountName=a,spec.hostNetwork=false", id="pod-sa-hostnetwork"),
        pytest.param(
            "/api/v1/pods", "status.phase=Running,status.podIP=1.2.3.4,status.nominatedNodeName=n", id="pod-status"
        ),
        pytest.param("/api/v1/pods", "status.podIPs=1.2.3.4", id="pod-podIPs"),
        pytest.param(
            "/api/v1/events",
            "involvedObject.kind=Pod,involvedObject.name=p,involvedObject.uid=u,"
            "involvedObject.namespace=d,involvedObject.apiVersion=v1,involvedObject.resourceVersion=1,"
            "involvedObject.fieldPath=x",
            id="event-involved",
        ),
        pytest.param("/api/v1/events", "reason=R,reportingComponent=c,source=s,type=Normal", id="event-fields"),
        pytest.param("/api/v1/nodes", "spec.unschedulable=false,metadata.name=n", id="node"),
        pytest.param("/api/v1/namespaces", "status.phase=Active", id="namespace"),
        pytest.param("/api/v1/secrets", "type=Opaque", id="secret"),
        pytest.param("/api/v1/configmaps", "metadata.name=a,metadata.namespace=b", id="meta-everywhere"),
    ],
)
async def test_supported_labels(apiserver: ApiServer, path: str, selector: str) -> None:
    status, body = await _get(apiserver, path, selector)
    assert status == 200, body


@pytest.mark.parametrize(
    ("path", "selector", "label"),
    [
        pytest.param("/api/v1/pods", "spec.priority=1", "spec.priority", id="pod-priority"),
        pytest.param("/api/v1/pods", "metadata.uid=x", "metadata.uid", id="pod-uid"),
        pytest.param("/api/v1/configmaps", "data.a=b", "data.a", id="configmap-data"),
        pytest.param("/api/v1/nodes", "metadata.namespace=x", "metadata.namespace", id="node-namespace"),
        pytest.param("/api/v1/namespaces", "metadata.namespace=x", "metadata.namespace", id="namespace-namespace"),
        pytest.param("/api/v1/secrets", "spec.type=x", "spec.type", id="secret"),
        pytest.param("/apis/coordination.k8s.io/v1/leases", "spec.holderIdentity=a", "spec.holderIdentity", id="lease"),
    ],
)
async def test_unsupported_labels_are_400(apiserver: ApiServer, path: str, selector: str, label: str) -> None:
    status, body = await _get(apiserver, path, selector)
    assert status == 400, body
    assert body["reason"] == "BadRequest" and body["message"] == f"field label not supported: {label}"


async def test_unsupported_label_on_watch_is_400(apiserver: ApiServer) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"{apiserver.url}/api/v1/pods", params={"watch": "true", "fieldSelector": "spec.priority=1"}
        ) as resp,
    ):
        assert resp.status == 400


async def _create(server: ApiServer, path: str, body: dict[str, Any]) -> None:
    async with aiohttp.ClientSession() as session, session.post(f"{server.url}{path}", json=body) as resp:
        assert resp.status == 201, await resp.text()


async def test_computed_values(apiserver: ApiServer) -> None:
    """spec.hostNetwork and spec.unschedulable read "false" when absent; status.podIPs is never in the set."""
    await _create(
        apiserver,
        "/api/v1/namespaces/default/pods",
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
    )
    await _create(apiserver, "/api/v1/nodes", {"metadata": {"name": "n"}})
    for path, selector, names in [
        ("/api/v1/pods", "spec.hostNetwork=false", ["p"]),
        ("/api/v1/pods", "spec.hostNetwork=true", []),
        ("/api/v1/pods", "status.podIPs=", ["p"]),
        ("/api/v1/nodes", "spec.unschedulable=false", ["n"]),
        ("/api/v1/nodes", "spec.unschedulable!=false", []),
    ]:
        status, body = await _get(apiserver, path, selector)
        assert status == 200, body
        assert [i["metadata"]["name"] for i in body["items"]] == names, selector


async def test_crd_selectable_fields(apiserver: ApiServer) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "selectableFields": [{"jsonPath": ".spec.color"}],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"color": {"type": "string"}, "size": {"type": "string"}},
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    await _create(apiserver, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    await _create(
        apiserver,
        "/apis/example.com/v1/namespaces/default/widgets",
        {"metadata": {"name": "w"}, "spec": {"color": "red", "size": "L"}},
    )
    status, body = await _get(apiserver, "/apis/example.com/v1/widgets", "spec.color=red")
    assert status == 200 and [i["metadata"]["name"] for i in body["items"]] == ["w"]
    status, body = await _get(apiserver, "/apis/example.com/v1/widgets", "spec.size=L")
    assert status == 400 and body["message"] == "field label not supported: spec.size"
