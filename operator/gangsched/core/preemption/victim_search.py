"""Group preemption: which lower-priority pods a gang that does not fit should evict, and where it then goes.

Contract (pure): `find_victims(cluster, *, requests, count, priority, feasible, extra, topology, tree, excluded,
protected, respect_pdb, refused) -> PreemptionChoice | None` for `count` members of one class of a gang.
- Candidates: bound, non-terminal pods of lower priority, not already being evicted (`excluded`) nor refused to
  this preemptor; victim units: a gang whole, or its members above its quorum, or a pod alone.
- Preference: the best topology placement, then the lowest highest-victim priority, the least work destroyed,
  the fewest victim pods, place()'s order; units with a `protected` pod only as a last resort (never a whole
  gang with one under `respect_pdb`).
- Greedy per domain, pruned, never pods x nodes; the victim count is not guaranteed minimal.
The result: victim pods, victim units, each member's node in rank order (to nominate) and the tier reached.
More: docs/modules.md#corepreemptionvictim_searchpy.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from gangsched.core.fit.capacity import fit_count
from gangsched.core.memory.views import StoreView
from gangsched.core.preemption.victim_tracker import Tracker, Unit, victim_units, work_lost
from gangsched.core.topology import TopologyPlacement, TopologyTree, place_network
from gangsched.core.values.gangspec import NetworkTopology
from gangsched.core.values.naming import natural_key

__all__ = ["PreemptionChoice", "find_victims", "tier_label"]


@dataclass(frozen=True, slots=True)
class PreemptionChoice:
    victims: tuple[str, ...]  # pod keys, sorted
    victim_units: tuple[str, ...]  # gang keys (or pod keys of pods without a gang), sorted
    nodes: tuple[str, ...]  # node of each of the `count` members, rank order
    whole_tier: int | None  # None: no topology
    group_tier: int | None
    max_priority: int  # highest priority among the victims
    protected: bool  # some victim is protected (no other choice existed)


def tier_label(whole_tier: int | None, tiers: int | None) -> str:
    """How a placement tier reads in messages: 'tier-2', 'whole-cluster', or 'gang' without topology."""
    if whole_tier is None:
        return "gang"
    if tiers is not None and whole_tier > tiers:
        return "whole-cluster"
    return f"tier-{whole_tier}"


class _Search:
    """One preemption search over fixed candidates (see the module docstring)."""

    def __init__(
        self,
        cluster: StoreView,
        *,
        requests: Mapping[str, int],
        count: int,
        feasible: Collection[str],
        extra: Mapping[str, Mapping[str, int]],
        topology: NetworkTopology | None,
        tree: TopologyTree | None,
        units: list[Unit],
        spare: Mapping[str, int],
        counts: Callable[[str], int] | None,
        now: float | None,
    ) -> None:
        self.cluster = cluster
        self.now = now
        self.req = requests
        self.count = count
        self.topology = topology
        self.tree = tree if topology is not None else None
        self.units = units
        self.spare = spare
        self.extra = extra
        self.cap0: dict[str, int] = {}  # node -> members that fit now (the feasible nodes the cluster knows)
        nodes, cap0 = cluster.nodes, self.cap0
        if counts is not None:  # the caller's workspace view has them (read, not computed again per node)
            for name in feasible:
                if name in nodes:
                    cap0[name] = counts(name)
        else:
            used_of = cluster.used
            for name in feasible:
                rec = nodes.get(name)
                if rec is not None:
                    cap0[name] = fit_count(requests, rec.allocatable, used_of.get(name), extra.get(name))
        self.base = cap0  # (its keys: the nodes searched)
        self.node_units: dict[str, list[int]] = {}
        for i, u in enumerate(units):
            for _, n, _ in u.pods:
                if n in self.base:
                    lst = self.node_units.setdefault(n, [])
                    if not lst or lst[-1] != i:
                        lst.append(i)

    def fit(self, node: str, freed: Mapping[str, int] | None) -> int:
        if not freed:
            return self.cap0[node]
        more = self.extra.get(node)
        net = (
            {r: -q for r, q in freed.items()}
            if more is None
            else {r: more.get(r, 0) - freed.get(r, 0) for r in self.req}
        )
        return fit_count(self.req, self.cluster.nodes[node].allocatable, self.cluster.used.get(node), net)

    def _freed_all(self) -> dict[str, dict[str, int]]:
        freed: dict[str, dict[str, int]] = {}
        seen: set[str] = set()
        for u in self.units:
            for k, n, r in u.pods:
                if k in seen or n not in self.base:
                    continue
                seen.add(k)
                f = freed.setdefault(n, {})
                for res, q in r.items():
                    f[res] = f.get(res, 0) + q
        return freed

    def _fill_loss(self) -> None:
        """Each unit's loss: the sum of its pods' `work_lost` (as victim_units gives it with `now`)."""
        if self.now is None:
            return
        pods, now = self.cluster.pods, self.now
        for u in self.units:
            u.loss = sum(work_lost(pods[k], now) for k, _, _ in u.pods)

    def _place(self, cap: Mapping[str, int]) -> TopologyPlacement | None:
        network, tree = self.topology, self.tree
        assert network is not None and tree is not None
        got = place_network(tree, cap, self.count, network)
        return got if isinstance(got, TopologyPlacement) else None

    def run(self) -> PreemptionChoice | None:
        freed = self._freed_all()
        potential = dict(self.cap0)  # (the same keys, in the same order, as self.base)
        for n, f in freed.items():
            potential[n] = self.fit(n, f)
        if sum(potential.values()) < self.count:
            return None
        target: tuple[int, int] | None = None
        domains: list[list[str]]
        if self.tree is not None:
            best = self._place(potential)
            if best is None:
                return None
            target = (best.whole_tier, best.group_tier)
            domains = self._domains(best.whole_tier, potential)
        else:
            domains = [sorted(self.base, key=natural_key)]
        self._fill_loss()
        scored: list[tuple[tuple[int, float, int, int], int, list[int]]] = []
        for order, nodes in enumerate(domains):
            cheapest: list[int] | None = None
            for small_first in (True, False):  # two greedy orders; pruning each, the cheaper result stays
                tracker = Tracker(self, nodes, target, potential)
                chosen = tracker.greedy(small_first=small_first)
                if chosen is None:
                    break
                chosen = tracker.prune(chosen)
                if cheapest is None or self._cost(chosen) < self._cost(cheapest):
                    cheapest = chosen
            if cheapest is not None:
                scored.append(((*self._cost(cheapest), order), order, cheapest))
        if not scored:
            return None
        scored.sort(key=lambda x: x[0])
        _, order, chosen = scored[0]
        return self._result(domains[order], chosen)

    def _domains(self, tier: int, potential: Mapping[str, int]) -> list[list[str]]:
        """Node lists of the tier-`tier` domains whose potential capacity can hold the gang, best fit first."""
        tree = self.tree
        assert tree is not None
        by: dict[str, list[str]] = {}
        for n in self.base:
            path = tree.node_path(n)
            if path is None:
                continue
            dom = "(cluster)" if tier > tree.tiers else path[tier - 1]
            by.setdefault(dom, []).append(n)
        out = []
        for dom, nodes in by.items():
            total = sum(potential[n] for n in nodes)
            if total >= self.count:
                out.append((total, natural_key(dom), sorted(nodes, key=natural_key)))
        out.sort(key=lambda x: (x[0], x[1]))
        return [nodes for _, _, nodes in out]

    def _cost(self, chosen: list[int]) -> tuple[int, float, int]:
        pods = {k for i in chosen for k, _, _ in self.units[i].pods}
        top = max((self.units[i].priority for i in chosen), default=-(1 << 62))
        return (top, sum(self.units[i].loss for i in chosen), len(pods))

    def _state(self, nodes: list[str], chosen: list[int]) -> dict[str, int]:
        freed: dict[str, dict[str, int]] = {}
        seen: set[str] = set()
        for i in chosen:
            for k, n, r in self.units[i].pods:
                if k in seen:
                    continue
                seen.add(k)
                f = freed.setdefault(n, {})
                for res, q in r.items():
                    f[res] = f.get(res, 0) + q
        return {n: self.fit(n, freed.get(n)) for n in nodes}

    def _result(self, nodes: list[str], chosen: list[int]) -> PreemptionChoice:
        cap = self._state(nodes, chosen)
        whole_tier: int | None = None
        group_tier: int | None = None
        if self.tree is not None:
            got = self._place(cap)
            assert got is not None
            layout = got.nodes
            whole_tier, group_tier = got.whole_tier, got.group_tier
        else:
            layout = []
            # members go first to the nodes freed by victims, then to nodes with free room, fullest first
            freed_nodes = {n for i in chosen for _, n, _ in self.units[i].pods}
            for n in sorted(cap, key=lambda n: (n not in freed_nodes, cap[n], natural_key(n))):
                take = min(cap[n], self.count - len(layout))
                layout.extend([n] * take)
                if len(layout) == self.count:
                    break
        victims = sorted({k for i in chosen for k, _, _ in self.units[i].pods})
        unit_keys = sorted({self.units[i].gang or self.units[i].key for i in chosen})
        return PreemptionChoice(
            victims=tuple(victims),
            victim_units=tuple(unit_keys),
            nodes=tuple(layout),
            whole_tier=whole_tier,
            group_tier=group_tier,
            max_priority=max(self.units[i].priority for i in chosen) if chosen else 0,
            protected=any(self.units[i].protected for i in chosen),
        )


def find_victims(
    cluster: StoreView,
    *,
    requests: Mapping[str, int],
    count: int,
    priority: int,
    feasible: Collection[str],
    extra: Mapping[str, Mapping[str, int]],
    topology: NetworkTopology | None,
    tree: TopologyTree | None,
    excluded: Collection[str] = (),
    protected: Collection[str] = (),
    respect_pdb: bool = False,
    refused: Collection[str] = (),
    now: float | None = None,
    counts: Callable[[str], int] | None = None,
) -> PreemptionChoice | None:
    """The victims to evict and the nodes to nominate; None when no lower-priority choice makes room. `counts`: how
    many members fit each feasible node now (free = allocatable - used - extra), when the caller already has it."""
    # (each unit's loss is filled in only by a search that gets past its capacity test: most stop there)
    units, spare = victim_units(cluster, priority, excluded, protected, feasible, refused)
    if respect_pdb:
        units = [u for u in units if not (u.whole and u.protected)]
    if not units:
        return None
    free_units = [u for u in units if not u.protected]
    passes: Sequence[list[Unit]] = (free_units, units) if len(free_units) < len(units) else (units,)
    for pool in passes:
        if not pool:
            continue
        choice = _Search(
            cluster,
            requests=requests,
            count=count,
            feasible=feasible,
            extra=extra,
            topology=topology,
            tree=tree,
            units=pool,
            spare=spare,
            counts=counts,
            now=now,
        ).run()
        if choice is not None and choice.victims:
            return choice
    return None
