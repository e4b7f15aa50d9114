"""Structural-schema validation, defaulting and pruning of custom objects, as a real API server does it (pure).

Contract:
- `validate(obj, schema, *, strict) -> list[FieldError]`: checks `obj` against a CRD's openAPIV3Schema (the
  keywords supported are listed in the notes); apiVersion, kind and metadata at the root are never reported.
  strict=True reports unknown fields (kind "unknown": 400). Each `message` is the line a real server prints;
  `detail` is it without the path, `reason` the Status cause reason.
- `apply_defaults(obj, schema)`: fills in `default`s of absent properties (nulls of non-nullable ones dropped
  first); `prune_unknown(obj, schema)`: drops fields the schema does not know.
A write: `validate(strict=True)` under fieldValidation=Strict, then prune, default, `validate(strict=False)` (422).
More: docs/modules.md#simschemapy.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

_ROOT_SERVER_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})$")


@dataclass
class FieldError:
    """One problem with one field. kind: "unknown" | "invalid" | "required"."""

    path: str
    value: Any
    message: str
    kind: str

    @property
    def detail(self) -> str:
        """The message without the field path in front (what a Status cause's `message` holds)."""
        prefix = f"{self.path}: "
        return self.message[len(prefix) :] if self.message.startswith(prefix) else self.message

    @property
    def reason(self) -> str:
        """The Status cause reason: FieldValueRequired, FieldValueNotSupported, FieldValueInvalid, FieldValueUnknown."""
        if self.kind == "required":
            return "FieldValueRequired"
        if self.kind == "unknown":
            return "FieldValueUnknown"
        if self.detail.startswith("Unsupported value"):
            return "FieldValueNotSupported"
        return "FieldValueInvalid"

    def __str__(self) -> str:
        return self.message


def format_value(value: Any) -> str:
    """A value as Go's field.Error prints it: strings quoted, numbers and booleans plain, null as "null"."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, sort_keys=True, default=str)


def json_type(value: Any) -> str:
    """The JSON type name of a value: null, boolean, integer, number, string, array, object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(path, value, f"{path}: Invalid value: {format_value(value)}: {detail}", "invalid")


def _matches_type(value: Any, wanted: str) -> bool:
    actual = json_type(value)
    if wanted == actual:
        return True
    if wanted == "number" and actual == "integer":
        return True
    if wanted == "integer" and actual == "number":
        return bool(float(value).is_integer())
    return False


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def validate(obj: dict[str, Any], schema: dict[str, Any], *, strict: bool) -> list[FieldError]:
    """Every problem of obj against schema (see module docstring); an empty list when obj is valid."""
    errors: list[FieldError] = []
    _validate(obj, schema, "", errors, strict=strict, root=True)
    return errors


def _validate(
    value: Any, schema: dict[str, Any], path: str, errors: list[FieldError], *, strict: bool, root: bool = False
) -> None:
    if value is None:
        if schema.get("nullable") or (not schema.get("type") and schema.get("x-kubernetes-preserve-unknown-fields")):
            return
        wanted = schema.get("type") or ("integer or string" if schema.get("x-kubernetes-int-or-string") else None)
        if wanted:
            errors.append(_invalid(path, "null", f'{path} in body must be of type {wanted}: "null"'))
        return
    if schema.get("x-kubernetes-int-or-string") and json_type(value) not in ("integer", "string"):
        actual = json_type(value)
        errors.append(_invalid(path, actual, f'{path} in body must be of type integer or string: "{actual}"'))
        return
    wanted = schema.get("type")
    if wanted and not _matches_type(value, wanted):
        actual = json_type(value)
        errors.append(_invalid(path, actual, f'{path} in body must be of type {wanted}: "{actual}"'))
        return
    before = len(errors)
    _check_value(value, schema, path, errors)
    if len(errors) == before:
        _check_combinators(value, schema, path, errors)
    if isinstance(value, dict):
        _validate_object(value, schema, path, errors, strict=strict, root=root)
    elif isinstance(value, list):
        _validate_array(value, schema, path, errors, strict=strict)


def _check_value(value: Any, schema: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        supported = ", ".join(format_value(v) for v in enum)
        errors.append(
            FieldError(
                path,
                value,
                f"{path}: Unsupported value: {format_value(value)}: supported values: {supported}",
                "invalid",
            )
        )
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_number(value, schema, path, errors)
    elif isinstance(value, str):
        _check_string(value, schema, path, errors)
    elif isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(_invalid(path, value, f"{path} in body should have at least {schema['minItems']} items"))
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(_invalid(path, value, f"{path} in body should have at most {schema['maxItems']} items"))
    elif isinstance(value, dict):
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            errors.append(
                _invalid(path, value, f"{path} in body should have at least {schema['minProperties']} properties")
            )
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            errors.append(
                _invalid(path, value, f"{path} in body should have at most {schema['maxProperties']} properties")
            )


def _check_number(value: float, schema: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    if "minimum" in schema:
        low = schema["minimum"]
        if schema.get("exclusiveMinimum") is True and value <= low:
            errors.append(_invalid(path, value, f"{path} in body should be greater than {format_value(low)}"))
        elif value < low:
            errors.append(
                _invalid(path, value, f"{path} in body should be greater than or equal to {format_value(low)}")
            )
    if "maximum" in schema:
        high = schema["maximum"]
        if schema.get("exclusiveMaximum") is True and value >= high:
            errors.append(_invalid(path, value, f"{path} in body should be less than {format_value(high)}"))
        elif value > high:
            errors.append(_invalid(path, value, f"{path} in body should be less than or equal to {format_value(high)}"))
    if "multipleOf" in schema and schema["multipleOf"] and (value / schema["multipleOf"]) % 1 != 0:
        errors.append(
            _invalid(path, value, f"{path} in body should be a multiple of {format_value(schema['multipleOf'])}")
        )


def _check_string(value: str, schema: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    if "minLength" in schema and len(value) < schema["minLength"]:
        errors.append(_invalid(path, value, f"{path} in body should be at least {schema['minLength']} chars long"))
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(_invalid(path, value, f"{path} in body should be at most {schema['maxLength']} chars long"))
    pattern = schema.get("pattern")
    if pattern:
        compiled = _compiled(pattern)
        if compiled is not None and not compiled.search(value):
            errors.append(_invalid(path, value, f"{path} in body should match '{pattern}'"))
    if schema.get("format") == "date-time" and not _DATE_TIME.match(value):
        errors.append(_invalid(path, value, f"{path} in body must be of type date-time: {format_value(value)}"))


def _check_combinators(value: Any, schema: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    for sub in schema.get("allOf") or ():
        _validate(value, sub, path, errors, strict=False)
    any_of = schema.get("anyOf")
    if any_of and not any(not _branch_errors(value, sub, path) for sub in any_of):
        first = _branch_errors(value, any_of[0], path)
        errors.append(
            first[0]
            if len(any_of) == 1
            else _invalid(path, value, f"{path} in body must match at least one schema in anyOf")
        )
    one_of = schema.get("oneOf")
    if one_of:
        matching = sum(1 for sub in one_of if not _branch_errors(value, sub, path))
        if matching != 1:
            errors.append(_invalid(path, value, f"{path} in body must match exactly one schema in oneOf"))


def _branch_errors(value: Any, schema: dict[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    _validate(value, schema, path, errors, strict=False)
    return errors


def _validate_object(
    value: dict[str, Any], schema: dict[str, Any], path: str, errors: list[FieldError], *, strict: bool, root: bool
) -> None:
    properties: dict[str, Any] = schema.get("properties") or {}
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    for name in schema.get("required") or ():
        if name not in value and not (root and name in _ROOT_SERVER_FIELDS):
            child = _child(path, name)
            errors.append(FieldError(child, None, f"{child}: Required value", "required"))
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    for name, item in value.items():
        child = _child(path, name)
        if (root or embedded) and name in _ROOT_SERVER_FIELDS:
            if name != "metadata" and name in properties and not root:
                _validate(item, properties[name], child, errors, strict=strict)
            continue
        if name in properties:
            _validate(item, properties[name], child, errors, strict=strict)
        elif isinstance(additional, dict):
            _validate(item, additional, f"{path}[{name}]" if path else name, errors, strict=strict)
        elif additional is True or preserve:
            continue
        elif strict and ("properties" in schema or additional is False or schema.get("type") == "object"):
            errors.append(FieldError(child, item, f'unknown field "{child}"', "unknown"))


def _validate_array(
    value: list[Any], schema: dict[str, Any], path: str, errors: list[FieldError], *, strict: bool
) -> None:
    items = schema.get("items")
    if not isinstance(items, dict):
        return
    for index, item in enumerate(value):
        _validate(item, items, f"{path}[{index}]", errors, strict=strict)


def apply_defaults(obj: dict[str, Any], schema: dict[str, Any]) -> None:
    """Fill in the defaults of absent properties, in place (see module docstring)."""
    _default(obj, schema, root=True)


def _default(value: Any, schema: dict[str, Any], *, root: bool = False) -> None:
    if isinstance(value, dict):
        properties: dict[str, Any] = schema.get("properties") or {}
        for name, sub in properties.items():
            if root and name in _ROOT_SERVER_FIELDS:
                continue
            if name in value and value[name] is None and not sub.get("nullable"):
                del value[name]
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                _default(value[name], sub)
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for name, item in value.items():
                if name not in properties:
                    _default(item, additional)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in value:
                _default(item, items)


def prune_unknown(obj: dict[str, Any], schema: dict[str, Any]) -> None:
    """Drop fields the schema does not know, in place (see module docstring)."""
    _prune(obj, schema, root=True)


def _prune(value: Any, schema: dict[str, Any], *, root: bool = False) -> None:
    if isinstance(value, dict):
        properties: dict[str, Any] = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        embedded = bool(schema.get("x-kubernetes-embedded-resource"))
        for name in list(value):
            if (root or embedded) and name in _ROOT_SERVER_FIELDS:
                continue
            if name in properties:
                _prune(value[name], properties[name])
            elif isinstance(additional, dict):
                _prune(value[name], additional)
            elif additional is True or preserve:
                continue
            else:
                del value[name]
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in value:
                _prune(item, items)
