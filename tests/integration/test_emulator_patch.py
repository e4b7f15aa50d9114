"""PATCH in the emulator: merge patch (RFC 7386), JSON patch (RFC 6902, with test), strategic merge patch (kubectl's
subset), server-side apply; the pure patch functions table-driven, then each kind over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.k8s.client import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, ApiError, KubeClient
from gangsched.sim.patch import PatchError, PatchTestFailed, json_patch, merge_patch
from gangsched.sim.strategic import strategic_merge_patch

PODS = "/api/v1/namespaces/default/pods"
APPLY = "application/apply-patch+yaml"


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        pytest.param(
            {"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": None, "e": 4}}, {"a": 1, "b": {"d": 3, "e": 4}}, id="nested"
        ),
        pytest.param({"a": [1, 2]}, {"a": [3]}, {"a": [3]}, id="lists-replaced"),
        pytest.param({"a": 1}, {"a": None, "b": None}, {}, id="null-deletes"),
        pytest.param({"a": {"b": 1}}, {"a": "x"}, {"a": "x"}, id="map-to-scalar"),
    ],
)
def test_merge_patch(target: Any, patch: Any, expected: Any) -> None:
    before = repr(target)
    assert merge_patch(target, patch) == expected
    assert repr(target) == before  # the input is not mutated


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        pytest.param([{"op": "add", "path": "/b", "value": 2}], {"a": [1, 2], "b": 2, "m": {"k~/": 1}}, id="add"),
        pytest.param([{"op": "add", "path": "/a/-", "value": 3}], {"a": [1, 2, 3], "m": {"k~/": 1}}, id="append"),
        pytest.param([{"op": "add", "path": "/a/0", "value": 0}], {"a": [0, 1, 2], "m": {"k~/": 1}}, id="insert"),
        pytest.param([{"op": "remove", "path": "/a/1"}], {"a": [1], "m": {"k~/": 1}}, id="remove"),
        pytest.param([{"op": "replace", "path": "/m/k~0~1", "value": 9}], {"a": [1, 2], "m": {"k~/": 9}}, id="escaped"),
        pytest.param([{"op": "move", "from": "/m", "path": "/n"}], {"a": [1, 2], "n": {"k~/": 1}}, id="move"),
        pytest.param([{"op": "copy", "from": "/a/0", "path": "/c"}], {"a": [1, 2], "c": 1, "m": {"k~/": 1}}, id="copy"),
        pytest.param(
            [{"op": "test", "path": "/a/0", "value": 1}, {"op": "remove", "path": "/m"}], {"a": [1, 2]}, id="test-ok"
        ),
    ],
)
def test_json_patch(ops: list[dict[str, Any]], expected: Any) -> None:
    target = {"a": [1, 2], "m": {"k~/": 1}}
    assert json_patch(target, ops) == expected
    assert target == {"a": [1, 2], "m": {"k~/": 1}}


@pytest.mark.parametrize(
    ("ops", "error"),
    [
        pytest.param([{"op": "test", "path": "/a/0", "value": 5}], PatchTestFailed, id="test-fails"),
        pytest.param([{"op": "remove", "path": "/zzz"}], PatchError, id="remove-missing"),
        pytest.param([{"op": "replace", "path": "/zzz", "value": 1}], PatchError, id="replace-missing"),
        pytest.param([{"op": "jump", "path": "/a"}], PatchError, id="unknown-op"),
        pytest.param([{"op": "add", "path": "a", "value": 1}], PatchError, id="bad-pointer"),
        pytest.param({"op": "add"}, PatchError, id="not-a-list"),
    ],
)
def test_json_patch_errors(ops: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        json_patch({"a": [1, 2]}, ops)


POD_SPEC: dict[str, Any] = {
    "containers": [
        {"name": "a", "image": "x:1", "env": [{"name": "E1", "value": "1"}, {"name": "E2", "value": "2"}]},
        {"name": "b", "image": "y:1"},
    ],
    "tolerations": [{"key": "k", "operator": "Exists"}],
}


@pytest.mark.parametrize(
    ("patch", "check"),
    [
        pytest.param(
            {"containers": [{"name": "b", "image": "y:2"}]},
            lambda s: [c["image"] for c in s["containers"]] == ["x:1", "y:2"] and "env" in s["containers"][0],
            id="merge-by-name",
        ),
        # a new item without $setElementOrder goes before the server-only ones (strategicpatch's mergeSortedSlice)
        pytest.param(
            {"containers": [{"name": "c", "image": "z"}]},
            lambda s: [c["name"] for c in s["containers"]] == ["c", "a", "b"],
            id="new-key-first",
        ),
        pytest.param(
            {"containers": [{"name": "a", "env": [{"name": "E1", "$patch": "delete"}]}]},
            lambda s: s["containers"][0]["env"] == [{"name": "E2", "value": "2"}],
            id="delete-directive",
        ),
        pytest.param(
            {"containers": [{"name": "a", "env": [{"name": "E1", "value": None}]}]},
            lambda s: s["containers"][0]["env"][0] == {"name": "E1"},
            id="null-in-element",
        ),
        pytest.param(
            {"tolerations": [{"key": "other", "operator": "Exists"}]},
            lambda s: s["tolerations"] == [{"key": "other", "operator": "Exists"}],
            id="atomic-list-replaced",
        ),
        pytest.param(
            {
                "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                "containers": [{"name": "a", "image": "x:2"}],
            },
            lambda s: [c["name"] for c in s["containers"]] == ["b", "a"],
            id="set-element-order",
        ),
        pytest.param(
            {"containers": [{"name": "z", "image": "z"}, {"$patch": "replace"}]},
            lambda s: [c["name"] for c in s["containers"]] == ["z"],
            id="replace-list",
        ),
    ],
)
def test_strategic_merge_patch(patch: dict[str, Any], check: Any) -> None:
    result = strategic_merge_patch({"spec": POD_SPEC}, {"spec": patch})
    assert check(result["spec"]), result["spec"]
    assert POD_SPEC["containers"][1]["image"] == "y:1"  # not mutated


def test_strategic_merge_patch_finalizers_and_primitive_delete() -> None:
    target = {"metadata": {"finalizers": ["a", "b"]}}
    assert strategic_merge_patch(target, {"metadata": {"finalizers": ["c"]}})["metadata"]["finalizers"] == [
        "c",
        "a",
        "b",
    ]
    ordered = {"metadata": {"$setElementOrder/finalizers": ["a", "b", "c"], "finalizers": ["c"]}}
    assert strategic_merge_patch(target, ordered)["metadata"]["finalizers"] == ["a", "b", "c"]
    out = strategic_merge_patch(target, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})
    assert out["metadata"]["finalizers"] == ["b"]


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"a": "1"}}, "spec": dict(POD_SPEC)}


@pytest.mark.parametrize(
    ("content_type", "body", "check"),
    [
        pytest.param(
            MERGE_PATCH,
            {"metadata": {"labels": {"a": None, "b": "2"}}},
            lambda p: p["metadata"]["labels"] == {"b": "2"},
            id="merge",
        ),
        pytest.param(
            JSON_PATCH,
            [
                {"op": "test", "path": "/metadata/labels/a", "value": "1"},
                {"op": "add", "path": "/metadata/labels/c", "value": "3"},
            ],
            lambda p: p["metadata"]["labels"] == {"a": "1", "c": "3"},
            id="json",
        ),
        pytest.param(
            STRATEGIC_MERGE_PATCH,
            {"spec": {"containers": [{"name": "b", "image": "y:9"}]}},
            lambda p: [c["image"] for c in p["spec"]["containers"]] == ["x:1", "y:9"],
            id="strategic",
        ),
        pytest.param(
            APPLY,
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {"x": "y"}}},
            lambda p: p["metadata"]["annotations"] == {"x": "y"} and len(p["spec"]["containers"]) == 2,
            id="apply",
        ),
    ],
)
async def test_patch_over_http(kube: KubeClient, content_type: str, body: Any, check: Any) -> None:
    await kube.create(PODS, pod("p"))
    patched = await kube.patch(f"{PODS}/p", body, content_type=content_type, params={"fieldManager": "test"})
    assert check(patched), patched
    assert check(await kube.get(f"{PODS}/p"))


async def test_json_patch_failed_test_is_422_and_changes_nothing(kube: KubeClient) -> None:
    created = await kube.create(PODS, pod("p"))
    with pytest.raises(ApiError) as err:
        await kube.patch(
            f"{PODS}/p",
            [
                {"op": "test", "path": "/metadata/labels/a", "value": "nope"},
                {"op": "add", "path": "/metadata/labels/c", "value": "3"},
            ],
            content_type=JSON_PATCH,
        )
    assert err.value.status == 422
    assert (await kube.get(f"{PODS}/p"))["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_patch_missing_object_is_404_and_unknown_type_is_415(kube: KubeClient) -> None:
    with pytest.raises(ApiError) as err:
        await kube.patch(f"{PODS}/none", {"metadata": {"labels": {"a": "b"}}})
    assert err.value.status == 404
    await kube.create(PODS, pod("p"))
    with pytest.raises(ApiError) as err:
        await kube.patch(f"{PODS}/p", {"a": 1}, content_type="application/xml")
    assert err.value.status == 415 and err.value.reason == "UnsupportedMediaType"


async def test_server_side_apply_creates_then_merges(kube: KubeClient) -> None:
    path = "/api/v1/namespaces/default/configmaps/cfg"
    created = await kube.patch(
        path,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "1"}},
        content_type=APPLY,
        params={"fieldManager": "me", "force": "true"},
    )
    assert created["data"] == {"a": "1"} and created["metadata"]["uid"]
    merged = await kube.patch(
        path,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"b": "2"}},
        content_type=APPLY,
        params={"fieldManager": "me"},
    )
    assert merged["data"] == {"a": "1", "b": "2"}
    assert merged["metadata"]["uid"] == created["metadata"]["uid"]
