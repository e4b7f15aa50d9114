"""Node pickers for pods of one scheduling class on the cycle's workspace (no gang rules, no topology).

Contract: `place_batches(session, batches, partial=...) -> (placed, shortfalls, None)`: each batch (pods of one
scheduling class, in order) takes capacity in the workspace: binpack takes the fullest node that fits as many as
it can; spread deals one pod per node round the emptiest nodes; preferred affinity and PreferNoSchedule taints
rank first (the order of core/fit/capacity.py's ClassIndex buckets); `partial=False` stops at the first batch short;
`only`: the nodes allowed (None: every node). A class with pod affinity terms (core/fit/affinity.py `coupled`) is
placed node by node, each count read again after the previous placement. A class with DoNotSchedule topology
spread constraints is placed one pod at a time in that order by core/placement/spread_place.py (each pod where the skew
allows it); else a class with preferred pod affinity terms is placed pod by pod by core/placement/score_place.py (each
placement moves the scores of its domains).
"""

from __future__ import annotations

from collections.abc import Container, Iterator

from gangsched.core.fit.affinity import coupled
from gangsched.core.fit.capacity import ClassView
from gangsched.core.placement.score_place import pick_scored
from gangsched.core.placement.spread_place import pick_spread
from gangsched.core.records.records import PodRecord, SchedulingClass, pods_by_class
from gangsched.core.transaction.messages import Shortfall
from gangsched.core.transaction.session import CycleSession

Placed = list[tuple[PodRecord, str]]
Outcome = tuple[Placed, list[Shortfall], int | None]  # (placed, shortfalls, topology tier)


def class_batches(pods: list[PodRecord]) -> list[list[PodRecord]]:
    """The batches `place_batches` takes: the pods of each class (records.pods_by_class), in their order."""
    return list(pods_by_class(pods).values())


def place_batches(
    session: CycleSession, batches: list[list[PodRecord]], *, partial: bool, only: Container[str] | None = None
) -> Outcome:
    """Each batch (pods of one class) on the emptiest or fullest nodes that fit (among `only`), in order."""
    placed: Placed = []
    short: list[Shortfall] = []
    for members in batches:
        cls = members[0].sclass
        view = session.workspace.view(cls)
        why = None
        if cls.spread:
            chosen, why = pick_spread(session, view, cls, len(members), only)
        elif cls.pod_preferred:
            chosen = pick_scored(session, view, cls, len(members), only)
        elif session.workspace.spread:
            chosen = _pick_spread(session, view, cls, len(members), only)
        else:
            chosen = _pick_binpack(session, view, cls, len(members), only)
        i = 0
        for node, count in chosen:
            for pod in members[i : i + count]:
                placed.append((pod, node))
            i += count
        if i < len(members):
            short.append(Shortfall(cls, len(members), i, why))
            if not partial:
                break
    return placed, short, None


def _ordered(view: ClassView, only: Container[str] | None) -> Iterator[tuple[str, int]]:
    return view.ordered() if only is None else ((n, c) for n, c in view.ordered() if n in only)


def _pick_binpack(
    session: CycleSession, view: ClassView, cls: SchedulingClass, need: int, only: Container[str] | None
) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    remaining = need
    if coupled(cls):  # a placement may lower other nodes' counts (pod affinity): look again after each
        while remaining and (first := next(iter(_ordered(view, only)), None)) is not None:
            count = min(first[1], remaining)
            session.workspace.place(first[0], cls.requests, count, cls.host_ports, cls=cls)
            out.append((first[0], count))
            remaining -= count
        return out
    for node, fits in _ordered(view, only):
        count = fits if fits < remaining else remaining
        out.append((node, count))
        remaining -= count
        if not remaining:
            break
    for node, count in out:
        session.workspace.place(node, cls.requests, count, cls.host_ports, cls=cls)
    return out


def _pick_spread(
    session: CycleSession, view: ClassView, cls: SchedulingClass, need: int, only: Container[str] | None
) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    remaining = need
    check = coupled(cls)
    while remaining:
        snapshot = list(_ordered(view, only))
        if not snapshot:
            break
        for node, _ in snapshot:
            if check and view.count_of(node) <= 0:
                continue  # an earlier placement of this round filled its domain (pod anti-affinity)
            session.workspace.place(node, cls.requests, 1, cls.host_ports, cls=cls)
            out.append((node, 1))
            remaining -= 1
            if not remaining:
                break
    return out
