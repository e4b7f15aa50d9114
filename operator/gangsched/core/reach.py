"""The most a gang's members could reach: their fit on each node with every pod of lower priority gone.

Contract: `reach_fits(session, gang, cls, count, priority, topology) -> bool`, asked by core/queue_hints.py:
whether `count` members of scheduling class `cls` could be placed on the class's feasible nodes (its static
constraints, core/capacity.py's class index) if every pod charged there with a priority lower than `priority` were
gone (running, reserved or leaving, a victim candidate or not) and nothing else were held (nominations, starvation
holds and this cycle's placements ignored); with a hard network `topology`, as one `place_network` over the
topology tree (core/topology), otherwise by the summed counts. Host ports: one member per node.
It is an upper bound of everything an attempt could use: free capacity, the reservations reclaim takes
(core/reclaim.py) and the victims preemption chooses (core/preemption.py: its candidates are some of those
pods), so False means no attempt can place them until the cluster changes. The pods removed are not chosen: it
never says who would go.
Memo (per unit, `UnitState.reach` through `Plan.reach_memos`): the per-node counts and the accounting log's
position (core/accounting.py); a later call recounts only the nodes the log names since (a pod of any priority
charged or uncharged there) and places again only when a count moved; with a hard topology it also keeps each
domain's sum at the highest tier allowed, and places only when one of them could hold all `count` (a necessary
condition: the placement stays within one such domain). A node or class change (static generation,
class, priority) or a trimmed log rebuilds it: O(feasible nodes + their pods), about one victim search.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from gangsched.core.capacity import class_index, fit_count
from gangsched.core.gangs import GangState
from gangsched.core.gangspec import NetworkTopology, TopologyMode
from gangsched.core.plan import ReachMemo
from gangsched.core.records import SchedulingClass
from gangsched.core.resources import sub_into
from gangsched.core.session import CycleSession
from gangsched.core.topology import TopologyPlacement, TopologyTree, place_network
from gangsched.core.views import StoreView


def reach_fits(
    session: CycleSession,
    gang: GangState,
    cls: SchedulingClass,
    count: int,
    priority: int,
    topology: NetworkTopology | None,
) -> bool:
    """See the module docstring."""
    store = session.store
    tree = store.topology if topology is not None and topology.mode == TopologyMode.HARD else None
    counts_key = (store.static_gen, cls.id, priority)
    key = (*counts_key, id(tree), topology if tree is not None else None, count)
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
            memo = replace(old, pos=end)
            session.plan.reach_memos[gang.unit] = memo
            return memo.fits
    if tree is None or topology is None:
        memo = ReachMemo(key, end, cap, sum(cap.values()) >= count)
    else:
        tier = min(topology.highest_tier_allowed or tree.tiers + 1, tree.tiers + 1)
        if old is not None and moved is not None and old.key == key and old.sums is not None:
            sums = dict(old.sums)
            for node, delta in moved.items():
                if (d := _domain(tree, node, tier)) is not None:
                    sums[d] = sums.get(d, 0) + delta
        else:
            sums = {}
            for node, c in cap.items():
                if (d := _domain(tree, node, tier)) is not None:
                    sums[d] = sums.get(d, 0) + c
        # a domain of the highest tier allowed must have room for all of them before place() is worth asking
        fits = max(sums.values(), default=0) >= count and isinstance(
            place_network(tree, cap, count, topology), TopologyPlacement
        )
        memo = ReachMemo(key, end, cap, fits, sums)
    session.plan.reach_memos[gang.unit] = memo
    return memo.fits


def _domain(tree: TopologyTree, node: str, tier: int) -> int | None:
    """The index of the node's domain at `tier` (tiers + 1: the whole cluster); None outside the tree."""
    index = tree.node_index.get(node)
    if index is None:
        return None
    for level in range(tier):
        index = tree.parent_at[level][index]
    return index


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


def _node_reach(store: StoreView, cls: SchedulingClass, priority: int, node: str) -> int:
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
    c = fit_count(cls.requests, rec.allocatable, used)
    return min(c, 1) if cls.host_ports else c
