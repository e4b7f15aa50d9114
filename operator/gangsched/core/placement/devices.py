"""A placement's DRA claims: each placed pod's claims allocated on its node, in the cycle's transaction.

Contract (oracle: pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go, Filter then Reserve: the
claims are allocated on the node chosen, and a pod whose claims do not fit there is not placed there):
`devices_checked(session, outcome) -> Outcome`: for every placed pod with claims (`DeviceState.pod_claims`),
`CycleSession.take_devices` on its node; a pod whose devices do not fit is taken out of the placement (its
capacity given back) and reported as a Shortfall naming the claims' reason. The node filter before it is the
per-node count of free matching devices (core/devices/index.py, counted as resources by the class indexes); the
takes are undone with the transaction that holds them (a gang's claims are all or nothing with its placement).
"""

from __future__ import annotations

from gangsched.core.placement.pickers import Outcome, Placed
from gangsched.core.transaction.messages import Shortfall
from gangsched.core.transaction.session import CycleSession


def devices_checked(session: CycleSession, outcome: Outcome) -> Outcome:
    devices = session.store.devices
    placed, short, tier = outcome
    if devices is None or not devices.pod_claims or not placed:
        return outcome
    kept: Placed = []
    more: list[Shortfall] = []
    for pod, node in placed:
        why = session.take_devices(pod, node)
        if why is None:
            kept.append((pod, node))
            continue
        cls = pod.sclass
        session.workspace.release(node, cls.requests, cls.host_ports, cls=cls)
        more.append(Shortfall(cls, 1, 0, f"devices: node {node}: {why}"))
    if not more:
        return outcome
    return kept, [*short, *more], tier
