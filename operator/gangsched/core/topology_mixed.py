"""Topology for gangs of several scheduling classes (MPI launcher + workers, Ray head + workers): the same
whole-gang tier ladder as single-class gangs (core/topology).

Contract: `place_mixed_topology(session, tree, spec, pods, held) -> (placed, shortfalls, tier)` takes capacity in the
session's workspace for every pod placed. It walks the tiers 1, 2, ..., tree.tiers + 1 (the whole cluster) and,
at each, the domains holding candidate nodes, tightest first (least capacity left over for the gang's largest
class, then natural name order); the first domain where every pod fits wins and its tier is reported. Whether the
pods fit a domain is decided by core/quorum.py (exact within 8 classes x 64 candidate nodes of the domain, else a
first-fit of the larger classes first). Hard mode never goes above `highestTierAllowed`: no domain fits, nothing is
placed and every class reports a shortfall whose reason names the tier. Soft mode with no domain that fits
falls back to core/quorum_placement.py anywhere (tier None). Ranks: each class's pods in rank order take the
chosen nodes in natural name order. Not done for these gangs: data-parallel groups (`groupSize` is ignored).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from gangsched.core.gangspec import GangSpec, TopologyMode
from gangsched.core.messages import Shortfall
from gangsched.core.pickers import Outcome, Placed
from gangsched.core.quorum import MAX_NODES, Candidate, Group, first_fit, search
from gangsched.core.quorum_placement import class_order, place_quorum
from gangsched.core.records import PodRecord, SchedulingClass
from gangsched.core.session import CycleSession
from gangsched.core.topology import TopologyTree, natural_key


def place_mixed_topology(
    session: CycleSession, tree: TopologyTree, spec: GangSpec, pods: list[PodRecord], held: Counter[str | None]
) -> Outcome:
    network = spec.network_topology
    assert network is not None
    classes = class_order(pods)
    index = {cls.id: i for i, cls in enumerate(classes)}
    need = Counter(index[pod.sclass.id] for pod in pods)
    nodes = _candidates(session, tree, classes)
    highest = network.highest_tier_allowed if network.mode == TopologyMode.HARD else None
    for tier in range(1, tree.tiers + 2):
        if highest is not None and tier > highest:
            break
        for members in _domains(tree, nodes, tier, classes[0]):
            assignment = _fit(classes, need, members)
            if assignment is not None:
                return _apply(session, pods, classes, assignment), [], tier
    if highest is None:
        return place_quorum(session, spec, pods, held)
    reason = f"topology: hard network topology: no domain of tier <= {highest} can hold the gang's {len(pods)} members"
    return [], [Shortfall(cls, need[i], 0, reason) for i, cls in enumerate(classes)], None


def _candidates(session: CycleSession, tree: TopologyTree, classes: list[SchedulingClass]) -> list[Candidate]:
    """Nodes of the tree where at least one class fits, in natural name order."""
    allowed: dict[str, set[int]] = {}
    for i, cls in enumerate(classes):
        for node, _ in session.workspace.view(cls).ordered():
            if node in tree.node_index:
                allowed.setdefault(node, set()).add(i)
    resources = {r for cls in classes for r in cls.requests}
    out = []
    for node in sorted(allowed, key=tree.node_index.__getitem__):
        free = session.workspace.free(node)
        out.append(Candidate(node, {r: free.get(r, 0) for r in resources}, frozenset(allowed[node])))
    return out


def _domains(tree: TopologyTree, nodes: list[Candidate], tier: int, largest: SchedulingClass) -> list[list[Candidate]]:
    """The candidate nodes of each domain of a tier (tiers + 1: the whole cluster), tightest domain first."""
    by_domain: dict[int, list[Candidate]] = {}
    for cand in nodes:
        i = tree.node_index[cand.name]
        for level in range(min(tier, tree.tiers)):
            i = tree.parent_at[level][i]
        by_domain.setdefault(i if tier <= tree.tiers else 0, []).append(cand)

    def room(members: list[Candidate]) -> int:
        return sum(_count(largest.requests, c.free) for c in members)

    names = tree.level_names[min(tier, tree.tiers + 1)]
    order = sorted(by_domain, key=lambda d: (room(by_domain[d]), natural_key(names[d])))
    return [by_domain[d] for d in order]


def _count(requests: Mapping[str, int], free: Mapping[str, int]) -> int:
    return min((free.get(r, 0) // q for r, q in requests.items() if q > 0), default=0)


def _fit(
    classes: list[SchedulingClass], need: Counter[int], members: list[Candidate]
) -> list[tuple[str, int, int]] | None:
    reqs = [cls.requests for cls in classes]
    if len(members) <= MAX_NODES:
        groups = [Group(i, None, need[i]) for i in range(len(classes))]
        result = search(reqs, groups, {}, need.total(), members)
        if result.exact:
            return result.quorum.assignment if result.quorum is not None else None
    return first_fit(reqs, [need[i] for i in range(len(classes))], members)


def _apply(
    session: CycleSession, pods: list[PodRecord], classes: list[SchedulingClass], assignment: list[tuple[str, int, int]]
) -> Placed:
    queues: dict[int, list[PodRecord]] = {}
    for pod in pods:
        queues.setdefault(pod.sclass.id, []).append(pod)
    placed: Placed = []
    for node, c, count in assignment:
        cls = classes[c]
        take, queues[cls.id] = queues[cls.id][:count], queues[cls.id][count:]
        session.workspace.place(node, cls.requests, count, cls.host_ports, cls=cls)
        placed.extend((pod, node) for pod in take)
    return placed
