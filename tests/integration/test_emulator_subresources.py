"""Emulator subresources and lifecycles over HTTP: status separation, pods/binding, pods/eviction with
PodDisruptionBudgets, finalizers and deletionTimestamp, ownerReference garbage collection, CRD serving with schema
validation (fieldValidation), Table output."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gangsched.k8s.client import STRATEGIC_MERGE_PATCH, ApiError, KubeClient

PODS = "/api/v1/namespaces/default/pods"
CMS = "/api/v1/namespaces/default/configmaps"
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "integer", "minimum": 1},
                                    "mode": {"type": "string", "enum": ["A", "B"], "default": "A"},
                                },
                            },
                            "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                        },
                    }
                },
            }
        ],
    },
}


def pod(name: str, labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {}, **meta},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }


async def eventually(check: Any, *, timeout: float = 5.0) -> None:
    """Poll an async predicate until it holds (deadline-bound; for background garbage collection)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        assert loop.time() < deadline, "condition not reached before the deadline"
        await asyncio.sleep(0.01)


async def gone(kube: KubeClient, path: str) -> bool:
    try:
        await kube.get(path)
    except ApiError as exc:
        return exc.status == 404
    return False


async def set_running(kube: KubeClient, name: str, *, ready: bool = True) -> None:
    await kube.patch(
        f"{PODS}/{name}/status",
        {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}},
    )


# ---------------------------------------------------------------- status subresource


async def test_pod_status_is_separate_from_the_object(kube: KubeClient) -> None:
    created = await kube.create(PODS, pod("p"))
    ignored = await kube.patch(f"{PODS}/p", {"status": {"phase": "Running"}, "metadata": {"labels": {"x": "1"}}})
    assert ignored["status"]["phase"] == "Pending" and ignored["metadata"]["labels"] == {"x": "1"}
    # pkg/registry/core/pod/strategy.go podStatusStrategy.PrepareForUpdate keeps the spec, not the labels
    status = await kube.patch(f"{PODS}/p/status", {"status": {"phase": "Running"}, "metadata": {"labels": {"y": "2"}}})
    assert status["status"]["phase"] == "Running"
    assert status["metadata"]["labels"] == {"x": "1", "y": "2"}
    assert status["metadata"]["generation"] == created["metadata"]["generation"]
    replaced = await kube.replace(f"{PODS}/p/status", dict(status, status={"phase": "Succeeded"}))
    assert replaced["status"] == {"phase": "Succeeded"}


async def test_crd_status_subresource_and_generation(kube: KubeClient) -> None:
    await kube.create(CRDS, WIDGET_CRD)
    created = await kube.create(
        WIDGETS, {"metadata": {"name": "w"}, "spec": {"size": 1}, "status": {"phase": "dropped"}}
    )
    assert "status" not in created and created["spec"] == {"size": 1, "mode": "A"}
    with_status = await kube.patch(f"{WIDGETS}/w/status", {"status": {"phase": "Ready"}})
    assert with_status["status"] == {"phase": "Ready"} and with_status["metadata"]["generation"] == 1
    bumped = await kube.patch(f"{WIDGETS}/w", {"spec": {"size": 2}, "status": {"phase": "ignored"}})
    assert bumped["metadata"]["generation"] == 2 and bumped["status"] == {"phase": "Ready"}


# ---------------------------------------------------------------- binding


async def test_binding_sets_node_and_condition_then_conflicts(kube: KubeClient) -> None:
    await kube.create(PODS, pod("p"))
    result = await kube.create(
        f"{PODS}/p/binding",
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "p"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
        },
    )
    assert result["status"] == "Success"
    bound = await kube.get(f"{PODS}/p")
    assert bound["spec"]["nodeName"] == "n1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= bound["status"]["conditions"][0].items()
    with pytest.raises(ApiError) as err:
        await kube.create(f"{PODS}/p/binding", {"metadata": {"name": "p"}, "target": {"name": "n2"}})
    assert err.value.status == 409 and err.value.reason == "Conflict"
    assert 'pod p is already assigned to node "n1"' in err.value.message
    with pytest.raises(ApiError) as err:
        await kube.create(f"{PODS}/gone/binding", {"metadata": {"name": "gone"}, "target": {"name": "n1"}})
    assert err.value.status == 404


# ---------------------------------------------------------------- eviction


@pytest.mark.parametrize(
    ("budget", "running", "managed", "allowed"),
    [
        pytest.param({"minAvailable": 2}, 2, False, False, id="min-available-at-limit"),
        pytest.param({"minAvailable": 2}, 3, False, True, id="min-available-spare"),
        pytest.param({"maxUnavailable": 0}, 3, True, False, id="max-unavailable-zero"),
        pytest.param({"maxUnavailable": 1}, 3, True, True, id="max-unavailable-one"),
        pytest.param({"minAvailable": "100%"}, 3, True, False, id="percent-all"),
        pytest.param({"maxUnavailable": "50%"}, 2, True, True, id="percent-half"),
        # the disruption controller's fail-safe: bare pods have no scale to count against (disruption.go)
        pytest.param({"maxUnavailable": 1}, 3, False, False, id="max-unavailable-bare-pods"),
        pytest.param({"maxUnavailable": "50%"}, 2, False, False, id="percent-bare-pods"),
    ],
)
async def test_eviction_respects_pdb(
    kube: KubeClient, budget: dict[str, Any], running: int, managed: bool, allowed: bool
) -> None:
    """The budget is decided from the status the disruption controller computes (maxUnavailable and percentages
    need the pods' controller's replicas: a ReplicaSet here)."""
    await kube.create(
        PDBS, {"metadata": {"name": "budget"}, "spec": {"selector": {"matchLabels": {"app": "x"}}, **budget}}
    )
    owner: dict[str, Any] = {}
    if managed:
        rs = await kube.create(
            "/apis/apps/v1/namespaces/default/replicasets",
            {
                "metadata": {"name": "rs"},
                "spec": {
                    "replicas": running,
                    "selector": {"matchLabels": {"app": "x"}},
                    "template": {"metadata": {"labels": {"app": "x"}}},
                },
            },
        )
        owner = {
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "rs",
                    "uid": rs["metadata"]["uid"],
                    "controller": True,
                }
            ]
        }
    for i in range(running):
        await kube.create(PODS, pod(f"p{i}", {"app": "x"}, **owner))
        await set_running(kube, f"p{i}")
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p0", "namespace": "default"}}
    if allowed:
        result = await kube.create(f"{PODS}/p0/eviction", eviction)
        assert result["status"] == "Success"
        assert await gone(kube, f"{PODS}/p0")
    else:
        with pytest.raises(ApiError) as err:
            await kube.create(f"{PODS}/p0/eviction", eviction)
        assert err.value.status == 429 and err.value.reason == "TooManyRequests"
        assert "disruption budget" in err.value.message
        assert not await gone(kube, f"{PODS}/p0")


async def test_eviction_of_unready_or_unselected_pods_is_allowed(kube: KubeClient) -> None:
    await kube.create(
        PDBS,
        {
            "metadata": {"name": "b"},
            "spec": {
                "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]},
                "minAvailable": 1,
            },
        },
    )
    await kube.create(PODS, pod("ready", {"app": "x"}))
    await set_running(kube, "ready")
    await kube.create(PODS, pod("unready", {"app": "x"}))
    await set_running(kube, "unready", ready=False)
    await kube.create(PODS, pod("other", {"app": "y"}))
    await set_running(kube, "other")
    with pytest.raises(ApiError) as err:
        await kube.create(f"{PODS}/ready/eviction", {"metadata": {"name": "ready"}})
    assert err.value.status == 429
    for name in ("unready", "other"):
        await kube.create(f"{PODS}/{name}/eviction", {"metadata": {"name": name}})
        assert await gone(kube, f"{PODS}/{name}")
    with pytest.raises(ApiError) as err:
        await kube.create(f"{PODS}/missing/eviction", {"metadata": {"name": "missing"}})
    assert err.value.status == 404


# ---------------------------------------------------------------- finalizers and garbage collection


async def test_finalizers_hold_deletion_until_removed(kube: KubeClient) -> None:
    await kube.create(CMS, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    deleted = await kube.delete(f"{CMS}/held")
    assert deleted["metadata"]["deletionTimestamp"]
    still = await kube.get(f"{CMS}/held")
    assert still["metadata"]["deletionTimestamp"] == deleted["metadata"]["deletionTimestamp"]
    await kube.patch(f"{CMS}/held", {"metadata": {"finalizers": None}})
    assert await gone(kube, f"{CMS}/held")


async def test_pod_with_finalizer_via_strategic_patch(kube: KubeClient) -> None:
    await kube.create(PODS, pod("p", finalizers=["a/b", "c/d"]))
    await kube.delete(f"{PODS}/p")
    await kube.patch(
        f"{PODS}/p", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/b"]}}, content_type=STRATEGIC_MERGE_PATCH
    )
    assert (await kube.get(f"{PODS}/p"))["metadata"]["finalizers"] == ["c/d"]
    await kube.patch(
        f"{PODS}/p", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["c/d"]}}, content_type=STRATEGIC_MERGE_PATCH
    )
    assert await gone(kube, f"{PODS}/p")


async def test_owner_garbage_collection(kube: KubeClient) -> None:
    a = await kube.create(PODS, pod("a"))
    b = await kube.create(PODS, pod("b"))

    def ref(owner: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}

    await kube.create(CMS, {"metadata": {"name": "only-a", "ownerReferences": [ref(a)]}})
    await kube.create(CMS, {"metadata": {"name": "both", "ownerReferences": [ref(a), ref(b)]}})
    await kube.create(CMS, {"metadata": {"name": "orphan-me", "ownerReferences": [ref(b)]}})
    await kube.delete(f"{PODS}/a")
    await eventually(lambda: gone(kube, f"{CMS}/only-a"))
    assert not await gone(kube, f"{CMS}/both")  # b still owns it
    await kube.delete(f"{PODS}/b", params={"propagationPolicy": "Background"})
    await eventually(lambda: gone(kube, f"{CMS}/both"))
    await eventually(lambda: gone(kube, f"{CMS}/orphan-me"))


async def deletion_rv(kube: KubeClient, path: str, *, since: str) -> int:
    async for kind, obj in kube.watch(path, resource_version=since, timeout_seconds=5):
        if kind == "DELETED":
            return int(obj["metadata"]["resourceVersion"])
    raise AssertionError(f"no DELETED event on {path}")


@pytest.mark.parametrize(
    ("policy", "dependent_first"),
    [pytest.param("Foreground", True, id="foreground"), pytest.param("Background", False, id="background")],
)
async def test_propagation_order(kube: KubeClient, policy: str, dependent_first: bool) -> None:
    a = await kube.create(PODS, pod("a"))
    dep = await kube.create(
        CMS,
        {
            "metadata": {
                "name": "dep",
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "a", "uid": a["metadata"]["uid"]}],
            }
        },
    )
    since = dep["metadata"]["resourceVersion"]
    await kube.delete(f"{PODS}/a", params={"propagationPolicy": policy})
    owner_rv = await deletion_rv(kube, PODS, since=since)
    dependent_rv = await deletion_rv(kube, CMS, since=since)
    assert (dependent_rv < owner_rv) is dependent_first


async def test_orphan_propagation_keeps_dependents(kube: KubeClient) -> None:
    a = await kube.create(PODS, pod("a"))
    await kube.create(
        CMS,
        {
            "metadata": {
                "name": "dep",
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "a", "uid": a["metadata"]["uid"]}],
            }
        },
    )
    await kube.delete(f"{PODS}/a", params={"propagationPolicy": "Orphan"})
    # GC runs on the next loop iteration; a later request is served after it
    await kube.get(CMS)
    assert not await gone(kube, f"{CMS}/dep")


# ---------------------------------------------------------------- CRDs


async def test_crd_is_served_and_unserved(kube: KubeClient) -> None:
    with pytest.raises(ApiError):
        await kube.get(WIDGETS)
    crd = await kube.create(CRDS, WIDGET_CRD)
    assert {c["type"] for c in crd["status"]["conditions"]} >= {"Established", "NamesAccepted"}
    resources = await kube.get("/apis/example.com/v1")
    assert {"name": "widgets/status"}.items() <= next(
        r for r in resources["resources"] if r["name"] == "widgets/status"
    ).items()
    widget = next(r for r in resources["resources"] if r["name"] == "widgets")
    assert widget["kind"] == "Widget" and widget["shortNames"] == ["wd"] and widget["namespaced"] is True
    groups = await kube.get("/apis")
    assert "example.com" in {g["name"] for g in groups["groups"]}
    await kube.create(WIDGETS, {"metadata": {"name": "w"}, "spec": {"size": 3}})
    assert [w["metadata"]["name"] for w in (await kube.get("/apis/example.com/v1/widgets"))["items"]] == ["w"]
    await kube.delete(f"{CRDS}/widgets.example.com")
    with pytest.raises(ApiError) as err:
        await kube.get(WIDGETS)
    assert err.value.status == 404


@pytest.mark.parametrize(
    ("validation", "body", "status", "needle"),
    [
        pytest.param(
            "Strict",
            {"spec": {"size": 1, "colour": "red"}},
            400,
            'strict decoding error: unknown field "spec.colour"',
            id="strict-unknown",
        ),
        pytest.param("Strict", {"spec": {"size": 0}}, 422, "spec.size", id="minimum"),
        pytest.param("Ignore", {"spec": {"size": 1, "mode": "C"}}, 422, 'Unsupported value: "C"', id="enum"),
        pytest.param("Warn", {"spec": {"size": "big"}}, 422, "spec.size", id="type"),
        pytest.param("Warn", {"spec": {}}, 422, "spec.size: Required value", id="required"),
    ],
)
async def test_crd_schema_validation(
    kube: KubeClient, validation: str, body: dict[str, Any], status: int, needle: str
) -> None:
    await kube.create(CRDS, WIDGET_CRD)
    with pytest.raises(ApiError) as err:
        await kube.create(WIDGETS, {"metadata": {"name": "w"}, **body}, params={"fieldValidation": validation})
    assert err.value.status == status
    assert needle in err.value.message


async def test_crd_unknown_fields_pruned_when_not_strict_and_no_strategic_patch(kube: KubeClient) -> None:
    await kube.create(CRDS, WIDGET_CRD)
    created = await kube.create(
        WIDGETS, {"metadata": {"name": "w"}, "spec": {"size": 1, "colour": "red"}}, params={"fieldValidation": "Ignore"}
    )
    assert created["spec"] == {"size": 1, "mode": "A"}
    with pytest.raises(ApiError) as err:
        await kube.patch(f"{WIDGETS}/w", {"spec": {"size": 2}}, content_type=STRATEGIC_MERGE_PATCH)
    assert err.value.status == 415
    with pytest.raises(ApiError) as err:
        await kube.patch(f"{WIDGETS}/w", {"spec": {"size": -1}}, params={"fieldValidation": "Strict"})
    assert err.value.status == 422


async def test_table_output_uses_printer_columns(kube: KubeClient) -> None:
    await kube.create(CRDS, WIDGET_CRD)
    await kube.create(WIDGETS, {"metadata": {"name": "w"}, "spec": {"size": 4}})
    await kube.patch(f"{WIDGETS}/w/status", {"status": {"phase": "Ready"}})
    doc = await kube.request("GET", WIDGETS, params={"includeObject": "Object"}, content_type="application/json")
    assert doc["kind"] == "WidgetList"  # without the Table Accept header: a plain list
    async with kube._session.get(WIDGETS, headers={"Accept": TABLE}) as resp:
        table = await resp.json()
    assert table["kind"] == "Table"
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names[0] == "Name" and "Size" in names and "Phase" in names
    row = table["rows"][0]
    assert row["cells"][names.index("Size")] == 4 and row["cells"][names.index("Phase")] == "Ready"
    assert row["object"]["kind"] == "PartialObjectMetadata" and row["object"]["metadata"]["name"] == "w"
    async with kube._session.get(f"{WIDGETS}/w", params={"includeObject": "None"}, headers={"Accept": TABLE}) as resp:
        single = await resp.json()
    assert single["kind"] == "Table" and "object" not in single["rows"][0]
