"""Kubernetes quantities and resource arithmetic in canonical integer units.

Contract:
- `parse_quantity(value, *, field) -> Fraction`: a Kubernetes quantity's exact value; negative or malformed ones
  raise `InvalidField`.
- `canonical(name, value, *, field) -> int`: cpu in millicores (ceil), memory, storage and hugepages in bytes
  (ceil), anything else a whole count (a fraction is an InvalidField).
- `Resources` is a `dict[str, int]` of canonical amounts (absent means 0); `resource_list(obj, *, field)` parses
  a ResourceList; `add_into`, `sub_into` (in place), `add`, `maximum` (new dicts); `format_resources(res)`.
Nothing here mutates its arguments unless its name says so. More: docs/modules.md#corevaluesresourcespy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

from gangsched.core.values.errors import InvalidField

Resources = dict[str, int]

CPU = "cpu"
PODS = "pods"

_BYTE_RESOURCES = ("memory", "ephemeral-storage", "storage")

_BINARY = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(r"^\+?([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")
_ALLOWED = "must be a non-negative Kubernetes quantity such as 100m, 1.5, 2Gi, 500M or 1e3"


def parse_quantity(value: str | int | float, *, field: str) -> Fraction:
    """The exact value of a Kubernetes quantity; InvalidField names `field` on bad input."""
    if isinstance(value, bool):
        raise InvalidField(field, value, _ALLOWED)
    if isinstance(value, int):
        if value < 0:
            raise InvalidField(field, value, _ALLOWED)
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value) or value < 0:
            raise InvalidField(field, value, _ALLOWED)
        return Fraction(str(value))
    if not isinstance(value, str):
        raise InvalidField(field, value, _ALLOWED)
    m = _QUANTITY.match(value.strip())
    if m is None:
        raise InvalidField(field, value, _ALLOWED)
    number, exponent, suffix = m.group(1), m.group(2), m.group(3) or ""
    base = Fraction(number)
    if exponent is not None:
        exp = int(exponent[1:])
        if abs(exp) > 40:
            raise InvalidField(field, value, "exponent out of range: " + _ALLOWED)
        return base * Fraction(10) ** exp
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    return base * _DECIMAL[suffix]


def _ceil(q: Fraction) -> int:
    return -((-q.numerator) // q.denominator)


def is_byte_resource(name: str) -> bool:
    return name in _BYTE_RESOURCES or name.startswith("hugepages-")


@lru_cache(maxsize=4096)
def _canonical_cached(name: str, value: str | int | float) -> int | None:
    # None: invalid (the caller raises with its own field path; the cache has no field)
    try:
        q = parse_quantity(value, field=name)
    except InvalidField:
        return None
    if name == CPU:
        return _ceil(q * 1000)
    if is_byte_resource(name):
        return _ceil(q)
    if q.denominator != 1:
        return -1
    return int(q)


def canonical(name: str, value: str | int | float, *, field: str) -> int:
    """Quantity of resource `name` in canonical integer units (see module docstring)."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        try:
            result = _canonical_cached(name, value)
        except TypeError:  # unhashable never happens for these types; keep mypy and callers honest
            result = None
    else:
        result = None
    if result is None:
        parse_quantity(value, field=field)  # raises with the precise message
        raise InvalidField(field, value, _ALLOWED)
    if result < 0:
        raise InvalidField(field, value, f"{name} is counted in whole units: must be a non-negative integer")
    return result


def resource_list(obj: Any, *, field: str) -> Resources:
    """Parse a ResourceList mapping (name -> quantity) into canonical units."""
    if obj is None:
        return {}
    if not isinstance(obj, Mapping):
        raise InvalidField(field, obj, "must be a mapping of resource name to quantity")
    out: Resources = {}
    for name, value in obj.items():
        out[str(name)] = canonical(str(name), value, field=f"{field}.{name}")
    return out


def add_into(target: Resources, other: Mapping[str, int], times: int = 1) -> None:
    """target += other * times (in place)."""
    for k, v in other.items():
        target[k] = target.get(k, 0) + v * times


def sub_into(target: Resources, other: Mapping[str, int], times: int = 1) -> None:
    """target -= other * times (in place); entries that reach 0 are dropped."""
    for k, v in other.items():
        left = target.get(k, 0) - v * times
        if left:
            target[k] = left
        else:
            target.pop(k, None)


def add(a: Mapping[str, int], b: Mapping[str, int]) -> Resources:
    out = dict(a)
    add_into(out, b)
    return out


def maximum(a: Mapping[str, int], b: Mapping[str, int]) -> Resources:
    out = dict(a)
    for k, v in b.items():
        if v > out.get(k, 0):
            out[k] = v
    return out


def _format_amount(name: str, amount: int) -> str:
    if name == CPU:
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if is_byte_resource(name):
        for suffix, unit in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if amount and amount % unit == 0:
                return f"{amount // unit}{suffix}"
    return str(amount)


def format_resources(res: Mapping[str, int], *, skip: Iterable[str] = (PODS,)) -> str:
    """Human rendering for events: `{cpu: 500m, nvidia.com/gpu: 8}` (pods left out by default)."""
    skipped = set(skip)
    parts = [f"{k}: {_format_amount(k, v)}" for k, v in sorted(res.items()) if k not in skipped]
    return "{" + ", ".join(parts) + "}"
