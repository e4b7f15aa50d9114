"""Topology for gangs of several scheduling classes (MPI launcher + workers, Ray head + workers): the same
(whole-gang tier, DP-group tier) ladder as single-class gangs, core/topology/ladder.py `climb`, with this fit.

Contract: `place_mixed_topology(session, tree, spec, pods, counted) -> (placed, shortfalls, tier)` takes capacity in
the workspace for every pod placed. Tiers 1 .. tree.tiers + 1, domains tightest first (room left for the largest
class, then natural name); the first domain where every pod fits (by core/placement/quorum.py) wins and its tier is
reported. DP groups (`groupSize` consecutive ranks) are assigned greedily to sub-domains of each group tier below,
lowest first. Hard mode never goes above `highestTierAllowed` (nothing placed, shortfalls name the tier); soft mode
with no domain falls back to core/placement/quorum_placement.py (tier None). The greedy may miss a grouping, never
makes an invalid placement. Ranks take the chosen nodes in natural name order, group by group.
More: docs/modules.md#coreplacementtopology_mixedpy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from gangsched.core.placement.pickers import Outcome, Placed
from gangsched.core.placement.quorum import MAX_NODES, Candidate, Group, first_fit, search
from gangsched.core.placement.quorum_placement import class_order, fitting_candidates, place_quorum
from gangsched.core.records.records import PodRecord, SchedulingClass, pods_by_class
from gangsched.core.topology import TopologyTree, natural_key
from gangsched.core.topology.ladder import climb
from gangsched.core.transaction.messages import Shortfall
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.gangspec import GangSpec, TopologyMode

NaturalKey = tuple[tuple[int, int | str], ...]  # core/values/naming.py natural_key


def place_mixed_topology(
    session: CycleSession, tree: TopologyTree, spec: GangSpec, pods: list[PodRecord], counted: Counter[str | None]
) -> Outcome:
    network = spec.network_topology
    assert network is not None
    fit = _QuorumFit(session, tree, pods, network.group_size)
    highest = network.highest_tier_allowed if network.mode == TopologyMode.HARD else None
    rung = climb(fit, top=tree.tiers + 1, highest_tier_allowed=highest, hard=highest is not None, grouping=fit.grouping)
    if rung is not None:
        return _apply(session, pods, fit.classes, rung.found), [], rung.whole_tier
    if highest is None:
        return place_quorum(session, spec, pods, counted)
    reason = f"topology: hard network topology: no domain of tier <= {highest} can hold the gang's {len(pods)} members"
    return [], [Shortfall(cls, fit.need[i], 0, reason) for i, cls in enumerate(fit.classes)], None


class _QuorumFit:
    """The ladder's DomainFit (core/topology/ladder.py) for several classes: a domain's candidate nodes, tightest by
    the room left for the largest class, and whether every pod (or every DP group in a sub-domain) fits by quorum.py."""

    def __init__(self, session: CycleSession, tree: TopologyTree, pods: list[PodRecord], size: int) -> None:
        self.tree = tree
        self.classes = class_order(pods)
        index = {cls.id: i for i, cls in enumerate(self.classes)}
        self.need = Counter(index[pod.sclass.id] for pod in pods)
        self.chunks = [Counter(index[p.sclass.id] for p in pods[i : i + size]) for i in range(0, len(pods), size)]
        self.grouping = size > 1 and len(self.chunks) > 1
        self.nodes = fitting_candidates(session, self.classes, tree)  # the tree's nodes, in natural name order
        self._domains: dict[int, dict[int, list[Candidate]]] = {}
        self._tightness: dict[tuple[int, int], tuple[int, NaturalKey]] = {}

    def domains(self, tier: int) -> dict[int, list[Candidate]]:
        """The candidate nodes of each domain of a tier that holds some (tiers + 1: the whole cluster)."""
        by_domain = self._domains.get(tier)
        if by_domain is None:
            by_domain = {}
            for cand in self.nodes:
                by_domain.setdefault(self.tree.domain_index(self.tree.node_index[cand.name], tier), []).append(cand)
            self._domains[tier] = by_domain
        return by_domain

    def candidates(self, whole_tier: int, group_tier: int) -> list[int]:
        return list(self.domains(whole_tier))

    def tightness(self, whole_tier: int, domain: int) -> tuple[int, NaturalKey]:
        """Least room left for the largest class, then natural name order."""
        key = self._tightness.get((whole_tier, domain))
        if key is None:
            room = _room(self.classes[0].requests, self.domains(whole_tier)[domain])
            key = (room, natural_key(self.tree.level_names[whole_tier][domain]))
            self._tightness[(whole_tier, domain)] = key
        return key

    def fit(self, whole_tier: int, group_tier: int, domain: int) -> list[tuple[str, int, int]] | None:
        members = self.domains(whole_tier)[domain]
        if group_tier < whole_tier:
            return _fit_groups(self.tree, self.classes, self.chunks, members, group_tier)
        return _fit(self.classes, self.need, members)


def _room(requests: Mapping[str, int], members: list[Candidate]) -> int:
    return sum(_count(requests, c.free) for c in members)


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
            key=lambda d: (_room(largest, subs[d]), natural_key(names[d])),
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
