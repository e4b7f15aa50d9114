"""Decoding checks of built-in objects: what the real apiserver's JSON decoder (sigs.k8s.io/json) refuses (400) or
reports as unknown.

Contract:
- `check(group, version, kind, obj) -> list[str]`: the unknown-field paths of `obj` as sigs.k8s.io/json names
  them; raises DecodeError(the Go decoder's message) for the first type error. Checked from the v1.37 definitions
  (schemas.py): JSON types, integer ranges, Time and MicroTime, IntOrString, Quantity, base64; `null` accepted
  anywhere; a kind without a definition is not checked.
- `required(group, version, kind, obj) -> list[str]`: missing `required` properties below the root, outside
  metadata and status (the caller answers 422 `Required value`).
- Checkers are compiled once per definition and cached.
More: docs/modules.md#simvalidationdecodepy.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable
from typing import Any

import gangsched.sim.validation.schemas as schemas


class DecodeError(ValueError):
    """The body cannot be decoded into the kind's Go type; str() is the decoder's message."""


# loc: a linked path (parent, json name, index-or-key or None), built only as deep as the walk goes
Loc = tuple[Any, str, Any] | None
Checker = Callable[[Any, Loc, str, list[str]], None]  # (value, loc, enclosing Go struct, unknown paths out)

_INT_RANGES = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}
_QUANTITY_RE = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_QUANTITY_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"

_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
_MICRO_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"


def _go_path(loc: Loc) -> str:
    parts: list[str] = []
    while loc is not None:
        parts.append(loc[1])
        loc = loc[0]
    return ".".join(p for p in reversed(parts) if p)


def _strict_path(loc: Loc) -> str:
    parts: list[str] = []
    while loc is not None:
        parent, name, index = loc
        parts.append(name if index is None else f"{name}[{index}]")
        loc = parent
    return ".".join(p for p in reversed(parts) if p)


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_error(value: Any, loc: Loc, struct: str, go_type: str, *, with_number: bool = False) -> DecodeError:
    what = _json_kind(value)
    if with_number and what == "number":
        what = f"number {value!r}"
    path = _go_path(loc)
    if struct and path:
        return DecodeError(f"json: cannot unmarshal {what} into Go struct field {struct}.{path} of type {go_type}")
    return DecodeError(f"json: cannot unmarshal {what} into Go value of type {go_type}")


# ---------------------------------------------------------------------------------------------- time parsing
_DIGITS = {"2006": 4, "01": 2, "02": 2, "15": 2, "04": 2, "05": 2}


def _parse_time(value: str, layout: str) -> str | None:
    """None when Go's time.Parse(layout, value) succeeds, else its error message (for the two RFC 3339 layouts)."""
    elems = ["2006", "-", "01", "-", "02", "T", "15", ":", "04", ":", "05"]
    if layout == RFC3339_MICRO:
        elems.append(".000000")
    elems.append("Z07:00")
    rest = value
    for elem in elems:
        fail = f'parsing time "{value}" as "{layout}": cannot parse "{rest}" as "{elem}"'
        if elem in _DIGITS:
            n = _DIGITS[elem]
            if len(rest) < n or not rest[:n].isdigit():
                return fail
            rest = rest[n:]
            if elem == "05" and layout == RFC3339 and rest[:1] in (".", ","):
                i = 1
                while i < len(rest) and rest[i].isdigit():
                    i += 1
                if i == 1:
                    return fail
                rest = rest[i:]
        elif elem == ".000000":
            if len(rest) < 7 or rest[0] not in ".," or not rest[1:7].isdigit():
                return fail
            rest = rest[7:]
        elif elem == "Z07:00":
            if rest[:1] == "Z":
                rest = rest[1:]
            elif len(rest) >= 6 and rest[0] in "+-" and rest[1:3].isdigit() and rest[3] == ":" and rest[4:6].isdigit():
                rest = rest[6:]
            else:
                return fail
        else:
            if not rest.startswith(elem):
                return fail
            rest = rest[len(elem) :]
    if rest:
        return f'parsing time "{value}": extra text: "{rest}"'
    return None


# ---------------------------------------------------------------------------------------------- compiling
class _Compiler:
    def __init__(self, defs: dict[str, dict[str, Any]]) -> None:
        self.defs = defs
        self.checkers: dict[str, Checker] = {}

    @staticmethod
    def go_type_of_def(name: str) -> str:
        parts = name.split(".")
        return f"{parts[-2]}.{parts[-1]}" if len(parts) >= 2 else name

    def go_type(self, schema: dict[str, Any]) -> str:
        ref = schema.get("$ref")
        if ref:
            return self.go_type_of_def(schemas.ref_name(ref))
        types = [t for t in _types(schema) if t != "null"]
        t = types[0] if types else ""
        if t == "array":
            return "[]" + self.go_type(schema.get("items") or {})
        if t == "object":
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                return "map[string]" + self.go_type(extra)
            return "map[string]interface {}"
        if t == "integer":
            return str(schema.get("format") or "int64")
        if t == "number":
            return "float64"
        if t == "boolean":
            return "bool"
        if t == "string":
            return "[]uint8" if schema.get("format") == "byte" else "string"
        return "interface {}"

    def by_name(self, name: str) -> Checker:
        found = self.checkers.get(name)
        if found is not None:
            return found
        holder: list[Checker] = []

        def forward(value: Any, loc: Loc, struct: str, unknown: list[str]) -> None:
            holder[0](value, loc, struct, unknown)

        self.checkers[name] = forward  # recursion-safe
        checker = self.compile_def(name)
        holder.append(checker)
        self.checkers[name] = checker
        return checker

    def compile_def(self, name: str) -> Checker:
        if name in (_TIME, _MICRO_TIME):
            layout = RFC3339 if name == _TIME else RFC3339_MICRO

            def check_time(value: Any, loc: Loc, struct: str, unknown: list[str]) -> None:
                if value is None:
                    return
                if not isinstance(value, str):
                    raise _type_error(value, None, "", "string")
                problem = _parse_time(value, layout)
                if problem:
                    raise DecodeError(problem)

            return check_time
        if name == _QUANTITY:

            def check_quantity(value: Any, loc: Loc, struct: str, unknown: list[str]) -> None:
                if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
                    return
                if not isinstance(value, str) or not _QUANTITY_RE.match(value.strip()):
                    raise DecodeError(_QUANTITY_MSG)

            return check_quantity
        if name == _INT_OR_STRING:

            def check_int_or_string(value: Any, loc: Loc, struct: str, unknown: list[str]) -> None:
                if value is None or isinstance(value, str):
                    return
                if isinstance(value, int) and not isinstance(value, bool):
                    lo, hi = _INT_RANGES["int32"]
                    if lo <= value <= hi:
                        return
                raise _type_error(value, None, "", "int32", with_number=True)

            return check_int_or_string
        schema = self.defs.get(name) or {}
        return self.compile(schema, struct_name=name.rsplit(".", 1)[-1], go_name=self.go_type_of_def(name))

    def compile(self, schema: dict[str, Any], *, struct_name: str = "", go_name: str = "") -> Checker:  # noqa: C901 (predates the complexity ceiling)
        ref = schema.get("$ref")
        if ref:
            return self.by_name(schemas.ref_name(ref))
        if "oneOf" in schema or "anyOf" in schema:
            return _any
        types = [t for t in _types(schema) if t != "null"]
        if not types:
            return _any
        t = types[0]
        if t == "object":
            props = schema.get("properties")
            if props is not None:
                return self.compile_struct(schema, struct_name, go_name or "struct")
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                return self.compile_map(extra, self.go_type(schema))
            return _object_any
        if t == "array":
            return self.compile_array(schema)
        if t == "integer":
            lo, hi = _INT_RANGES.get(str(schema.get("format") or "int64"), _INT_RANGES["int64"])
            go = str(schema.get("format") or "int64")

            def check_int(value: Any, loc: Loc, struct: str, unknown: list[str]) -> None:
                if value is None:
                    return
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise _type_error(value, loc, struct, go)
                if isinstance(value, float) or not lo <= value <= hi:
                    # Go parses the literal with strconv.ParseInt: a fraction or exponent ("15.0") fails as well
                    raise _type_error(value, loc, struct, go, with_number=True)

            return check_int
        if t == "number":

            def check_number(value: Any, loc: Loc, struct: str, unknown: list[str]) -> None:
                if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                    raise _type_error(value, loc, struct, "float64")

            return check_number
        if t == "boolean":

            def check_bool(value: Any, loc: Loc, struct: str, unknown: list[str]) -> None:
                if value is not None and not isinstance(value, bool):
                    raise _type_error(value, loc, struct, "bool")

            return check_bool
        if t == "string":
            if schema.get("format") == "byte":

                def check_bytes(value: Any, loc: Loc, struct: str, unknown: list[str]) -> None:
                    if value is None:
                        return
                    if not isinstance(value, str):
                        raise _type_error(value, loc, struct, "[]uint8")
                    try:
                        base64.b64decode(value, validate=True)
                    except (binascii.Error, ValueError):
                        raise DecodeError(f"illegal base64 data at input byte {_bad_b64_index(value)}") from None

                return check_bytes

            def check_string(value: Any, loc: Loc, struct: str, unknown: list[str]) -> None:
                if value is not None and not isinstance(value, str):
                    raise _type_error(value, loc, struct, "string")

            return check_string
        return _any

    def compile_struct(self, schema: dict[str, Any], struct_name: str, go_self: str) -> Checker:
        props: dict[str, Any] = schema.get("properties") or {}
        fields: dict[str, Checker] = {}
        go_types: dict[str, str] = {}
        for key, sub in props.items():
            fields[key] = self.compile(sub, struct_name="")
            go_types[key] = self.go_type(sub)

        def check_struct(value: Any, loc: Loc, struct: str, unknown: list[str]) -> None:
            if value is None:
                return
            if not isinstance(value, dict):
                raise _type_error(value, loc, struct, go_self)
            for key, item in value.items():
                checker = fields.get(key)
                if checker is None:
                    unknown.append(_strict_path((loc, key, None)))
                    continue
                if item is not None:
                    checker(item, (loc, key, None), struct_name, unknown)

        return check_struct

    def compile_map(self, value_schema: dict[str, Any], go_type: str) -> Checker:
        item_checker = self.compile(value_schema)

        def check_map(value: Any, loc: Loc, struct: str, unknown: list[str]) -> None:
            if value is None:
                return
            if not isinstance(value, dict):
                raise _type_error(value, loc, struct, go_type)
            for _key, item in value.items():
                if item is not None:
                    item_checker(item, loc, struct, unknown)

        return check_map

    def compile_array(self, schema: dict[str, Any]) -> Checker:
        items = schema.get("items") or {}
        item_checker = self.compile(items)
        go_type = "[]" + self.go_type(items)

        def check_array(value: Any, loc: Loc, struct: str, unknown: list[str]) -> None:
            if value is None:
                return
            if not isinstance(value, list):
                raise _type_error(value, loc, struct, go_type)
            if loc is None:
                for item in value:
                    item_checker(item, None, struct, unknown)
                return
            parent, name, _ = loc
            for i, item in enumerate(value):
                if item is not None:
                    item_checker(item, (parent, name, i), struct, unknown)

        return check_array


def _types(schema: dict[str, Any]) -> list[str]:
    t = schema.get("type")
    if t is None:
        return []
    return [t] if isinstance(t, str) else list(t)


def _any(value: Any, loc: Loc, struct: str, unknown: list[str]) -> None:
    return None


def _object_any(value: Any, loc: Loc, struct: str, unknown: list[str]) -> None:
    if value is not None and not isinstance(value, dict):
        raise _type_error(value, loc, struct, "map[string]interface {}")


def _bad_b64_index(value: str) -> int:
    """Where Go's base64.StdEncoding.Decode reports a CorruptInputError (approximately: the first byte outside
    the alphabet, or the end of the last whole quantum for a bad length or padding)."""
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    for i, ch in enumerate(value):
        if ch not in alphabet and ch != "=":
            return i
    return (len(value) // 4) * 4


_ROOTS: dict[tuple[str, str, str], Checker | None] = {}


@functools.cache
def _compiler() -> _Compiler:
    """The one compiler over every OpenAPI definition (built on first use)."""
    return _Compiler(schemas.definitions())


_SKIP_KINDS = frozenset({("apiextensions.k8s.io", "CustomResourceDefinition")})


def _root_checker(group: str, version: str, kind: str) -> Checker | None:
    key = (group, version, kind)
    if key in _ROOTS:
        return _ROOTS[key]
    checker: Checker | None = None
    name = schemas.definition_name(group, version, kind) if (group, kind) not in _SKIP_KINDS else None
    if name is not None:
        compiler = _compiler()
        schema = dict(compiler.defs[name])
        # apiVersion and kind are the REST layer's business: known, never type-checked here
        props = {**(schema.get("properties") or {}), "apiVersion": {}, "kind": {}}
        checker = compiler.compile({**schema, "properties": props}, struct_name=kind, go_name=f"{version}.{kind}")

    _ROOTS[key] = checker
    return checker


def check(group: str, version: str, kind: str, obj: dict[str, Any]) -> list[str]:
    """See module docstring."""
    checker = _root_checker(group, version, kind)
    if checker is None:
        return []
    unknown: list[str] = []
    checker(obj, None, kind, unknown)
    return unknown


# ---------------------------------------------------------------------------------------------- required
_REQUIRED: dict[str, Any] = {}


def required(group: str, version: str, kind: str, obj: dict[str, Any]) -> list[str]:
    """See module docstring."""
    name = schemas.definition_name(group, version, kind) if (group, kind) not in _SKIP_KINDS else None
    if name is None:
        return []
    out: list[str] = []
    _walk_required(name, obj, "", out, depth=0)
    return out


def _has_required_below(name: str, visiting: frozenset[str] = frozenset()) -> bool:
    """Whether a definition, or any definition it refers to, has required fields (cached): the walk skips the
    many subtrees with none (a pod's resources, probes, volumes...), which keeps creates fast."""
    cached = _REQUIRED.get(name)
    if cached is not None:
        return bool(cached)
    if name in visiting:
        return True  # a cycle: assume so (not cached)
    schema = schemas.definitions().get(name) or {}
    found = bool(schema.get("required"))
    for sub in (schema.get("properties") or {}).values():
        if found:
            break
        ref = sub.get("$ref") or (sub.get("items") or {}).get("$ref")
        if ref:
            found = _has_required_below(schemas.ref_name(ref), visiting | {name})
    _REQUIRED[name] = found
    return found


_PLANS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str, bool], ...]]] = {}


def _plan(name: str) -> tuple[tuple[str, ...], tuple[tuple[str, str, bool], ...]]:
    """(required keys, children worth walking as (key, definition, is a list)) of a definition, cached."""
    plan = _PLANS.get(name)
    if plan is None:
        schema = schemas.definitions().get(name) or {}
        children = []
        for key, sub in (schema.get("properties") or {}).items():
            ref, many = sub.get("$ref"), False
            if not ref:
                ref, many = (sub.get("items") or {}).get("$ref"), True
            if ref and _has_required_below(schemas.ref_name(ref)):
                children.append((key, schemas.ref_name(ref), many))
        plan = _PLANS[name] = (tuple(schema.get("required") or ()), tuple(children))
    return plan


def _walk_required(name: str, value: Any, path: str, out: list[str], *, depth: int) -> None:
    if depth > 12 or not isinstance(value, dict):
        return
    required_keys, children = _plan(name)
    if depth > 0:
        for key in required_keys:
            if value.get(key) is None:
                out.append(f"{path}.{key}" if path else key)
    for key, child, many in children:
        item = value.get(key)
        if item is None or key == "metadata" or (depth == 0 and key == "status"):
            continue
        sub_path = f"{path}.{key}" if path else key
        if not many:
            _walk_required(child, item, sub_path, out, depth=depth + 1)
        elif isinstance(item, list):
            for i, element in enumerate(item):
                _walk_required(child, element, f"{sub_path}[{i}]", out, depth=depth + 1)
