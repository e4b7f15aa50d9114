"""sim/openapi.py: discovery and the OpenAPI v3 documents kubectl reads before `apply`."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.sim.openapi import (
    api_group_list,
    api_resource_list,
    api_versions,
    openapi_v3_group_doc,
    openapi_v3_root,
    version_priority,
)
from gangsched.sim.types import ResourceType

POD = ResourceType(
    "", "v1", "Pod", "pods", "pod", True, ("po",), frozenset({"status", "binding", "eviction"}), categories=("all",)
)
NAMESPACE = ResourceType("", "v1", "Namespace", "namespaces", "namespace", False, ("ns",), frozenset({"status"}))
LEASE = ResourceType("coordination.k8s.io", "v1", "Lease", "leases", "lease", True)
PG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"spec": {"type": "object", "properties": {"minMember": {"type": "integer", "minimum": 1}}}},
}
PODGROUP = ResourceType(
    "scheduling.x-k8s.io",
    "v1alpha1",
    "PodGroup",
    "podgroups",
    "podgroup",
    True,
    ("pg", "pgs"),
    frozenset({"status"}),
    schema=PG_SCHEMA,
    is_crd=True,
)
PODGROUP_V1 = ResourceType("scheduling.x-k8s.io", "v1", "PodGroup", "podgroups", "podgroup", True, is_crd=True)
TYPES = [POD, NAMESPACE, LEASE, PODGROUP]


def test_api_versions() -> None:
    doc = api_versions(server_address="127.0.0.1:1234")
    assert doc["kind"] == "APIVersions" and doc["versions"] == ["v1"]
    assert doc["serverAddressByClientCIDRs"][0]["serverAddress"] == "127.0.0.1:1234"


def test_group_list_skips_core_and_prefers_the_highest_version() -> None:
    doc = api_group_list([*TYPES, PODGROUP_V1])
    assert doc["kind"] == "APIGroupList"
    groups = {g["name"]: g for g in doc["groups"]}
    assert list(groups) == ["coordination.k8s.io", "scheduling.x-k8s.io"]
    assert groups["scheduling.x-k8s.io"]["preferredVersion"] == {
        "groupVersion": "scheduling.x-k8s.io/v1",
        "version": "v1",
    }
    assert [v["version"] for v in groups["scheduling.x-k8s.io"]["versions"]] == ["v1", "v1alpha1"]


@pytest.mark.parametrize(
    "ordered",
    [
        pytest.param(["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"], id="kube-order"),
    ],
)
def test_version_priority(ordered: list[str]) -> None:
    assert sorted(ordered, key=version_priority) == ordered


def test_resource_list_for_core_has_subresources() -> None:
    doc = api_resource_list(TYPES, "", "v1")
    assert (doc["kind"], doc["groupVersion"]) == ("APIResourceList", "v1")
    by_name = {r["name"]: r for r in doc["resources"]}
    assert set(by_name) == {"pods", "pods/status", "pods/binding", "pods/eviction", "namespaces", "namespaces/status"}
    pods = by_name["pods"]
    assert (pods["singularName"], pods["namespaced"], pods["kind"], pods["shortNames"], pods["categories"]) == (
        "pod",
        True,
        "Pod",
        ["po"],
        ["all"],
    )
    assert "watch" in pods["verbs"]
    assert by_name["pods/eviction"]["kind"] == "Eviction" and by_name["pods/eviction"]["group"] == "policy"
    assert by_name["pods/binding"]["verbs"] == ["create"]
    assert by_name["namespaces"]["namespaced"] is False


def test_resource_list_for_a_crd_group() -> None:
    doc = api_resource_list(TYPES, "scheduling.x-k8s.io", "v1alpha1")
    assert doc["groupVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert [r["name"] for r in doc["resources"]] == ["podgroups", "podgroups/status"]
    assert doc["resources"][0]["shortNames"] == ["pg", "pgs"]


def test_root_points_at_every_group_version_with_a_hash() -> None:
    root = openapi_v3_root(TYPES)
    assert set(root["paths"]) == {"api/v1", "apis/coordination.k8s.io/v1", "apis/scheduling.x-k8s.io/v1alpha1"}
    url = root["paths"]["api/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/api/v1?hash=") and len(url.split("hash=")[1]) >= 32


def test_hash_changes_when_the_types_change() -> None:
    before = openapi_v3_root(TYPES)["paths"]
    after = openapi_v3_root([POD, LEASE, PODGROUP])["paths"]  # Namespace gone from api/v1
    assert before["api/v1"] != after["api/v1"]
    assert before["apis/coordination.k8s.io/v1"] == after["apis/coordination.k8s.io/v1"]
    changed_schema = ResourceType(
        "scheduling.x-k8s.io",
        "v1alpha1",
        "PodGroup",
        "podgroups",
        "podgroup",
        True,
        schema={"type": "object"},
        is_crd=True,
    )
    assert (
        openapi_v3_root([changed_schema])["paths"]["apis/scheduling.x-k8s.io/v1alpha1"]
        != before["apis/scheduling.x-k8s.io/v1alpha1"]
    )


def _patch_ops(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [item["patch"] for item in doc["paths"].values() if "patch" in item]


@pytest.mark.parametrize(
    ("group", "version", "kinds"),
    [
        pytest.param("", "v1", {"Pod", "Namespace"}, id="core"),
        pytest.param("scheduling.x-k8s.io", "v1alpha1", {"PodGroup"}, id="crd"),
    ],
)
def test_group_doc_lets_kubectl_use_server_side_field_validation(group: str, version: str, kinds: set[str]) -> None:
    doc = openapi_v3_group_doc(TYPES, group, version)
    ops = _patch_ops(doc)
    assert {op["x-kubernetes-group-version-kind"]["kind"] for op in ops} == kinds
    for op in ops:
        gvk = op["x-kubernetes-group-version-kind"]
        assert gvk == {"group": group, "version": version, "kind": gvk["kind"]}
        assert any(p["name"] == "fieldValidation" and p["in"] == "query" for p in op["parameters"])
        # kubectl must not compute strategic merge patches from these (permissive) schemas
        assert "application/strategic-merge-patch+json" not in op["requestBody"]["content"]


def test_group_doc_schemas_carry_the_kind() -> None:
    doc = openapi_v3_group_doc(TYPES, "scheduling.x-k8s.io", "v1alpha1")
    schema = doc["components"]["schemas"]["io.x-k8s.scheduling.v1alpha1.PodGroup"]
    assert schema["properties"] == PG_SCHEMA["properties"]
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": "scheduling.x-k8s.io", "version": "v1alpha1", "kind": "PodGroup"}
    ]
    assert "x-kubernetes-group-version-kind" not in PG_SCHEMA  # the type's schema is not mutated
    assert "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups/{name}" in doc["paths"]
    core = openapi_v3_group_doc(TYPES, "", "v1")
    assert "io.k8s.api.core.v1.Pod" in core["components"]["schemas"]
    assert "/api/v1/namespaces/{name}" in core["paths"]
