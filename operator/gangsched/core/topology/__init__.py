"""Network topology: the tree of domains and topology-aware placement of a whole gang (pure; build a tree once per
topology change, query it often). Modules: tree.py, placement.py, ladder.py, apportion.py.

Contract of `place(tree, capacity, *, count, group_size, highest_tier_allowed, hard) -> TopologyPlacement |
TopologyMiss`: `capacity[node]` is how many more members a node takes. The result is the lowest (whole_tier,
group_tier) pair that fits (all members within one domain of whole_tier, every DP group of `group_size`
consecutive ranks within one of group_tier; tier `tree.tiers + 1` is the whole cluster; group_size 1: no
grouping), the best-fit domain at that level, members in as few sub-domains as possible.
`TopologyPlacement.nodes[i]` is rank i's node. Hard mode never exceeds highest_tier_allowed (`TopologyMiss` names
the best tier available); soft ignores it; no capacity at all: `TopologyMiss(best_whole_tier=None)`.
Cost: O(nodes + domains * tiers^2). More: docs/modules.md#coretopology__init__py.
"""

from __future__ import annotations

from gangsched.core.topology.placement import TopologyMiss, TopologyPlacement, place, place_network
from gangsched.core.topology.tree import Domain, TopologyTree
from gangsched.core.values.naming import natural_key

__all__ = [
    "Domain",
    "TopologyMiss",
    "TopologyPlacement",
    "TopologyTree",
    "natural_key",
    "place",
    "place_network",
]
