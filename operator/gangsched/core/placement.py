"""Placement of pods on the cycle's workspace: which node each pod goes to.

Contract: `place(session, spec, pods, partial=...) -> (placed, shortfalls, tier)` takes capacity in the
session's workspace for every pod placed; the caller records the placements (or rolls back).
- Topology (the gang spec has network_topology, the state a tree, the pods one scheduling class):
  core.topology.place on per-node capacity; pods are taken in the given (rank) order.
- Otherwise, per scheduling class, nodes come from ClassIndex buckets (core/capacity.py): binpack takes the
  fullest node that fits as many as it can; spread deals one pod per node round the emptiest nodes;
  preferred affinity and PreferNoSchedule taints rank first. `partial=False` stops at the first class short.
- Node filters (core/filters.py, e.g. host ports) are part of the per-node fit counts of the class views, and
  every placement takes the class's host ports in the workspace, so members placed in the same cycle see them.
- `nominated_fit(session, gang, pending)`: every pending member is nominated and its nominated node now has
  room: that placement (victims gone: members go where they were nominated), else None.
"""

from __future__ import annotations

from collections import Counter

from gangsched.core.capacity import ClassView
from gangsched.core.gangs import GangState
from gangsched.core.gangspec import GangSpec
from gangsched.core.messages import Shortfall
from gangsched.core.records import PodRecord, SchedulingClass
from gangsched.core.session import CycleSession
from gangsched.core.topology import TopologyPlacement, TopologyTree
from gangsched.core.topology import place as place_in_tree

Placed = list[tuple[PodRecord, str]]
Outcome = tuple[Placed, list[Shortfall], int | None]  # (placed, shortfalls, topology tier)


def place(session: CycleSession, spec: GangSpec | None, pods: list[PodRecord], *, partial: bool) -> Outcome:
    """Place pods on the workspace (see the module docstring)."""
    by_class: dict[int, list[PodRecord]] = {}
    for pod in pods:
        by_class.setdefault(pod.sclass.id, []).append(pod)
    tree = session.store.topology
    if tree is not None and spec is not None and spec.network_topology is not None and len(by_class) == 1:
        return _place_topology(session, tree, spec, pods)
    placed: Placed = []
    short: list[Shortfall] = []
    for members in by_class.values():
        cls = members[0].sclass
        view = session.workspace.view(cls)
        if session.workspace.spread:
            chosen = _pick_spread(session, view, cls, len(members))
        else:
            chosen = _pick_binpack(session, view, cls, len(members))
        i = 0
        for node, count in chosen:
            for pod in members[i : i + count]:
                placed.append((pod, node))
            i += count
        if i < len(members):
            short.append(Shortfall(cls, len(members), i))
            if not partial:
                break
    return placed, short, None


def _pick_binpack(session: CycleSession, view: ClassView, cls: SchedulingClass, need: int) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    remaining = need
    for node, fits in view.ordered():
        count = fits if fits < remaining else remaining
        out.append((node, count))
        remaining -= count
        if not remaining:
            break
    for node, count in out:
        session.workspace.place(node, cls.requests, count, cls.host_ports)
    return out


def _pick_spread(session: CycleSession, view: ClassView, cls: SchedulingClass, need: int) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    remaining = need
    while remaining:
        snapshot = list(view.ordered())
        if not snapshot:
            break
        for node, _ in snapshot:
            session.workspace.place(node, cls.requests, 1, cls.host_ports)
            out.append((node, 1))
            remaining -= 1
            if not remaining:
                break
    return out


def _place_topology(session: CycleSession, tree: TopologyTree, spec: GangSpec, pods: list[PodRecord]) -> Outcome:
    network = spec.network_topology
    assert network is not None
    cls = pods[0].sclass
    view = session.workspace.view(cls)
    result = place_in_tree(
        tree,
        view.capacity(),
        count=len(pods),
        group_size=network.group_size,
        highest_tier_allowed=network.highest_tier_allowed,
        hard=network.mode == "hard",
    )
    if not isinstance(result, TopologyPlacement):
        return [], [Shortfall(cls, len(pods), 0, f"topology: {result.reason}")], None
    for node, count in Counter(result.nodes).items():
        session.workspace.place(node, cls.requests, count, cls.host_ports)
    return list(zip(pods, result.nodes, strict=True)), [], result.whole_tier


def nominated_fit(session: CycleSession, gang: GangState, pending: list[PodRecord]) -> Outcome | None:
    """Every pending member nominated and its nominated node now has room: that placement, else None."""
    if not pending or len({p.sclass.id for p in pending}) != 1:
        return None
    out: Placed = []
    for pod in pending:
        node = session.nomination(pod.key)
        if node is None:
            return None
        out.append((pod, node))
    cls = pending[0].sclass
    view = session.workspace.view(cls)
    need = Counter(node for _, node in out)
    if any(view.count_of(node) < count for node, count in need.items()):
        return None
    for node, count in need.items():
        session.workspace.place(node, cls.requests, count, cls.host_ports)
    last = gang.last_status
    return out, [], last.tier if last is not None and last.reason == "Preempting" else None
