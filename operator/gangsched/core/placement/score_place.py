"""Placing pods of a class with preferred pod affinity terms (kube-scheduler's InterPodAffinity score,
core/fit/pod_score.py) on the workspace: each pod where the score is highest, counting the pods placed before it.

Contract:
- `pick_scored(session, view, cls, need, only) -> Chosen`: places up to `need` pods one at a time, each on the
  node first by (-(preference + delta), the view's count key): delta is the score of the cycle's placements. The
  workspace takes what was chosen (`only`: the nodes allowed, None: every node). With the `spread` strategy, one pod
  per node per round.
- Cost: the view's nodes once, then O(touched groups x log groups) per pod (nodes grouped by their topology values,
  in a heap): never a pass over every node per pod. More: docs/modules.md#coreplacementscore_placepy.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Container

from gangsched.core.fit.capacity import ClassView
from gangsched.core.fit.pod_score import terms
from gangsched.core.records.records import SchedulingClass
from gangsched.core.transaction.session import CycleSession

Chosen = list[tuple[str, int]]
Sig = tuple[str | None, ...]  # a node's values of the terms' topology keys
Entry = tuple[int, int, str, int, Sig]  # (-(preference + delta), count key, head node, version, group)


class _Groups:
    def __init__(self, session: CycleSession, view: ClassView, cls: SchedulingClass, only: Container[str] | None):
        self.ws = session.workspace
        self.view = view
        counts = self.ws.overlay.base
        self.terms = terms(cls, counts)
        self.keys = tuple(sorted({key for _, _, key in self.terms}))
        own = dict(cls.labels)  # the keys whose domains the class's own pods move: its terms that match it
        moved = {
            t.topology_key for _, t in cls.pod_preferred if t.selector.matches(cls.namespace, own, counts.namespaces)
        }
        self.moved = tuple(i for i, key in enumerate(self.keys) if key in moved)
        self.nodes = session.store.nodes
        self.groups: dict[Sig, deque[str]] = {}
        for name, _ in view.ordered():
            if only is None or name in only:
                labels = self.nodes[name].labels
                self.groups.setdefault(tuple(labels.get(k) for k in self.keys), deque()).append(name)
        self.by_value: dict[tuple[int, str], list[Sig]] = {}  # (key index, value) -> the groups in that domain
        for sig in self.groups:
            for i, value in enumerate(sig):
                if value is not None:
                    self.by_value.setdefault((i, value), []).append(sig)
        self.heap: list[Entry] = []
        self.version: dict[Sig, int] = {}

    def delta(self, sig: Sig) -> int:
        """The score the cycle's placements add in the group's domains."""
        overlay, total = self.ws.overlay, 0
        for weight, c, key in self.terms:
            value = sig[self.keys.index(key)]
            if value is not None:
                total += weight * (overlay.domain(c, key, value) - c.by_domain[key].get(value, 0))
        return total

    def count_key(self, node: str) -> int:
        c = self.view.count_of(node)
        return -c if self.ws.spread else c

    def push(self, sig: Sig) -> None:
        """(Re-)key the group by its best node that still takes a pod."""
        q = self.groups[sig]
        while q and self.view.count_of(q[0]) <= 0:
            q.popleft()
        if q:
            head = q[0]
            ver = self.version[sig] = self.version.get(sig, 0) + 1
            pref = self.view.idx.pref[head] + self.delta(sig)
            heapq.heappush(self.heap, (-pref, self.count_key(head), head, ver, sig))

    def touched(self, node: str, sig: Sig) -> set[Sig]:
        out = {sig}
        labels = self.nodes[node].labels
        for i in self.moved:
            value = labels.get(self.keys[i])
            if value is not None:
                out.update(self.by_value.get((i, value), ()))
        return out


def pick_scored(
    session: CycleSession, view: ClassView, cls: SchedulingClass, need: int, only: Container[str] | None
) -> Chosen:
    g = _Groups(session, view, cls, only)
    for sig in g.groups:
        g.push(sig)
    out: Chosen = []
    while len(out) < need and g.heap:
        _, ckey, head, ver, sig = heapq.heappop(g.heap)
        if g.version.get(sig) != ver:
            continue  # stale
        q = g.groups[sig]
        if not q or q[0] != head or view.count_of(head) <= 0 or g.count_key(head) != ckey:
            g.push(sig)  # a count moved since (a filter, core/fit/filters.py): key it again
            continue
        g.ws.place(head, cls.requests, 1, cls.host_ports, cls=cls)
        out.append((head, 1))
        if g.ws.spread:
            q.rotate(-1)
        for t in g.touched(head, sig):
            g.push(t)
    return out
