"""Placing pods of a class with DoNotSchedule topology spread constraints, and checking other paths' placements against
them (kube-scheduler's PodTopologySpread filter, core/fit/pod_spread.py), on the cycle's workspace.

Contract:
- `domains_for(session, cls) -> [Domains]`: each constraint's domains, every matching pod counted (the store's, not
  leaving, and the cycle's placements), over the eligible nodes.
- `pick_spread(session, view, cls, need, only) -> (chosen, why)`: up to `need` pods one at a time, each on the best
  node of the view's order whose domains allow one more; `why` names PodTopologySpread when short. O(log n) per pod.
- `check_spread(session, placed) -> str | None`: None when placements chosen by capacity alone can be made one
  after another keeping every constraint, else the reason (the caller then places nothing).
More: docs/modules.md#coreplacementspread_placepy.
"""

from __future__ import annotations

import heapq
from collections.abc import Container, Iterable, Mapping

from gangsched.core.fit.affinity import coupled
from gangsched.core.fit.capacity import ClassView
from gangsched.core.fit.pod_counts import Counter, Overlay
from gangsched.core.fit.pod_spread import Domains, domain_map, hard, missing_key
from gangsched.core.records.records import PodRecord, PodSelector, SchedulingClass, SpreadConstraint
from gangsched.core.transaction.session import CycleSession

Chosen = list[tuple[str, int]]


def matching_counts(session: CycleSession, c: SpreadConstraint) -> Iterable[tuple[str, int]]:
    """(node, matching pods) for the nodes that have any: the store's and the cycle's (core/fit/pod_counts.py; pods
    being deleted left out, as countPodsMatchSelector skips them)."""
    overlay = session.workspace.overlay
    counter = overlay.base.counter((PodSelector(frozenset((c.namespace,)), c.selector),), leaving=False)
    deltas = _deltas(overlay, counter)
    if not deltas:
        return counter.by_node.items()
    return [*counter.by_node.items(), *deltas.items()]


def _deltas(overlay: Overlay, counter: Counter) -> Mapping[str, int]:
    """The cycle's per-node changes of a counter (zero absent). TODO(pod_counts): a public Overlay reader."""
    overlay._catch_up(counter)
    return overlay._node.get(counter.id) or {}


def domains_for(session: CycleSession, cls: SchedulingClass) -> list[Domains]:
    maps = domain_map(session.store, cls)
    return [Domains(c, of, matching_counts(session, c)) for c, of in zip(cls.spread, maps, strict=True)]


def _primary(domains: list[Domains]) -> int:
    """The constraint nodes are grouped by: a self-matching DoNotSchedule one with the fewest domains, else a
    self-matching ScheduleAnyway one (its groups are then taken least-loaded first), else the first."""
    for want_hard in (True, False):
        moving = [i for i, d in enumerate(domains) if d.c.self_match and d.c.hard is want_hard]
        if moving:
            return min(moving, key=lambda i: len(domains[i].count))
    return 0


_NO_LABEL = "\0"  # the group of nodes without a ScheduleAnyway key (scored last, as kube-scheduler ignores them)
_LAST = 1 << 62


class _Picker:
    """Nodes grouped by primary domain, each group a heap of positions in the view's order; the groups in a heap
    by (the group's matching pods when the primary constraint is ScheduleAnyway, else 0; its best position)."""

    def __init__(self, session: CycleSession, domains: list[Domains], order: list[tuple[str, int]]) -> None:
        self.domains = domains
        self.p = _primary(domains)
        self.soft = not domains[self.p].c.hard and domains[self.p].c.self_match
        nodes = session.store.nodes
        self.order = order
        self.room = [c for _, c in order]
        keys = [d.c.topology_key for d in domains]
        self.values = [[nodes[name].labels.get(k, _NO_LABEL) for name, _ in order] for k in keys]
        self.groups: dict[str, list[int]] = {}
        for i, d in enumerate(self.values[self.p]):
            self.groups.setdefault(d, []).append(i)  # ascending: already a heap
        self.top = [(self._load(d), g[0], d) for d, g in self.groups.items()]
        heapq.heapify(self.top)
        self.waiting: list[str] = []  # primary domains that take no more until the primary minimum rises
        self.parked: list[tuple[str, int]] = []  # nodes another constraint refuses until a minimum rises

    def _load(self, d: str) -> int:
        if not self.soft:
            return 0
        return _LAST if d == _NO_LABEL else self.domains[self.p].count.get(d, 0)

    def _others_allow(self, i: int) -> bool:
        return all(d.allows(self.values[j][i]) for j, d in enumerate(self.domains) if j != self.p)

    def _push(self, d: str) -> None:
        group = self.groups[d]
        if group:
            heapq.heappush(self.top, (self._load(d), group[0], d))

    def next(self) -> int | None:
        """The position of the best node that takes one more pod now, else None."""
        top, primary = self.top, self.domains[self.p]
        while top:
            load, i, d = top[0]
            group = self.groups[d]
            if not group or group[0] != i or load != self._load(d):
                heapq.heappop(top)  # stale
            elif not primary.allows(d):
                heapq.heappop(top)
                self.waiting.append(d)
            elif not self._others_allow(i):
                heapq.heappop(group)
                heapq.heappop(top)
                self.parked.append((d, i))
                self._push(d)
            else:
                return i
        return None

    def blocked(self) -> bool:
        """A node with room is held back by a constraint."""
        return bool(self.parked) or any(self.groups[d] for d in self.waiting)

    def drop(self, i: int) -> None:
        """The node at position `i` (just returned by next()) takes no more pods."""
        self.room[i] = 1
        self._use(i)

    def _use(self, i: int) -> None:
        d = self.values[self.p][i]
        self.room[i] -= 1
        if not self.room[i]:
            heapq.heappop(self.groups[d])
            heapq.heappop(self.top)
            self._push(d)

    def take(self, i: int) -> None:
        """One pod on the node at position `i` (just returned by next())."""
        self._use(i)
        name = self.order[i][0]
        rose = [dom.c.self_match and dom.add(name) for dom in self.domains]
        if self.soft:
            self._push(self.values[self.p][i])  # its load moved: the entry before is stale
        if rose[self.p]:
            for w in self.waiting:
                self._push(w)
            self.waiting.clear()
        if any(rose) and self.parked:
            for d2, k in self.parked:
                heapq.heappush(self.groups[d2], k)
                self._push(d2)
            self.parked.clear()


def _blocker(domains: list[Domains]) -> str:
    worst = next((d for d in domains if d.c.self_match and d.c.hard), None)
    return (worst or next(d for d in domains if d.c.hard)).describe()


def pick_spread(
    session: CycleSession, view: ClassView, cls: SchedulingClass, need: int, only: Container[str] | None
) -> tuple[Chosen, str | None]:
    """See the module docstring. The `spread` score strategy deals one pod per node per round (each round reads
    the view's order again, emptiest first), as core/placement/pickers.py does."""
    if not session.workspace.spread:
        return _pick(session, view, cls, need, only, one_each=False)
    taken: dict[str, int] = {}
    why = None
    left = need
    while left:
        chosen, why = _pick(session, view, cls, left, only, one_each=True)
        for name, count in chosen:
            taken[name] = taken.get(name, 0) + count
            left -= count
        if not chosen:  # a round that placed something may have raised a minimum: another round may place more
            break
    return list(taken.items()), why


def _pick(
    session: CycleSession,
    view: ClassView,
    cls: SchedulingClass,
    need: int,
    only: Container[str] | None,
    *,
    one_each: bool,
) -> tuple[Chosen, str | None]:
    nodes = session.store.nodes
    order = [
        (n, 1 if one_each else c)
        for n, c in view.ordered()
        if (only is None or n in only) and missing_key(cls, nodes[n]) is None
    ]
    domains = domains_for(session, cls)
    picker = _Picker(session, domains, order)
    check = coupled(cls)  # pod affinity too: a placement may lower other nodes' counts, so place as we go
    taken: dict[str, int] = {}
    why = None
    placed = 0
    while placed < need:
        i = picker.next()
        if i is None:
            why = _blocker(domains) if picker.blocked() else None  # else: no room left at all
            break
        name = order[i][0]
        if check and view.count_of(name) <= 0:
            picker.drop(i)
            continue
        picker.take(i)
        if check:
            session.workspace.place(name, cls.requests, 1, cls.host_ports, cls=cls)
        taken[name] = taken.get(name, 0) + 1
        placed += 1
    chosen = list(taken.items())
    if not check:
        for name, count in chosen:
            session.workspace.place(name, cls.requests, count, cls.host_ports, cls=cls)
    return chosen, why


def check_spread(session: CycleSession, placed: list[tuple[PodRecord, str]]) -> str | None:
    by_class: dict[int, tuple[SchedulingClass, list[str]]] = {}
    for pod, node in placed:
        if hard(pod.sclass):
            by_class.setdefault(pod.sclass.id, (pod.sclass, []))[1].append(node)
    for cls, targets in by_class.values():
        others = [(pod, node) for pod, node in placed if pod.sclass.id != cls.id]
        why = _check_class(session, cls, targets, others)
        if why is not None:
            return why
    return None


def _check_class(
    session: CycleSession, cls: SchedulingClass, targets: list[str], others: list[tuple[PodRecord, str]]
) -> str | None:
    """The class's placements one after another, the fewest-counted primary domain first; the gang's other
    placements counted before them (conservative: whatever order they are bound in, the skew holds)."""
    nodes = session.store.nodes
    for name in targets:
        key = missing_key(cls, nodes[name])
        if key is not None:
            return f"PodTopologySpread: node {name} has no label {key}"
    domains = [d for d in domains_for(session, cls) if d.c.hard]
    for pod, name in others:
        labels = dict(pod.labels)
        for dom in domains:
            if dom.c.matches(pod.namespace, labels):
                dom.add(name)
    p = _primary(domains)
    key = domains[p].c.topology_key
    groups: dict[str, list[str]] = {}
    for name in targets:
        groups.setdefault(nodes[name].labels[key], []).append(name)
    heap: list[tuple[int, str]] = [(domains[p].count.get(d, 0), d) for d in groups]
    heapq.heapify(heap)
    while heap:
        _, d = heapq.heappop(heap)
        name = groups[d].pop()
        for dom in domains:
            if not dom.allows(nodes[name].labels[dom.c.topology_key]):
                return dom.describe()
            if dom.c.self_match:
                dom.add(name)
        if groups[d]:
            heapq.heappush(heap, (domains[p].count.get(d, 0), d))
    return None
