"""sim/schema.py: structural-schema validation, defaulting and pruning, with a real server's messages."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.sim.schema import FieldError, apply_defaults, format_value, prune_unknown, validate

ROOT = Path(__file__).resolve().parents[3]

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["minMember"],
            "properties": {
                "minMember": {"type": "integer", "minimum": 1, "maximum": 1000},
                "ratio": {
                    "type": "number",
                    "minimum": 0,
                    "exclusiveMinimum": True,
                    "maximum": 1,
                    "exclusiveMaximum": True,
                },
                "mode": {"type": "string", "enum": ["Strict", "NonStrict"], "default": "Strict"},
                "name": {"type": "string", "minLength": 1, "maxLength": 5, "pattern": "^[a-z]*$"},
                "flag": {"type": "boolean"},
                "when": {"type": "string", "format": "date-time"},
                "note": {"type": "string", "nullable": True},
                "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string"}},
                "roles": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string"}, "min": {"type": "integer", "default": 1}},
                    },
                },
                "minResources": {
                    "type": "object",
                    "additionalProperties": {
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                        "x-kubernetes-int-or-string": True,
                        "pattern": "^[0-9]+(m|Gi)?$",
                    },
                },
                "labels": {"type": "object", "additionalProperties": True},
                "free": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"n": {"type": "integer"}},
                },
            },
        },
    },
}


def _obj(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "x/v1",
        "kind": "Thing",
        "metadata": {"name": "a", "whatever": 1},
        "spec": {"minMember": 1, **spec},
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"minMember": 0},
            "spec.minMember: Invalid value: 0: spec.minMember in body should be greater than or equal to 1",
            id="minimum",
        ),
        pytest.param(
            {"minMember": 1001},
            "spec.minMember: Invalid value: 1001: spec.minMember in body should be less than or equal to 1000",
            id="maximum",
        ),
        pytest.param(
            {"ratio": 0},
            "spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0",
            id="exclusive-minimum",
        ),
        pytest.param(
            {"ratio": 1.0},
            "spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1",
            id="exclusive-maximum",
        ),
        pytest.param(
            {"mode": "Loose"},
            'spec.mode: Unsupported value: "Loose": supported values: "Strict", "NonStrict"',
            id="enum",
        ),
        pytest.param(
            {"minMember": "3"},
            'spec.minMember: Invalid value: "string": spec.minMember in body must be of type integer: "string"',
            id="type-string-for-int",
        ),
        pytest.param(
            {"minMember": 1.5},
            'spec.minMember: Invalid value: "number": spec.minMember in body must be of type integer: "number"',
            id="type-float-for-int",
        ),
        pytest.param(
            {"flag": "yes"},
            'spec.flag: Invalid value: "string": spec.flag in body must be of type boolean: "string"',
            id="type-boolean",
        ),
        pytest.param(
            {"name": ""},
            'spec.name: Invalid value: "": spec.name in body should be at least 1 chars long',
            id="min-length",
        ),
        pytest.param(
            {"name": "abcdef"},
            'spec.name: Invalid value: "abcdef": spec.name in body should be at most 5 chars long',
            id="max-length",
        ),
        pytest.param(
            {"name": "AB"}, "spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]*$'", id="pattern"
        ),
        pytest.param(
            {"tags": []}, "spec.tags: Invalid value: []: spec.tags in body should have at least 1 items", id="min-items"
        ),
        pytest.param(
            {"tags": ["a", "b", "c"]},
            'spec.tags: Invalid value: ["a", "b", "c"]: spec.tags in body should have at most 2 items',
            id="max-items",
        ),
        pytest.param(
            {"tags": [1]},
            'spec.tags[0]: Invalid value: "integer": spec.tags[0] in body must be of type string: "integer"',
            id="items",
        ),
        pytest.param({"roles": [{"min": 2}]}, "spec.roles[0].name: Required value", id="required-in-array-item"),
        pytest.param(
            {"when": "yesterday"},
            'spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"',
            id="date-time",
        ),
        pytest.param(
            {"mode": None},
            'spec.mode: Invalid value: "null": spec.mode in body must be of type string: "null"',
            id="null-not-nullable",
        ),
        pytest.param(
            {"minResources": {"cpu": "lots"}},
            'spec.minResources[cpu]: Invalid value: "lots": spec.minResources[cpu] in body should match '
            "'^[0-9]+(m|Gi)?$'",
            id="additional-properties-schema",
        ),
        pytest.param(
            {"minResources": {"cpu": True}},
            'spec.minResources[cpu]: Invalid value: "boolean": spec.minResources[cpu] in body must be of type '
            'integer or string: "boolean"',
            id="int-or-string",
        ),
        pytest.param(
            {"free": {"n": "x"}},
            'spec.free.n: Invalid value: "string": spec.free.n in body must be of type integer: "string"',
            id="known-field-under-preserve",
        ),
    ],
)
def test_invalid_values_get_a_real_servers_message(spec: dict[str, Any], message: str) -> None:
    errors = validate(_obj(**spec), SCHEMA, strict=False)
    assert [e.message for e in errors] == [message]
    assert errors[0].kind in ("invalid", "required")


def test_missing_required_field() -> None:
    obj = _obj()
    del obj["spec"]["minMember"]
    assert validate(obj, SCHEMA, strict=True) == [
        FieldError("spec.minMember", None, "spec.minMember: Required value", "required")
    ]


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({"minMember": 5, "mode": "NonStrict", "ratio": 0.5, "flag": False}, id="scalars"),
        pytest.param({"minMember": 2.0}, id="integral-float-is-an-integer"),
        pytest.param({"note": None}, id="nullable"),
        pytest.param({"when": "2024-05-01T10:00:00Z"}, id="date-time"),
        pytest.param({"minResources": {"cpu": "500m", "nvidia.com/gpu": 8}}, id="int-or-string-map"),
        pytest.param({"labels": {"anything": {"goes": 1}}}, id="additional-properties-true"),
        pytest.param({"free": {"n": 1, "extra": [1, 2]}}, id="preserve-unknown-fields"),
        pytest.param({"roles": [{"name": "ps", "min": 1}, {"name": "worker"}]}, id="array-of-objects"),
    ],
)
def test_valid_objects_have_no_errors(spec: dict[str, Any]) -> None:
    assert validate(_obj(**spec), SCHEMA, strict=True) == []


@pytest.mark.parametrize(
    ("obj_spec", "paths"),
    [
        pytest.param({"foo": 1}, ["spec.foo"], id="top-of-spec"),
        pytest.param({"roles": [{"name": "a", "bogus": 1}]}, ["spec.roles[0].bogus"], id="inside-array-item"),
        pytest.param({"foo": 1, "bar": {"x": 1}}, ["spec.foo", "spec.bar"], id="several"),
    ],
)
def test_unknown_fields_are_reported_only_when_strict(obj_spec: dict[str, Any], paths: list[str]) -> None:
    obj = _obj(**obj_spec)
    errors = validate(obj, SCHEMA, strict=True)
    assert [e.path for e in errors] == paths
    assert all(e.kind == "unknown" and e.message == f'unknown field "{e.path}"' for e in errors)
    assert errors[0].reason == "FieldValueUnknown"
    assert validate(obj, SCHEMA, strict=False) == []


def test_unknown_top_level_field_but_never_metadata_contents() -> None:
    obj = _obj()
    obj["extra"] = 1
    assert [e.path for e in validate(obj, SCHEMA, strict=True)] == ["extra"]


def test_error_detail_and_reason_for_status_causes() -> None:
    (error,) = validate(_obj(mode="Loose"), SCHEMA, strict=False)
    assert error.detail == 'Unsupported value: "Loose": supported values: "Strict", "NonStrict"'
    assert error.reason == "FieldValueNotSupported"
    (error,) = validate(_obj(minMember=0), SCHEMA, strict=False)
    assert error.reason == "FieldValueInvalid"
    assert error.detail.startswith("Invalid value: 0: ")


def test_prune_unknown_keeps_what_the_schema_allows() -> None:
    obj = _obj(foo=1, roles=[{"name": "a", "bogus": 2}], labels={"k": {"deep": 1}}, free={"n": 1, "x": 2})
    obj["extra"] = True
    prune_unknown(obj, SCHEMA)
    assert obj == {
        "apiVersion": "x/v1",
        "kind": "Thing",
        "metadata": {"name": "a", "whatever": 1},
        "spec": {"minMember": 1, "roles": [{"name": "a"}], "labels": {"k": {"deep": 1}}, "free": {"n": 1, "x": 2}},
    }


def test_apply_defaults_fills_absent_and_null_fields_recursively() -> None:
    obj = _obj(roles=[{"name": "a"}, {"name": "b", "min": 3}], mode=None)
    apply_defaults(obj, SCHEMA)
    assert obj["spec"]["mode"] == "Strict"
    assert obj["spec"]["roles"] == [{"name": "a", "min": 1}, {"name": "b", "min": 3}]


def test_apply_defaults_copies_default_values() -> None:
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"l": {"type": "array", "default": ["x"]}}}},
    }
    first: dict[str, Any] = {"spec": {}}
    second: dict[str, Any] = {"spec": {}}
    apply_defaults(first, schema)
    apply_defaults(second, schema)
    first["spec"]["l"].append("y")
    assert second["spec"]["l"] == ["x"]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        pytest.param(0, "0", id="int"),
        pytest.param(2.0, "2", id="integral-float"),
        pytest.param(0.5, "0.5", id="float"),
        pytest.param(True, "true", id="bool"),
        pytest.param("x", '"x"', id="string"),
        pytest.param(None, '"null"', id="null"),
    ],
)
def test_format_value_like_go(value: Any, shown: str) -> None:
    assert format_value(value) == shown


def _podgroup_schema() -> dict[str, Any]:
    crd = yaml.safe_load((ROOT / "crds" / "podgroups.yaml").read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    return dict(version["schema"]["openAPIV3Schema"])


def test_the_podgroup_crd_schema_rejects_bad_podgroups() -> None:
    schema = _podgroup_schema()
    good: dict[str, Any] = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "g"},
        "spec": {"minMember": 4},
    }
    assert validate(copy.deepcopy(good), schema, strict=True) == []
    bad = copy.deepcopy(good)
    bad["spec"]["minMember"] = 0
    assert [e.path for e in validate(bad, schema, strict=False)] == ["spec.minMember"]
    unknown = copy.deepcopy(good)
    unknown["spec"]["foo"] = 1
    assert [e.message for e in validate(unknown, schema, strict=True)] == ['unknown field "spec.foo"']
