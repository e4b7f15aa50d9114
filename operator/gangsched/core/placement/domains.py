"""Hard topology constraints of Kubernetes' gang API: all pods of a group in one domain of a node label that is not
one of the topology's tiers, or of a gang tree node with other groups under it.

Contract: `domain_tree(session, gang) -> TopologyTree | None`: the domains the gang's pending members may be placed
in, as a one-level tree (placed as hard at tier 1; empty when no node qualifies), or None when no such constraint
applies. The constraints: the gang's `spec.domain`, its hard `networkTopology` tier when another constraint exists
too, and the `domain` of every tree node above it. A node without a domain under one of them is in none. A tree
node's domain is fixed once a gang under it holds nodes; before that the first gang keeps to domains that could
hold every pending pod under that node. Memoized per constraint set until a node changes (`store.static_gen`).
More: docs/modules.md#coreplacementdomainspy.
"""

from __future__ import annotations

from collections import Counter

from gangsched.core.fit.store_cache import CacheKind, refresh
from gangsched.core.memory.gangs import GangState
from gangsched.core.memory.views import StoreView
from gangsched.core.records.records import NodeRecord, SchedulingClass
from gangsched.core.topology import Domain, TopologyTree
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.gangspec import TopologyMode
from gangsched.core.values.gangtree import DomainKey, GangTree

Constraint = tuple[DomainKey, str | None]  # (the key, the domain already chosen by other gangs of the tree node)


class _Trees:
    """The memo, constraint set -> tree: a store cache (core/fit/store_cache.py) of static node properties only,
    emptied when a node changes. `seen`: the constraint sets built since the memo was last emptied for its bound
    (of any generation: past 64 both are emptied, as when stale trees were kept beside the current ones)."""

    __slots__ = ("gen", "pos", "seen", "trees")
    follows_log = False

    def __init__(self) -> None:
        self.gen = -1
        self.pos = 0
        self.trees: dict[tuple[Constraint, ...], TopologyTree] = {}
        self.seen: set[tuple[Constraint, ...]] = set()

    def add(self, wanted: tuple[Constraint, ...], tree: TopologyTree) -> None:
        if len(self.seen) > 64:
            self.seen.clear()
            self.trees.clear()
        self.seen.add(wanted)
        self.trees[wanted] = tree

    def rebuild(self, store: StoreView) -> None:
        self.trees = {}

    def update(self, store: StoreView, changed: list[str]) -> None:
        return  # (static: never asked)


_TREES: CacheKind[None, _Trees] = CacheKind("placement.domains", _Trees)  # one entry in the store's caches


def _value(session: CycleSession, node: NodeRecord, key: DomainKey) -> str | None:
    if key.label is not None:
        return node.labels.get(key.label)
    tree = session.store.topology
    index = tree.node_index.get(node.name) if tree is not None and key.tier is not None else None
    if tree is None or index is None or key.tier is None:
        return None
    return tree.level_names[min(key.tier, tree.tiers + 1)][tree.domain_index(index, key.tier)]


def _held_nodes(session: CycleSession, gang: GangState) -> list[str]:
    members = session.members(gang)
    out = [node for _, node in members.reserved]
    for key in members.bound:
        pod = session.store.pods[key]
        reservation = session.store.reservation_of(key)
        node = pod.node_name or (reservation[0] if reservation is not None else None)
        if node is not None:
            out.append(node)
    return out


def _chosen(session: CycleSession, gang: GangState, under: list[str], key: DomainKey) -> str | None:
    """The domain other gangs under a tree node already hold nodes in (the first found), or None."""
    nodes = session.store.nodes
    for leaf in under:
        other = session.store.gangs.get(leaf)
        if other is None or other is gang:
            continue
        for name in _held_nodes(session, other):
            record = nodes.get(name)
            if record is not None and (value := _value(session, record, key)) is not None:
                return value
    return None


def constraints(session: CycleSession, gang: GangState) -> tuple[Constraint, ...]:
    spec = gang.spec
    if spec is None:
        return ()
    out: list[Constraint] = [(spec.domain, None)] if spec.domain is not None else []
    tree = spec.tree
    if tree is not None:
        for node in tree.ancestors(spec.key):
            if node.domain is not None:
                under = _leaves_under(tree, node.key)
                out.append((node.domain, _chosen(session, gang, under, node.domain)))
    network = spec.network_topology
    if out and network is not None and network.mode == TopologyMode.HARD and network.highest_tier_allowed:
        out.append((DomainKey(tier=network.highest_tier_allowed), None))
    return tuple(out)


def _leaves_under(tree: GangTree, key: str) -> list[str]:
    node = tree.node(key)
    if node is None or node.leaf:
        return [key]
    return [leaf for child in node.children for leaf in _leaves_under(tree, child)]


def _subtree_demand(session: CycleSession, gang: GangState) -> list[tuple[SchedulingClass, int]]:
    """The pending pods of the other gangs under the gang's constrained tree nodes whose domain is not chosen yet, with
    the gang's own, per scheduling class ([] when no such node has another gang with pending pods)."""
    spec = gang.spec
    tree = spec.tree if spec is not None else None
    if tree is None or spec is None:
        return []
    leaves: set[str] = set()
    for node in tree.ancestors(spec.key):
        if node.domain is not None and _chosen(session, gang, _leaves_under(tree, node.key), node.domain) is None:
            leaves.update(_leaves_under(tree, node.key))
    leaves.discard(gang.key)
    counts: Counter[int] = Counter()
    classes: dict[int, SchedulingClass] = {}
    for key in [gang.key, *sorted(leaves)]:
        other = session.store.gangs.get(key)
        if other is None or (key != gang.key and session.is_satisfied(other)):
            continue
        for pod in session.members(other).pending:
            counts[pod.sclass.id] += 1
            classes[pod.sclass.id] = pod.sclass
    return [(classes[i], n) for i, n in counts.items()] if leaves else []


def _fitting(session: CycleSession, tree: TopologyTree, demand: list[tuple[SchedulingClass, int]]) -> TopologyTree:
    """The domains of `tree` whose free capacity could hold the whole demand (each class counted alone: a first
    filter, not a plan); `tree` itself when none could (the placement then says what is short)."""
    keep = []
    views = [(session.workspace.view(cls).capacity(), n) for cls, n in demand]
    for domain in tree.domains:
        if all(sum(cap.get(node, 0) for node in domain.children) >= n for cap, n in views):
            keep.append(domain)
    if not keep or len(keep) == len(tree.domains):
        return tree
    return TopologyTree.from_domains(keep, source="domains")


def domain_tree(session: CycleSession, gang: GangState) -> TopologyTree | None:
    """See module docstring."""
    wanted = constraints(session, gang)
    if not wanted:
        return None
    demand = _subtree_demand(session, gang)
    entry = session.store.caches.get(_TREES, None)
    if entry is None:
        entry = _Trees()
        session.store.caches.put(_TREES, None, entry)
    refresh(entry, session.store)
    hit = entry.trees.get(wanted)
    if hit is not None:
        return _fitting(session, hit, demand) if demand else hit
    groups: dict[tuple[str, ...], list[str]] = {}
    for record in session.store.nodes.values():
        signature = []
        for key, chosen in wanted:
            value = _value(session, record, key)
            if value is None or (chosen is not None and value != chosen):
                break
            signature.append(value)
        else:
            groups.setdefault(tuple(signature), []).append(record.name)
    domains = [Domain(1, "domain:" + "/".join(sig), children=tuple(names)) for sig, names in sorted(groups.items())]
    tree = TopologyTree.from_domains(domains, source="domains") if domains else TopologyTree()
    entry.add(wanted, tree)
    return _fitting(session, tree, demand) if demand else tree
