"""Queueing hints: whether capacity freed since a gang backed off could let it progress, without attempting it.

Contract: `queue_skip(session, gang) -> bool`, asked by core/cycle/scheduler.py instead of an attempt, for a gang whose
backoff would end early only because capacity was freed. True (skip: kube-scheduler's QueueSkip) only when a necessary
condition for any progress fails: its pending members, in the free slots an attempt would find (core/fit/capacity.py,
after nominations and capacity holds it may not use), are fewer than it needs (Strict: minMember; NonStrict: one), or
they could not be placed even with every lower-priority pod gone (core/hints/reach.py). False (attempt it) whenever
those counts could understate what an attempt sees (reservations, nominations, bound, gated or unready members, gang
groups, minResources, several classes while it could preempt, pod (anti-)affinity or spread terms). A skipped gang's
backoff still ends with time; `Plan.hint_skips` records the freed generation it covered.
More: docs/modules.md#corehintsqueue_hintspy.
"""

from __future__ import annotations

from gangsched.core.fit.capacity import class_index, fit_count
from gangsched.core.fit.filters import filters_for
from gangsched.core.fit.pod_spread import PodTopologySpread
from gangsched.core.hints.reach import reach_fits
from gangsched.core.memory.gangs import GangState
from gangsched.core.memory.podstate import NOMINATED
from gangsched.core.records.records import PodRecord, SchedulingClass
from gangsched.core.topology import TopologyPlacement, place_network
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.gangspec import GangMode, GangSpec, TopologyMode


def queue_skip(session: CycleSession, gang: GangState) -> bool:
    """See the module docstring."""
    spec = gang.spec
    if spec is None or gang.satisfied or spec.group or spec.tree or spec.domain or spec.min_resources:
        return False
    members = session.members(gang)
    if members.bound or members.gated or members.unready or not members.pending:
        return False
    strict = spec.mode == GangMode.STRICT
    if members.reserved and strict:
        return False
    if strict and not _fits_empty(session, gang, spec, members.pending):
        return True  # not even on empty nodes: no freed capacity nor preemption can help, only node changes
    if session.state.victims_of(gang.key):
        return False
    nominated = session.store.pods_in(NOMINATED)
    if not nominated.keys().isdisjoint(gang.members) and any(session.nomination(p.key) for p in members.pending):
        return False
    wanted: dict[int, tuple[SchedulingClass, int]] = {}
    for pod in members.pending:
        cls, n = wanted.get(pod.sclass.id, (pod.sclass, 0))
        wanted[cls.id] = (cls, n + 1)
    need = spec.min_member if strict else 1
    lowest = session.store.lowest_priority()
    priority = max(gang.priority, *(p.priority for p in members.pending))
    could_preempt = lowest is not None and lowest < priority
    fits = 0
    for cls, n in wanted.values():
        view = session.workspace.view(cls)
        if cls.affinity or cls.anti_affinity or any(isinstance(f, PodTopologySpread) for f in view.idx.filters):
            return False
        fits += min(n, view.slots())
    if fits < need and not could_preempt:
        return True
    topology = spec.network_topology if strict else None
    hard = topology is not None and topology.mode == TopologyMode.HARD and session.store.topology is not None
    if len(wanted) > 1 or not (could_preempt or hard):
        return False
    ((cls, _),) = wanted.values()
    return not reach_fits(session, gang, cls, need, priority, topology, workspace=not could_preempt)


def _fits_empty(session: CycleSession, gang: GangState, spec: GangSpec, pending: list[PodRecord]) -> bool:
    """Whether the gang's minMember members (of one class without pod terms of its own) fit the nodes' allocatable
    (host ports: one per node) with its hard network topology; if not, it is kube-scheduler's
    UnschedulableAndUnresolvable: only a node event can help. Memoized in the unit's queue state per (static_gen,
    topology tree, spec, class) through the plan (`Plan.empty_fits`)."""
    cls = pending[0].sclass
    own_terms = cls.affinity or cls.anti_affinity or any(isinstance(f, PodTopologySpread) for f in filters_for(cls))
    if any(p.sclass is not cls for p in pending) or own_terms or len(pending) < spec.min_member:
        return True  # (mixed classes, its own pod terms: not judged here; other pods' terms block no empty node)
    store = session.store
    tree = store.topology
    key = (store.static_gen, id(tree), spec, cls.id)
    state = session.state.queue.unit_state(gang.unit)
    memo = state.empty_fit if state is not None else None
    if memo is not None and memo[0] == key:
        return memo[1]
    idx = class_index(store, cls, spread=session.workspace.spread)
    nodes = store.nodes
    most = 1 if cls.host_ports else 1 << 30
    cap = {n: min(c, most) for n in idx.pref if (c := fit_count(cls.requests, nodes[n].allocatable, None)) > 0}
    topology = spec.network_topology
    if topology is None or tree is None or topology.mode != TopologyMode.HARD:
        fits = sum(cap.values()) >= spec.min_member
    else:
        got = place_network(tree, cap, spec.min_member, topology)
        fits = isinstance(got, TopologyPlacement)
    session.plan.empty_fits[gang.unit] = (key, fits)
    return fits
