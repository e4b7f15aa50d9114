"""RuntimeClass (node.k8s.io/v1) served, and pods admitted as kube-apiserver's RuntimeClass plugin admits them
(issue 22 item 15c).

Sources:
- plugin/pkg/admission/runtimeclass/admission.go: `prepareObjects` (a runtimeClassName naming no RuntimeClass ->
  admission.NewForbidden `pod rejected: RuntimeClass "x" not found`), `setOverhead` (spec.overhead =
  overhead.podFixed; an already set, different overhead -> `pod rejected: Pod's Overhead doesn't match
  RuntimeClass's defined Overhead`, compared with apiequality.Semantic, i.e. quantities by value),
  `setScheduling` (nodeSelector merged, a conflicting key -> `conflict: runtimeClass.scheduling.nodeSelector[k] =
  v; pod.spec.nodeSelector[k] = w`; tolerations merged by pkg/util/tolerations MergeTolerations), `validateOverhead`
  (an overhead without a class defining one -> `pod rejected: Pod Overhead set without corresponding RuntimeClass
  defined Overhead`); the plugin handles CREATE only (admission.NewHandler(admission.Create)).
- apimachinery errors.NewForbidden: 403 `pods "p" is forbidden: <why>`.
- pkg/apis/node/validation/validation.go ValidateRuntimeClass (handler is a DNS-1123 label) and
  ValidateRuntimeClassUpdate (handler immutable); the node.k8s.io/v1 RuntimeClass schema (handler required).
- test/e2e/common/node/runtimeclass.go ("should reject a Pod requesting a non-existent RuntimeClass", "should
  schedule a Pod requesting a RuntimeClass and initialize its Overhead").
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from gangsched.sim.apiserver import ApiServer
from tests.builders import pod_manifest

CLASSES = "/apis/node.k8s.io/v1/runtimeclasses"
PODS = "/api/v1/namespaces/default/pods"


async def call(server: ApiServer, method: str, path: str, body: Any = None, content_type: str | None = None) -> Any:
    headers = {"Content-Type": content_type} if content_type else None
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, f"{server.url}{path}", json=body, headers=headers) as r,
    ):
        return r.status, await r.json()


def runtime_class(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": name,
        **fields,
    }


async def create_class(server: ApiServer, name: str, **fields: Any) -> None:
    status, body = await call(server, "POST", CLASSES, runtime_class(name, **fields))
    assert status == 201, body


async def test_runtimeclass_is_served_cluster_scoped(apiserver: ApiServer) -> None:
    status, body = await call(apiserver, "GET", "/apis/node.k8s.io/v1")
    assert status == 200
    assert [(r["name"], r["kind"], r["namespaced"]) for r in body["resources"]] == [
        ("runtimeclasses", "RuntimeClass", False)
    ]
    await create_class(apiserver, "gvisor")
    status, body = await call(apiserver, "GET", f"{CLASSES}/gvisor")
    assert status == 200 and body["handler"] == "gvisor" and "namespace" not in body["metadata"]


@pytest.mark.parametrize(
    ("fields", "status", "message"),
    [
        pytest.param(
            {"handler": "Not_A_Label"},
            422,
            'handler: Invalid value: "Not_A_Label": a lowercase RFC 1123',
            id="handler-label",
        ),
        pytest.param({"handler": None}, 422, 'handler: Invalid value: "": a lowercase RFC 1123', id="handler-missing"),
        pytest.param({"overhead": {"podFixed": {"cpu": "lots"}}}, 400, "quantities must match", id="quantity"),
    ],
)
async def test_bad_runtimeclasses_are_refused(
    apiserver: ApiServer, fields: dict[str, Any], status: int, message: str
) -> None:
    body = runtime_class("bad", **fields)
    if body["handler"] is None:
        del body["handler"]
    got, answer = await call(apiserver, "POST", CLASSES, body)
    assert got == status and message in answer["message"], answer


async def test_the_handler_is_immutable(apiserver: ApiServer) -> None:
    await create_class(apiserver, "kata")
    patch = {"handler": "other"}
    status, body = await call(apiserver, "PATCH", f"{CLASSES}/kata", patch, "application/merge-patch+json")
    assert status == 422 and 'handler: Invalid value: "other": field is immutable' in body["message"], body


async def test_a_pod_naming_a_missing_runtimeclass_is_forbidden(apiserver: ApiServer) -> None:
    status, body = await call(apiserver, "POST", PODS, pod_manifest("p", image="pause", runtimeClassName="nope"))
    assert status == 403, body
    assert (body["reason"], body["message"]) == (
        "Forbidden",
        'pods "p" is forbidden: pod rejected: RuntimeClass "nope" not found',
    )


async def test_the_overhead_is_set_from_the_class(apiserver: ApiServer) -> None:
    await create_class(apiserver, "kata", overhead={"podFixed": {"cpu": "250m", "memory": "120Mi"}})
    status, body = await call(apiserver, "POST", PODS, pod_manifest("p", image="pause", runtimeClassName="kata"))
    assert status == 201, body
    assert body["spec"]["overhead"] == {"cpu": "250m", "memory": "120Mi"}
    # the same overhead written another way is semantically equal: accepted
    status, body = await call(
        apiserver,
        "POST",
        PODS,
        pod_manifest("q", image="pause", runtimeClassName="kata", overhead={"cpu": "0.25", "memory": "120Mi"}),
    )
    assert status == 201, body


@pytest.mark.parametrize(
    ("class_fields", "pod_spec", "why"),
    [
        pytest.param(
            {"overhead": {"podFixed": {"cpu": "250m"}}},
            {"runtimeClassName": "rc", "overhead": {"cpu": "1"}},
            "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
            id="different-overhead",
        ),
        pytest.param(
            {},
            {"runtimeClassName": "rc", "overhead": {"cpu": "1"}},
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
            id="overhead-class-without-one",
        ),
        pytest.param(
            None,
            {"overhead": {"cpu": "1"}},
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
            id="overhead-without-class",
        ),
        pytest.param(
            {"scheduling": {"nodeSelector": {"pool": "vm"}}},
            {"runtimeClassName": "rc", "nodeSelector": {"pool": "gpu"}},
            "conflict: runtimeClass.scheduling.nodeSelector[pool] = vm; pod.spec.nodeSelector[pool] = gpu",
            id="selector-conflict",
        ),
    ],
)
async def test_pods_the_plugin_rejects(
    apiserver: ApiServer, class_fields: dict[str, Any] | None, pod_spec: dict[str, Any], why: str
) -> None:
    if class_fields is not None:
        await create_class(apiserver, "rc", **class_fields)
    status, body = await call(apiserver, "POST", PODS, pod_manifest("p", image="pause", **pod_spec))
    assert status == 403, body
    assert body["message"] == f'pods "p" is forbidden: {why}'


async def test_scheduling_merges_node_selector_and_tolerations(apiserver: ApiServer) -> None:
    await create_class(
        apiserver,
        "rc",
        scheduling={
            "nodeSelector": {"pool": "vm"},
            "tolerations": [
                {"key": "vm", "operator": "Exists"},  # covers the pod's own vm toleration: that one is dropped
                {"key": "spot", "operator": "Equal", "value": "yes", "effect": "NoSchedule"},
            ],
        },
    )
    spec: dict[str, Any] = {
        "runtimeClassName": "rc",
        "nodeSelector": {"zone": "a", "pool": "vm"},
        "tolerations": [
            {"key": "vm", "operator": "Equal", "value": "1", "effect": "NoSchedule"},
            {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
        ],
    }
    status, body = await call(apiserver, "POST", PODS, pod_manifest("p", image="pause", **spec))
    assert status == 201, body
    assert body["spec"]["nodeSelector"] == {"zone": "a", "pool": "vm"}
    assert body["spec"]["tolerations"] == [
        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "vm", "operator": "Exists"},
        {"key": "spot", "operator": "Equal", "value": "yes", "effect": "NoSchedule"},
    ]
    status, body = await call(apiserver, "POST", PODS, pod_manifest("q", image="pause", runtimeClassName="rc"))
    assert status == 201 and body["spec"]["nodeSelector"] == {"pool": "vm"}, body


async def test_the_plugin_does_not_run_on_update(apiserver: ApiServer) -> None:
    """admission.NewHandler(admission.Create): deleting the class later does not affect the pod's updates."""
    await create_class(apiserver, "rc", overhead={"podFixed": {"cpu": "100m"}})
    status, _ = await call(apiserver, "POST", PODS, pod_manifest("p", image="pause", runtimeClassName="rc"))
    assert status == 201
    status, _ = await call(apiserver, "DELETE", f"{CLASSES}/rc")
    assert status == 200
    patch = {"metadata": {"labels": {"a": "b"}}}
    status, body = await call(apiserver, "PATCH", f"{PODS}/p", patch, "application/merge-patch+json")
    assert status == 200 and body["spec"]["overhead"] == {"cpu": "100m"}, body
