"""Placement of pods on the cycle's workspace: which node each pod goes to.

Contract: `place(session, spec, pods, partial=..., counted=...) -> (placed, shortfalls, tier)` takes capacity in the
workspace for every pod placed; the caller records the placements (or rolls back). `counted`: roles already held.
Paths: a network topology (core.topology.place, or core/placement/topology_mixed.py for several classes; hard with
no topology places nothing); several classes or roles (core/placement/quorum_placement.py); packing
(core/placement/packing.py); otherwise the pickers (core/placement/pickers.py; `partial=False` stops at the first
class short). Label or tree domains (core/placement/domains.py) come as a one-level tree placed hard.
Node filters are in the views' fit counts; plans from per-node counts that break pod affinity or DoNotSchedule
spread are refused (the shortfall names InterPodAffinity / PodTopologySpread).
`nominated_fit(session, gang, pending)`: the members' nominated nodes when all have room now, else None.
More: docs/modules.md#coreplacementplacementpy.
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
