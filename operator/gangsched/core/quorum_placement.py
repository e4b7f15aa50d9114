"""Placement of a gang whose pending pods have several scheduling classes or roles with minimums: a quorum
whenever one exists on the free capacity (within core/quorum.py's bound), every role's minimum met.

Contract: `place_quorum(session, spec, pods, held) -> (placed, shortfalls, None)` takes capacity in the
session's workspace for every pod placed (like core/placement.py's `place`); `held` counts the roles of the
gang's bound and reserved members (their total counts towards minMember).
1. Fast path: every class in turn (pickers.place_batches, no stop at a class short); kept when all pods fit or
   the pods placed already make a valid quorum (count >= minMember, every role's minimum).
2. Otherwise the workspace is rolled back to before step 1 and core/quorum.py searches, exactly within its bound
   (8 classes x 64 candidate nodes, a step budget), for how many pods of each (class, role) to take and where;
   the quorum found is placed on those nodes, then the other pods fill what is left (binpack/spread order).
   The exact step favours feasibility over the scoring strategy: the quorum's own nodes come from the search.
3. No quorum, or beyond the bound: a greedy placement, quorum-first: the pods each role still needs (rank
   order), then the larger classes first. Shortfalls are reported per class against all its pods.
"""

from __future__ import annotations

from collections import Counter

from gangsched.core.gangspec import GangSpec
from gangsched.core.messages import Shortfall
from gangsched.core.pickers import Outcome, Placed, place_batches
from gangsched.core.quorum import MAX_NODES, Candidate, Group, Quorum, search
from gangsched.core.records import PodRecord, SchedulingClass
from gangsched.core.resources import PODS
from gangsched.core.session import CycleSession

_SMALL = ("cpu", "memory", "ephemeral-storage", PODS)


def place_quorum(session: CycleSession, spec: GangSpec, pods: list[PodRecord], held: Counter[str | None]) -> Outcome:
    mark = session.workspace.begin()
    placed, short, _ = place_batches(session, _batches(pods), partial=True)
    if not short or quorum_met(spec, held, placed):
        return placed, short, None
    session.workspace.rollback(mark)
    demands = {role: m - held.get(role, 0) for role, m in spec.roles if m > held.get(role, 0)}
    need = max(spec.min_member - sum(held.values()), sum(demands.values()))
    classes = class_order(pods)
    index = {cls.id: i for i, cls in enumerate(classes)}
    grouped: dict[tuple[int, str | None], list[PodRecord]] = {}
    for pod in pods:
        role = pod.role if pod.role in demands else None
        grouped.setdefault((index[pod.sclass.id], role), []).append(pod)
    keys = sorted(grouped, key=lambda k: (k[1] is None, k[0]))
    groups = [Group(c, role, len(grouped[(c, role)])) for c, role in keys]
    nodes = _candidates(session, classes)
    quorum = None
    if nodes is not None:
        quorum = search([cls.requests for cls in classes], groups, demands, need, nodes).quorum
    if quorum is None:
        return _greedy(session, pods, demands, classes)
    chosen = [pod for g, k in enumerate(quorum.taken) for pod in grouped[keys[g]][:k]]
    return _apply(session, pods, classes, chosen, quorum)


def quorum_met(spec: GangSpec, held: Counter[str | None], placed: Placed) -> bool:
    """Held plus placed members make minMember and every role's minimum."""
    counts = Counter(held)
    counts.update(pod.role for pod, _ in placed)
    return counts.total() >= spec.min_member and all(counts.get(role, 0) >= m for role, m in spec.roles)


def class_order(pods: list[PodRecord]) -> list[SchedulingClass]:
    """The pods' scheduling classes, larger first."""
    return sorted({pod.sclass.id: pod.sclass for pod in pods}.values(), key=_size, reverse=True)


def _size(cls: SchedulingClass) -> tuple[int, int, int]:
    """Larger classes first: extended resources (GPUs...), then cpu, then memory."""
    req = cls.requests
    return sum(q for r, q in req.items() if r not in _SMALL), req.get("cpu", 0), req.get("memory", 0)


def _batches(pods: list[PodRecord]) -> list[list[PodRecord]]:
    """Runs of consecutive pods of one class, classes merged in the order they first appear."""
    by_class: dict[int, list[PodRecord]] = {}
    for pod in pods:
        by_class.setdefault(pod.sclass.id, []).append(pod)
    return list(by_class.values())


def _runs(pods: list[PodRecord]) -> list[list[PodRecord]]:
    out: list[list[PodRecord]] = []
    for pod in pods:
        if out and out[-1][0].sclass.id == pod.sclass.id:
            out[-1].append(pod)
        else:
            out.append([pod])
    return out


def _candidates(session: CycleSession, classes: list[SchedulingClass]) -> list[Candidate] | None:
    """Nodes where at least one class fits (fullest first for the first class), None beyond MAX_NODES."""
    allowed: dict[str, set[int]] = {}
    for i, cls in enumerate(classes):
        for node, _ in session.workspace.view(cls).ordered():
            allowed.setdefault(node, set()).add(i)
            if len(allowed) > MAX_NODES:
                return None
    resources = {r for cls in classes for r in cls.requests}
    out = []
    for node, which in allowed.items():
        free = session.workspace.free(node)
        out.append(Candidate(node, {r: free.get(r, 0) for r in resources}, frozenset(which)))
    return out


def _shortfalls(pods: list[PodRecord], placed: Placed) -> list[Shortfall]:
    total: dict[int, list[PodRecord]] = {}
    for pod in pods:
        total.setdefault(pod.sclass.id, []).append(pod)
    done = Counter(pod.sclass.id for pod, _ in placed)
    return [Shortfall(ms[0].sclass, len(ms), done[cid]) for cid, ms in total.items() if done[cid] < len(ms)]


def _apply(
    session: CycleSession, pods: list[PodRecord], classes: list[SchedulingClass], chosen: list[PodRecord], q: Quorum
) -> Outcome:
    by_class: dict[int, list[PodRecord]] = {}
    for pod in chosen:
        by_class.setdefault(pod.sclass.id, []).append(pod)
    placed: Placed = []
    for node, c, count in q.assignment:
        cls = classes[c]
        take, by_class[cls.id] = by_class[cls.id][:count], by_class[cls.id][count:]
        session.workspace.place(node, cls.requests, count)
        placed.extend((pod, node) for pod in take)
    taken = {pod.key for pod in chosen}
    rest = [pod for pod in pods if pod.key not in taken]
    if rest:
        more, _, _ = place_batches(session, _batches(rest), partial=True)
        placed.extend(more)
    return placed, _shortfalls(pods, placed), None


def _greedy(
    session: CycleSession, pods: list[PodRecord], demands: dict[str, int], classes: list[SchedulingClass]
) -> Outcome:
    """Quorum-first: the pods each role still needs, then the larger classes first."""
    first: list[PodRecord] = []
    for role, n in demands.items():
        first.extend([pod for pod in pods if pod.role == role][:n])
    taken = {pod.key for pod in first}
    order = {cls.id: i for i, cls in enumerate(classes)}
    rest = sorted((pod for pod in pods if pod.key not in taken), key=lambda p: order[p.sclass.id])
    placed, _, _ = place_batches(session, _runs(first) + _runs(rest), partial=True)
    return placed, _shortfalls(pods, placed), None
