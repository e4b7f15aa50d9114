"""Protobuf request bodies (`application/vnd.kubernetes.protobuf`), as kubectl 1.32 sends built-in objects.

Sources: staging/src/k8s.io/apimachinery/pkg/runtime/serializer/protobuf/protobuf.go (magic `k8s\\x00` then a
runtime.Unknown), staging/src/k8s.io/apimachinery/pkg/runtime/generated.proto (Unknown: typeMeta=1, raw=2,
contentEncoding=3, contentType=4; TypeMeta: apiVersion=1, kind=2), staging/src/k8s.io/api/core/v1/generated.proto
(ConfigMap: metadata=1, data=2), staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto (ObjectMeta:
name=1, namespace=3, labels=11).
"""

from __future__ import annotations

import aiohttp

from gangsched.sim.apiserver import ApiServer
from gangsched.sim.protobuf import MEDIA_TYPE, decode_object


def _field(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _field(1, api_version.encode()) + _field(2, kind.encode())
    return b"k8s\x00" + _field(1, type_meta) + _field(2, raw) + _field(4, MEDIA_TYPE.encode())


def _configmap() -> bytes:
    meta = _field(1, b"cm") + _field(2, b"") + _field(3, b"default") + _field(11, _field(1, b"app") + _field(2, b"x"))
    meta += _field(8, b"")  # creationTimestamp: the zero Time, written by Go's marshaller, null in JSON
    return _field(1, meta) + _field(2, _field(1, b"a") + _field(2, b"b"))


def test_decode_configmap() -> None:
    obj = decode_object(_envelope("v1", "ConfigMap", _configmap()))
    assert obj == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default", "labels": {"app": "x"}},
        "data": {"a": "b"},
    }


async def _post(server: ApiServer, body: bytes) -> tuple[int, dict[str, object]]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{server.url}/api/v1/namespaces/default/configmaps", data=body, headers={"Content-Type": MEDIA_TYPE}
        ) as resp,
    ):
        return resp.status, await resp.json()


async def test_protobuf_create(apiserver: ApiServer) -> None:
    status, body = await _post(apiserver, _envelope("v1", "ConfigMap", _configmap()))
    assert status == 201, body
    assert body["data"] == {"a": "b"}


async def test_malformed_protobuf_is_400(apiserver: ApiServer) -> None:
    status, body = await _post(apiserver, b"not protobuf")
    assert status == 400 and "magic" in str(body["message"])
    status, body = await _post(apiserver, b"k8s\x00\x0a\x50")  # a length past the end
    assert status == 400 and "truncated" in str(body["message"])


async def test_protobuf_kind_not_decoded_is_415(apiserver: ApiServer) -> None:
    status, body = await _post(apiserver, _envelope("v1", "Pod", b""))
    assert status == 415 and "application/json" in str(body["message"])


async def test_openapi_v2_is_a_gnostic_document(apiserver: ApiServer) -> None:
    """kubectl's discovery client asks for application/com.github.proto-openapi.spec.v2@v1.0+protobuf and
    unmarshals an openapi_v2.Document (gnostic-models openapiv2/OpenAPIv2.proto: swagger = 1, info = 2)."""
    from gangsched.sim.protobuf import wire_fields

    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"{apiserver.url}/openapi/v2",
            headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"},
        ) as resp,
    ):
        assert resp.status == 200
        assert "protobuf" in resp.headers["Content-Type"]
        body = await resp.read()
    fields = {number: value for number, _, value in wire_fields(body)}
    assert fields[1] == b"2.0"
    info = {number: value for number, _, value in wire_fields(fields[2])}
    assert info[1] == b"Kubernetes"
