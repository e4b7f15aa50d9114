"""JSON patch (RFC 6902) over HTTP as kube-apiserver answers it, the emulator applying it with the `jsonpatch` library.

Oracle: kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go, jsonPatcher.applyJSPatch:
`jsonpatch.DecodePatch` failing (a body that is not a list of operation objects) is `errors.NewBadRequest` (400);
`patchObj.Apply` failing (a missing path, an unknown op, a failed `test`) is a 422 (`NewGenericServerResponse(
http.StatusUnprocessableEntity, ...)`), and nothing is written.
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.k8s.client import JSON_PATCH, ApiError, KubeClient
from tests.builders import pod_manifest

PODS = "/api/v1/namespaces/default/pods"


@pytest.mark.parametrize(
    ("body", "status"),
    [
        pytest.param({"op": "add", "path": "/metadata/labels/b", "value": "2"}, 400, id="not-a-list"),
        pytest.param(["add /metadata/labels/b"], 400, id="not-operation-objects"),
        pytest.param([{"op": "remove", "path": "/metadata/labels/zzz"}], 422, id="remove-missing"),
        pytest.param([{"op": "jump", "path": "/metadata/labels"}], 422, id="unknown-op"),
        pytest.param([{"op": "add", "path": "metadata", "value": {}}], 422, id="bad-pointer"),
        pytest.param([{"op": "test", "path": "/metadata/labels/a", "value": "9"}], 422, id="test-fails"),
    ],
)
async def test_undecodable_patches_are_400_and_inapplicable_ones_422(kube: KubeClient, body: Any, status: int) -> None:
    created = await kube.create(PODS, pod_manifest("p", labels={"a": "1"}, typed=False))
    with pytest.raises(ApiError) as err:
        await kube.patch(f"{PODS}/p", body, content_type=JSON_PATCH)
    assert err.value.status == status
    assert (await kube.get(f"{PODS}/p"))["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_a_json_patch_applies_every_operation_in_order(kube: KubeClient) -> None:
    await kube.create(PODS, pod_manifest("q", labels={"a": "1"}, typed=False))
    ops = [
        {"op": "test", "path": "/metadata/labels/a", "value": "1"},
        {"op": "add", "path": "/metadata/labels/b", "value": "2"},
        {"op": "copy", "from": "/metadata/labels/b", "path": "/metadata/labels/c"},
        {"op": "remove", "path": "/metadata/labels/a"},
    ]
    patched = await kube.patch(f"{PODS}/q", ops, content_type=JSON_PATCH)
    assert patched["metadata"]["labels"] == {"b": "2", "c": "2"}
