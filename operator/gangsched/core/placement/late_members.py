"""Late members and replacements of a satisfied gang that asked for a network topology: placed in the gang's
domain (hard) or as near it as they fit (soft), instead of anywhere.

Contract: `place_near_gang(session, gang, pods) -> (placed, shortfalls, None)` takes capacity in the session's
workspace for every pod placed. The gang's domain is the lowest-tier domain holding all its bound (or binding)
members' nodes. The pods try that domain first, then its ancestors tier by tier: up to `highestTierAllowed` when
hard (the shortfall then names the domain), up to the whole cluster when soft. A gang without topology, with no
topology known or with no bound member placed in the tree: ordinary placement (core/placement/pickers.py) anywhere.
`hard_domain(session, gang) -> set[str] | None`: the nodes of the gang's domain at `highestTierAllowed` (where its
late members may go, and so where they may preempt) when its topology is hard; None when nothing limits them.
"""

from __future__ import annotations

from gangsched.core.memory.gangs import GangState
from gangsched.core.placement.devices import devices_checked
from gangsched.core.placement.pickers import Outcome, Placed, class_batches, place_batches
from gangsched.core.records.records import PodRecord
from gangsched.core.topology import TopologyTree
from gangsched.core.transaction.messages import Shortfall
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.gangspec import TopologyMode


def _gang_nodes(session: CycleSession, gang: GangState, tree: TopologyTree) -> list[int]:
    """Tree indexes of the nodes holding the gang's bound or binding members."""
    out = []
    for key in session.members(gang).bound:
        pod = session.store.pods[key]
        node = pod.node_name
        if node is None:
            reservation = session.store.reservation_of(key)
            node = reservation[0] if reservation is not None else None
        if node is not None and node in tree.node_index:
            out.append(tree.node_index[node])
    return out


def _nodes_of(tree: TopologyTree, tier: int, domain: int) -> set[str]:
    return {name for i, name in enumerate(tree.node_names) if tree.domain_index(i, tier) == domain}


def _tiers(session: CycleSession, gang: GangState) -> tuple[TopologyTree, list[int], int, int, bool] | None:
    """(tree, the gang's node indexes, its lowest common tier, the highest tier its late members may use, hard)."""
    tree = session.store.topology
    network = gang.spec.network_topology if gang.spec is not None else None
    nodes = _gang_nodes(session, gang, tree) if tree is not None and network is not None else []
    if tree is None or network is None or not nodes:
        return None
    top = tree.tiers + 1
    first = next(t for t in range(1, top + 1) if len({tree.domain_index(n, t) for n in nodes}) == 1)
    hard = network.mode == TopologyMode.HARD
    last = max(first, min(network.highest_tier_allowed or top, top) if hard else top)
    return tree, nodes, first, last, hard


def hard_domain(session: CycleSession, gang: GangState) -> set[str] | None:
    tiers = _tiers(session, gang)
    if tiers is None or not tiers[4] or tiers[3] > tiers[0].tiers:
        return None
    tree, nodes, _, last, _ = tiers
    return _nodes_of(tree, last, tree.domain_index(nodes[0], last))


def place_near_gang(session: CycleSession, gang: GangState, pods: list[PodRecord]) -> Outcome:
    """(Their DRA claims allocated on the nodes chosen: core/placement/devices.py.)"""
    return devices_checked(session, _near(session, gang, pods))


def _near(session: CycleSession, gang: GangState, pods: list[PodRecord]) -> Outcome:
    tiers = _tiers(session, gang)
    if tiers is None:
        return place_batches(session, class_batches(pods), partial=True)
    tree, nodes, first, last, hard = tiers
    top = tree.tiers + 1
    placed: Placed = []
    left = pods
    for tier in range(first, last + 1):
        only = None if tier == top and not hard else _nodes_of(tree, tier, tree.domain_index(nodes[0], tier))
        got, _, _ = place_batches(session, class_batches(left), partial=True, only=only)
        placed.extend(got)
        done = {pod.key for pod, _ in got}
        left = [pod for pod in left if pod.key not in done]
        if not left:
            return placed, [], None
    domain = tree.level_names[last][tree.domain_index(nodes[0], last)]
    why = f"topology: hard network topology: no room left in the gang's tier-{last} domain {domain}"
    return placed, [Shortfall(ms[0].sclass, len(ms), 0, why if hard else None) for ms in class_batches(left)], None
