"""Reservations and nominations re-checked at the start of every cycle, before anything is bound.

Contract: `recheck(session) -> set[UnitKey]`, run first in every cycle over the store as it is now; every change
goes through the session (releases, cleared nominations, waiting-time clears, events):
- a gang without a spec (PodGroup deleted or invalid) loses its reservations at once and its waiting time;
- a reservation on a node that is gone, cordoned or tainted for the pod, no longer matched, or whose host ports
  are taken, is released; an over-committed node loses reservations (lowest priority, last rank first) until it
  fits (event `ReservationsReleased`);
- a nomination on such a node is given up with every nomination of its gang (event `NominationLost`).
Returns the units that lost something for a node reason: attempted this cycle, backoff or not. Bound pods are
never touched. Cost: O(reservations + nominations). More: docs/modules.md#corecyclerecheckpy.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

from gangsched.core.fit.filters import add_ports, port_conflict
from gangsched.core.fit.matching import refusal, taint_shown
from gangsched.core.fit.usage import PortCounts
from gangsched.core.memory.podstate import RESERVED
from gangsched.core.records.records import NodeRecord, PodRecord, SchedulingClass
from gangsched.core.transaction.messages import conditions, event
from gangsched.core.transaction.session import CycleSession, preemptor_key
from gangsched.core.values.units import UnitKey

_NO_RANK = 1 << 62


def recheck(session: CycleSession) -> set[UnitKey]:
    """See the module docstring."""
    retry: set[UnitKey] = set()
    _release_reservations(session, retry)
    _release_nominations(session, retry)
    _clear_specless_waits(session)
    return retry


def podgroup_missing(gang_key: str) -> str:
    """Why a gang without a spec waits (its pods' PodScheduled condition)."""
    return f"PodGroup {gang_key} does not exist yet"


def node_refuses(cls: SchedulingClass, node: NodeRecord | None) -> str | None:
    """Why the node no longer takes a pod of the class (None: it does), in words for an event."""
    if node is None:
        return "node deleted"
    found = refusal(cls, node)  # (the checks of core/fit/matching.py's static_block, worded for an event)
    if found is None:
        return None
    what, taint = found
    if taint is not None:
        return f"node tainted {taint_shown(taint)}:{taint.effect}"
    return "node cordoned" if what == "unschedulable" else f"{what} no longer matches"


def _port_taken(session: CycleSession, pod: PodRecord, node: str) -> str | None:
    """A host port of the pod now used on its node by another pod (its own ports are counted in the store)."""
    ports = pod.sclass.host_ports
    in_use = session.store.host_ports.get(node)
    if not ports or not in_use:
        return None
    others: PortCounts = dict(in_use)
    add_ports(others, ports, -1)
    taken = port_conflict(ports, others)
    return None if taken is None else f"host port {taken.port}/{taken.protocol} in use"


def _release_reservations(session: CycleSession, retry: set[UnitKey]) -> None:
    store = session.store
    reserved = list(store.pods_in(RESERVED))
    if not reserved:
        return
    released: dict[UnitKey, Counter[tuple[str, str]]] = defaultdict(Counter)  # unit -> (node, why) -> count
    kept: dict[str, list[PodRecord]] = defaultdict(list)  # node -> reservations that passed the node checks
    specless: dict[str, list[PodRecord]] = defaultdict(list)  # gang -> its released members
    for key in reserved:
        held = store.reservation_of(key)
        pod = store.pods.get(key)
        if held is None or pod is None:
            continue
        node = held[0]
        gang = store.gangs.get(pod.gang) if pod.gang is not None else None
        if gang is not None and gang.spec is None:
            session.release(key, node)
            specless[gang.key].append(pod)
            continue
        why = node_refuses(pod.sclass, store.nodes.get(node)) or _port_taken(session, pod, node)
        if why is None:
            kept[node].append(pod)
            continue
        session.release(key, node)
        released[_unit(pod)][(node, why)] += 1
    for node, pods in kept.items():
        for pod, why in _over_committed(session, node, pods):
            session.release(pod.key, node)
            released[_unit(pod)][(node, why)] += 1
    _report(session, released, specless, retry)


def _unit(pod: PodRecord) -> UnitKey:
    return UnitKey.gang(pod.gang) if pod.gang is not None else UnitKey.pod(pod.key)


def _over_committed(session: CycleSession, node: str, pods: list[PodRecord]) -> list[tuple[PodRecord, str]]:
    """The reservations to give up on the node so that its charged requests fit its allocatable again."""
    store = session.store
    alloc = store.nodes[node].allocatable
    charged = store.used.get(node, {})
    over = {r for r, q in charged.items() if q > alloc.get(r, 0)}
    if not over:
        return []
    used = dict(charged)
    out: list[tuple[PodRecord, str]] = []
    for pod in sorted(pods, key=lambda p: _keep_order(session, p), reverse=True):
        short = sorted(r for r in over if pod.requests.get(r, 0) > 0)
        if not short:
            continue
        out.append((pod, f"insufficient {short[0]} (pods bound since)"))
        for r, q in pod.requests.items():
            used[r] = used.get(r, 0) - q
        over = {r for r in over if used.get(r, 0) > alloc.get(r, 0)}
        if not over:
            break
    return out


def _keep_order(session: CycleSession, pod: PodRecord) -> tuple[int, int, tuple[tuple[int, int | str], ...]]:
    """Higher priority, then lower rank, then natural name order: kept first (so released last)."""
    return (-pod.priority, pod.rank if pod.rank is not None else _NO_RANK, session.store.name_key(pod.key))


def _report(
    session: CycleSession,
    released: Mapping[UnitKey, Counter[tuple[str, str]]],
    specless: Mapping[str, list[PodRecord]],
    retry: set[UnitKey],
) -> None:
    for gang_key, pods in sorted(specless.items()):
        what = "reservation" if len(pods) == 1 else f"{len(pods)} reservations"
        message = f"{what} released: PodGroup {gang_key} no longer exists (or is invalid)"
        event(session, "PodGroup", gang_key, "Normal", "ReservationsReleased", message)
        conditions(session, pods, "WaitingForPodGroup", podgroup_missing(gang_key))  # (the others: scheduler.py)
    for unit, moves in sorted(released.items()):
        parts = []
        for (node, why), count in sorted(moves.items()):
            what = "reservation" if count == 1 else f"{count} reservations"
            parts.append(f"{what} on {node} released: {why}")
        kind = "Pod" if unit.is_pod else "PodGroup"
        event(session, kind, unit.key, "Warning", "ReservationsReleased", "; ".join(parts))
        retry.add(unit)


def _release_nominations(session: CycleSession, retry: set[UnitKey]) -> None:
    store = session.store
    lost: dict[UnitKey, tuple[str, str]] = {}  # unit (gang, or pod alone) -> (node, why), the first found
    for pod_key, node in list(session.state.nominations()):
        pod = store.pods.get(pod_key)
        if pod is None or _unit(pod) in lost:
            continue
        why = node_refuses(pod.sclass, store.nodes.get(node))
        if why is not None:
            lost[_unit(pod)] = (node, why)
    for unit, (node, why) in sorted(lost.items()):
        keys = _drop_nominated(session, session.take_nominated(preemptor_key(unit)))
        session.clear_nominations(keys)
        message = f"nomination on {node} released: {why}; it will choose again"
        event(session, "Pod" if unit.is_pod else "PodGroup", unit.key, "Warning", "NominationLost", message)
        retry.add(unit)


def _drop_nominated(session: CycleSession, noms: Iterable[tuple[str, str, Mapping[str, int]]]) -> list[str]:
    keys = []
    for pod_key, node, requests in noms:
        session.workspace.release(node, requests)
        keys.append(pod_key)
    return keys


def _clear_specless_waits(session: CycleSession) -> None:
    """A gang without a spec holds nothing and its waiting time does not run (it never times out for it)."""
    gangs = session.store.gangs
    for gang_key in list(session.store.reserving()):
        gang = gangs.get(gang_key)
        if gang is not None and gang.spec is None:
            session.set_wait_start(gang_key, None)
