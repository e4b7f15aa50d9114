"""The topology tiers a gang's bound members occupy now: status.placedTier and status.placedGroupTier.

Contract: `placed_tiers(tree, members, group_size) -> PlacedTiers | None` over the members bound to a node, in rank
order. `whole` is the lowest tier (1..tiers) one of whose domains holds every bound member, tiers + 1 when only the
whole cluster does; `group` (with `group_size` > 1) is the highest over the data-parallel groups of the lowest tier
holding that group, else None. None when nothing can be said: no tree, no bound member, or a bound member's node
outside the tree. From the pods, not the core's decision: a tier is shown only while members are bound there.
O(members x tiers), for the gangs whose status is being written only. More: docs/modules.md#stateplaced_tierspy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from gangsched.core import PodRecord, TopologyTree


class PlacedTiers(NamedTuple):
    whole: int
    group: int | None


def _lowest_common(paths: Sequence[tuple[str, ...]], tiers: int) -> int:
    """The lowest tier whose domain is the same on every path (tiers + 1: none, only the whole cluster)."""
    first = paths[0]
    for tier in range(1, tiers + 1):
        if all(path[tier - 1] == first[tier - 1] for path in paths):
            return tier
    return tiers + 1


def placed_tiers(tree: TopologyTree | None, members: Sequence[PodRecord], group_size: int) -> PlacedTiers | None:
    if tree is None:
        return None
    bound = sorted((pod for pod in members if pod.node_name), key=lambda p: (p.rank is None, p.rank or 0, p.name))
    if not bound:
        return None
    paths: list[tuple[str, ...]] = []
    for pod in bound:
        path = tree.node_path(pod.node_name or "")
        if path is None:
            return None
        paths.append(path)
    whole = _lowest_common(paths, tree.tiers)
    if group_size <= 1:
        return PlacedTiers(whole, None)
    group = max(_lowest_common(paths[i : i + group_size], tree.tiers) for i in range(0, len(paths), group_size))
    return PlacedTiers(whole, group)
