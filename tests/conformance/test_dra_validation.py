"""resource.k8s.io/v1 as kube-apiserver 1.37 validates it, over HTTP (issue 26 item 1).

Sources (kubernetes/kubernetes):
- pkg/apis/resource/validation/validation_resourceclaim_test.go TestValidateClaim: the case names below are its
  names ("CEL-compile-errors" with its exact message, "CEL-length", "CEL-cost" with its expression,
  "prioritized-list-too-many-subrequests"), TestValidateClaimUpdate "invalid-update" (spec immutable),
  TestValidateClaimStatusUpdate (reservedFor only with an allocation).
- pkg/apis/resource/validation/validation.go: validateDeviceRequest ("exactly one of `exactly` or
  `firstAvailable` is required"), validateDeviceAllocationMode ("must be greater than zero"), validateCELExpression
  (field.Invalid with the compiler's detail, Forbidden "too complex, exceeds cost limit", TooLong 10240),
  validateDeviceClassSpec (extendedResourceName "must be a valid extended resource name"),
  validateResourceSliceSpec ("exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is
  required").
- staging/src/k8s.io/dynamic-resource-allocation/cel/compile.go CompileCELExpression ("compilation failed: " +
  cel-go issues; "must evaluate to bool or the unknown type, not ...").
- pkg/apis/resource/v1/defaults.go: allocationMode defaults to ExactCount, count to 1.
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.k8s.client import ApiError, KubeClient
from gangsched.sim.apiserver import ApiServer
from gangsched.sim.request import RequestContext

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
TEMPLATES = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates"
CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
COST_EXPRESSION = (  # TestValidateClaim "CEL-cost" (from validatingadmissionpolicy_test.go)
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
    ".all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7,"
    " 8, 9, 10].all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))"
)


def request(name: str = "req-0", **exactly: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "class", **exactly}}


def claim(*requests: dict[str, Any], name: str = "claim") -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"devices": {"requests": list(requests) or [request()]}}}


def selector(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


async def refused(kube: KubeClient, path: str, body: dict[str, Any]) -> str:
    with pytest.raises(ApiError) as caught:
        await kube.create(path, body)
    assert caught.value.status == 422, caught.value
    return caught.value.message


async def test_valid_claim_is_defaulted(kube: KubeClient) -> None:
    created = await kube.create(CLAIMS, claim())
    exactly = created["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["allocationMode"] == "ExactCount" and exactly["count"] == 1
    assert "status" not in created or not created["status"]


async def test_cel_compile_errors(kube: KubeClient) -> None:
    """TestValidateClaim "CEL-compile-errors": the second request's bad selector, with cel-go's message."""
    bad = request(
        "req-0-2",
        selectors=[selector('device.driver == "dra.example.com"'), selector("device.attributes[true].someBoolean")],
    )
    message = await refused(kube, CLAIMS, claim(request(), bad))
    assert (
        "spec.devices.requests[1].exactly.selectors[1].cel.expression: Invalid value: "
        '"device.attributes[true].someBoolean": '
        "compilation failed: ERROR: <input>:1:18: found no matching overload for '_[_]' applied to "
        "'(map(string, map(string, any)), bool)'\n | device.attributes[true].someBoolean\n | .................^"
    ) in message  # fmt: skip


@pytest.mark.parametrize(
    ("expression", "detail"),
    [
        ("device.driver ==", "compilation failed: ERROR: <input>:1:"),
        ("device.foo == 1", "undefined field 'foo'"),
        ("nosuchfunction(device.driver)", "undeclared reference to 'nosuchfunction' (in container '')"),
        ("device.driver", "must evaluate to bool or the unknown type, not string"),
    ],
)
async def test_selectors_that_do_not_compile_are_refused(kube: KubeClient, expression: str, detail: str) -> None:
    message = await refused(kube, CLAIMS, claim(request(selectors=[selector(expression)])))
    assert "spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value" in message
    assert detail in message


async def test_kubernetes_cel_extensions_compile(kube: KubeClient) -> None:
    """DRA selectors as drivers' docs write them: quantity(), compareTo, semver(), cel.bind."""
    expressions = [
        'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA")',
        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0',
        'device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("550.0.0"))',
        'cel.bind(gpu, device.attributes["gpu.nvidia.com"], gpu.type == "gpu" && gpu.brand == "Nvidia")',
    ]
    await kube.create(CLAIMS, claim(request(selectors=[selector(e) for e in expressions])))


async def test_cel_cost(kube: KubeClient) -> None:
    """TestValidateClaim "CEL-cost"."""
    message = await refused(kube, CLAIMS, claim(request(selectors=[selector(COST_EXPRESSION)])))
    assert (
        "spec.devices.requests[0].exactly.selectors[0].cel.expression: Forbidden: too complex, exceeds cost limit"
        in message
    )


async def test_cel_length(kube: KubeClient) -> None:
    """TestValidateClaim "CEL-length": 10240 bytes pass, one more is TooLong."""
    base = 'device.driver == ""'
    fits = base.replace('""', '"' + "x" * (10240 - len(base)) + '"')
    too_long = base.replace('""', '"' + "x" * (10240 - len(base) + 1) + '"')
    message = await refused(kube, CLAIMS, claim(request(selectors=[selector(fits), selector(too_long)])))
    assert "selectors[1].cel.expression: Too long: may not be more than 10240 bytes" in message
    assert "selectors[0]" not in message


async def test_request_rules(kube: KubeClient) -> None:
    neither = {"name": "req-0"}
    message = await refused(kube, CLAIMS, claim(neither))
    assert (
        "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required" in message
    )
    message = await refused(kube, CLAIMS, claim(request(allocationMode="ExactCount", count=-1)))
    assert "spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero" in message
    message = await refused(kube, CLAIMS, claim(request(), request()))
    assert 'spec.devices.requests[1].name: Duplicate value: "req-0"' in message


async def test_prioritized_list_too_many_subrequests(kube: KubeClient) -> None:
    """TestValidateClaim "prioritized-list-too-many-subrequests"."""
    subs = [
        {"name": f"subreq-{i}", "deviceClassName": "class", "allocationMode": "ExactCount", "count": 1}
        for i in range(9)
    ]
    message = await refused(kube, CLAIMS, claim({"name": "req-0", "firstAvailable": subs}))
    assert "spec.devices.requests[0].firstAvailable: Too many: 9: must have at most 8 items" in message


async def test_claim_spec_is_immutable_and_status_rules(kube: KubeClient) -> None:
    """TestValidateClaimUpdate "invalid-update"; TestValidateClaimStatusUpdate: reservedFor needs an allocation."""
    created = await kube.create(CLAIMS, claim())
    changed = dict(created, spec={"devices": {"requests": [request(deviceClassName="class2")]}})
    with pytest.raises(ApiError) as caught:
        await kube.replace(f"{CLAIMS}/claim", changed)
    assert (
        caught.value.status == 422
        and "spec: Invalid value" in caught.value.message
        and "field is immutable" in caught.value.message
    )
    reserved = dict(created, status={"reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}]})
    with pytest.raises(ApiError) as caught:
        await kube.replace(f"{CLAIMS}/claim/status", reserved)
    assert "status.reservedFor: Forbidden: may not be specified when `allocated` is not set" in caught.value.message
    allocation = {
        "devices": {"results": [{"request": "req-0", "driver": "gpu.nvidia.com", "pool": "node-0", "device": "gpu-0"}]}
    }
    done = await kube.replace(
        f"{CLAIMS}/claim/status",
        dict(created, status={"allocation": allocation}),
    )
    assert done["status"]["allocation"] == allocation
    other = {
        "devices": {"results": [{"request": "req-0", "driver": "gpu.nvidia.com", "pool": "node-0", "device": "gpu-1"}]}
    }
    with pytest.raises(ApiError) as caught:
        await kube.replace(f"{CLAIMS}/claim/status", dict(done, status={"allocation": other}))
    assert "status.allocation: Invalid value" in caught.value.message
    assert "field is immutable" in caught.value.message


async def test_template_is_validated_as_a_claim_spec(kube: KubeClient) -> None:
    body = {
        "metadata": {"name": "t"},
        "spec": {"spec": {"devices": {"requests": [request(selectors=[selector("device.driver ==")])]}}},
    }
    message = await refused(kube, TEMPLATES, body)
    assert "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value" in message


async def test_device_class(kube: KubeClient) -> None:
    message = await refused(kube, CLASSES, {"metadata": {"name": "c"}, "spec": {"selectors": [selector("device.foo")]}})
    assert "spec.selectors[0].cel.expression: Invalid value" in message and "undefined field 'foo'" in message
    message = await refused(kube, CLASSES, {"metadata": {"name": "c"}, "spec": {"extendedResourceName": "cpu"}})
    assert 'spec.extendedResourceName: Invalid value: "cpu": must be a valid extended resource name' in message


async def test_extended_resource_name_is_reported_not_ignored(apiserver: ApiServer) -> None:
    """A valid extendedResourceName is stored, with a Warning header saying the emulator does not serve it."""
    rtype = apiserver.registry.resolve("resource.k8s.io", "v1", "deviceclasses")
    assert rtype is not None
    ctx = RequestContext()
    body = {"metadata": {"name": "gpu.example.com"}, "spec": {"extendedResourceName": "example.com/gpu"}}
    apiserver.registry.create(rtype, "", body, ctx)
    assert len(ctx.warnings) == 1
    assert "extendedResourceName 'example.com/gpu' is stored but not served" in ctx.warnings[0]


async def test_resource_slice_node_selection(kube: KubeClient) -> None:
    spec = {"driver": "gpu.nvidia.com", "pool": {"name": "node-0", "generation": 1, "resourceSliceCount": 1}}
    message = await refused(kube, SLICES, {"metadata": {"name": "s"}, "spec": spec})
    assert "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required" in message
    message = await refused(
        kube, SLICES, {"metadata": {"name": "s"}, "spec": {**spec, "nodeName": "node-0", "allNodes": True}}
    )
    assert "but multiple fields are set" in message
    devices = [{"name": "gpu-0"}, {"name": "gpu-0"}]
    message = await refused(
        kube, SLICES, {"metadata": {"name": "s"}, "spec": {**spec, "nodeName": "node-0", "devices": devices}}
    )
    assert 'spec.devices[1].name: Duplicate value: "gpu-0"' in message
    created = await kube.create(SLICES, {"metadata": {"name": "s"}, "spec": {**spec, "nodeName": "node-0"}})
    moved = dict(created, spec={**created["spec"], "nodeName": "node-1"})
    with pytest.raises(ApiError) as caught:
        await kube.replace(f"{SLICES}/s", moved)
    assert "spec.nodeName" in caught.value.message and "field is immutable" in caught.value.message
