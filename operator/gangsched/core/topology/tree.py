"""The topology tree: validated domains and the per-tier level structure placement works on (pure).

Contract:
- `Domain(layer, name, parents, children)`: one entry of the topology ConfigMap (layer 1's children are nodes).
- `TopologyTree.from_domains(domains, *, source="domains")` validates (names, layers, duplicates, unknown links,
  cycles, layer order, two parents) and raises `InvalidField` naming `{source}[i].<field>`.
- Queries: `.tiers`, `.nodes()`, `.node_path(node)`, `.domains`, `.domains_at(tier)`; a domain whose parent skips
  a layer stands in for itself at the missing tiers.
- Levels for placement: 0 the nodes, t the tier-t domains, tiers+1 the cluster, in natural name order:
  `level_names`, `node_index`, `parent_at`, `children_at`, `domain_index(node, tier)`.
- `natural_key(name)`: natural order ("node2" < "node10"), defined in core/values/naming.py.
More: docs/modules.md#coretopologytreepy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gangsched.core.values.errors import InvalidField
from gangsched.core.values.naming import natural_key

CLUSTER = "(cluster)"

Links = dict[str, dict[str, str]]  # child -> {parent: the field that declared the link}


@dataclass(frozen=True)
class Domain:
    layer: int
    name: str
    parents: tuple[str, ...] = ()
    children: tuple[str, ...] = ()


class TopologyTree:
    """An immutable, validated topology, with the per-tier level structure placement works on."""

    __slots__ = ("children_at", "domains", "level_names", "node_index", "node_names", "parent_at", "tiers")

    tiers: int
    domains: tuple[Domain, ...]
    node_names: list[str]  # level 0, natural order
    node_index: dict[str, int]
    level_names: list[list[str]]  # [level][i] -> name, level in 0..tiers+1
    parent_at: list[list[int]]  # [level][i] -> index at level+1, level in 0..tiers
    children_at: list[list[list[int]]]  # [level][i] -> indexes at level-1, level in 1..tiers+1 ([0] unused)

    def __init__(self) -> None:  # use from_domains
        self.tiers = 0
        self.domains = ()
        self.node_names = []
        self.node_index = {}
        self.level_names = [[], [CLUSTER]]
        self.parent_at = [[]]
        self.children_at = [[], [[]]]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TopologyTree) and self.domains == other.domains

    def __hash__(self) -> int:
        return hash(self.domains)

    def __repr__(self) -> str:
        return f"TopologyTree(tiers={self.tiers}, domains={len(self.domains)}, nodes={len(self.node_names)})"

    # ----------------------------------------------------------------------------------------- queries
    def nodes(self) -> frozenset[str]:
        return frozenset(self.node_names)

    def node_path(self, node: str) -> tuple[str, ...] | None:
        """The node's domain names from tier 1 up to tier `tiers`; None for a node not in the tree."""
        index = self.node_index.get(node)
        if index is None:
            return None
        path = []
        for level in range(self.tiers):
            index = self.parent_at[level][index]
            path.append(self.level_names[level + 1][index])
        return tuple(path)

    def domain_index(self, node: int, tier: int) -> int:
        """The index at level `tier` of the domain holding the node of index `node` (tiers + 1 or above: the whole
        cluster, index 0)."""
        index = node
        for level in range(min(tier, self.tiers)):
            index = self.parent_at[level][index]
        return index if tier <= self.tiers else 0

    def domain_nodes(self, node: str, tier: int) -> frozenset[str]:
        """The nodes of the domain at `tier` (1..tiers) that holds `node` (a node of the tree), walking down."""
        level, indexes = tier, [self.domain_index(self.node_index[node], tier)]
        while level > 0:
            indexes = [child for i in indexes for child in self.children_at[level][i]]
            level -= 1
        return frozenset(self.node_names[i] for i in indexes)

    def domains_at(self, tier: int) -> tuple[str, ...]:
        """Names of the domains that hold nodes at a tier (1..tiers), in natural order."""
        if not 1 <= tier <= self.tiers:
            raise InvalidField("tier", tier, f"must be between 1 and {self.tiers}")
        return tuple(self.level_names[tier])

    # ------------------------------------------------------------------------------------ construction
    @classmethod
    def from_domains(cls, domains: Sequence[Domain], *, source: str = "domains") -> TopologyTree:
        by_name = _index_names(domains, source)
        domain_links, node_links = _links(domains, by_name, source)
        _check_cycles(domain_links)
        layer = {d.name: d.layer for d in domains}
        _check_layers_increase(domain_links, layer)
        parent_of = {child: _one_parent(child, parents, layer, domain_links) for child, parents in domain_links.items()}
        node_domain = _node_domains(node_links)
        tree = cls()
        tree._build(_normalized(domains, parent_of, node_domain), parent_of, node_domain, layer)
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
        self.node_names = nodes
        self.node_index = {n: i for i, n in enumerate(nodes)}
        effective = _effective_domains(node_domain, parent_of, layer, tiers)
        level_names: list[list[str]] = [nodes]
        for tier in range(1, tiers + 1):
            level_names.append(sorted({per_tier[tier - 1] for per_tier in effective.values()}, key=natural_key))
        level_names.append([CLUSTER])
        self.level_names = level_names
        self.parent_at = _parent_indexes(level_names, nodes, node_domain, effective, tiers)
        self.children_at = _child_indexes(level_names, self.parent_at, tiers)


def _index_names(domains: Sequence[Domain], source: str) -> dict[str, int]:
    by_name: dict[str, int] = {}
    for i, d in enumerate(domains):
        _check_entry(d, f"{source}[{i}]")
        if d.name in by_name:
            where = f"{source}[{by_name[d.name]}]"
            raise InvalidField(f"{source}[{i}].name", d.name, f"must be unique: already the name of {where}")
        by_name[d.name] = i
    return by_name


def _links(domains: Sequence[Domain], by_name: Mapping[str, int], source: str) -> tuple[Links, Links]:
    """Parent links of domains and of nodes, from both sides of every declaration."""
    domain_links: Links = {}
    node_links: Links = {}
    for i, d in enumerate(domains):
        for parent in d.parents:
            if parent not in by_name:
                message = f"unknown parent of {d.name!r}: must name a domain of the topology"
                raise InvalidField(f"{source}[{i}].parents", parent, message)
            domain_links.setdefault(d.name, {}).setdefault(parent, f"{source}[{i}].parents")
        for child in d.children:
            if child in by_name:
                domain_links.setdefault(child, {}).setdefault(d.name, f"{source}[{i}].children")
            elif d.layer == 1:
                node_links.setdefault(child, {}).setdefault(d.name, f"{source}[{i}].children")
            else:
                raise InvalidField(
                    f"{source}[{i}].children",
                    child,
                    f"unknown child of {d.name!r} (layer {d.layer}): above layer 1 children must name domains"
                    " (node names belong to layer-1 domains)",
                )
    return domain_links, node_links


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


def _check_cycles(links: Mapping[str, Mapping[str, str]]) -> None:
    """Raise on a cycle of parent links, naming it (iterative depth-first search: 1 on the path, 2 done)."""
    state: dict[str, int] = {}
    for start in sorted(links):
        if state.get(start):
            continue
        stack: list[tuple[str, list[str]]] = [(start, sorted(links.get(start, {})))]
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
            seen = state.get(nxt, 0)
            if seen == 1:
                cycle = [*path[path.index(nxt) :], nxt]
                message = "cycle in the topology: " + " -> ".join(repr(c) for c in cycle)
                raise InvalidField(links[name][nxt], nxt, message)
            if seen == 0:
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, sorted(links.get(nxt, {}))))


def _check_layers_increase(links: Mapping[str, Mapping[str, str]], layer: Mapping[str, int]) -> None:
    for child, parents in sorted(links.items()):
        for parent, where in parents.items():
            if layer[parent] <= layer[child]:
                raise InvalidField(
                    where,
                    parent,
                    f"layer numbers must increase upwards: parent {parent!r} has layer {layer[parent]} but its child"
                    f" {child!r} has layer {layer[child]}",
                )


def _one_parent(
    child: str, parents: Mapping[str, str], layer: Mapping[str, int], links: Mapping[str, Mapping[str, str]]
) -> str:
    """The lowest of a domain's parents; a higher one is allowed only as an ancestor through the lowest."""
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
        if other not in _ancestors(first, layer, links):
            raise InvalidField(
                parents[other],
                other,
                f"{child!r} has parents {first!r} and {other!r} that are not on one chain: one parent per tier",
            )
    return first


def _ancestors(start: str, layer: Mapping[str, int], links: Mapping[str, Mapping[str, str]]) -> set[str]:
    """`start` and its chain of lowest parents."""
    seen: set[str] = set()
    current = start
    while current not in seen:
        seen.add(current)
        parents = sorted(links.get(current, {}), key=lambda p: (layer[p], p))
        if not parents:
            break
        current = parents[0]
    return seen


def _node_domains(node_links: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    node_domain: dict[str, str] = {}
    for node, parents in node_links.items():
        if len(parents) > 1:
            (first, _), (second, where) = sorted(parents.items())[:2]
            message = f"a node may be under one parent per tier: {node!r} is under both {first!r} and {second!r}"
            raise InvalidField(where, node, message + " at layer 1")
        node_domain[node] = next(iter(parents))
    return node_domain


def _normalized(
    domains: Sequence[Domain], parent_of: Mapping[str, str], node_domain: Mapping[str, str]
) -> tuple[Domain, ...]:
    """Every domain with its one parent and the union of its children, top layer first, then natural order."""
    children_of: dict[str, list[str]] = {d.name: [] for d in domains}
    for child, parent in parent_of.items():
        children_of[parent].append(child)
    for node, parent in node_domain.items():
        children_of[parent].append(node)
    return tuple(
        Domain(
            layer=d.layer,
            name=d.name,
            parents=(parent_of[d.name],) if d.name in parent_of else (),
            children=tuple(sorted(children_of[d.name], key=natural_key)),
        )
        for d in sorted(domains, key=lambda d: (-d.layer, natural_key(d.name)))
    )


def _effective_domains(
    node_domain: Mapping[str, str], parent_of: Mapping[str, str], layer: Mapping[str, int], tiers: int
) -> dict[str, list[str]]:
    """For every tier-1 domain holding nodes, its effective domain at each tier 1..tiers (chains are short)."""
    effective: dict[str, list[str]] = {}
    for domain in set(node_domain.values()):
        chain = [domain]
        while chain[-1] in parent_of:
            chain.append(parent_of[chain[-1]])
        per_tier = []
        k = 0
        for tier in range(1, tiers + 1):
            while k + 1 < len(chain) and layer[chain[k + 1]] <= tier:
                k += 1
            per_tier.append(chain[k])
        effective[domain] = per_tier
    return effective


def _parent_indexes(
    level_names: list[list[str]],
    nodes: list[str],
    node_domain: Mapping[str, str],
    effective: Mapping[str, list[str]],
    tiers: int,
) -> list[list[int]]:
    index = [{n: i for i, n in enumerate(names)} for names in level_names]
    parent: list[list[int]] = [[0] * len(names) for names in level_names[: tiers + 1]]
    if tiers:
        for i, node in enumerate(nodes):
            parent[0][i] = index[1][effective[node_domain[node]][0]]
    for per_tier in effective.values():
        for tier in range(1, tiers):
            parent[tier][index[tier][per_tier[tier - 1]]] = index[tier + 1][per_tier[tier]]
    return parent


def _child_indexes(level_names: list[list[str]], parent: list[list[int]], tiers: int) -> list[list[list[int]]]:
    children: list[list[list[int]]] = [[]]
    for level in range(1, tiers + 2):
        kids: list[list[int]] = [[] for _ in level_names[level]]
        for i, p in enumerate(parent[level - 1]):
            kids[p].append(i)
        children.append(kids)
    return children
