"""Topology for gangs of several scheduling classes (MPI launcher + workers, Ray head + workers): the same
(whole-gang tier, DP-group tier) ladder and rank layout as single-class gangs (core/topology).

Contract: `place_mixed_topology(session, tree, spec, pods, counted) -> (placed, shortfalls, tier)` takes capacity in
the workspace for every pod placed. Tiers 1 .. tree.tiers + 1, domains tightest first; the first domain where every
pod fits (by core/placement/quorum.py) wins and its tier is reported. DP groups (`groupSize` consecutive ranks) are
assigned greedily to sub-domains of each group tier below, lowest first. Hard mode never goes above
`highestTierAllowed` (nothing placed, shortfalls name the tier); soft mode with no domain falls back to
core/placement/quorum_placement.py (tier None). The greedy may miss a grouping, never makes an invalid placement.
Ranks take the chosen nodes in natural name order, group by group. More: docs/modules.md#coreplacementtopology_mixedpy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from gangsched.core.placement.pickers import Outcome, Placed
from gangsched.core.placement.quorum import MAX_NODES, Candidate, Group, first_fit, search
from gangsched.core.placement.quorum_placement import class_order, fitting_candidates, place_quorum
from gangsched.core.records.records import PodRecord, SchedulingClass, pods_by_class
from gangsched.core.topology import TopologyTree, natural_key
from gangsched.core.transaction.messages import Shortfall
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.gangspec import GangSpec, TopologyMode


def place_mixed_topology(
    session: CycleSession, tree: TopologyTree, spec: GangSpec, pods: list[PodRecord], counted: Counter[str | None]
) -> Outcome:
    network = spec.network_topology
    assert network is not None
    classes = class_order(pods)
    index = {cls.id: i for i, cls in enumerate(classes)}
    need = Counter(index[pod.sclass.id] for pod in pods)
    nodes = fitting_candidates(session, classes, tree)  # the tree's nodes, in natural name order
    highest = network.highest_tier_allowed if network.mode == TopologyMode.HARD else None
    size = network.group_size
    chunks = [Counter(index[p.sclass.id] for p in pods[i : i + size]) for i in range(0, len(pods), size)]
    for tier in range(1, tree.tiers + 2):
        if highest is not None and tier > highest:
            break
        domains = _domains(tree, nodes, tier, classes[0])
        for group_tier in range(1, tier if size > 1 and len(chunks) > 1 else 1):
            for members in domains:
                grouped = _fit_groups(tree, classes, chunks, members, group_tier)
                if grouped is not None:
                    return _apply(session, pods, classes, grouped), [], tier
        for members in domains:
            assignment = _fit(classes, need, members)
            if assignment is not None:
                return _apply(session, pods, classes, assignment), [], tier
    if highest is None:
        return place_quorum(session, spec, pods, counted)
    reason = f"topology: hard network topology: no domain of tier <= {highest} can hold the gang's {len(pods)} members"
    return [], [Shortfall(cls, need[i], 0, reason) for i, cls in enumerate(classes)], None


def _domains(tree: TopologyTree, nodes: list[Candidate], tier: int, largest: SchedulingClass) -> list[list[Candidate]]:
    """The candidate nodes of each domain of a tier (tiers + 1: the whole cluster), tightest domain first."""
    by_domain: dict[int, list[Candidate]] = {}
    for cand in nodes:
        by_domain.setdefault(tree.domain_index(tree.node_index[cand.name], tier), []).append(cand)

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


def _fit_groups(
    tree: TopologyTree,
    classes: list[SchedulingClass],
    chunks: list[Counter[int]],
    members: list[Candidate],
    group_tier: int,
) -> list[tuple[str, int, int]] | None:
    """Every DP group (`chunks`, rank order) inside one tier-`group_tier` sub-domain of `members` (greedy, see the
    module docstring): the assignment, group after group, or None."""
    subs: dict[int, list[Candidate]] = {}
    for cand in members:
        subs.setdefault(tree.domain_index(tree.node_index[cand.name], group_tier), []).append(cand)
    names = tree.level_names[group_tier]
    largest = classes[0].requests
    out: list[tuple[str, int, int]] = []
    current: int | None = None
    for chunk in chunks:
        others = sorted(
            (d for d in subs if d != current),
            key=lambda d: (sum(_count(largest, c.free) for c in subs[d]), natural_key(names[d])),
        )
        for d in ([current] if current is not None else []) + others:
            found = _fit(classes, chunk, subs[d])
            if found is not None:
                subs[d] = _taken(classes, subs[d], found)
                out.extend(found)
                current = d
                break
        else:
            return None
    return out


def _taken(
    classes: list[SchedulingClass], members: list[Candidate], assignment: list[tuple[str, int, int]]
) -> list[Candidate]:
    """The candidates with what `assignment` takes removed from their free resources."""
    used: dict[str, Counter[str]] = {}
    for node, c, count in assignment:
        for r, q in classes[c].requests.items():
            used.setdefault(node, Counter())[r] += q * count
    out = []
    for cand in members:
        taken = used.get(cand.name)
        free = {r: v - taken.get(r, 0) for r, v in cand.free.items()} if taken else cand.free
        out.append(Candidate(cand.name, free, cand.allowed))
    return out


def _apply(
    session: CycleSession, pods: list[PodRecord], classes: list[SchedulingClass], assignment: list[tuple[str, int, int]]
) -> Placed:
    queues = pods_by_class(pods)
    placed: Placed = []
    for node, c, count in assignment:
        cls = classes[c]
        take, queues[cls.id] = queues[cls.id][:count], queues[cls.id][count:]
        session.workspace.place(node, cls.requests, count, cls.host_ports, cls=cls)
        placed.extend((pod, node) for pod in take)
    return placed
