"""Per-class node capacity: how many more pods of a scheduling class each node can take, kept incrementally.

Contract:
- `ClassIndex` (a store memo per class and score strategy): the class's statically feasible nodes, each node's fit
  count (free resources, capped by the node filters, core/fit/filters.py) and buckets by score key; brought up to
  date from the store's and the pod counts' change logs (only touched nodes recomputed). Full nodes are in no
  bucket: placement never loops pods x nodes.
- `Workspace`: one cycle's tentative placements over the store, with copy-on-write views of the indexes;
  `begin()` / `rollback()` per unit: one log (device takes, the session's `record`ed undos). Never changes the store.
  `place(..., cls=)` counts pods in the cycle's overlay; a view's `slots()` is the class's free slots.
Score keys sort ascending: binpack (-preference, count), spread (-preference, -count); preference is
core/fit/matching.py's plus core/fit/pod_score.py's. Pure. More: docs/modules.md#corefitcapacitypy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gangsched.core.devices import DeviceBook, PodFit
from gangsched.core.devices.ledger import DeviceTake
from gangsched.core.fit.affinity import coupled
from gangsched.core.fit.filters import NodeFilter, add_ports, filters_for, limit
from gangsched.core.fit.matching import preference, static_block
from gangsched.core.fit.pod_counts import Change, Overlay, PodCounts, PodInfo
from gangsched.core.fit.pod_score import SCORER, score
from gangsched.core.fit.store_cache import CacheKind, LogSource, StoreCaches, refresh
from gangsched.core.fit.usage import PortCounts, Usage
from gangsched.core.records.records import HostPort, NodeRecord, SchedulingClass
from gangsched.core.values.resources import Resources

_CAP = 1 << 30


class CapacitySource(LogSource, Protocol):
    """What the capacity memo reads of the store (core/memory/views.py `StoreView` satisfies it structurally)."""

    @property
    def nodes(self) -> Mapping[str, NodeRecord]: ...
    @property
    def used(self) -> Mapping[str, Mapping[str, int]]: ...
    @property
    def host_ports(self) -> Mapping[str, Mapping[Any, int]]: ...  # core/fit/filters.py PortTable.by_node
    @property
    def pod_counts(self) -> PodCounts: ...
    @property
    def caches(self) -> StoreCaches: ...  # where the store keeps the indexes (core/fit/store_cache.py)


_MAX_INDEXES = 256

Key = tuple[int, int]


def fit_count(
    requests: Mapping[str, int],
    alloc: Mapping[str, int],
    used: Mapping[str, int] | None,
    extra: Mapping[str, int] | None = None,
) -> int:
    """How many pods with `requests` fit in alloc - used - extra (missing resources count as 0)."""
    n = _CAP
    for r, q in requests.items():
        if q <= 0:
            continue
        free = alloc.get(r, 0)
        if used is not None:
            free -= used.get(r, 0)
        if extra is not None:
            free -= extra.get(r, 0)
        room = free // q
        if room < n:
            if room <= 0:
                return 0
            n = room
    return n


def _key(spread: bool, pref: int, count: int) -> Key:
    return (-pref, -count if spread else count)


def _drop(buckets: dict[Key, dict[str, None]], k: Key, node: str) -> None:
    b = buckets[k]
    del b[node]
    if not b:
        del buckets[k]


def _pref(cls: SchedulingClass, node: NodeRecord, usage: Usage) -> int:
    """The node's preference for the class: preferred node affinity and taints, plus the pod affinity score."""
    pref = preference(cls, node) if (cls.preferred or node.taints) else 0
    return pref + score(cls, node.labels, usage) if cls.pod_preferred else pref


def touched_by(
    filters: tuple[NodeFilter, ...], cls: SchedulingClass, counts: PodCounts, changes: list[Change]
) -> set[str] | None:
    """The nodes whose limits the pod-count changes may move, for these (domain) filters; None: every node."""
    out: set[str] = set()
    for f in filters:
        nodes = f.touched(cls, counts, changes)
        if nodes is None:
            return None
        out |= nodes
    return out


def _usage(cluster: CapacitySource, overlay: Overlay | None = None) -> Usage:
    return Usage(cluster.host_ports, nodes=cluster.nodes, counts=cluster.pod_counts, overlay=overlay)


class ClassIndex:
    """A store cache (core/fit/store_cache.py `StoreCache[CapacitySource]`): `refresh` keeps it up to date."""

    __slots__ = ("aff", "blocked", "buckets", "cls", "count", "counts_at", "filters", "gen", "pos", "pref", "spread",
                 "watch")  # fmt: skip
    follows_log = True

    def __init__(self, cls: SchedulingClass, spread: bool) -> None:
        self.cls = cls
        self.filters = filters_for(cls)
        self.aff = tuple(f for f in self.filters if f.domains)  # limits that depend on whole topology domains
        scored = SCORER.applies(cls)  # and its preference (core/fit/pod_score.py): the index follows it
        self.watch = (*self.aff, SCORER) if scored else self.aff
        self.spread = spread
        self.gen = -1
        self.pos = 0
        self.counts_at = (-1, -1, 0)  # pod_counts (gen, owners_gen, log position) when last brought up to date
        self.pref: dict[str, int] = {}
        self.count: dict[str, int] = {}
        self.buckets: dict[Key, dict[str, None]] = {}
        self.blocked: dict[str, int] | None = (
            None  # statically blocked nodes by reason (core/transaction/messages.py fills it)
        )

    def rebuild(self, cluster: CapacitySource) -> None:
        cls = self.cls
        self.pref = {}
        self.count = {}
        self.buckets = {}
        self.blocked = None
        req = cls.requests
        used = cluster.used
        simple = not cls.constrained and not cls.tolerations and not cls.preferred and not cls.pod_preferred
        filters = self.filters
        usage = _usage(cluster)
        counts = cluster.pod_counts
        self.counts_at = (counts.gen, counts.owners_gen, counts.log_end())
        for name, node in cluster.nodes.items():
            if simple and not node.taints and not node.unschedulable:
                pref = 0
            else:
                if static_block(cls, node) is not None:
                    continue
                pref = _pref(cls, node, usage)
            self.pref[name] = pref
            c = fit_count(req, node.allocatable, used.get(name))
            if filters and c:
                c = min(c, limit(filters, cls, name, usage))
            self.count[name] = c
            if c:
                k = _key(self.spread, pref, c)
                b = self.buckets.get(k)
                if b is None:
                    b = self.buckets[k] = {}
                b[name] = None

    def _domain_changes(self, cluster: CapacitySource) -> set[str] | None:
        """Nodes whose affinity limit may have moved since the last sync (None: rebuild)."""
        counts = cluster.pod_counts
        gen, owners_gen, pos = self.counts_at
        if gen != counts.gen or owners_gen != counts.owners_gen:
            return None
        log = counts.changes_since(pos)
        if log is None:
            return None
        self.counts_at = (gen, owners_gen, counts.log_end())
        return touched_by(self.watch, self.cls, counts, log) if log else set()

    def update(self, cluster: CapacitySource, log: list[str]) -> None:
        """Recompute the nodes the accounting log names and those whose domain limits or score moved (the pod
        counts' log); a rebuild when the pod counts cannot say."""
        if not self.watch and not log:
            return
        more = self._domain_changes(cluster) if self.watch else set()
        if more is None:
            self.rebuild(cluster)
            return
        # in log order, not set order: a bucket's order breaks ties between equal nodes, so it must not depend on
        # the process's string hash seed (the same cluster history gives the same choices in every process)
        changed = dict.fromkeys(log)
        changed.update(dict.fromkeys(sorted(more)))
        cls = self.cls
        filters = self.filters
        usage = _usage(cluster)
        for name in changed:
            pref = self.pref.get(name)
            if pref is None:
                continue
            node = cluster.nodes[name]
            c = fit_count(cls.requests, node.allocatable, cluster.used.get(name))
            if filters and c:
                c = min(c, limit(filters, cls, name, usage))
            old = self.count[name]
            new = _pref(cls, node, usage) if cls.pod_preferred else pref
            if c == old and new == pref:
                continue
            self.count[name], self.pref[name] = c, new
            if old:
                _drop(self.buckets, _key(self.spread, pref, old), name)
            if c:
                self.buckets.setdefault(_key(self.spread, new, c), {})[name] = None


INDEXES: CacheKind[tuple[int, bool], ClassIndex] = CacheKind("capacity", ClassIndex)  # by (class id, spread)


def class_index(cluster: CapacitySource, cls: SchedulingClass, *, spread: bool) -> ClassIndex:
    """The class's index, synced; the least recently used entries of the store's caches (of any kind, as they
    share one order) are dropped past _MAX_INDEXES when a new index is made."""
    key = (cls.id, spread)
    idx = cluster.caches.use(INDEXES, key, lambda: ClassIndex(cls, spread), bound=_MAX_INDEXES)
    refresh(idx, cluster)
    return idx


class ClassView:
    """A copy-on-write view of a ClassIndex reflecting the workspace's tentative usage."""

    __slots__ = ("_owned", "buckets", "count", "idx")

    def __init__(self, idx: ClassIndex) -> None:
        self.idx = idx
        self.count: dict[str, int] = {}  # overrides of idx.count
        self.buckets: dict[Key, dict[str, None]] = dict(idx.buckets)
        self._owned: set[Key] = set()

    def count_of(self, node: str) -> int:
        c = self.count.get(node)
        return self.idx.count.get(node, 0) if c is None else c

    def _bucket(self, k: Key) -> dict[str, None]:
        b = self.buckets.get(k)
        if k not in self._owned:
            b = dict(b) if b is not None else {}
            self.buckets[k] = b
            self._owned.add(k)
        elif b is None:
            b = self.buckets[k] = {}
        return b

    def set_count(self, node: str, c: int) -> None:
        pref = self.idx.pref.get(node)
        if pref is None:
            return
        old = self.count_of(node)
        if old == c:
            return
        self.count[node] = c
        spread = self.idx.spread
        if old:
            k = _key(spread, pref, old)
            b = self._bucket(k)
            b.pop(node, None)
            if not b:
                del self.buckets[k]
                self._owned.discard(k)
        if c:
            self._bucket(_key(spread, pref, c))[node] = None

    def ordered(self) -> Iterator[tuple[str, int]]:
        """(node, count) by ascending score key, skipping nodes that are full. Do not mutate while iterating."""
        for k in sorted(self.buckets):
            for node in self.buckets[k]:
                yield node, abs(k[1])

    def capacity(self) -> dict[str, int]:
        return {n: c for k, b in self.buckets.items() for n in b for c in (abs(k[1]),)}

    def slots(self) -> int:
        return sum(abs(k[1]) * len(b) for k, b in self.buckets.items())


@dataclass(slots=True)
class _Undo:
    node: str
    delta: Mapping[str, int]
    sign: int
    ports: tuple[HostPort, ...]
    cls: SchedulingClass | None
    times: int


class Workspace:
    def __init__(self, cluster: CapacitySource, *, spread: bool) -> None:
        self.cluster = cluster
        self.spread = spread
        self.extra: dict[str, Resources] = {}
        self.views: dict[int, ClassView] = {}
        self.overlay = Overlay(cluster.pod_counts)  # pods placed this cycle, for pod selectors (core/fit/pod_counts.py)
        self.usage = _usage(cluster, self.overlay)  # what node filters see (what was placed this cycle included)
        # the cycle's one undo log: placements, device takes and the session's own undos (`record`), in order
        self._undo: list[_Undo | DeviceTake | Callable[[], None]] = []
        self._changes: list[Change] = []  # every change the cycle's placements made to the pod counts
        self._violations: list[SchedulingClass] = []

    def view(self, cls: SchedulingClass) -> ClassView:
        v = self.views.get(cls.id)
        if v is None:
            v = self.views[cls.id] = ClassView(class_index(self.cluster, cls, spread=self.spread))
            touched: set[str] | None = set()
            if v.idx.aff and self._changes:  # the cycle's placements seen by pod selectors
                self._changes += self.overlay.catch_up()  # counters the new index registered count them first
                touched = touched_by(v.idx.aff, cls, self.cluster.pod_counts, self._changes)
            for node in v.idx.pref if touched is None else (*self.extra, *touched):
                self._refresh(v, node)
        return v

    def _refresh(self, v: ClassView, node: str) -> None:
        rec: NodeRecord | None = self.cluster.nodes.get(node)
        if rec is None or node not in v.idx.pref:
            return
        idx = v.idx
        c = fit_count(idx.cls.requests, rec.allocatable, self.cluster.used.get(node), self.extra.get(node))
        if idx.filters and c:
            c = min(c, limit(idx.filters, idx.cls, node, self.usage))
        v.set_count(node, c)

    def _change(self, u: _Undo, sign: int) -> None:
        node = u.node
        e = self.extra.get(node)
        if e is None:
            e = self.extra[node] = {}
        for r, q in u.delta.items():
            e[r] = e.get(r, 0) + sign * q
        if u.ports:
            counts: PortCounts = self.usage.extra_ports.setdefault(node, {})
            add_ports(counts, u.ports, sign)
        touched = self._count(u.cls, node, sign, u.times) if u.cls is not None else []
        self._changes += touched
        for v in self.views.values():
            if v.idx.aff and touched:
                nodes = touched_by(v.idx.aff, v.idx.cls, self.cluster.pod_counts, touched)
                for name in v.idx.pref if nodes is None else nodes:
                    self._refresh(v, name)
            self._refresh(v, node)

    def _count(self, cls: SchedulingClass, node: str, sign: int, times: int) -> list[Change]:
        """Count the class's pods in the overlay (pod selectors see them); the changes made."""
        if not cls.namespace and not cls.anti_affinity:
            return []  # no pod selector reads pods
        info = PodInfo(cls.namespace, cls.labels, cls.anti_affinity)
        out: list[Change] = []
        for _ in range(times):
            out.extend(self.overlay.add(node, info, sign))
        return out

    def place(
        self,
        node: str,
        requests: Mapping[str, int],
        times: int = 1,
        ports: tuple[HostPort, ...] = (),
        *,
        cls: SchedulingClass | None = None,
    ) -> None:
        """Take `times` pods' requests (and host ports: a class with ports is placed once per node); with `cls`,
        the pods are seen by pod selectors (pod affinity) too."""
        view = self.views.get(cls.id) if cls is not None and coupled(cls) else None
        if cls is not None and view is not None and view.count_of(node) < times:
            self._violations.append(cls)  # a plan made from counts an earlier placement lowered
        if times != 1:
            requests, ports = {r: q * times for r, q in requests.items()}, ports * times
        u = _Undo(node, requests, 1, ports, cls, times)
        self._change(u, 1)
        self._undo.append(u)

    def release(
        self,
        node: str,
        requests: Mapping[str, int],
        ports: tuple[HostPort, ...] = (),
        *,
        cls: SchedulingClass | None = None,
    ) -> None:
        u = _Undo(node, requests, -1, ports, cls, 1)
        self._change(u, -1)
        self._undo.append(u)

    def take_devices(self, book: DeviceBook, fit: PodFit) -> None:
        """Take a pod's claims tentatively (core/devices/ledger.py): undone by `rollback` with its placement."""
        self._undo.append(book.take(fit))

    def take_violations(self) -> list[SchedulingClass]:
        """Classes placed on a node whose count was lower than the placement (cleared by the call)."""
        out, self._violations = self._violations, []
        return out

    def record(self, undo: Callable[[], None]) -> None:
        """Log the undo of a change made outside the workspace (the session's plan and bookkeeping): `rollback`
        runs it in its place among the placements."""
        self._undo.append(undo)

    def begin(self) -> int:
        return len(self._undo)

    def rollback(self, mark: int) -> None:
        """Undo everything logged since `mark`, newest first."""
        while len(self._undo) > mark:
            u = self._undo.pop()
            if isinstance(u, _Undo):
                self._change(u, -u.sign)
            elif isinstance(u, DeviceTake):
                u.book.undo(u)
            else:
                u()

    def free_of(self, node: str, resources: Mapping[str, int]) -> Resources:
        """`free(node)`, componentwise min with `resources`, only where positive (what a hold may take there)."""
        alloc = self.cluster.nodes[node].allocatable
        used, extra = self.cluster.used.get(node), self.extra.get(node)
        out: Resources = {}
        for r, q in resources.items():
            free = alloc.get(r, 0)
            if used:
                free -= used.get(r, 0)
            if extra:
                free -= extra.get(r, 0)
            m = q if q < free else free
            if m > 0:
                out[r] = m
        return out

    def free(self, node: str) -> Resources:
        rec = self.cluster.nodes[node]
        out = dict(rec.allocatable)
        for src in (self.cluster.used.get(node), self.extra.get(node)):
            if src:
                for r, q in src.items():
                    out[r] = out.get(r, 0) - q
        return out
