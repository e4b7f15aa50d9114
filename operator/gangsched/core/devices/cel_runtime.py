"""The celpy side of DRA selectors (imported on first use by core/devices/cel.py: celpy takes ~0.2 s to import).

Contract: `Quantity` and `Semver` (Kubernetes' CEL library types), `FUNCTIONS` (the extensions, by name, as celpy
calls them: a method call `x.f(y)` is `f(x, y)`), `undeclared(tree)` (what cel-go's checker calls an undeclared
reference: an identifier other than `device` or a macro's variable, or an unknown function), `activation(driver,
device)` (the `device` variable as compile.go's DeviceMatches builds it) and `runtime_message(err)` (cel-go's
wording of an evaluation error, e.g. "no such key: model").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import celpy
from celpy import celtypes
from celpy.evaluation import CELEvalError, base_functions
from lark import Token, Tree

from gangsched.core.devices.model import AttrValue, Device
from gangsched.core.values.errors import InvalidField
from gangsched.core.values.resources import parse_quantity

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
    r"(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})


class Quantity:
    """A Kubernetes resource.Quantity in CEL (k8s.io/apiserver/pkg/cel/library/quantity.go)."""

    __slots__ = ("value",)

    def __init__(self, value: Fraction) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"quantity({self.value})"


class Semver:
    """A semantic version in CEL (k8s.io/apiserver/pkg/cel/library/semverlib.go); build metadata is ignored."""

    __slots__ = ("key", "major", "minor", "patch")

    def __init__(self, text: str) -> None:
        m = _SEMVER.match(text)
        if m is None:
            raise ValueError(f"could not parse {text!r} as semver")
        self.major, self.minor, self.patch = int(m.group(1)), int(m.group(2)), int(m.group(3))
        pre = m.group(4)
        ids = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")) if pre else ()
        # a version without a pre-release sorts after every pre-release of the same core version
        self.key = (self.major, self.minor, self.patch, 0 if ids else 1, ids)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)


def _cmp(a: Any, b: Any) -> int:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        x, y = a.value, b.value
    elif isinstance(a, Semver) and isinstance(b, Semver):
        x, y = a.key, b.key  # type: ignore[assignment]
    else:
        raise TypeError(f"no such overload: compareTo({type(a).__name__}, {type(b).__name__})")
    return (x > y) - (x < y)


def _quantity(text: Any) -> Quantity:
    try:
        return Quantity(parse_quantity(str(text), field="quantity"))
    except InvalidField as e:
        raise ValueError(str(e)) from None


def _is_quantity(text: Any) -> bool:
    try:
        parse_quantity(str(text), field="quantity")
    except InvalidField:
        return False
    return True


def _as_integer(q: Quantity) -> int:
    if q.value.denominator != 1:
        raise ValueError("cannot convert value to integer")
    return int(q.value)


def _operand(b: Any) -> Fraction:
    return b.value if isinstance(b, Quantity) else Fraction(int(b))


def _relaxed(text: str) -> str:
    """semverlib's relaxed parsing: a "v" prefix, leading zeros, and missing minor / patch numbers as 0."""
    m = re.match(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(.*)$", text)
    if m is None:
        return text
    return f"{int(m[1])}.{int(m[2] or 0)}.{int(m[3] or 0)}{m[4]}"


def _is_semver(text: Any, relaxed: Any = False) -> bool:
    return _SEMVER.match(_relaxed(str(text)) if relaxed else str(text)) is not None


def _checked(fn: Callable[..., Any], wrap: Callable[[Any], Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        try:
            return wrap(fn(*args))
        except (TypeError, ValueError, AttributeError) as e:
            return CELEvalError(str(e))

    return call


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": _checked(_quantity, lambda q: q),
    "isQuantity": _checked(_is_quantity, celtypes.BoolType),
    "semver": _checked(lambda s, relaxed=False: Semver(_relaxed(str(s)) if relaxed else str(s)), lambda v: v),
    "isSemver": _checked(_is_semver, celtypes.BoolType),
    "lowerAscii": _checked(lambda s: str(s).lower(), celtypes.StringType),
    "upperAscii": _checked(lambda s: str(s).upper(), celtypes.StringType),
    "trim": _checked(lambda s: str(s).strip(), celtypes.StringType),
    "replace": _checked(lambda s, old, new: str(s).replace(str(old), str(new)), celtypes.StringType),
    "split": _checked(lambda s, sep: [celtypes.StringType(p) for p in str(s).split(str(sep))], celtypes.ListType),
    "join": _checked(lambda xs, sep="": str(sep).join(str(x) for x in xs), celtypes.StringType),
    "compareTo": _checked(_cmp, celtypes.IntType),
    "isGreaterThan": _checked(lambda a, b: _cmp(a, b) > 0, celtypes.BoolType),
    "isLessThan": _checked(lambda a, b: _cmp(a, b) < 0, celtypes.BoolType),
    "asInteger": _checked(_as_integer, celtypes.IntType),
    "asApproximateFloat": _checked(lambda q: float(q.value), celtypes.DoubleType),
    "sign": _checked(lambda q: (q.value > 0) - (q.value < 0), celtypes.IntType),
    "isInteger": _checked(lambda q: q.value.denominator == 1, celtypes.BoolType),
    "add": _checked(lambda a, b: Quantity(a.value + _operand(b)), lambda q: q),
    "sub": _checked(lambda a, b: Quantity(a.value - _operand(b)), lambda q: q),
    "major": _checked(lambda v: v.major, celtypes.IntType),
    "minor": _checked(lambda v: v.minor, celtypes.IntType),
    "patch": _checked(lambda v: v.patch, celtypes.IntType),
}
_KNOWN = frozenset(base_functions) | frozenset(FUNCTIONS) | {"has"} | _MACROS


class _Domains(celtypes.MapType):
    """attributes / capacity: a map of domains where an unknown domain is an empty map (compile.go's default)."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return celtypes.MapType()


def undeclared(tree: Tree[Any]) -> str | None:
    """The first identifier or function that is neither `device`, a macro's variable nor a known function."""
    bound: set[str] = set()
    used: list[str] = []
    for node in tree.iter_subtrees_topdown():  # type: ignore[no-untyped-call]
        if node.data == "primary" and node.children and isinstance(node.children[0], Tree):
            child = node.children[0]
            if child.data == "ident":
                used.append(str(child.children[0]))
            elif child.data == "ident_arg" and str(child.children[0]) not in _KNOWN:
                return str(child.children[0])
        elif node.data == "member_dot_arg":
            name = next((str(c) for c in node.children if isinstance(c, Token)), "")
            if name not in _KNOWN:
                return name
            if name in _MACROS:
                args = node.children[-1]
                if isinstance(args, Tree) and args.children:
                    bound.update(str(t) for t in args.children[0].scan_values(lambda v: isinstance(v, Token)))
    return next((n for n in used if n != "device" and n not in bound), None)


@functools.cache
def environment() -> Any:
    """The one celpy Environment of the process (building its parser takes about a second)."""
    return celpy.Environment()


def _value(attr: AttrValue) -> Any:
    if attr.kind == "int":
        return celtypes.IntType(int(attr.value))
    if attr.kind == "bool":
        return celtypes.BoolType(bool(attr.value))
    if attr.kind == "version":
        return Semver(str(attr.value))
    return celtypes.StringType(str(attr.value))


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, _, ident = name.rpartition("/")
    return (domain or driver), ident


def activation(driver: str, device: Device) -> dict[str, Any]:
    """The `device` variable as compile.go's DeviceMatches builds it."""
    attributes: dict[Any, Any] = {}
    for name, attr in device.attributes.items():
        domain, ident = _split(name, driver)
        attributes.setdefault(celtypes.StringType(domain), {})[celtypes.StringType(ident)] = _value(attr)
    capacity: dict[Any, Any] = {}
    for name, q in device.capacity.items():
        domain, ident = _split(name, driver)
        capacity.setdefault(celtypes.StringType(domain), {})[celtypes.StringType(ident)] = Quantity(q)
    dev = {
        celtypes.StringType("driver"): celtypes.StringType(driver),
        celtypes.StringType("attributes"): _Domains({k: celtypes.MapType(v) for k, v in attributes.items()}),
        celtypes.StringType("capacity"): _Domains({k: celtypes.MapType(v) for k, v in capacity.items()}),
        celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(device.allow_multiple_allocations),
    }
    return {"device": celtypes.MapType(dev)}


_NO_MEMBER = re.compile(r"no such member in mapping: '(.*)'")


def runtime_message(err: CELEvalError) -> str:
    args = err.args
    text = str(args[0]) if args else str(err)
    m = _NO_MEMBER.match(text)
    if m is not None:
        return f"no such key: {m.group(1)}"  # cel-go's wording
    if text == "no such key" and len(args) > 2 and isinstance(args[2], tuple) and args[2]:
        return f"no such key: {args[2][0]}"
    return text.split(" (in activation", 1)[0]


_TYPE_NAMES = {
    "IntType": "int",
    "UintType": "uint",
    "DoubleType": "double",
    "StringType": "string",
    "BytesType": "bytes",
    "ListType": "list",
    "MapType": "map",
    "NoneType": "null_type",
}


def type_name(value: object) -> str:
    """cel-go's name of a value's type, as in "CEL result of type int could not be converted to bool"."""
    name = type(value).__name__
    return _TYPE_NAMES.get(name, name)
