"""kube-scheduler's InterPodAffinity filter for our pods, over the pod counts (core/fit/pod_counts.py), as a node
filter (core/fit/filters.py).

Contract:
- `InterPodAffinity.applies(cls)`: required pod (anti-)affinity terms, or a namespace other pods' terms may match.
- `limit(cls, node, usage)`: 0 when the node fails satisfyPodAffinity (first pod of a self-affine group excepted),
  satisfyPodAntiAffinity or satisfyExistingPodsAntiAffinity, with every pod counted (the store's and the cycle's
  overlay); else 1 when the class anti-matches itself, else unlimited. `reason` names the check.
- `state`, `relevant`, `touched(cls, counts, changes)`: the class's counters and the nodes their changes move (None:
  every node), which core/fit/capacity.py recomputes; `one_per_domain(cls)`: the message part;
  `coupled(cls)`: placing one can lower other nodes' limits. Pure. More: docs/modules.md#corefitaffinitypy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gangsched.core.fit.pod_counts import Change, Counter, Overlay, PodCounts, matches_all
from gangsched.core.records.records import NamespaceLabels, PodTerm, SchedulingClass

if TYPE_CHECKING:
    from gangsched.core.fit.usage import Usage

NAME = "InterPodAffinity"
_UNLIMITED = 1 << 30


@dataclass(slots=True)
class ClassState:
    affinity: Counter | None  # pods matching all the affinity terms
    anti: tuple[Counter, ...]  # pods matching each anti-affinity term
    self_affine: bool  # the class matches all its affinity terms
    self_anti: bool  # the class matches one of its anti-affinity terms
    gen: int  # the counts' generation it was computed for
    owners_gen: int = -1
    owners: list[tuple[PodTerm, Counter]] = field(default_factory=list)  # existing terms matching the class


def _matches(term: PodTerm, cls: SchedulingClass, spaces: NamespaceLabels) -> bool:
    return term.selector.matches(cls.namespace, dict(cls.labels), spaces)


def state(cls: SchedulingClass, counts: PodCounts) -> ClassState:
    memo = counts.memo
    st = memo.get((NAME, cls.id))
    spaces = counts.namespaces
    if not isinstance(st, ClassState) or st.gen != counts.gen:  # gen: namespace labels may have changed
        aff = None
        if cls.affinity:
            matcher = tuple(t.selector for t in cls.affinity)
            aff = counts.counter(matcher, {t.topology_key for t in cls.affinity})
        anti = tuple(counts.counter((t.selector,), [t.topology_key]) for t in cls.anti_affinity)
        labels = dict(cls.labels)
        mine = tuple(t.selector for t in cls.affinity)
        self_affine = bool(cls.affinity) and matches_all(mine, cls.namespace, labels, spaces)
        self_anti = any(_matches(t, cls, spaces) for t in cls.anti_affinity)
        st = memo[(NAME, cls.id)] = ClassState(aff, anti, self_affine, self_anti, counts.gen)
    if st.owners_gen != counts.owners_gen:
        st.owners = [(t, c) for t, c in counts.owners().items() if _matches(t, cls, spaces)]
        st.owners_gen = counts.owners_gen
    return st


def relevant(cls: SchedulingClass, counts: PodCounts) -> tuple[dict[int, tuple[str, ...]], int | None]:
    """({counter id: topology keys} whose domain changes move the class's limits, the id of the counter whose
    total going to or from zero moves every node's limit: the first pod of a self-affine class)."""
    st = state(cls, counts)
    out: dict[int, tuple[str, ...]] = {}
    if st.affinity is not None:
        out[st.affinity.id] = tuple({t.topology_key for t in cls.affinity})
    for t, c in zip(cls.anti_affinity, st.anti, strict=True):
        out[c.id] = (*out.get(c.id, ()), t.topology_key)
    for t, c in st.owners:
        out[c.id] = (*out.get(c.id, ()), t.topology_key)
    return out, st.affinity.id if st.affinity is not None and st.self_affine else None


def touched(cls: SchedulingClass, counts: PodCounts, changes: list[tuple[int, str | None]]) -> set[str] | None:
    """The nodes whose limit for the class the changes (core/fit/pod_counts.py log entries) may move; None: all."""
    rel, first = relevant(cls, counts)
    out: set[str] = set()
    seen: set[tuple[str, str]] = set()
    nodes = counts.nodes
    for cid, node in changes:
        keys = rel.get(cid)
        if keys is None:
            continue
        if node is None:
            if cid == first:
                return None
            continue
        rec = nodes.get(node)
        if rec is None:
            continue
        for key in keys:
            value = rec.labels.get(key)
            if value is not None and (key, value) not in seen:
                seen.add((key, value))
                out.update(counts.nodes_in(key, value))
    return out


def one_per_domain(cls: SchedulingClass) -> str | None:  # (namespace selectors aside: a message only)
    """Why a class that anti-matches itself fits once per domain (for "blocked by" messages), else None."""
    keys = [t.topology_key for t in cls.anti_affinity if _matches(t, cls, {})]
    return f"one pod per {keys[0]} ({NAME}: pod anti-affinity)" if keys else None


def coupled(cls: SchedulingClass) -> bool:
    return bool(cls.affinity or cls.anti_affinity)


def _domain(c: Counter, key: str, value: str, overlay: Overlay | None) -> int:
    return overlay.domain(c, key, value) if overlay is not None else c.by_domain[key].get(value, 0)


def _key_total(c: Counter, key: str, overlay: Overlay | None) -> int:
    return overlay.key_total(c, key) if overlay is not None else c.key_total[key]


def check(cls: SchedulingClass, labels: Mapping[str, str], counts: PodCounts, overlay: Overlay | None) -> str | None:
    """The first of kube-scheduler's checks a node (by its labels) fails, or None."""
    st = state(cls, counts)
    if st.affinity is not None:
        exist = True
        for t in cls.affinity:
            value = labels.get(t.topology_key)
            if value is None:
                return "pod affinity (topology key missing)"
            if exist and _domain(st.affinity, t.topology_key, value, overlay) <= 0:
                exist = False
        if not exist:
            anywhere = any(_key_total(st.affinity, t.topology_key, overlay) > 0 for t in cls.affinity)
            if anywhere or not st.self_affine:
                return "pod affinity"
    for t, c in zip(cls.anti_affinity, st.anti, strict=True):
        value = labels.get(t.topology_key)
        if value is not None and _domain(c, t.topology_key, value, overlay) > 0:
            return "pod anti-affinity"
    for t, c in st.owners:
        value = labels.get(t.topology_key)
        if value is not None and _domain(c, t.topology_key, value, overlay) > 0:
            return "existing pods' anti-affinity"
    return None


class InterPodAffinity:
    name = NAME
    domains = True

    def touched(self, cls: SchedulingClass, counts: PodCounts, changes: list[Change]) -> set[str] | None:
        return touched(cls, counts, changes)

    def applies(self, cls: SchedulingClass) -> bool:
        return bool(cls.affinity or cls.anti_affinity or cls.namespace)

    def _why(self, cls: SchedulingClass, node: str, usage: Usage) -> str | None:
        rec = usage.nodes.get(node)
        if rec is None or usage.counts is None:
            return None
        return check(cls, rec.labels, usage.counts, usage.overlay)

    def limit(self, cls: SchedulingClass, node: str, usage: Usage) -> int:
        counts = usage.counts
        if counts is None:
            return _UNLIMITED
        st = state(cls, counts)
        if st.affinity is None and not st.anti and not st.owners:
            return _UNLIMITED  # no term of its own and none of an existing pod matches it
        if self._why(cls, node, usage) is not None:
            return 0
        return 1 if st.self_anti else _UNLIMITED

    def reason(self, cls: SchedulingClass, node: str, usage: Usage) -> str | None:
        why = self._why(cls, node, usage)
        return None if why is None else f"{NAME}: {why}"
