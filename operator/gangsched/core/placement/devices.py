"""A placement's DRA claims: each placed pod's claims allocated on its node, in the cycle's transaction.

Contract (oracle: pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go, Filter then Reserve):
`devices_checked(session, outcome, movable=) -> Outcome`: for every placed pod with claims, `take_devices` on its
node; when they do not fit there and `movable` (no topology placed it, no pod (anti-)affinity or hard spread in its
class), the next nodes of its class's order with room are tried (at most MAX_MOVES: the per-node counts cannot see
constraints between devices, e.g. matchAttribute); else the pod is taken out of the placement (its capacity given
back) with a Shortfall naming the reason. The takes are undone with the transaction that holds them.
"""

from __future__ import annotations

from gangsched.core.fit.affinity import coupled
from gangsched.core.fit.pod_spread import hard
from gangsched.core.placement.pickers import Outcome, Placed
from gangsched.core.records.records import PodRecord
from gangsched.core.transaction.messages import Shortfall
from gangsched.core.transaction.session import CycleSession

MAX_MOVES = 64


def devices_checked(session: CycleSession, outcome: Outcome, *, movable: bool = False) -> Outcome:
    devices = session.store.devices
    placed, short, tier = outcome
    if devices is None or not devices.pod_claims or not placed:
        return outcome
    kept: Placed = []
    more: list[Shortfall] = []
    moved = False
    for pod, node in placed:
        why = session.take_devices(pod, node)
        if why is None:
            kept.append((pod, node))
            continue
        cls = pod.sclass
        session.workspace.release(node, cls.requests, cls.host_ports, cls=cls)
        other = _move(session, pod) if movable and not coupled(cls) and not hard(cls) else None
        if other is not None:
            kept.append((pod, other))
            moved = True
            continue
        more.append(Shortfall(cls, 1, 0, f"devices: node {node}: {why}"))
    if not more and not moved:
        return outcome
    return kept, [*short, *more], tier


def _move(session: CycleSession, pod: PodRecord) -> str | None:
    """The next node of the class's order where the pod has room and its claims fit (placed there), or None."""
    cls = pod.sclass
    view = session.workspace.view(cls)
    for tried, (node, _count) in enumerate(list(view.ordered())):
        if tried == MAX_MOVES:
            return None
        if session.take_devices(pod, node) is None:
            session.workspace.place(node, cls.requests, 1, cls.host_ports, cls=cls)
            return node
    return None
