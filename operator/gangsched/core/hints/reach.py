"""The most a gang's members could reach: their fit on each node with every pod of lower priority gone.

Contract: `reach_fits(session, gang, cls, count, priority, topology, *, workspace=False) -> bool`: whether `count`
members of class `cls` could be placed on its feasible nodes if every pod charged there with a priority below
`priority` were gone and nothing else were held; with a hard network `topology` as one `place_network`, else by
summed counts; one member per node with host ports. `workspace=True` counts the cycle's workspace usage as taken.
An upper bound of free capacity, reclaimed reservations and preemption victims: False means no attempt can place
them until the cluster changes; it never says who would go.
Memo per unit (`UnitState.reach`, `Plan.reach_memos`), updated from the accounting log; a node or class change or
a trimmed log rebuilds it. More: docs/modules.md#corehintsreachpy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from gangsched.core.fit.capacity import class_index, fit_count
from gangsched.core.memory.gangs import GangState
from gangsched.core.memory.plan import ReachMemo
from gangsched.core.memory.views import StoreView
from gangsched.core.records.records import SchedulingClass
from gangsched.core.topology import TopologyPlacement, TopologyTree, place_network
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.gangspec import NetworkTopology, TopologyMode
from gangsched.core.values.resources import sub_into


@dataclass(frozen=True, slots=True)
class _Ask:
    """What is asked: `count` members of `cls` at `priority`, with a hard `topology` (None: none, or not hard)."""

    cls: SchedulingClass
    count: int
    priority: int
    topology: NetworkTopology | None


def reach_fits(
    session: CycleSession,
    gang: GangState,
    cls: SchedulingClass,
    count: int,
    priority: int,
    topology: NetworkTopology | None,
    *,
    workspace: bool = False,
) -> bool:
    """See the module docstring."""
    hard = topology is not None and topology.mode == TopologyMode.HARD and session.store.topology is not None
    ask = _Ask(cls, count, priority, topology if hard else None)
    memo = _memo(session, gang, ask)
    session.plan.reach_memos[gang.unit] = memo
    if workspace:
        seen = _on_workspace(session, ask, memo)
        if seen is not None:
            return seen
    return memo.fits


def _memo(session: CycleSession, gang: GangState, ask: _Ask) -> ReachMemo:
    """The gang's memo brought up to date (store level: the workspace not counted)."""
    store = session.store
    cls, count, priority, topology = ask.cls, ask.count, ask.priority, ask.topology
    tree = store.topology if topology is not None else None
    counts_key = (store.static_gen, cls.id, priority)
    key = (*counts_key, id(tree), topology, count)
    old = session.plan.reach_memos.get(gang.unit)
    if old is None:
        state = session.state.queue.unit_state(gang.unit)
        old = state.reach if state is not None else None
    end = store.log_end()
    log = store.changes_since(old.pos) if old is not None and old.key[:3] == counts_key else None
    if old is None or log is None:
        pref = class_index(store, cls, spread=session.workspace.spread).pref
        cap: Mapping[str, int] = {n: c for n in pref if (c := _node_reach(store, cls, priority, n)) > 0}
        moved: dict[str, int] | None = None
    else:
        cap, moved = _recount(session, cls, priority, old.cap, log)
        if not moved and old.key == key:
            return replace(old, pos=end)
    if tree is None or topology is None:
        return ReachMemo(key, end, cap, sum(cap.values()) >= count)
    tier = _tier(tree, topology)
    if old is not None and moved is not None and old.key == key and old.sums is not None:
        sums = _moved_sums(tree, tier, old.sums, moved)
    else:
        sums = _moved_sums(tree, tier, {}, cap)
    return ReachMemo(key, end, cap, _placeable(tree, topology, cap, sums, count), sums)


def _on_workspace(session: CycleSession, ask: _Ask, memo: ReachMemo) -> bool | None:
    """The verdict with this cycle's workspace usage counted on the nodes it touches (holds, nominations,
    placements: for a gang that can release none of them); None when it changes no count."""
    store = session.store
    pref = class_index(store, ask.cls, spread=session.workspace.spread).pref
    moved: dict[str, int] = {}
    for node, extra in session.workspace.extra.items():
        if extra and node in pref:
            c = _node_reach(store, ask.cls, ask.priority, node, extra)
            if c != memo.cap.get(node, 0):
                moved[node] = c - memo.cap.get(node, 0)
    if not moved:
        return None
    cap = {**memo.cap}
    for node, delta in moved.items():
        cap[node] = cap.get(node, 0) + delta
    tree, topology = store.topology, ask.topology
    if tree is None or topology is None or memo.sums is None:
        return sum(cap.values()) >= ask.count
    return _placeable(tree, topology, cap, _moved_sums(tree, _tier(tree, topology), memo.sums, moved), ask.count)


def _tier(tree: TopologyTree, topology: NetworkTopology) -> int:
    """The highest tier a hard topology allows (tiers + 1: the whole cluster)."""
    return min(topology.highest_tier_allowed or tree.tiers + 1, tree.tiers + 1)


def _moved_sums(tree: TopologyTree, tier: int, sums: Mapping[int, int], moved: Mapping[str, int]) -> dict[int, int]:
    """Domain sums at `tier` after the nodes' counts moved by `moved` (from `sums`)."""
    out = dict(sums)
    for node, delta in moved.items():
        if (index := tree.node_index.get(node)) is not None:
            d = tree.domain_index(index, tier)
            out[d] = out.get(d, 0) + delta
    return out


def _placeable(
    tree: TopologyTree, topology: NetworkTopology, cap: Mapping[str, int], sums: Mapping[int, int], count: int
) -> bool:
    """A domain of the highest tier allowed has room for all of them (necessary: the placement stays inside one),
    then place() itself."""
    if max(sums.values(), default=0) < count:
        return False
    return isinstance(place_network(tree, cap, count, topology), TopologyPlacement)


def _recount(
    session: CycleSession, cls: SchedulingClass, priority: int, old: Mapping[str, int], log: Iterable[str]
) -> tuple[Mapping[str, int], dict[str, int]]:
    """The memo's counts with the logged nodes recounted (the same mapping when none moved), and how each that
    moved did."""
    store = session.store
    pref = class_index(store, cls, spread=session.workspace.spread).pref
    cap: dict[str, int] | None = None
    moved: dict[str, int] = {}
    for node in dict.fromkeys(log):
        if node not in pref:
            continue
        c = _node_reach(store, cls, priority, node)
        was = old.get(node, 0)
        if c == was:
            continue
        moved[node] = c - was
        if cap is None:
            cap = dict(old)
        if c:
            cap[node] = c
        else:
            cap.pop(node, None)
    return (old, moved) if cap is None else (cap, moved)


def _node_reach(
    store: StoreView, cls: SchedulingClass, priority: int, node: str, extra: Mapping[str, int] | None = None
) -> int:
    rec = store.nodes.get(node)
    if rec is None:
        return 0
    used: Mapping[str, int] | None = store.used.get(node)
    if used:
        pods = store.pods
        lower = [p for k in store.pods_on.get(node, ()) if (p := pods.get(k)) is not None and p.priority < priority]
        if lower:
            net = dict(used)
            for pod in lower:
                sub_into(net, pod.sclass.requests)
            used = net
    c = fit_count(cls.requests, rec.allocatable, used, extra)
    return min(c, 1) if cls.host_ports else c
