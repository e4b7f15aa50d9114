"""PodGroup spec.minResources -> canonical (name, amount) pairs, through core/values/resources.py's quantity parser.

Contract: `parse_min_resources(raw, *, field) -> tuple[tuple[str, int], ...] | None`: None when not declared;
sorted pairs in canonical units (cpu millicores, memory bytes, others counts) otherwise; InvalidField names
e.g. `spec.minResources.cpu` and the value. Bounded before parsing: a quantity is at most MAX_QUANTITY_CHARS
characters (a string) or an int64 (an integer), so no quantity reaches Python's 4,300-digit conversion limit (the
CRD's pattern accepts any number of digits; Kubernetes' resource.Quantity itself saturates at int64).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gangsched.core import InvalidField, resource_list
from gangsched.models.fields import shown

MAX_QUANTITY_CHARS: Final = 64
_INT64_MAX: Final = 2**63 - 1


def parse_min_resources(raw: Any, *, field: str) -> tuple[tuple[str, int], ...] | None:
    if raw is None:
        return None
    if isinstance(raw, Mapping):
        for name, value in raw.items():
            too_long = isinstance(value, str) and len(value) > MAX_QUANTITY_CHARS
            too_big = isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= _INT64_MAX
            if too_long or too_big:
                allowed = f"must be a quantity of at most {MAX_QUANTITY_CHARS} characters, at most {_INT64_MAX}"
                raise InvalidField(f"{field}.{name}", shown(value), allowed)
    return tuple(sorted(resource_list(raw, field=field).items()))
