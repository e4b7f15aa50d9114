"""Strategic merge patch as kube-apiserver applies it: upstream's own table of cases, and real kinds' schemas.

Oracle: kubernetes/kubernetes staging/src/k8s.io/apimachinery/pkg/util/strategicpatch/patch_test.go
(TestCustomStrategicMergePatch, TestStrategicMergePatch: the cases in data/strategic_merge_patch_upstream.yaml),
applied with the patch metadata of its MergeItem test type (testdata/swagger-merge-item.json), declared below as
the same OpenAPI schema; and Kubernetes 1.32's OpenAPI (x-kubernetes-patch-strategy / -merge-key) for built-in
kinds, so that a Service's ports merge by `port`, a container's by `containerPort`, and tolerations are replaced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.k8s.client import STRATEGIC_MERGE_PATCH, KubeClient
from gangsched.sim.patch import PatchError
from gangsched.sim.strategic import NAME_TABLE_META, SchemaPatchMeta, patch_meta_for, strategic_merge_patch

CASES = yaml.safe_load((Path(__file__).parent / "data" / "strategic_merge_patch_upstream.yaml").read_text())

MERGING_LIST = {
    "type": "array",
    "items": {"$ref": "#/definitions/mergeItem"},
    "x-kubernetes-patch-strategy": "merge",
    "x-kubernetes-patch-merge-key": "name",
}
NON_MERGING_LIST = {"type": "array", "items": {"$ref": "#/definitions/mergeItem"}}
MERGING_INT_LIST = {"type": "array", "items": {"type": "integer"}, "x-kubernetes-patch-strategy": "merge"}
SIMPLE_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
DEFINITIONS: dict[str, Any] = {
    "mergeItem": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "value": {"type": "string"},
            "other": {"type": "string"},
            "mergingList": MERGING_LIST,
            "nonMergingList": NON_MERGING_LIST,
            "mergingIntList": MERGING_INT_LIST,
            "nonMergingIntList": {"type": "array", "items": {"type": "integer"}},
            "mergeItemPtr": {**MERGING_LIST},
            "simpleMap": SIMPLE_MAP,
            "replacingItem": {"type": "object", "x-kubernetes-patch-strategy": "replace"},
            "retainKeysMap": {"$ref": "#/definitions/retainKeysMergeItem", "x-kubernetes-patch-strategy": "retainKeys"},
            "retainKeysMergingList": {**MERGING_LIST, "x-kubernetes-patch-strategy": "merge,retainKeys"},
        },
    },
    "retainKeysMergeItem": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "value": {"type": "string"},
            "other": {"type": "string"},
            "simpleMap": SIMPLE_MAP,
            "mergingIntList": MERGING_INT_LIST,
            "mergingList": MERGING_LIST,
            "nonMergingList": NON_MERGING_LIST,
        },
    },
}
MERGE_ITEM = SchemaPatchMeta({"$ref": "#/definitions/mergeItem"}, DEFINITIONS)


def _applications() -> list[Any]:
    out = []
    for table in ("custom", "create"):
        for case in CASES[table]:
            name = case["description"]
            expected = case.get("twoWayResult", case.get("modified"))
            out.append(
                pytest.param(
                    case.get("original") or {},
                    case["twoWay"],
                    expected,
                    case.get("expectedError"),
                    id=f"{table}: {name} (two-way)",
                )
            )
            if "threeWay" in case:
                out.append(
                    pytest.param(
                        case.get("current") or {},
                        case["threeWay"],
                        case["result"],
                        None,
                        id=f"{table}: {name} (three-way)",
                    )
                )
    return out


@pytest.mark.parametrize(("original", "patch", "expected", "error"), _applications())
def test_upstream_cases(original: dict[str, Any], patch: dict[str, Any], expected: Any, error: str | None) -> None:
    if error:
        with pytest.raises(PatchError, match=error):
            strategic_merge_patch(original, patch, MERGE_ITEM)
        return
    before = yaml.safe_dump(original)
    assert strategic_merge_patch(original, patch, MERGE_ITEM) == expected
    assert yaml.safe_dump(original) == before  # inputs are never mutated


def test_built_in_kinds_merge_as_their_real_schema_says() -> None:
    service = patch_meta_for("", "v1", "Service")
    pod = patch_meta_for("", "v1", "Pod")
    assert pod is not NAME_TABLE_META, "Kubernetes' schemas (kubernetes-validate) are installed with the dev extra"
    svc = {"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}}
    out = strategic_merge_patch(svc, {"spec": {"ports": [{"port": 443, "targetPort": 8443}]}}, service)
    assert out["spec"]["ports"] == [{"port": 80, "name": "http"}, {"port": 443, "name": "https", "targetPort": 8443}]
    spec = {
        "spec": {
            "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
            "tolerations": [{"key": "a", "operator": "Exists"}],
        }
    }
    out = strategic_merge_patch(
        spec,
        {
            "spec": {
                "containers": [{"name": "c", "ports": [{"containerPort": 80, "name": "web"}]}],
                "tolerations": [{"key": "b", "operator": "Exists"}],
            }
        },
        pod,
    )
    assert out["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP", "name": "web"}]
    assert out["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]  # no patch strategy: replaced
    out = strategic_merge_patch(
        {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
        {"status": {"conditions": [{"type": "PodScheduled", "status": "True"}]}},
        pod,
    )
    assert sorted(c["type"] for c in out["status"]["conditions"]) == ["PodScheduled", "Ready"]


async def test_the_emulator_applies_strategic_merge_patches_by_the_kinds_schema(kube: KubeClient) -> None:
    await kube.create(
        "/api/v1/namespaces/default/services",
        {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}},
    )
    out = await kube.patch(
        "/api/v1/namespaces/default/services/s",
        {"spec": {"ports": [{"port": 443, "targetPort": 8443}]}},
        content_type=STRATEGIC_MERGE_PATCH,
    )
    assert [p.get("targetPort") for p in out["spec"]["ports"]] == [None, 8443]
