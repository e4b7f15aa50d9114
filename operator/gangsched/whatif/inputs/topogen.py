"""A synthetic two-tier network topology for an inventory that has none (e.g. the Alibaba node lists).

Contract:
- `synthetic_topology(nodes, *, unit_size=8, units_per_leaf=8) -> tuple[Domain, ...]`: nodes are grouped by GPU
  model (nodes of one unit share a model, as a rack of one server type does; nodes without a model form their own
  group "none"), in natural name order within a group, and cut into units (tier 1, e.g. a ToR/NVLink domain) of
  `unit_size` nodes; the units of a group, in order, into leaves (tier 2) of `units_per_leaf` units. The last unit
  and leaf of a group may be smaller. Names: `unit-<model>-<i>`, `leaf-<model>-<j>` (model lower-cased, characters
  other than letters, digits and '-' replaced by '-'; i and j count from 0 per group). Lowest tier first, as
  model.py `Workload.domains` expects; `TopologyTree.from_domains` accepts the result.
- Deterministic: the same nodes give the same domains, whatever their order. Linear in the number of nodes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from gangsched.core import Domain, natural_key
from gangsched.whatif.model import NodeSpec


def _slug(model: str | None) -> str:
    return re.sub(r"[^a-z0-9-]", "-", (model or "none").lower())


def synthetic_topology(nodes: Iterable[NodeSpec], *, unit_size: int = 8, units_per_leaf: int = 8) -> tuple[Domain, ...]:
    """Units of `unit_size` same-model nodes, leaves of `units_per_leaf` units (see the module docstring)."""
    if unit_size < 1 or units_per_leaf < 1:
        raise ValueError(f"unit_size ({unit_size}) and units_per_leaf ({units_per_leaf}) must be at least 1")
    groups: dict[str, list[str]] = defaultdict(list)
    for node in nodes:
        groups[_slug(node.gpu_model)].append(node.name)
    units: list[Domain] = []
    leaves: list[Domain] = []
    for slug in sorted(groups):
        names = sorted(groups[slug], key=natural_key)
        unit_names = []
        for i in range(0, len(names), unit_size):
            unit = f"unit-{slug}-{i // unit_size}"
            unit_names.append(unit)
            units.append(Domain(1, unit, children=tuple(names[i : i + unit_size])))
        for j in range(0, len(unit_names), units_per_leaf):
            leaves.append(
                Domain(2, f"leaf-{slug}-{j // units_per_leaf}", children=tuple(unit_names[j : j + units_per_leaf]))
            )
    return (*units, *leaves)
