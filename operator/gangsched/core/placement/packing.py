"""Packing: a gang that declares no network topology is placed inside the lowest topology domain that holds it.

Contract: `pack(session, spec, by_class, pods) -> Outcome | None`. Applies (else None: placed as usual) when
`config.pack_gangs` is on, a topology is known, the score strategy is binpack, and the gang declares no
`networkTopology` nor roles, with more than one pending pod, all of one class without preferences of its own. The
domain is the one a soft network topology would choose (core/topology `place_network`); the pods are placed there by
the ordinary binpack picker restricted to its nodes. A gang that fits only across the cluster, or that the picker
cannot finish in the domain, is placed as usual. No tier is reported. Cost: one place_network call and a walk
down the chosen domain. More: docs/modules.md#coreplacementpackingpy.
"""

from __future__ import annotations

from gangsched.core.placement.pickers import Outcome, place_batches
from gangsched.core.records.records import PodRecord, SchedulingClass
from gangsched.core.topology import TopologyPlacement, place_network
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.gangspec import GangSpec, NetworkTopology, TopologyMode

__all__ = ["pack"]

SOFT = NetworkTopology(TopologyMode.SOFT)


def pack(
    session: CycleSession, spec: GangSpec | None, by_class: dict[int, list[PodRecord]], pods: list[PodRecord]
) -> Outcome | None:
    """The gang's pods placed inside one domain, or None when packing does not apply (module docstring)."""
    tree = session.store.topology
    if tree is None or spec is None or not _applies(session, spec, by_class, pods):
        return None
    cls = pods[0].sclass
    result = place_network(tree, session.workspace.view(cls).capacity(), len(pods), SOFT)
    if not isinstance(result, TopologyPlacement) or result.whole_tier > tree.tiers:
        return None
    domain = tree.domain_nodes(result.nodes[0], result.whole_tier)
    mark = session.workspace.begin()
    placed, short, _ = place_batches(session, [pods], partial=False, only=domain)
    if short:
        session.workspace.rollback(mark)
        return None
    return placed, [], None


def _applies(
    session: CycleSession, spec: GangSpec, by_class: dict[int, list[PodRecord]], pods: list[PodRecord]
) -> bool:
    return (
        session.config.pack_gangs
        and not session.workspace.spread
        and spec.network_topology is None
        and not spec.roles
        and len(by_class) == 1
        and len(pods) > 1
        and not _has_preferences(pods[0].sclass)
    )


def _has_preferences(cls: SchedulingClass) -> bool:
    return bool(cls.preferred or cls.pod_preferred or cls.spread or cls.affinity or cls.anti_affinity)
