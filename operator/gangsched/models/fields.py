"""Small readers of raw API dict fields shared by the parsers in models/ (pods, nodes, selectors, PDBs).

Contract: each takes a value read from an API object and the field path it came from, returns it in the shape asked
for, and raises InvalidField(field, value, what is allowed) otherwise. `None` (field absent) reads as empty.
`str_map` interns keys and values (labels repeat across thousands of pods); `shared_map` returns one dict per
distinct content (identical allocatable maps are shared between node records).

Bounded numbers: `decimal(value, *, field, minimum, maximum, allowed)` reads a decimal integer written as a string
(annotations, labels) or an int, refusing more than MAX_DIGITS digits before converting (Python refuses to convert
more than 4,300 digits with a plain ValueError, which must never escape a parser) and anything outside
[minimum, maximum]. `shown(value)` is a value as an error message shows it: long values are cut to their first 40
characters and their length, so a 5,000-digit annotation gives a short event.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Final

from gangsched.core import InvalidField

INT32_MAX: Final = 2**31 - 1  # the CRD's `format: int32` and Koordinator's strconv.ParseInt(s, 10, 32)
MAX_DIGITS: Final = 10  # digits of INT32_MAX: more can never be in range
_SHOWN: Final = 40

_shared_maps: dict[tuple[tuple[str, Any], ...], Mapping[str, Any]] = {}
_SHARED_LIMIT = 100_000


def as_object(value: Any, *, field: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidField(field, value, "must be an object")
    return value


def as_list(value: Any, *, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidField(field, value, "must be a list")
    return value


def str_map(value: Any, *, field: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidField(field, value, "must be a mapping of string to string")
    return {sys.intern(str(k)): sys.intern(str(v)) for k, v in value.items()}


def shared_map(content: Mapping[str, Any]) -> Mapping[str, Any]:
    key = tuple(sorted(content.items()))
    found = _shared_maps.get(key)
    if found is None:
        if len(_shared_maps) > _SHARED_LIMIT:
            _shared_maps.clear()
        found = _shared_maps[key] = dict(content)
    return found


def shown(value: Any) -> Any:
    """`value` as an error message shows it: strings longer than 60 characters are cut, with their length; integers
    too long to print (Python refuses str() of more than 4,300 digits) by their size."""
    if isinstance(value, str) and len(value) > 60:
        return f"{value[:_SHOWN]}... ({len(value)} characters)"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**60:
        return f"an integer of {value.bit_length()} bits"
    return value


def decimal(value: Any, *, field: str, minimum: int, maximum: int, allowed: str) -> int:
    """A decimal integer in [minimum, maximum] from a string (surrounding blanks ignored) or an int; InvalidField
    (field, the value as `shown`, allowed) otherwise. At most MAX_DIGITS digits are ever converted."""
    if isinstance(value, bool):
        raise InvalidField(field, value, allowed)
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit()) or len(text.lstrip("0")) > MAX_DIGITS:
            raise InvalidField(field, shown(value), allowed)
        number = int(text)
    else:
        raise InvalidField(field, shown(value), allowed)
    if not minimum <= number <= maximum:
        raise InvalidField(field, shown(value), allowed)
    return number
