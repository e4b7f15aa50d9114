"""Small readers of raw API dict fields shared by the parsers in models/ (pods, nodes, selectors, PDBs).

Contract: each takes a value read from an API object and the field path it came from, returns it in the shape asked
for, and raises InvalidField(field, value, what is allowed) otherwise. `None` (field absent) reads as empty.
`str_map` interns keys and values (labels repeat across thousands of pods); `shared_map` returns one dict per
distinct content (identical allocatable maps are shared between node records).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from gangsched.core.errors import InvalidField

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
