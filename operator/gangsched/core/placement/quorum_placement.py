"""Placement of a gang whose pending pods have several scheduling classes or roles with minimums: a quorum whenever one
exists on the free capacity (within core/placement/quorum.py's bound), every role's minimum met.

Contract: `place_quorum(session, spec, pods, counted) -> (placed, shortfalls, None)` takes capacity in the workspace
for every pod placed; `counted` counts the roles of the gang's bound and reserved members.
1. Greedy pass, quorum-first (each role's needed pods, then the others, larger classes first); kept when every pod
   fits, the placed pods make a quorum, or beyond the exact search's bound.
2. Otherwise rolled back and searched exactly; the quorum found is placed, then the other pods fill what is left.
   No quorum: the greedy pass again. Shortfalls are per class. A gang with host ports keeps the greedy pass (the
   exact search counts resources only). More: docs/modules.md#coreplacementquorum_placementpy.
"""

from __future__ import annotations

from collections import Counter

from gangsched.core.fit.affinity import coupled
from gangsched.core.placement.pickers import Outcome, Placed, class_batches, place_batches
from gangsched.core.placement.quorum import MAX_CLASSES, MAX_NODES, Candidate, Group, Quorum, search
from gangsched.core.records.records import PodRecord, SchedulingClass, pods_by_class
from gangsched.core.topology import TopologyTree
from gangsched.core.transaction.messages import Shortfall
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.gangspec import GangSpec
from gangsched.core.values.resources import PODS

_SMALL = ("cpu", "memory", "ephemeral-storage", PODS)


def place_quorum(session: CycleSession, spec: GangSpec, pods: list[PodRecord], counted: Counter[str | None]) -> Outcome:
    demands = {role: m - counted.get(role, 0) for role, m in spec.roles if m > counted.get(role, 0)}
    classes = class_order(pods)
    order = _runs(_quorum_first(pods, demands, classes))
    mark = session.workspace.begin()
    placed, _, _ = place_batches(session, order, partial=True)
    short = _shortfalls(pods, placed)
    if not short or quorum_met(spec, counted, placed) or _beyond_bound(session, classes, placed):
        return placed, short, None
    if any(cls.host_ports or coupled(cls) for cls in classes):  # the exact search plans from per-node counts
        return placed, short, None
    session.workspace.rollback(mark)
    need = max(spec.min_member - sum(counted.values()), sum(demands.values()))
    index = {cls.id: i for i, cls in enumerate(classes)}
    grouped: dict[tuple[int, str | None], list[PodRecord]] = {}
    for pod in pods:
        role = pod.role if pod.role in demands else None
        grouped.setdefault((index[pod.sclass.id], role), []).append(pod)
    keys = sorted(grouped, key=lambda k: (k[1] is None, k[0]))
    groups = [Group(c, role, len(grouped[(c, role)])) for c, role in keys]
    candidates = fitting_candidates(session, classes)
    quorum = search([cls.requests for cls in classes], groups, demands, need, candidates).quorum
    if quorum is None:  # none exists (or the search ran out of steps): the greedy placement again
        placed, _, _ = place_batches(session, order, partial=True)
        return placed, _shortfalls(pods, placed), None
    chosen = [pod for g, k in enumerate(quorum.taken) for pod in grouped[keys[g]][:k]]
    return _apply(session, pods, classes, chosen, quorum)


def _beyond_bound(session: CycleSession, classes: list[SchedulingClass], placed: Placed) -> bool:
    """More than MAX_CLASSES classes, or more than MAX_NODES candidate nodes before the greedy pass (the nodes it
    used and those where some class still fits)."""
    if len(classes) > MAX_CLASSES:
        return True
    nodes = {node for _, node in placed}
    for cls in classes:
        for node, _ in session.workspace.view(cls).ordered():
            nodes.add(node)
            if len(nodes) > MAX_NODES:
                return True
    return len(nodes) > MAX_NODES


def quorum_met(spec: GangSpec, counted: Counter[str | None], placed: Placed) -> bool:
    """Held plus placed members make minMember and every role's minimum."""
    counts = Counter(counted)
    counts.update(pod.role for pod, _ in placed)
    return counts.total() >= spec.min_member and all(counts.get(role, 0) >= m for role, m in spec.roles)


def class_order(pods: list[PodRecord]) -> list[SchedulingClass]:
    """The pods' scheduling classes, larger first."""
    return sorted({pod.sclass.id: pod.sclass for pod in pods}.values(), key=_size, reverse=True)


def _size(cls: SchedulingClass) -> tuple[int, int, int]:
    """Larger classes first: extended resources (GPUs...), then cpu, then memory."""
    req = cls.requests
    return sum(q for r, q in req.items() if r not in _SMALL), req.get("cpu", 0), req.get("memory", 0)


def _runs(pods: list[PodRecord]) -> list[list[PodRecord]]:
    out: list[list[PodRecord]] = []
    for pod in pods:
        if out and out[-1][0].sclass.id == pod.sclass.id:
            out[-1].append(pod)
        else:
            out.append([pod])
    return out


def fitting_candidates(
    session: CycleSession, classes: list[SchedulingClass], tree: TopologyTree | None = None
) -> list[Candidate]:
    """The nodes where at least one class fits, as the exact search's candidates (their free resources of the
    classes' kinds, the classes that fit there): in the classes' view order (fullest first for the first class);
    with a `tree`, only its nodes, in natural name order."""
    allowed: dict[str, set[int]] = {}
    for i, cls in enumerate(classes):
        for node, _ in session.workspace.view(cls).ordered():
            if tree is None or node in tree.node_index:
                allowed.setdefault(node, set()).add(i)
    resources = {r for cls in classes for r in cls.requests}
    nodes = list(allowed) if tree is None else sorted(allowed, key=tree.node_index.__getitem__)
    out = []
    for node in nodes:
        free = session.workspace.free(node)
        out.append(Candidate(node, {r: free.get(r, 0) for r in resources}, frozenset(allowed[node])))
    return out


def _shortfalls(pods: list[PodRecord], placed: Placed) -> list[Shortfall]:
    total = pods_by_class(pods)
    done = Counter(pod.sclass.id for pod, _ in placed)
    return [Shortfall(ms[0].sclass, len(ms), done[cid]) for cid, ms in total.items() if done[cid] < len(ms)]


def _apply(
    session: CycleSession, pods: list[PodRecord], classes: list[SchedulingClass], chosen: list[PodRecord], q: Quorum
) -> Outcome:
    by_class = pods_by_class(chosen)
    placed: Placed = []
    for node, c, count in q.assignment:
        cls = classes[c]
        take, by_class[cls.id] = by_class[cls.id][:count], by_class[cls.id][count:]
        session.workspace.place(node, cls.requests, count, cls.host_ports, cls=cls)
        placed.extend((pod, node) for pod in take)
    taken = {pod.key for pod in chosen}
    rest = [pod for pod in pods if pod.key not in taken]
    if rest:
        more, _, _ = place_batches(session, class_batches(rest), partial=True)
        placed.extend(more)
    return placed, _shortfalls(pods, placed), None


def _quorum_first(pods: list[PodRecord], demands: dict[str, int], classes: list[SchedulingClass]) -> list[PodRecord]:
    """The pods each role still needs (rank order), then the others, larger classes first (rank order within)."""
    first: list[PodRecord] = []
    for role, n in demands.items():
        first.extend([pod for pod in pods if pod.role == role][:n])
    taken = {pod.key for pod in first}
    order = {cls.id: i for i, cls in enumerate(classes)}
    return first + sorted((pod for pod in pods if pod.key not in taken), key=lambda p: order[p.sclass.id])
