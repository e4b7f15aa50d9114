"""Placement of pods on the cycle's workspace: which node each pod goes to.

Contract: `place(session, spec, pods, partial=..., counted=...) -> (placed, shortfalls, tier)` takes capacity in the
session's workspace for every pod placed; the caller records the placements (or rolls back). `counted` counts the
roles of the gang's bound and reserved members.
- Topology (the gang spec has network_topology, the state a tree): one scheduling class, core.topology.place on
  per-node capacity, pods taken in the given (rank) order; several classes, core/placement/topology_mixed.py (the same
  (whole-gang tier, DP-group tier) ladder, DP groups of groupSize consecutive ranks, greedy within a domain).
  `hard` with no topology known places nothing (the shortfall says so).
- A gang whose pods have several scheduling classes, or whose spec has roles: core/placement/quorum_placement.py, a
  quorum whenever one exists on the free capacity (exact search up to 8 classes x 64 candidate nodes and a step
  budget, greedy beyond: core/placement/quorum.py), every role's minimum met.
- A gang that declares no topology, of one class without preferences of its own: packed into the lowest topology
  domain that holds it (core/placement/packing.py, `config.pack_gangs`), then as below inside that domain.
- Otherwise (one class, or pods without a gang), core/placement/pickers.py: binpack takes the fullest node that fits as
  many as it can; spread deals one pod per node round the emptiest nodes; preferred affinity and
  PreferNoSchedule taints rank first. `partial=False` stops at the first class short.
- Hard constraints of Kubernetes' gang API that the topology's tiers do not express (a node label key, a gang tree's
  groups: core/placement/domains.py) come as `domains`, a one-level tree: the gang is placed as hard at its tier 1.
- Node filters (core/fit/filters.py, e.g. host ports) are part of the per-node fit counts of the class views, and
  every placement takes the class's host ports in the workspace, so members placed in the same cycle see them.
- Pod affinity in the topology and quorum paths: they plan from per-node counts, which are exact only while
  the class's domains are single nodes; a plan that breaks the class's terms over a larger domain is refused
  (the workspace notices it, `Workspace.take_violations`), the gang waits with a message naming InterPodAffinity.
- DoNotSchedule topology spread constraints (core/placement/spread_place.py): place_batches places such a class pod by
  pod where the skew allows; the paths above choose by capacity, so their placements are checked afterwards (one
  that breaks a constraint places nothing; the shortfall names PodTopologySpread).
- `nominated_fit(session, gang, pending)`: every pending member is nominated and its nominated node now has
  room (and the placement keeps the spread constraints): that placement (victims gone: members go where they
  were nominated), else None.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from gangsched.core.fit.affinity import NAME as AFFINITY
from gangsched.core.fit.pod_spread import hard
from gangsched.core.memory.gangs import GangState
from gangsched.core.placement.devices import devices_checked
from gangsched.core.placement.packing import pack
from gangsched.core.placement.pickers import Outcome, Placed, place_batches
from gangsched.core.placement.quorum_placement import place_quorum
from gangsched.core.placement.spread_place import check_spread
from gangsched.core.placement.topology_mixed import place_mixed_topology
from gangsched.core.records.records import PodRecord, pods_by_class
from gangsched.core.topology import TopologyPlacement, TopologyTree, place_network
from gangsched.core.transaction.messages import Shortfall
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.gangspec import GangSpec, NetworkTopology, TopologyMode

__all__ = ["Outcome", "Placed", "nominated_fit", "place"]

NO_TOPOLOGY_HINT = "the ConfigMap gangsched-topology or topology.nodeLabelTiers"


def place(
    session: CycleSession,
    spec: GangSpec | None,
    pods: list[PodRecord],
    *,
    partial: bool,
    counted: Counter[str | None] | None = None,
    domains: TopologyTree | None = None,
) -> Outcome:
    """Place pods on the workspace (see the module docstring). `counted`: roles of the gang's bound and reserved
    members (their total counts towards minMember). `domains`: a one-level tree whose domains the pods must all go
    to one of (core/placement/domains.py), instead of the gang's networkTopology. Their DRA claims are allocated
    on the nodes chosen (core/placement/devices.py)."""
    movable = domains is None and (spec is None or spec.network_topology is None)
    outcome = _place(session, spec, pods, partial=partial, counted=counted, domains=domains)
    return devices_checked(session, outcome, movable=movable)


def _place(
    session: CycleSession,
    spec: GangSpec | None,
    pods: list[PodRecord],
    *,
    partial: bool,
    counted: Counter[str | None] | None,
    domains: TopologyTree | None,
) -> Outcome:
    by_class = pods_by_class(pods)
    tree = session.store.topology
    counted = counted if counted is not None else Counter()
    if domains is not None and spec is not None:
        tree, spec = domains, replace(spec, network_topology=NetworkTopology(TopologyMode.HARD, highest_tier_allowed=1))
    network = spec.network_topology if spec is not None else None
    if tree is None and network is not None and network.mode == TopologyMode.HARD:
        why = f"topology: hard network topology requested but no topology is known ({NO_TOPOLOGY_HINT})"
        return [], [Shortfall(ms[0].sclass, len(ms), 0, why) for ms in by_class.values()], None
    session.workspace.take_violations()  # what earlier placements noted is theirs
    mark = session.workspace.begin()
    if tree is not None and spec is not None and spec.network_topology is not None:
        if len(by_class) == 1:
            return _checked(session, mark, _place_topology(session, tree, spec, pods))
        return _checked(session, mark, place_mixed_topology(session, tree, spec, pods, counted))
    if spec is not None and (len(by_class) > 1 or spec.roles):
        return _checked(session, mark, place_quorum(session, spec, pods, counted))
    packed = pack(session, spec, by_class, pods)
    if packed is not None:
        return packed
    placed, short, _ = place_batches(session, list(by_class.values()), partial=partial)
    return placed, short, None


def _checked(session: CycleSession, mark: int, outcome: Outcome) -> Outcome:
    """Topology and quorum placements plan from per-node counts: one that took a node whose count an earlier
    placement of the same plan had lowered (pod affinity over a domain larger than a node) is refused; then the
    placements are checked against DoNotSchedule spread constraints (core/placement/spread_place.py `check_spread`)."""
    placed, short, tier = outcome
    broken = session.workspace.take_violations()
    if broken:
        why = f"{AFFINITY}: the members' pod (anti-)affinity over a domain larger than a node; no placement checked"
        cls = broken[0]
        return [], [*short, Shortfall(cls, len(placed), 0, why)], tier
    return _spread_checked(session, mark, outcome)


def _spread_checked(session: CycleSession, mark: int, outcome: Outcome) -> Outcome:
    """Placements chosen by capacity alone, checked against DoNotSchedule spread constraints (against the counts
    before them: the workspace gives back what they took since `mark`, and takes them again when they pass); none
    when they break one."""
    placed = outcome[0]
    if not any(hard(pod.sclass) for pod, _ in placed):
        return outcome
    session.workspace.rollback(mark)
    why = check_spread(session, placed)
    if why is None:
        for pod, node in placed:
            cls = pod.sclass
            session.workspace.place(node, cls.requests, 1, cls.host_ports, cls=cls)
        return outcome
    counts = Counter(pod.sclass.id for pod, _ in placed)
    classes = {pod.sclass.id: pod.sclass for pod, _ in placed}
    return [], [Shortfall(classes[i], n, 0, why) for i, n in counts.items()], None


def _place_topology(session: CycleSession, tree: TopologyTree, spec: GangSpec, pods: list[PodRecord]) -> Outcome:
    network = spec.network_topology
    assert network is not None
    cls = pods[0].sclass
    view = session.workspace.view(cls)
    result = place_network(tree, view.capacity(), len(pods), network)
    if not isinstance(result, TopologyPlacement):
        return [], [Shortfall(cls, len(pods), 0, f"topology: {result.reason}")], None
    for node, count in Counter(result.nodes).items():
        session.workspace.place(node, cls.requests, count, cls.host_ports, cls=cls)
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
    if hard(cls) and check_spread(session, out) is not None:
        return None
    mark = session.workspace.begin()
    for node, count in need.items():
        session.workspace.place(node, cls.requests, count, cls.host_ports, cls=cls)
    last = gang.last_status
    tier = last.tier if last is not None and last.reason == "Preempting" else None
    outcome = devices_checked(session, (out, [], tier))
    if not outcome[1]:
        return outcome
    session.drop_fits([pod.key for pod, _ in outcome[0]])
    session.workspace.rollback(mark)  # (the devices taken with it)
    return None
