"""crds/podgroups.yaml: loads, is a superset of scheduler-plugins' PodGroup, matches models/podgroup.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.models.podgroup import PodGroupSpec, PodGroupStatus
from gangsched.sim import schema as crd_schema

CRD_PATH = Path(__file__).resolve().parents[2] / "crds" / "podgroups.yaml"


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all(CRD_PATH.read_text()) if d]
    assert len(docs) == 1
    doc: dict[str, Any] = docs[0]
    return doc


@pytest.fixture(scope="module")
def version(crd: dict[str, Any]) -> dict[str, Any]:
    versions = crd["spec"]["versions"]
    assert [v["name"] for v in versions] == ["v1alpha1"]
    first: dict[str, Any] = versions[0]
    return first


def _props(version: dict[str, Any], part: str) -> dict[str, Any]:
    props: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"][part]["properties"]
    return props


def test_identity(crd: dict[str, Any], version: dict[str, Any]) -> None:
    assert (crd["apiVersion"], crd["kind"]) == ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    assert crd["metadata"]["name"] == "podgroups.scheduling.x-k8s.io"
    spec = crd["spec"]
    assert (spec["group"], spec["scope"]) == ("scheduling.x-k8s.io", "Namespaced")
    assert spec["names"] == {
        "kind": "PodGroup",
        "listKind": "PodGroupList",
        "plural": "podgroups",
        "singular": "podgroup",
        "shortNames": ["pg", "pgs"],
    }
    assert version["served"] is True and version["storage"] is True
    assert version["subresources"] == {"status": {}}


# scheduler-plugins' v1alpha1 PodGroup schema (config/crd/bases/scheduling.x-k8s.io_podgroups.yaml): field -> facts
SCHEDULER_PLUGINS_SPEC = {
    "minMember": {"type": "integer", "format": "int32", "minimum": 1},
    "minResources": {"type": "object"},
    "scheduleTimeoutSeconds": {"type": "integer", "format": "int32"},
}
SCHEDULER_PLUGINS_STATUS = {
    "phase": {"type": "string"},
    "running": {"type": "integer", "format": "int32"},
    "succeeded": {"type": "integer", "format": "int32"},
    "failed": {"type": "integer", "format": "int32"},
    "occupiedBy": {"type": "string"},
    "scheduleStartTime": {"type": "string", "format": "date-time"},
}


@pytest.mark.parametrize(
    ("part", "fields"),
    [
        pytest.param("spec", SCHEDULER_PLUGINS_SPEC, id="spec"),
        pytest.param("status", SCHEDULER_PLUGINS_STATUS, id="status"),
    ],
)
def test_scheduler_plugins_fields_are_present_with_their_types(
    version: dict[str, Any], part: str, fields: dict[str, dict[str, Any]]
) -> None:
    props = _props(version, part)
    for name, facts in fields.items():
        assert name in props, name
        assert {k: props[name].get(k) for k in facts} == facts, name


def test_min_resources_are_int_or_string_quantities(version: dict[str, Any]) -> None:
    extra = _props(version, "spec")["minResources"]["additionalProperties"]
    assert extra["x-kubernetes-int-or-string"] is True
    assert extra["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    pattern = re.compile(extra["pattern"])
    assert all(pattern.match(q) for q in ("2Gi", "500m", "1e3", "8", "0.5"))
    assert not any(pattern.match(q) for q in ("lots", "2GiB", ""))


@pytest.mark.parametrize(
    ("path", "facts"),
    [
        pytest.param(("mode",), {"type": "string", "enum": ["Strict", "NonStrict"]}, id="mode"),
        pytest.param(("totalMember",), {"type": "integer", "minimum": 1}, id="totalMember"),
        pytest.param(("gangGroup",), {"type": "array"}, id="gangGroup"),
        pytest.param(("roles",), {"type": "array"}, id="roles"),
        pytest.param(("networkTopology", "mode"), {"type": "string", "enum": ["hard", "soft"]}, id="topology-mode"),
        pytest.param(("networkTopology", "highestTierAllowed"), {"type": "integer", "minimum": 1}, id="topology-tier"),
        pytest.param(("networkTopology", "groupSize"), {"type": "integer", "minimum": 1}, id="topology-group-size"),
        pytest.param(("staleGracePeriodSeconds",), {"type": "integer", "minimum": 0}, id="stale-grace"),
        pytest.param(("stalePolicy",), {"type": "string", "enum": ["Report", "Evict"]}, id="stale-policy"),
    ],
)
def test_our_spec_fields_are_validated_by_plain_openapi(
    version: dict[str, Any], path: tuple[str, ...], facts: dict[str, Any]
) -> None:
    node: dict[str, Any] = {"properties": _props(version, "spec")}
    for part in path:
        node = node["properties"][part]
    assert {k: node.get(k) for k in facts} == facts


def test_roles_items_require_name_and_min_member(version: dict[str, Any]) -> None:
    items = _props(version, "spec")["roles"]["items"]
    assert sorted(items["required"]) == ["minMember", "name"]
    assert items["properties"]["minMember"]["minimum"] == 1


def test_conditions_schema(version: dict[str, Any]) -> None:
    cond = _props(version, "status")["conditions"]["items"]
    assert set(cond["properties"]) == {
        "type",
        "status",
        "reason",
        "message",
        "lastTransitionTime",
        "observedGeneration",
    }
    assert cond["properties"]["status"]["enum"] == ["True", "False", "Unknown"]


def test_no_cel_rules_the_emulator_would_ignore() -> None:
    assert "x-kubernetes-validations" not in CRD_PATH.read_text()


def test_printer_columns(version: dict[str, Any]) -> None:
    columns = {c["name"]: (c["jsonPath"], c["type"]) for c in version["additionalPrinterColumns"]}
    assert columns == {
        "Phase": (".status.phase", "string"),
        "Reason": ('.status.conditions[?(@.type=="Scheduled")].reason', "string"),
        "MinMember": (".spec.minMember", "integer"),
        "Scheduled": (".status.scheduled", "integer"),
        "Running": (".status.running", "integer"),
        "Succeeded": (".status.succeeded", "integer"),
        "Failed": (".status.failed", "integer"),
        "Tier": (".status.placedTier", "integer"),
        "Age": (".metadata.creationTimestamp", "date"),
        "Message": (".status.message", "string"),
    }
    # the message only with `kubectl get -o wide` (CustomResourceColumnDefinition.priority > 0), last as a pod's
    # NODE and IP are: kubectl prints the columns in the order the server lists them
    assert [c["name"] for c in version["additionalPrinterColumns"] if c.get("priority", 0)] == ["Message"]
    assert version["additionalPrinterColumns"][-1]["name"] == "Message"


def _aliases(model: type[Any]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


@pytest.mark.parametrize(
    ("part", "model"),
    [pytest.param("spec", PodGroupSpec, id="spec"), pytest.param("status", PodGroupStatus, id="status")],
)
def test_models_and_crd_have_the_same_fields(version: dict[str, Any], part: str, model: type[Any]) -> None:
    assert _aliases(model) == set(_props(version, part))


EXAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "examples"


def _example_podgroups() -> list[dict[str, Any]]:
    return [
        d
        for p in sorted(EXAMPLES.glob("*.yaml"))
        for d in yaml.safe_load_all(p.read_text())
        if d and d["kind"] == "PodGroup"
    ]


def test_the_emulators_validator_accepts_every_example_podgroup_strictly(version: dict[str, Any]) -> None:
    schema = version["schema"]["openAPIV3Schema"]
    podgroups = _example_podgroups()
    assert len(podgroups) == 5
    for obj in podgroups:
        assert crd_schema.validate(obj, schema, strict=True) == [], obj["metadata"]["name"]


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        pytest.param({"minMember": 0}, "spec.minMember", id="min-zero"),
        pytest.param({"minMember": 2, "mode": "Loose"}, "spec.mode", id="mode"),
        pytest.param({"minMember": 2, "totalMember": 0}, "spec.totalMember", id="total-zero"),
        pytest.param(
            {"minMember": 2, "networkTopology": {"mode": "strict"}}, "spec.networkTopology.mode", id="topology-mode"
        ),
        pytest.param(
            {"minMember": 2, "networkTopology": {"groupSize": 0}}, "spec.networkTopology.groupSize", id="group-size"
        ),
        pytest.param({"minMember": 2, "roles": [{"name": "ps"}]}, "spec.roles[0].minMember", id="role-without-min"),
        pytest.param({"minMember": 2, "minResources": {"cpu": "lots"}}, "spec.minResources[cpu]", id="bad-quantity"),
        pytest.param({"minMember": 2, "staleGracePeriodSeconds": -1}, "spec.staleGracePeriodSeconds", id="stale-grace"),
        pytest.param({"minMember": 2, "stalePolicy": "Kill"}, "spec.stalePolicy", id="stale-policy"),
    ],
)
def test_the_schema_rejects_bad_specs_at_the_field(version: dict[str, Any], spec: dict[str, Any], path: str) -> None:
    obj = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "x"}, "spec": spec}
    errors = crd_schema.validate(obj, version["schema"]["openAPIV3Schema"], strict=True)
    assert [e.path for e in errors] == [path]
