"""Adapter: PodGroup spec.minResources -> canonical (name, amount) pairs via core/resources.py.

Contract: `parse_min_resources(raw, *, field) -> tuple[tuple[str, int], ...] | None`: None when not declared;
sorted pairs in canonical units (cpu millicores, memory bytes, others counts) otherwise; InvalidField names
e.g. `spec.minResources.cpu` and the value. The one place models/ depends on the quantity parser.
"""

from __future__ import annotations

from typing import Any

from gangsched.core.resources import resource_list


def parse_min_resources(raw: Any, *, field: str) -> tuple[tuple[str, int], ...] | None:
    if raw is None:
        return None
    return tuple(sorted(resource_list(raw, field=field).items()))
