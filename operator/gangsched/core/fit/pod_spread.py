"""kube-scheduler's PodTopologySpread for our pods, as records and domain counts (pure). Not the network topology of
core/topology/.

Contract:
- `SpreadConstraint` (core/records/records.py, built by models/pod_spread.py) and `hard(cls)`: DoNotSchedule
  constraints refuse domains; ScheduleAnyway ones only order candidates (core/placement/spread_place.py).
- `eligible(cls, node, c)`: the node has the constraints' topology keys and passes the inclusion policies.
- `Domains(c, of, counts)`: `floor()` (0 while fewer domains than minDomains), `allows(domain)`
  (count + selfMatch - floor <= maxSkew), `add(domain)`; O(1) per pod.
- `domain_map(store, cls)`: eligible node -> domain per constraint, memoized per (class, static generation).
- `PodTopologySpread` (a NodeFilter): a node without one of the keys takes no pod of the class.
More: docs/modules.md#corefitpod_spreadpy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

from gangsched.core.fit.matching import term_matches
from gangsched.core.fit.store_cache import CacheKind, LogSource, StoreCaches, refresh
from gangsched.core.records.records import NodeRecord, SchedulingClass, SpreadConstraint, Taint

if TYPE_CHECKING:
    from gangsched.core.fit.pod_counts import Change, PodCounts
    from gangsched.core.fit.usage import Usage

NAME = "PodTopologySpread"
_UNLIMITED = 1 << 30
_UNSCHEDULABLE = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


def _affinity_ok(cls: SchedulingClass, node: NodeRecord) -> bool:
    labels = node.labels
    if any(labels.get(k) != v for k, v in cls.node_selector):
        return False
    return cls.required is None or any(term_matches(t, node) for t in cls.required)


def _taints_ok(cls: SchedulingClass, node: NodeRecord) -> bool:
    taints: Iterable[Taint] = node.taints
    if node.unschedulable:
        taints = (*node.taints, _UNSCHEDULABLE)
    for taint in taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(t.tolerates(taint) for t in cls.tolerations):
            return False
    return True


def hard(cls: SchedulingClass) -> bool:
    """The class has a DoNotSchedule constraint (a filter)."""
    return any(c.hard for c in cls.spread)


def missing_key(cls: SchedulingClass, node: NodeRecord, *, of_hard: bool = True) -> str | None:
    """The first topology key of the class's DoNotSchedule (of_hard) or ScheduleAnyway constraints the node lacks,
    else None."""
    labels = node.labels
    return next((c.topology_key for c in cls.spread if c.hard is of_hard and c.topology_key not in labels), None)


def eligible(cls: SchedulingClass, node: NodeRecord, c: SpreadConstraint) -> bool:
    if missing_key(cls, node, of_hard=c.hard) is not None:
        return False
    if c.honor_affinity and not _affinity_ok(cls, node):
        return False
    return not (c.honor_taints and not _taints_ok(cls, node))


class SpreadSource(LogSource, Protocol):
    """What `domain_map` reads of the store (core/memory/views.py `StoreView` satisfies it structurally)."""

    @property
    def nodes(self) -> Mapping[str, NodeRecord]: ...
    @property
    def caches(self) -> StoreCaches: ...


class _Maps:
    """A store cache (core/fit/store_cache.py) of static node properties only: rebuilt when a node changes."""

    __slots__ = ("cls", "gen", "maps", "pos")
    follows_log = False

    def __init__(self, cls: SchedulingClass) -> None:
        self.cls = cls
        self.gen = -1
        self.pos = 0
        self.maps: tuple[dict[str, str], ...] = ()

    def rebuild(self, store: SpreadSource) -> None:
        cls = self.cls
        maps: list[dict[str, str]] = []
        nodes: Mapping[str, NodeRecord] = store.nodes
        for c in cls.spread:
            k = c.topology_key
            maps.append({name: node.labels[k] for name, node in nodes.items() if eligible(cls, node, c)})
        self.maps = tuple(maps)

    def update(self, store: SpreadSource, changed: list[str]) -> None:
        return  # (static: never asked)


_MAPS: CacheKind[int, _Maps] = CacheKind(NAME, _Maps)  # by class id


def domain_map(store: SpreadSource, cls: SchedulingClass) -> tuple[dict[str, str], ...]:
    """Per constraint of the class: eligible node -> its domain (memoized by class and static generation)."""
    memo = store.caches.get(_MAPS, cls.id)
    if memo is None:
        memo = _Maps(cls)
        store.caches.put(_MAPS, cls.id, memo)
    refresh(memo, store)
    return memo.maps


class Domains:
    """One constraint's domains during a cycle (see the module docstring)."""

    __slots__ = ("c", "count", "hist", "low", "of")

    def __init__(self, c: SpreadConstraint, of: Mapping[str, str], counts: Iterable[tuple[str, int]]) -> None:
        self.c = c
        self.of = of
        count: dict[str, int] = dict.fromkeys(of.values(), 0)
        for node, n in counts:
            d = of.get(node)
            if d is not None and n:
                count[d] += n
        self.count = count
        self.hist: Counter[int] = Counter(count.values())
        self.low = min(count.values()) if count else 0

    def floor(self) -> int:
        return 0 if len(self.count) < self.c.min_domains else self.low

    def skew(self, domain: str) -> int:
        """The skew a pod of the class would make in `domain` (matchNum + selfMatchNum - minMatchNum)."""
        return self.count.get(domain, 0) + int(self.c.self_match) - self.floor()

    def allows(self, domain: str) -> bool:
        return not self.c.hard or self.skew(domain) <= self.c.max_skew

    def add(self, node: str) -> bool:
        """One more pod matching the selector on `node` (if it counts): True when the global minimum rose."""
        d = self.of.get(node)
        if d is None:
            return False
        old = self.count[d]
        self.count[d] = old + 1
        hist = self.hist
        hist[old] -= 1
        hist[old + 1] += 1
        if old == self.low and not hist[old]:
            del hist[old]
            self.low += 1
            return True
        return False

    def describe(self) -> str:
        c = self.c
        shown = f"{len(self.count)} domains" if self.count else "no eligible domain"
        if len(self.count) < c.min_domains:
            shown += f", fewer than minDomains {c.min_domains}"
        return f"{NAME}: maxSkew {c.max_skew} on {c.topology_key} ({shown}) would be exceeded"


class PodTopologySpread:
    """The per-node part of the filter: nodes without a topology key take no pod of the class."""

    name = NAME
    domains = False  # the per-node part is static; the skew is evaluated while placing

    def applies(self, cls: SchedulingClass) -> bool:
        return hard(cls)

    def touched(self, cls: SchedulingClass, counts: PodCounts, changes: list[Change]) -> set[str] | None:
        return set()

    def limit(self, cls: SchedulingClass, node: str, usage: Usage) -> int:
        rec = usage.nodes.get(node)
        return 0 if rec is None or missing_key(cls, rec) is not None else _UNLIMITED

    def reason(self, cls: SchedulingClass, node: str, usage: Usage) -> str | None:
        rec = usage.nodes.get(node)
        key = None if rec is None else missing_key(cls, rec)
        return None if key is None else f"{NAME}: no label {key}"
