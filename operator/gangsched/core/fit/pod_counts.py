"""Counts of the pods matching a selector, per node and per topology domain, kept incrementally: the shared index of
the filters that look at other pods (InterPodAffinity, PodTopologySpread).

Contract:
- A matcher is a tuple of `PodSelector`s that must all match; a nil selector matches nothing.
- `PodCounts(nodes)` lives in the store, which calls `charge(pod_key, node, info)` exactly while it charges the
  pod's resources, and `node_changed`. `counter(matcher, keys=(), *, leaving=True) -> Counter` is registered
  lazily; a Counter gives `by_node`, `domain(key, value)`, `domains(key)`, `key_total`, `total`.
- `owners()`: existing pods' required anti-affinity terms; change log `changes_since(pos)` (None: rebuild), `gen`.
- `Overlay(base)`: a cycle's tentative placements, read summed with the base; `catch_up()` replays them for
  counters registered later. Caveat: a per-member label read by a selector splits a gang into classes.
Pure bookkeeping, no I/O. More: docs/modules.md#corefitpod_countspy.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import NamedTuple

from gangsched.core.records.records import NamespaceLabels, NodeRecord, PodSelector, PodTerm

Labels = tuple[tuple[str, str], ...]
Change = tuple[int, str | None]


Matcher = tuple[PodSelector, ...]


def matches_all(matcher: Matcher, namespace: str, labels: Mapping[str, str], spaces: NamespaceLabels) -> bool:
    return all(s.matches(namespace, labels, spaces) for s in matcher)


class PodInfo(NamedTuple):
    namespace: str
    labels: Labels
    anti: tuple[PodTerm, ...] = ()
    leaving: bool = False


class Counter:
    __slots__ = ("by_domain", "by_node", "id", "key", "key_total", "leaving", "total")

    def __init__(self, cid: int, key: object, leaving: bool) -> None:
        self.id = cid
        self.key = key  # the matcher, or an PodTerm for an owners counter
        self.leaving = leaving  # pods being deleted count
        self.by_node: dict[str, int] = {}
        self.by_domain: dict[str, dict[str, int]] = {}
        self.key_total: dict[str, int] = {}  # tracked key -> matched pods on nodes that have the label
        self.total = 0

    def domain(self, key: str, value: str) -> int:
        return self.by_domain[key].get(value, 0)

    def domains(self, key: str) -> Mapping[str, int]:
        return self.by_domain[key]


def _bump(counts: dict[str, int], key: str, delta: int) -> None:
    n = counts.get(key, 0) + delta
    if n:
        counts[key] = n
    else:
        del counts[key]


class PodCounts:
    def __init__(self, nodes: Mapping[str, NodeRecord]) -> None:
        self.nodes = nodes
        self.gen = 0
        self.owners_gen = 0
        self._pods: dict[str, tuple[str, PodInfo]] = {}  # charged pod -> (node, info)
        self._counters: dict[object, Counter] = {}  # (matcher, leaving) or PodTerm -> counter
        self.matchers: list[tuple[Counter, Matcher]] = []
        self.owners_map: dict[PodTerm, Counter] = {}
        self._domains: dict[str, dict[str, dict[str, None]]] = {}  # tracked key -> value -> nodes
        self._log: list[Change] = []
        self._log_base = 0
        self.namespaces: dict[str, dict[str, str]] = {}  # namespace -> labels (for namespace selectors)
        self.memo: dict[object, object] = {}  # the filters' per-class state over these counts (theirs to key)

    # ----- registration -----
    def counter(self, matcher: Matcher, keys: Iterable[str] = (), *, leaving: bool = True) -> Counter:
        c = self._counters.get((matcher, leaving))
        if c is None:
            c = self._counters[(matcher, leaving)] = Counter(len(self._counters), matcher, leaving)
            self.matchers.append((c, matcher))
            self._scan(c, matcher)
        for key in keys:
            self._track(c, key)
        return c

    def _scan(self, c: Counter, matcher: Matcher) -> None:
        leaving, spaces = c.leaving, self.namespaces
        for node, info in self._pods.values():
            if (leaving or not info.leaving) and matches_all(matcher, info.namespace, dict(info.labels), spaces):
                _bump(c.by_node, node, 1)
                c.total += 1

    def set_namespace(self, name: str, labels: Mapping[str, str] | None) -> None:
        """A namespace's labels (None: gone). Counters whose selectors read namespace labels count again (`gen`
        moves: the capacity indexes rebuild)."""
        if self.namespaces.get(name) == labels:
            return
        if labels is None:
            del self.namespaces[name]
        else:
            self.namespaces[name] = dict(labels)
        for c, matcher in self.matchers:
            if any(s.namespace_selector is not None for s in matcher):
                keys = list(c.by_domain)
                c.by_node, c.by_domain, c.key_total, c.total = {}, {}, {}, 0
                self._scan(c, matcher)
                for key in keys:
                    self._track(c, key)
        self.gen += 1

    def _track(self, c: Counter, key: str) -> None:
        if key in c.by_domain:
            return
        if key not in self._domains:
            values: dict[str, dict[str, None]] = {}
            for name, rec in self.nodes.items():
                value = rec.labels.get(key)
                if value is not None:
                    values.setdefault(value, {})[name] = None
            self._domains[key] = values
        sums: dict[str, int] = {}
        for node, n in c.by_node.items():
            found = self.nodes.get(node)
            value = found.labels.get(key) if found is not None else None
            if value is not None:
                sums[value] = sums.get(value, 0) + n
        c.by_domain[key] = sums
        c.key_total[key] = sum(sums.values())

    def owners(self) -> Mapping[PodTerm, Counter]:
        return self.owners_map

    def owner(self, term: PodTerm) -> Counter:
        c = self.owners_map.get(term)
        if c is None:
            c = self.owners_map[term] = self._counters[term] = Counter(len(self._counters), term, True)
            self._track(c, term.topology_key)
            self.owners_gen += 1
        return c

    def nodes_in(self, key: str, value: str) -> Iterable[str]:
        return self._domains.get(key, {}).get(value, {})

    # ----- changes -----
    def charge(self, pod_key: str, node: str | None, info: PodInfo | None) -> None:
        """The pod is counted on `node` with `info` (None: nowhere). Unchanged: nothing to do."""
        old = self._pods.get(pod_key)
        if old is not None and node is not None and old[0] == node and old[1] == info:
            return
        if old is not None:
            del self._pods[pod_key]
            self._apply(old[0], old[1], -1)
        if node is not None and info is not None:
            self._pods[pod_key] = (node, info)
            self._apply(node, info, 1)

    def charge_pod(
        self, pod_key: str, node: str, namespace: str, labels: Labels, anti: tuple[PodTerm, ...], leaving: bool
    ) -> None:
        """`charge` for the store's hot path: nothing is built when the pod is counted as it is already."""
        old = self._pods.get(pod_key)
        if old is None:
            if not anti and not self.matchers:  # nothing counts it yet: remembered for later registrations
                self._pods[pod_key] = (node, PodInfo(namespace, labels, anti, leaving))
                return
        elif old[0] == node:
            info = old[1]
            if info.labels is labels and info.anti is anti and info.leaving is leaving and info.namespace == namespace:
                return
        self.charge(pod_key, node, PodInfo(namespace, labels, anti, leaving))

    def _apply(self, node: str, info: PodInfo, sign: int) -> None:
        for term in info.anti:
            self._move(self.owner(term), node, sign)
        if not self.matchers:
            return
        labels = dict(info.labels)
        for c, matcher in self.matchers:
            if (c.leaving or not info.leaving) and matches_all(matcher, info.namespace, labels, self.namespaces):
                self._move(c, node, sign)

    def _move(self, c: Counter, node: str, sign: int) -> None:
        _bump(c.by_node, node, sign)
        c.total += sign
        crossed = c.total == 0 or (c.total == 1 and sign > 0)
        if c.by_domain:
            rec = self.nodes.get(node)
            if rec is not None:
                for key, sums in c.by_domain.items():
                    value = rec.labels.get(key)
                    if value is not None:
                        _bump(sums, value, sign)
                        n = c.key_total[key] = c.key_total[key] + sign
                        crossed = crossed or n == 0 or (n == 1 and sign > 0)
        self._log.append((c.id, node))
        if crossed:
            self._log.append((c.id, None))
        if len(self._log) > 4 * len(self.nodes) + 10_000:
            self._log_base += len(self._log)
            self._log.clear()

    def node_changed(self, name: str, old: NodeRecord | None, new: NodeRecord | None) -> None:
        """A node came, went or changed labels: domain sums and domain members follow (`gen` moves when a sum
        moved)."""
        for key, values in self._domains.items():
            before = old.labels.get(key) if old is not None else None
            after = new.labels.get(key) if new is not None else None
            if before == after:
                continue
            if before is not None:
                members = values[before]
                members.pop(name, None)
                if not members:
                    del values[before]
            if after is not None:
                values.setdefault(after, {})[name] = None
            for c in self._counters.values():
                n = c.by_node.get(name, 0)
                sums = c.by_domain.get(key)
                if n and sums is not None:
                    if before is not None:
                        _bump(sums, before, -n)
                        c.key_total[key] -= n
                    if after is not None:
                        _bump(sums, after, n)
                        c.key_total[key] += n
                    self.gen += 1

    def log_end(self) -> int:
        return self._log_base + len(self._log)

    def changes_since(self, position: int) -> list[Change] | None:
        return None if position < self._log_base else self._log[position - self._log_base :]

    def __len__(self) -> int:
        return len(self._pods)


class Overlay:
    """Tentative placements of one cycle on top of a PodCounts (never changes its counts)."""

    def __init__(self, base: PodCounts) -> None:
        self.base = base
        self._added: list[tuple[str, PodInfo, int, dict[str, str]]] = []  # (node, info, sign, labels)
        self._node: dict[int, dict[str, int]] = {}
        self._domain: dict[tuple[int, str], dict[str, int]] = {}  # built lazily from _node
        self._total: dict[int, int] = {}
        self._seen: dict[int, int] = {}  # counter id -> how many of _added it counts

    def add(self, node: str, info: PodInfo, sign: int) -> list[Change]:
        """Count a tentative placement (sign 1) or release (-1); the changes it makes (see the docstring)."""
        self._added.append((node, info, sign, dict(info.labels)))
        for term in info.anti:
            self.base.owner(term)
        out: list[Change] = []
        for c in self._counters():
            out.extend(self._catch_up(c))
        return out

    def catch_up(self) -> list[Change]:
        """Count the placements into counters registered since the last `add` (the changes that makes)."""
        out: list[Change] = []
        for c in self._counters():
            out.extend(self._catch_up(c))
        return out

    def _counters(self) -> Iterator[Counter]:
        yield from (c for c, _ in self.base.matchers)
        yield from self.base.owners_map.values()

    def _catch_up(self, c: Counter) -> list[Change]:
        """Count the placements added since the counter last looked (all of them for a new counter)."""
        seen = self._seen.get(c.id, 0)
        out: list[Change] = []
        if seen == len(self._added):
            return out
        owner = isinstance(c.key, PodTerm)
        spaces = self.base.namespaces
        for node, info, sign, labels in self._added[seen:]:
            if owner:
                hit = c.key in info.anti
            else:
                matcher: Matcher = c.key  # type: ignore[assignment]
                hit = (c.leaving or not info.leaving) and matches_all(matcher, info.namespace, labels, spaces)
            if hit:
                out.extend(self._move(c, node, sign))
        self._seen[c.id] = len(self._added)
        return out

    def _move(self, c: Counter, node: str, sign: int) -> list[Change]:
        rec = self.base.nodes.get(node)
        keyed = [(k, v) for k in c.by_domain if rec is not None and (v := rec.labels.get(k)) is not None]
        before = [c.total + self._total.get(c.id, 0)] + [self._key_sum(c, k) for k, _ in keyed]
        _bump(self._node.setdefault(c.id, {}), node, sign)
        self._total[c.id] = self._total.get(c.id, 0) + sign
        for key, value in keyed:
            _bump(self._domain[(c.id, key)], value, sign)  # built by _key_sum
        out: list[Change] = [(c.id, node)]
        if any((n == 0) != (n + sign == 0) for n in before):
            out.append((c.id, None))
        return out

    def _key_sum(self, c: Counter, key: str) -> int:
        return c.key_total[key] + sum(self._domain_extra(c, key).values())

    def key_total(self, c: Counter, key: str) -> int:
        """Matched pods (base + tentative) on the nodes that have label `key` (tracked)."""
        self._catch_up(c)
        return self._key_sum(c, key)

    def node_count(self, c: Counter, node: str) -> int:
        self._catch_up(c)
        extra = self._node.get(c.id)
        return c.by_node.get(node, 0) + (extra.get(node, 0) if extra else 0)

    def domain(self, c: Counter, key: str, value: str) -> int:
        self._catch_up(c)
        return c.by_domain[key].get(value, 0) + self._domain_extra(c, key).get(value, 0)

    def domains(self, c: Counter, key: str) -> dict[str, int]:
        """value -> count (base + tentative) over the domains of `key` (zero absent)."""
        self._catch_up(c)
        out = dict(c.by_domain[key])
        for value, n in self._domain_extra(c, key).items():
            _bump(out, value, n)
        return out

    def _domain_extra(self, c: Counter, key: str) -> dict[str, int]:
        sums = self._domain.get((c.id, key))
        if sums is None:
            sums = self._domain[(c.id, key)] = {}
            for node, n in self._node.get(c.id, {}).items():
                rec = self.base.nodes.get(node)
                value = rec.labels.get(key) if rec is not None else None
                if value is not None and n:
                    _bump(sums, value, n)
        return sums

    def total(self, c: Counter) -> int:
        self._catch_up(c)
        return c.total + self._total.get(c.id, 0)
