"""Size limits of a real kube-apiserver, enforced by the emulator (issue 22 item 15b).

Sources:
- staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go `limitedReadBody`: a body over the scope's
  MaxRequestBodyBytes -> errors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit)), i.e. 413,
  reason RequestEntityTooLarge, message `Request entity too large: limit is 3145728`;
  staging/src/k8s.io/apiserver/pkg/server/config.go `NewConfig`: MaxRequestBodyBytes = 3 * 1024 * 1024.
- staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go `ValidateAnnotations` /
  `ValidateAnnotationsSize`: len(key) + len(value) summed over the annotations > TotalAnnotationSizeLimitB
  (256 * (1 << 10)) -> field.TooLong(fldPath, "", TotalAnnotationSizeLimitB), printed
  `metadata.annotations: Too long: must have at most 262144 bytes` (field/errors.go `TooLong`), on create and on
  update (ValidateObjectMetaAccessorUpdate), for every kind (custom resources too).
- pkg/apis/core/validation/validation.go `ValidateConfigMap`: len(value) summed over data and binaryData >
  core.MaxSecretSize (1 MiB) -> field.TooLong(field.NewPath(""), cfg, core.MaxSecretSize), printed
  `[]: Too long: must have at most 1048576 bytes`.
"""

from __future__ import annotations

import base64
from typing import Any

import aiohttp
import orjson

from gangsched.sim.apiserver import ApiServer

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
MiB = 1024 * 1024


async def send(server: ApiServer, method: str, path: str, body: Any, content_type: str = "application/json") -> Any:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, f"{server.url}{path}", data=data, headers={"Content-Type": content_type}) as r,
    ):
        return r.status, await r.json()


def configmap(name: str, *, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}, "data": data or {}}


async def test_configmap_data_up_to_1_mib_is_accepted_one_byte_more_is_422(apiserver: ApiServer) -> None:
    status, body = await send(apiserver, "POST", CONFIGMAPS, configmap("full", data={"a": "x" * (MiB - 1), "b": "y"}))
    assert status == 201, body
    status, body = await send(apiserver, "POST", CONFIGMAPS, configmap("over", data={"a": "x" * MiB, "b": "y"}))
    assert status == 422, body
    assert body["reason"] == "Invalid"
    assert body["message"] == 'ConfigMap "over" is invalid: []: Too long: must have at most 1048576 bytes'
    assert body["details"]["causes"] == [
        {"reason": "FieldValueTooLong", "message": "Too long: must have at most 1048576 bytes", "field": "[]"}
    ]


async def test_configmap_binary_data_counts_decoded_bytes_with_data(apiserver: ApiServer) -> None:
    half = base64.b64encode(b"\0" * (MiB // 2)).decode()
    ok = configmap("bin-ok", data={"a": "x" * (MiB // 2)})
    ok["binaryData"] = {"b": half}  # 1.33 MiB on the wire, exactly 1 MiB counted
    status, body = await send(apiserver, "POST", CONFIGMAPS, ok)
    assert status == 201, body
    over = configmap("bin-over", data={"a": "x" * (MiB // 2 + 1)})
    over["binaryData"] = {"b": half}
    status, body = await send(apiserver, "POST", CONFIGMAPS, over)
    assert status == 422 and "[]: Too long" in body["message"], body


async def test_a_configmap_growing_past_1_mib_by_patch_is_refused_and_kept(apiserver: ApiServer) -> None:
    status, _ = await send(apiserver, "POST", CONFIGMAPS, configmap("grow", data={"a": "x" * (MiB - 10)}))
    assert status == 201
    patch = {"data": {"b": "y" * 11}}
    status, body = await send(apiserver, "PATCH", f"{CONFIGMAPS}/grow", patch, "application/merge-patch+json")
    assert status == 422 and "must have at most 1048576 bytes" in body["message"], body
    async with aiohttp.ClientSession() as session, session.get(f"{apiserver.url}{CONFIGMAPS}/grow") as r:
        assert "b" not in (await r.json())["data"]


async def test_annotations_over_256_kib_are_422_on_create_and_update(apiserver: ApiServer) -> None:
    limit = 256 * 1024
    exact = {"k": "v" * (limit - 1)}  # key (1 byte) + value: exactly the limit
    status, body = await send(apiserver, "POST", CONFIGMAPS, configmap("ann", annotations=exact))
    assert status == 201, body
    over = {"k": "v" * limit}
    status, body = await send(apiserver, "POST", CONFIGMAPS, configmap("ann2", annotations=over))
    assert status == 422, body
    too_long = "metadata.annotations: Too long: must have at most 262144 bytes"
    assert body["message"] == f'ConfigMap "ann2" is invalid: {too_long}'
    patch = {"metadata": {"annotations": {"k2": "v"}}}
    status, body = await send(apiserver, "PATCH", f"{CONFIGMAPS}/ann", patch, "application/merge-patch+json")
    assert status == 422 and "metadata.annotations: Too long" in body["message"], body


async def test_annotations_of_a_custom_resource_are_bounded_too(apiserver: ApiServer) -> None:
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
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }
    status, body = await send(apiserver, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert status == 201, body
    annotations = {"a": "b" * (256 * 1024)}
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "annotations": annotations}}
    status, body = await send(apiserver, "POST", WIDGETS, widget)
    assert status == 422, body
    assert body["message"] == (
        'Widget.example.com "w" is invalid: metadata.annotations: Too long: must have at most 262144 bytes'
    )


async def test_a_request_body_over_3_mib_is_413(apiserver: ApiServer) -> None:
    big = configmap("huge", data={f"k{i}": "x" * (MiB // 2) for i in range(7)})  # 3.5 MiB of JSON
    status, body = await send(apiserver, "POST", CONFIGMAPS, big)
    assert status == 413, body
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "RequestEntityTooLarge", 413)
    assert body["message"] == "Request entity too large: limit is 3145728"
    status, body = await send(apiserver, "PUT", f"{CONFIGMAPS}/huge", big)
    assert status == 413, body
    yaml_body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\ndata: {a: " + b"x" * (3 * MiB) + b"}\n"
    status, body = await send(apiserver, "POST", CONFIGMAPS, yaml_body, "application/yaml")
    assert status == 413, body


async def test_a_body_of_exactly_3_mib_is_read_and_judged_on_its_content(apiserver: ApiServer) -> None:
    """At the limit the body is decoded (limitedReadBody refuses only limit+1 bytes): ValidateConfigMap refuses it."""
    shell = orjson.dumps(configmap("at-limit", data={"a": ""}))
    exact = shell.replace(b'"a":""', b'"a":"' + b"x" * (3 * MiB - len(shell)) + b'"')
    assert len(exact) == 3 * MiB
    status, body = await send(apiserver, "POST", CONFIGMAPS, exact)
    assert status == 422 and "[]: Too long" in body["message"], body
