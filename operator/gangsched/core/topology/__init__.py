"""Network topology: the tree of domains and topology-aware placement of a whole gang (pure: no I/O, no clock, no
randomness; build a tree once per topology change, query it often).

Modules: tree.py (`Domain`, `TopologyTree`, `natural_key`: validation and the level structure), placement.py
(`place`, `TopologyPlacement`, `TopologyMiss`), spread.py (items spread over the children of one domain).

Contract of `place(tree, capacity, *, count, group_size, highest_tier_allowed, hard) -> TopologyPlacement |
TopologyMiss`: `capacity[node]` is how many more gang members a node can take; nodes not in the tree are ignored.
Tiers: 1..tree.tiers, and `tree.tiers + 1` means "the whole cluster" (several top domains). A DP group is
`group_size` consecutive ranks (the last group may be smaller when group_size does not divide count). The result is
the lowest pair (whole_tier, group_tier) in lexicographic order that fits: all members within one domain of tier
`whole_tier`, and every DP group within one domain of tier `group_tier` (group_tier <= whole_tier): (1,1), (2,1),
(2,2), (3,1), (3,2), (3,3), ... (on a three-tier tree, the network-topology-aware PodGroup design's six strategies).
`group_size == 1` means no grouping: group_tier is 0. When count <= group_size the only group is the gang:
group_tier == whole_tier. Within the chosen level the domain with the least capacity left over wins (best fit;
ties: the tighter parent, then natural name order); inside it, members go to as few sub-domains as possible, keeping
DP groups whole in the lowest domains that can hold them, the last one chosen by best fit.
`TopologyPlacement.nodes[i]` is the node of rank i (a node may repeat when it takes several members); DP group k is
ranks k*group_size .. (k+1)*group_size-1 and consecutive groups are adjacent. Hard mode never places with
whole_tier > highest_tier_allowed: it returns `TopologyMiss` whose reason names the best tier available; soft mode
ignores highest_tier_allowed (best effort). Not enough capacity at all: `TopologyMiss(best_whole_tier=None)`.
Cost: O(nodes + domains * tiers^2) to aggregate capacity per domain, never nodes x pods.
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
