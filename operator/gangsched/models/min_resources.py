"""Adapter: PodGroup spec.minResources -> canonical (name, amount) pairs via core/resources.py.

Contract: `parse_min_resources(raw, *, field) -> tuple[tuple[str, int], ...] | None`: None when not declared;
sorted pairs in canonical units (cpu millicores, memory bytes, others counts) otherwise; InvalidField names
e.g. `spec.minResources.cpu` and the value. The one place models/ depends on the quantity parser; while
core/resources.py is absent (it is written in parallel) minResources is left unparsed (None), which a test
in tests/unit/test_models_podgroup.py catches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_resource_list: Callable[..., dict[str, int]] | None
try:
    from gangsched.core.resources import resource_list as _resource_list
except ImportError:  # pragma: no cover - only before core/resources.py lands
    _resource_list = None


def parse_min_resources(raw: Any, *, field: str) -> tuple[tuple[str, int], ...] | None:
    if raw is None or _resource_list is None:
        return None
    return tuple(sorted(_resource_list(raw, field=field).items()))
