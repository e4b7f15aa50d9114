"""Natural name order, the one definition: digit runs compare as numbers ("w-2" before "w-10").

Contract: `natural_key(name)` is a sort key; used for members without a rank (core/scheduler), topology
domains and nodes (core/topology, core/preemption) and models/rank.
"""

from __future__ import annotations

import re

_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key of natural order: digit runs compare as numbers ("node2" < "node10")."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in _DIGITS.split(name) if part)
