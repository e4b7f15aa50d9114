"""Network topology: the tree of domains and topology-aware placement of a whole gang (seed 004, issue 5).

Contract (pure: no I/O, no clock, no randomness; build a tree once per topology change, query it often):

- `Domain(layer, name, parents, children)`: one entry of the seed's ConfigMap format. Layer 1 is the lowest
  domain (ToR/unit); its children are node names. Children of higher layers are domains of lower layers.
- `TopologyTree.from_domains(domains, *, source="domains") -> TopologyTree` validates and raises
  `InvalidField` (field named `{source}[i].<field>`) on: empty names, layers that are not integers >= 1,
  duplicate domain names, a parent or (above layer 1) a child that is not a domain, cycles, layer numbers
  that do not increase upwards, a node or domain under two parents at one tier (or under two parents that
  are not on one chain). A parent/child link may be declared on either side (or both).
  `.tiers` (the top layer number), `.nodes()`, `.node_path(node)` (the node's domain names for tiers
  1..tiers, or None for a node not in the tree), `.domains` (the normalized entries: one parent, the union
  of declared children), `.domains_at(tier)`.
  A domain whose parent skips a layer, or a root below the top layer, stands in for itself at the missing
  tiers: a node's domain at tier t is its highest ancestor of layer <= t.
- `place(tree, capacity, *, count, group_size, highest_tier_allowed, hard) -> TopologyPlacement |
  TopologyMiss`. `capacity[node]` is how many more gang members a node can take; nodes not in the tree are
  ignored. Tiers: 1..tree.tiers, and `tree.tiers + 1` means "the whole cluster" (several top domains).
  A DP group is `group_size` consecutive ranks (the last group may be smaller when group_size does not
  divide count). The result is the lowest pair (whole_tier, group_tier) in lexicographic order that fits:
  all members within one domain of tier `whole_tier`, and every DP group within one domain of tier
  `group_tier` (group_tier <= whole_tier): (1,1), (2,1), (2,2), (3,1), (3,2), (3,3), ... which on a
  three-tier tree are seed 004's strategies 1-6. `group_size == 1` means no grouping: group_tier is 0.
  When count <= group_size the only group is the gang: group_tier == whole_tier.
  Within the chosen level the domain with the least capacity left over wins (best fit; ties: the tighter
  parent, then natural name order); inside it, members go to as few sub-domains as possible, keeping DP
  groups whole in the lowest domains that can hold them, the last one chosen by best fit.
  `TopologyPlacement.nodes[i]` is the node of rank i (a node may repeat when it takes several members);
  DP group k is ranks k*group_size .. (k+1)*group_size-1 and consecutive groups are adjacent.
  Hard mode never places with whole_tier > highest_tier_allowed: it returns `TopologyMiss` whose reason
  names the best tier available; soft mode ignores highest_tier_allowed (best effort). Not enough capacity
  at all: `TopologyMiss(best_whole_tier=None)`.
  Cost: O(nodes + domains * tiers^2) to aggregate capacity per domain, never nodes x pods.
- `natural_key(name)`: the sort key of natural order ("node2" < "node10").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from gangsched.core.errors import InvalidField
from gangsched.core.naming import natural_key

__all__ = [
    "Domain",
    "TopologyMiss",
    "TopologyPlacement",
    "TopologyTree",
    "natural_key",
    "place",
]


@dataclass(frozen=True)
class Domain:
    layer: int
    name: str
    parents: tuple[str, ...] = ()
    children: tuple[str, ...] = ()


@dataclass(frozen=True)
class TopologyPlacement:
    nodes: list[str]
    whole_tier: int
    group_tier: int


@dataclass(frozen=True)
class TopologyMiss:
    reason: str
    best_whole_tier: int | None


class TopologyTree:
    """An immutable, validated topology, with the per-tier level structure placement works on.

    Levels: level 0 is the nodes, level t (1..tiers) the tier-t domains, level tiers+1 the whole cluster
    (one domain). Indexes at every level follow natural name order.
    """

    __slots__ = ("tiers", "domains", "_node_names", "_node_index", "_level_names", "_parent", "_children")

    tiers: int
    domains: tuple[Domain, ...]
    _node_names: list[str]
    _node_index: dict[str, int]
    _level_names: list[list[str]]  # [t][i] -> name, t in 0..tiers+1
    _parent: list[list[int]]  # [t][i] -> index at level t+1, t in 0..tiers
    _children: list[list[list[int]]]  # [t][i] -> indexes at level t-1, t in 1..tiers+1 ([0] unused)

    def __init__(self) -> None:  # use from_domains
        self.tiers = 0
        self.domains = ()
        self._node_names = []
        self._node_index = {}
        self._level_names = [[], ["(cluster)"]]
        self._parent = [[]]
        self._children = [[], [[]]]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TopologyTree) and self.domains == other.domains

    def __hash__(self) -> int:
        return hash(self.domains)

    def __repr__(self) -> str:
        return f"TopologyTree(tiers={self.tiers}, domains={len(self.domains)}, nodes={len(self._node_names)})"

    # ----------------------------------------------------------------------------------------- queries
    def nodes(self) -> frozenset[str]:
        return frozenset(self._node_names)

    def node_path(self, node: str) -> tuple[str, ...] | None:
        """The node's domain names from tier 1 up to tier `tiers`; None for a node not in the tree."""
        i = self._node_index.get(node)
        if i is None:
            return None
        out = []
        for t in range(self.tiers):
            i = self._parent[t][i]
            out.append(self._level_names[t + 1][i])
        return tuple(out)

    def domains_at(self, tier: int) -> tuple[str, ...]:
        """Names of the domains that hold nodes at a tier (1..tiers), in natural order."""
        if not 1 <= tier <= self.tiers:
            raise InvalidField("tier", tier, f"must be between 1 and {self.tiers}")
        return tuple(self._level_names[tier])

    # ------------------------------------------------------------------------------------ construction
    @classmethod
    def from_domains(cls, domains: Sequence[Domain], *, source: str = "domains") -> TopologyTree:
        by_name: dict[str, int] = {}
        for i, d in enumerate(domains):
            _check_entry(d, f"{source}[{i}]")
            if d.name in by_name:
                raise InvalidField(
                    f"{source}[{i}].name", d.name, f"must be unique: already the name of {source}[{by_name[d.name]}]"
                )
            by_name[d.name] = i

        # links child -> {parent: where declared}, from both sides
        up: dict[str, dict[str, str]] = {}
        node_up: dict[str, dict[str, str]] = {}
        for i, d in enumerate(domains):
            for p in d.parents:
                if p not in by_name:
                    raise InvalidField(
                        f"{source}[{i}].parents", p, f"unknown parent of {d.name!r}: must name a domain of the topology"
                    )
                up.setdefault(d.name, {}).setdefault(p, f"{source}[{i}].parents")
            for c in d.children:
                if c in by_name:
                    up.setdefault(c, {}).setdefault(d.name, f"{source}[{i}].children")
                elif d.layer == 1:
                    node_up.setdefault(c, {}).setdefault(d.name, f"{source}[{i}].children")
                else:
                    raise InvalidField(
                        f"{source}[{i}].children",
                        c,
                        f"unknown child of {d.name!r} (layer {d.layer}): above layer 1 children must name domains"
                        " (node names belong to layer-1 domains)",
                    )

        _check_cycles(up)

        layer = {d.name: d.layer for d in domains}
        for child, parents in sorted(up.items()):
            for p, where in parents.items():
                if layer[p] <= layer[child]:
                    raise InvalidField(
                        where,
                        p,
                        f"layer numbers must increase upwards: parent {p!r} has layer {layer[p]} but its child"
                        f" {child!r} has layer {layer[child]}",
                    )

        parent_of: dict[str, str] = {}
        for child, parents in up.items():
            parent_of[child] = _one_parent(child, parents, layer, up)
        node_domain: dict[str, str] = {}
        for node, parents in node_up.items():
            if len(parents) > 1:
                (p1, w1), (p2, w2) = sorted(parents.items())[:2]
                raise InvalidField(
                    w2,
                    node,
                    f"a node may be under one parent per tier: {node!r} is under both {p1!r} and {p2!r} at layer 1",
                )
            node_domain[node] = next(iter(parents))

        children_of: dict[str, list[str]] = {d.name: [] for d in domains}
        for child, p in parent_of.items():
            children_of[p].append(child)
        for node, p in node_domain.items():
            children_of[p].append(node)
        normalized = tuple(
            Domain(
                layer=d.layer,
                name=d.name,
                parents=(parent_of[d.name],) if d.name in parent_of else (),
                children=tuple(sorted(children_of[d.name], key=natural_key)),
            )
            for d in sorted(domains, key=lambda d: (-d.layer, natural_key(d.name)))
        )
        tree = cls()
        tree._build(normalized, parent_of, node_domain, layer)
        return tree

    def _build(
        self,
        domains: tuple[Domain, ...],
        parent_of: Mapping[str, str],
        node_domain: Mapping[str, str],
        layer: Mapping[str, int],
    ) -> None:
        tiers = max((d.layer for d in domains), default=0)
        self.tiers = tiers
        self.domains = domains
        nodes = sorted(node_domain, key=natural_key)
        self._node_names = nodes
        self._node_index = {n: i for i, n in enumerate(nodes)}

        # effective domain per tier of every tier-1 domain holding nodes (chains are short)
        effective: dict[str, list[str]] = {}
        for dom in set(node_domain.values()):
            chain = [dom]
            while chain[-1] in parent_of:
                chain.append(parent_of[chain[-1]])
            per_tier = []
            k = 0
            for t in range(1, tiers + 1):
                while k + 1 < len(chain) and layer[chain[k + 1]] <= t:
                    k += 1
                per_tier.append(chain[k])
            effective[dom] = per_tier

        level_names: list[list[str]] = [nodes]
        for t in range(1, tiers + 1):
            level_names.append(sorted({eff[t - 1] for eff in effective.values()}, key=natural_key))
        level_names.append(["(cluster)"])
        index = [{n: i for i, n in enumerate(names)} for names in level_names]

        parent: list[list[int]] = [[0] * len(names) for names in level_names[: tiers + 1]]
        for i, n in enumerate(nodes):
            if tiers:
                parent[0][i] = index[1][effective[node_domain[n]][0]]
        for eff in effective.values():
            for t in range(1, tiers):
                parent[t][index[t][eff[t - 1]]] = index[t + 1][eff[t]]
        children: list[list[list[int]]] = [[]]
        for t in range(1, tiers + 2):
            kids: list[list[int]] = [[] for _ in level_names[t]]
            for i, p in enumerate(parent[t - 1]):
                kids[p].append(i)
            children.append(kids)
        self._level_names = level_names
        self._parent = parent
        self._children = children


def _check_entry(d: Domain, where: str) -> None:
    if not isinstance(d.name, str) or not d.name:
        raise InvalidField(f"{where}.name", d.name, "must be a non-empty string")
    if isinstance(d.layer, bool) or not isinstance(d.layer, int) or d.layer < 1:
        raise InvalidField(f"{where}.layer", d.layer, "must be an integer >= 1 (1 is the lowest tier)")
    for fld, names in (("parents", d.parents), ("children", d.children)):
        for n in names:
            if not isinstance(n, str) or not n:
                raise InvalidField(f"{where}.{fld}", n, "must be a list of non-empty strings")
            if n == d.name:
                raise InvalidField(f"{where}.{fld}", n, f"cycle: {d.name!r} lists itself")


def _check_cycles(up: Mapping[str, Mapping[str, str]]) -> None:
    """Raise on a cycle of parent links, naming it (iterative DFS, white/grey/black)."""
    state: dict[str, int] = {}
    for start in sorted(up):
        if state.get(start):
            continue
        stack: list[tuple[str, list[str]]] = [(start, sorted(up.get(start, {})))]
        path = [start]
        state[start] = 1
        while stack:
            name, todo = stack[-1]
            if not todo:
                stack.pop()
                path.pop()
                state[name] = 2
                continue
            nxt = todo.pop()
            s = state.get(nxt, 0)
            if s == 1:
                cycle = path[path.index(nxt) :] + [nxt]
                raise InvalidField(up[name][nxt], nxt, "cycle in the topology: " + " -> ".join(repr(c) for c in cycle))
            if s == 0:
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, sorted(up.get(nxt, {}))))


def _one_parent(
    child: str, parents: Mapping[str, str], layer: Mapping[str, int], up: Mapping[str, Mapping[str, str]]
) -> str:
    ordered = sorted(parents, key=lambda p: (layer[p], p))
    first = ordered[0]
    for other in ordered[1:]:
        if layer[other] == layer[first]:
            raise InvalidField(
                parents[other],
                other,
                f"a domain may be under one parent per tier: {child!r} is under both {first!r} and {other!r}"
                f" at layer {layer[first]}",
            )
        # a higher-layer parent is allowed only when it is also an ancestor through the lowest parent
        seen, cur = set(), first
        while cur not in seen:
            seen.add(cur)
            nxt = sorted(up.get(cur, {}), key=lambda p: (layer[p], p))
            if not nxt:
                break
            cur = nxt[0]
        if other not in seen:
            raise InvalidField(
                parents[other],
                other,
                f"{child!r} has parents {first!r} and {other!r} that are not on one chain: one parent per tier",
            )
    return first


# ---------------------------------------------------------------------------------------------- placement


def place(
    tree: TopologyTree,
    capacity: Mapping[str, int],
    *,
    count: int,
    group_size: int,
    highest_tier_allowed: int | None,
    hard: bool,
) -> TopologyPlacement | TopologyMiss:
    """Place `count` gang members on the tree; see the module docstring for the order of preference."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InvalidField("count", count, "must be an integer >= 1")
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise InvalidField("networkTopology.groupSize", group_size, "must be an integer >= 1")
    if highest_tier_allowed is not None and (
        isinstance(highest_tier_allowed, bool) or not isinstance(highest_tier_allowed, int) or highest_tier_allowed < 1
    ):
        raise InvalidField("networkTopology.highestTierAllowed", highest_tier_allowed, "must be an integer >= 1")
    return _Placer(tree, capacity, count=count, group_size=group_size).run(
        highest_tier_allowed=highest_tier_allowed, hard=hard
    )


class _Placer:
    """One placement decision: capacities aggregated per level, then the choice and the rank layout."""

    def __init__(self, tree: TopologyTree, capacity: Mapping[str, int], *, count: int, group_size: int) -> None:
        self.tree = tree
        self.count = count
        self.g = group_size
        self.full, self.r = divmod(count, group_size)
        self.top = tree.tiers + 1
        index = tree._node_index
        nodecap = [0] * len(tree._node_names)
        for name, c in capacity.items():
            i = index.get(name)
            if i is None:
                continue
            if isinstance(c, bool) or not isinstance(c, int) or c < 0:
                raise InvalidField(f"capacity[{name}]", c, "must be an integer >= 0 (members the node can take)")
            nodecap[i] = c
        cap = [nodecap]
        for t in range(1, self.top + 1):
            level = [0] * len(tree._level_names[t])
            parent = tree._parent[t - 1]
            for j, c in enumerate(cap[t - 1]):
                if c:
                    level[parent[j]] += c
            cap.append(level)
        self.cap = cap
        self._slots: dict[int, tuple[list[list[int]], list[list[bool]]]] = {}

    # slots[G][t][i]: how many whole DP groups domain i of level t holds with each group inside one tier-G
    # domain; bonus[G][t][i]: whether the short last group also fits beside that many (see _choose).
    def slots(self, G: int) -> tuple[list[list[int]], list[list[bool]]]:
        got = self._slots.get(G)
        if got is None:
            g, r = self.g, self.r
            S: list[list[int]] = [[] for _ in range(G)]
            B: list[list[bool]] = [[] for _ in range(G)]
            S.append([c // g for c in self.cap[G]])
            B.append([r > 0 and c % g >= r for c in self.cap[G]])
            for t in range(G + 1, self.top + 1):
                s = [0] * len(self.cap[t])
                b = [False] * len(self.cap[t])
                parent = self.tree._parent[t - 1]
                for j, (sj, bj) in enumerate(zip(S[t - 1], B[t - 1])):
                    p = parent[j]
                    s[p] += sj
                    if bj:
                        b[p] = True
                S.append(s)
                B.append(b)
            got = (S, B)
            self._slots[G] = got
        return got

    def _need(self, bonus: bool) -> int:
        """Whole-group slots a domain needs for the gang: the full groups, plus one for a short last group
        unless some tier-G domain has room for it beside its whole groups (capacity mod g >= r)."""
        return self.full + (1 if self.r and not bonus else 0)

    def run(self, *, highest_tier_allowed: int | None, hard: bool) -> TopologyPlacement | TopologyMiss:
        count, cap, top = self.count, self.cap, self.top
        limit = top
        if hard and highest_tier_allowed is not None:
            limit = min(highest_tier_allowed, top)
        grouping = self.g > 1
        for W in range(1, limit + 1):
            if max(cap[W], default=0) < count:
                continue
            if grouping:
                for G in range(1, W):
                    S, B = self.slots(G)
                    cands = [d for d in range(len(cap[W])) if S[W][d] >= self._need(B[W][d])]
                    if cands:
                        return self._finish(W, G, self._best_domain(W, cands), group_tier=G)
            cands = [d for d in range(len(cap[W])) if cap[W][d] >= count]
            return self._finish(W, W, self._best_domain(W, cands), group_tier=W if grouping else 0)
        return self._miss(highest_tier_allowed)

    def _miss(self, highest: int | None) -> TopologyMiss:
        count, cap, top = self.count, self.cap, self.top
        best = next((W for W in range(1, top + 1) if max(cap[W], default=0) >= count), None)
        if best is None:
            return TopologyMiss(
                reason=f"not enough capacity in the topology: {cap[top][0]} member slot(s) free on"
                f" {len(self.tree._node_names)} node(s), the gang needs {count}",
                best_whole_tier=None,
            )
        where = "the whole cluster" if best == top else f"a tier-{best} domain"
        return TopologyMiss(
            reason=f"hard network topology: no domain of tier <= {highest} can hold the gang's {count} member(s);"
            f" the best tier available is {best} ({where})",
            best_whole_tier=best,
        )

    def _best_domain(self, W: int, cands: list[int]) -> int:
        """Least capacity left over; ties: the tighter ancestors, then natural order."""
        cap, parent, top = self.cap, self.tree._parent, self.top

        def key(d: int) -> tuple[int, ...]:
            out = [cap[W][d]]
            i, t = d, W
            while t < top:
                i = parent[t][i]
                t += 1
                out.append(cap[t][i])
            out.append(d)
            return tuple(out)

        return min(cands, key=key)

    def _finish(self, W: int, G: int, d: int, *, group_tier: int) -> TopologyPlacement:
        chunks = [self.g] * self.full + ([self.r] if self.r else [])
        out: list[int] = []
        self._layout(W, d, chunks, G if self.g > 1 else W, out)
        names = self.tree._node_names
        return TopologyPlacement(nodes=[names[i] for i in out], whole_tier=W, group_tier=group_tier)

    def _uniform(self, chunks: list[int]) -> bool:
        g = self.g
        return all(c == g for c in chunks[:-1]) and chunks[-1] <= g

    def _layout(self, t: int, d: int, chunks: list[int], G: int, out: list[int]) -> None:
        """Append the nodes of `chunks` (rank order) placed inside domain d of level t."""
        if t == 0:
            out.extend([d] * sum(chunks))
            return
        kids = self.tree._children[t][d]
        kidcap = self.cap[t - 1]
        g = self.g
        if t - 1 >= G:  # each chunk is a DP group and must stay inside one child
            S, B = self.slots(G)
            partial = chunks[-1] < g
            plan = _choose(
                kids,
                S[t - 1],
                B[t - 1],
                kidcap,
                n_items=len(chunks),
                partial=partial,
                item_pods=g,
                last_pods=chunks[-1],
            )
            assert plan is not None, "aggregated slots promised a fit"
            self._descend(t, plan, chunks, G, out)
            return
        total = sum(chunks)
        fits = [c for c in kids if kidcap[c] >= total]
        if fits:
            self._layout(t - 1, min(fits, key=lambda c: (kidcap[c], c)), chunks, G, out)
            return
        if g > 1 and self._uniform(chunks):  # keep DP groups whole in the children where they fit
            r = chunks[-1] if chunks[-1] < g else 0
            slots = {c: kidcap[c] // g for c in kids}
            bonus = {c: r > 0 and kidcap[c] % g >= r for c in kids}
            plan = _choose(
                kids, slots, bonus, kidcap, n_items=len(chunks), partial=r > 0, item_pods=g, last_pods=chunks[-1]
            )
            if plan is not None:
                self._descend(t, plan, chunks, G, out)
                return
        # split by members: as few children as possible, consecutive ranks together
        plan = _choose(kids, kidcap, _NO_BONUS, kidcap, n_items=total, partial=False, item_pods=1, last_pods=1)
        assert plan is not None, "aggregated capacity promised a fit"
        pos, idx = 0, 0
        for child, n in plan:
            piece: list[int] = []
            while n:
                take = min(n, chunks[idx] - pos)
                piece.append(take)
                n -= take
                pos += take
                if pos == chunks[idx]:
                    idx, pos = idx + 1, 0
            self._layout(t - 1, child, piece, G, out)

    def _descend(self, t: int, plan: list[tuple[int, int]], chunks: list[int], G: int, out: list[int]) -> None:
        start = 0
        for child, n in plan:
            self._layout(t - 1, child, chunks[start : start + n], G, out)
            start += n


class _NoBonus:
    def __getitem__(self, _: int) -> bool:
        return False


_NO_BONUS: Final = _NoBonus()


def _choose(
    kids: list[int],
    slots: Sequence[int] | Mapping[int, int],
    bonus: Sequence[bool] | Mapping[int, bool] | _NoBonus,
    podcap: Sequence[int],
    *,
    n_items: int,
    partial: bool,
    item_pods: int,
    last_pods: int,
) -> list[tuple[int, int]] | None:
    """Spread n_items equal items (the last one short when `partial`) over as few children as possible.

    A child c takes up to slots[c] items, or slots[c] + 1 when it receives the short last item and
    bonus[c]. Largest children first; the child that completes the set is the best fit (least pods left
    over). Returns (child, items) in rank order (the child with the short item last), or None.
    """

    def cap_last(c: int) -> int:
        return slots[c] + (1 if partial and bonus[c] else 0)

    def pods(c: int, n: int, last: bool) -> int:
        if last and partial:
            return podcap[c] - (n - 1) * item_pods - last_pods
        return podcap[c] - n * item_pods

    order = sorted(kids, key=lambda c: (-slots[c], c))
    k = len(order)
    suffix_best = [0] * (k + 1)
    for i in range(k - 1, -1, -1):
        suffix_best[i] = max(suffix_best[i + 1], cap_last(order[i]))
    taken = 0
    for m in range(k):
        remaining = n_items - taken
        if suffix_best[m] >= remaining:
            rest = [c for c in order[m:] if cap_last(c) >= remaining]
            last = min(rest, key=lambda c: (pods(c, remaining, True), c))
            head = [(c, slots[c]) for c in order[:m]]
            return _in_rank_order(head, (last, remaining), partial)
        taken += slots[order[m]]
    if not partial:
        return None
    # the short item needs the bonus of a child that the largest-first pass used up as a plain one
    with_bonus = [c for c in kids if bonus[c]]
    if not with_bonus:
        return None
    last = max(with_bonus, key=lambda c: (slots[c], -c))
    others_need = n_items - cap_last(last)
    head = []
    for c in order:
        if others_need <= 0:
            break
        if c == last or slots[c] == 0:
            continue
        take = min(slots[c], others_need)
        head.append((c, take))
        others_need -= take
    if others_need > 0:
        return None
    remaining = n_items - sum(n for _, n in head)
    return _in_rank_order(head, (last, remaining), partial)


def _in_rank_order(head: list[tuple[int, int]], last: tuple[int, int], partial: bool) -> list[tuple[int, int]]:
    plan = [(c, n) for c, n in head if n > 0]
    if partial:
        return sorted(plan) + [last]
    return sorted(plan + [last])
