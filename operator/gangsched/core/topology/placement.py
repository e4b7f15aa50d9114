"""Topology-aware placement of a whole gang on a TopologyTree (pure; the order of preference and the result are
described in the package docstring, core/topology/__init__.py).

Contract: `place(tree, capacity, *, count, group_size, highest_tier_allowed, hard) -> TopologyPlacement |
TopologyMiss`; `place_network(tree, capacity, count, network)` the same with a gang's networkTopology
(core/values/gangspec.py `NetworkTopology`: its group size, highest tier allowed, hard or soft). Capacities are
aggregated per level once (O(nodes + domains * tiers^2)); the choice is core/topology/ladder.py's walk with these
slot counts as the fit of a domain; the layout then descends from the chosen domain to the nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from gangsched.core.topology.apportion import NEVER_FITS, apportion
from gangsched.core.topology.ladder import climb
from gangsched.core.topology.tree import TopologyTree
from gangsched.core.values.errors import InvalidField

GroupSlots = tuple[list[list[int]], list[list[bool]]]


@dataclass(frozen=True)
class TopologyPlacement:
    nodes: list[str]
    whole_tier: int
    group_tier: int


@dataclass(frozen=True)
class TopologyMiss:
    reason: str
    best_whole_tier: int | None


def _check_positive(value: object, field: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidField(field, value, "must be an integer >= 1")


def place(
    tree: TopologyTree,
    capacity: Mapping[str, int],
    *,
    count: int,
    group_size: int,
    highest_tier_allowed: int | None,
    hard: bool,
) -> TopologyPlacement | TopologyMiss:
    """Place `count` gang members on the tree; see the package docstring for the order of preference."""
    _check_positive(count, "count")
    _check_positive(group_size, "networkTopology.groupSize")
    if highest_tier_allowed is not None:
        _check_positive(highest_tier_allowed, "networkTopology.highestTierAllowed")
    placer = _Placer(tree, capacity, count=count, group_size=group_size)
    return placer.run(highest_tier_allowed=highest_tier_allowed, hard=hard)


class Network(Protocol):
    """What placement reads of a gang's networkTopology (core/values/gangspec.py `NetworkTopology`)."""

    @property
    def mode(self) -> str: ...
    @property
    def highest_tier_allowed(self) -> int | None: ...
    @property
    def group_size(self) -> int: ...


def place_network(
    tree: TopologyTree, capacity: Mapping[str, int], count: int, network: Network
) -> TopologyPlacement | TopologyMiss:
    """`place` with the gang's networkTopology."""
    return place(
        tree,
        capacity,
        count=count,
        group_size=network.group_size,
        highest_tier_allowed=network.highest_tier_allowed,
        hard=network.mode == "hard",
    )


def _capacity_by_level(tree: TopologyTree, capacity: Mapping[str, int]) -> list[list[int]]:
    """capacity[level][domain]: members each node (level 0) and each domain above can take. Level 1 is summed from
    the nodes with capacity only (not by walking every node of the tree)."""
    node_capacity = [0] * len(tree.node_names)
    first = [0] * len(tree.level_names[1])
    node_index, parent = tree.node_index, tree.parent_at[0]
    for name, amount in capacity.items():
        index = node_index.get(name)
        if index is None:
            continue
        if type(amount) is not int or amount < 0:  # (a bool is an int, but not of type int)
            raise InvalidField(f"capacity[{name}]", amount, "must be an integer >= 0 (members the node can take)")
        if amount:
            node_capacity[index] = amount
            first[parent[index]] += amount
    levels = [node_capacity, first]
    for level in range(2, tree.tiers + 2):
        totals = [0] * len(tree.level_names[level])
        parent = tree.parent_at[level - 1]
        for child, amount in enumerate(levels[level - 1]):
            if amount:
                totals[parent[child]] += amount
        levels.append(totals)
    return levels


class _Placer:
    """One placement decision: capacities aggregated per level, the ladder walked with them as its DomainFit
    (core/topology/ladder.py), then the rank layout in the chosen domain."""

    def __init__(self, tree: TopologyTree, capacity: Mapping[str, int], *, count: int, group_size: int) -> None:
        self.tree = tree
        self.count = count
        self.group_size = group_size
        self.full_groups, self.short_group = divmod(count, group_size)  # short_group: members of a last, short group
        self.top = tree.tiers + 1  # the level of the whole cluster
        self.capacity = _capacity_by_level(tree, capacity)
        self._group_slots: dict[int, GroupSlots] = {}

    def group_slots(self, group_tier: int) -> GroupSlots:
        """(slots, short_fits): slots[level][domain] is how many whole DP groups the domain holds with each group
        inside one domain of `group_tier`; short_fits[level][domain] whether the short last group also fits beside
        that many in one of them (see apportion.py)."""
        cached = self._group_slots.get(group_tier)
        if cached is None:
            cached = self._count_group_slots(group_tier)
            self._group_slots[group_tier] = cached
        return cached

    def _count_group_slots(self, group_tier: int) -> GroupSlots:
        size, short = self.group_size, self.short_group
        slots: list[list[int]] = [[] for _ in range(group_tier)]
        short_fits: list[list[bool]] = [[] for _ in range(group_tier)]
        slots.append([c // size for c in self.capacity[group_tier]])
        short_fits.append([short > 0 and c % size >= short for c in self.capacity[group_tier]])
        for level in range(group_tier + 1, self.top + 1):
            level_slots = [0] * len(self.capacity[level])
            level_fits = [False] * len(self.capacity[level])
            parent = self.tree.parent_at[level - 1]
            for child, (child_slots, child_fits) in enumerate(
                zip(slots[level - 1], short_fits[level - 1], strict=True)
            ):
                level_slots[parent[child]] += child_slots
                if child_fits:
                    level_fits[parent[child]] = True
            slots.append(level_slots)
            short_fits.append(level_fits)
        return slots, short_fits

    def _slots_needed(self, short_fits_beside: bool) -> int:
        """Whole-group slots a domain needs for the gang: the full groups, plus one for a short last group unless
        some domain of the group tier has room for it beside its whole groups (capacity mod group_size >= short)."""
        return self.full_groups + (1 if self.short_group and not short_fits_beside else 0)

    def run(self, *, highest_tier_allowed: int | None, hard: bool) -> TopologyPlacement | TopologyMiss:
        grouping = self.group_size > 1
        rung = climb(self, top=self.top, highest_tier_allowed=highest_tier_allowed, hard=hard, grouping=grouping)
        return rung.found if rung is not None else self._miss(highest_tier_allowed)

    # The ladder's DomainFit (core/topology/ladder.py): slot counts aggregated per domain decide the fit exactly.
    def candidates(self, whole_tier: int, group_tier: int) -> list[int]:
        """The tier's domains that hold the gang (every DP group inside one tier-`group_tier` domain below)."""
        here = self.capacity[whole_tier]
        if max(here, default=0) < self.count:
            return []
        if group_tier < whole_tier:
            return self._grouped_candidates(whole_tier, group_tier)
        return [d for d in range(len(here)) if here[d] >= self.count]

    def tightness(self, whole_tier: int, domain: int) -> tuple[int, ...]:
        """Least capacity left over; ties: the tighter ancestors, then natural order."""
        capacity, parent_at, top = self.capacity, self.tree.parent_at, self.top
        out = [capacity[whole_tier][domain]]
        index, level = domain, whole_tier
        while level < top:
            index = parent_at[level][index]
            level += 1
            out.append(capacity[level][index])
        out.append(domain)
        return tuple(out)

    def fit(self, whole_tier: int, group_tier: int, domain: int) -> TopologyPlacement:
        """A candidate always fits: the rank layout inside it."""
        return self._finish(whole_tier, group_tier, domain, group_tier=group_tier if self.group_size > 1 else 0)

    def _grouped_candidates(self, whole_tier: int, group_tier: int) -> list[int]:
        slots, short_fits = self.group_slots(group_tier)
        here, fits_here = slots[whole_tier], short_fits[whole_tier]
        return [d for d in range(len(here)) if here[d] >= self._slots_needed(fits_here[d])]

    def _miss(self, highest: int | None) -> TopologyMiss:
        count, capacity, top = self.count, self.capacity, self.top
        best = next((tier for tier in range(1, top + 1) if max(capacity[tier], default=0) >= count), None)
        if best is None:
            return TopologyMiss(
                reason=f"not enough capacity in the topology: {capacity[top][0]} member slot(s) free on"
                f" {len(self.tree.node_names)} node(s), the gang needs {count}",
                best_whole_tier=None,
            )
        where = "the whole cluster" if best == top else f"a tier-{best} domain"
        return TopologyMiss(
            reason=f"hard network topology: no domain of tier <= {highest} can hold the gang's {count} member(s);"
            f" the best tier available is {best} ({where})",
            best_whole_tier=best,
        )

    def _finish(self, whole_tier: int, group_level: int, domain: int, *, group_tier: int) -> TopologyPlacement:
        chunks = [self.group_size] * self.full_groups + ([self.short_group] if self.short_group else [])
        out: list[int] = []
        self._layout(whole_tier, domain, chunks, group_level if self.group_size > 1 else whole_tier, out)
        names = self.tree.node_names
        return TopologyPlacement(nodes=[names[i] for i in out], whole_tier=whole_tier, group_tier=group_tier)

    def _layout(self, level: int, domain: int, chunks: list[int], group_level: int, out: list[int]) -> None:
        """Append the nodes of `chunks` (DP groups or pieces of them, rank order) placed inside `domain` of `level`;
        from `group_level` up, each chunk must stay inside one child."""
        if level == 0:
            out.extend([domain] * sum(chunks))
            return
        children = self.tree.children_at[level][domain]
        if level - 1 >= group_level:
            self._layout_whole_groups(level, children, chunks, group_level, out)
            return
        child_capacity = self.capacity[level - 1]
        total = sum(chunks)
        fitting = [c for c in children if child_capacity[c] >= total]
        if fitting:
            best = min(fitting, key=lambda c: (child_capacity[c], c))
            self._layout(level - 1, best, chunks, group_level, out)
            return
        if (
            self.group_size > 1
            and self._uniform(chunks)
            and self._layout_groups_where_they_fit(level, children, chunks, group_level, out)
        ):
            return
        self._layout_by_members(level, children, chunks, group_level, out)

    def _layout_whole_groups(
        self, level: int, children: list[int], chunks: list[int], group_level: int, out: list[int]
    ) -> None:
        slots, short_fits = self.group_slots(group_level)
        plan = apportion(
            children,
            slots[level - 1],
            short_fits[level - 1],
            self.capacity[level - 1],
            items=len(chunks),
            short_last=chunks[-1] < self.group_size,
            item_pods=self.group_size,
            last_pods=chunks[-1],
        )
        assert plan is not None, "aggregated slots promised a fit"
        self._descend(level, plan, chunks, group_level, out)

    def _layout_groups_where_they_fit(
        self, level: int, children: list[int], chunks: list[int], group_level: int, out: list[int]
    ) -> bool:
        """Keep DP groups whole in the children where they fit; False when they cannot all be kept whole."""
        size = self.group_size
        child_capacity = self.capacity[level - 1]
        short = chunks[-1] if chunks[-1] < size else 0
        slots = {c: child_capacity[c] // size for c in children}
        short_fits = {c: short > 0 and child_capacity[c] % size >= short for c in children}
        plan = apportion(
            children,
            slots,
            short_fits,
            child_capacity,
            items=len(chunks),
            short_last=short > 0,
            item_pods=size,
            last_pods=chunks[-1],
        )
        if plan is None:
            return False
        self._descend(level, plan, chunks, group_level, out)
        return True

    def _layout_by_members(
        self, level: int, children: list[int], chunks: list[int], group_level: int, out: list[int]
    ) -> None:
        """Split by members: as few children as possible, consecutive ranks together."""
        child_capacity = self.capacity[level - 1]
        plan = apportion(
            children,
            child_capacity,
            NEVER_FITS,
            child_capacity,
            items=sum(chunks),
            short_last=False,
            item_pods=1,
            last_pods=1,
        )
        assert plan is not None, "aggregated capacity promised a fit"
        position, index = 0, 0
        for child, members in plan:
            piece: list[int] = []
            while members:
                take = min(members, chunks[index] - position)
                piece.append(take)
                members -= take
                position += take
                if position == chunks[index]:
                    index, position = index + 1, 0
            self._layout(level - 1, child, piece, group_level, out)

    def _uniform(self, chunks: list[int]) -> bool:
        size = self.group_size
        return all(c == size for c in chunks[:-1]) and chunks[-1] <= size

    def _descend(
        self, level: int, plan: list[tuple[int, int]], chunks: list[int], group_level: int, out: list[int]
    ) -> None:
        start = 0
        for child, items in plan:
            self._layout(level - 1, child, chunks[start : start + items], group_level, out)
            start += items
