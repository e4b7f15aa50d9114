"""What a cycle tells users and the queue: PodGroup status, events, pod conditions, backoff, failure messages.

Contract (functions over a CycleSession, writing to its plan):
- `report_status(session, gang, status)`: the PodGroup status, only when it differs from the last reported.
- `changed(session, unit, message)`: records the unit's waiting reason; True when it differs from the last
  reported one (events and pod conditions of a unit are only emitted when its message changes).
- `event`, `conditions` (never on a gated pod: its SchedulingGated condition is the apiserver's), `backoff`
  (exponential: config.backoff_seconds), `success` (the backoff resets).
- `wait(session, gang, reason, message)`: a gang that waits without trying (Pending).
- `fail(session, gang, message, pods, ...)`: a gang attempt that failed: backoff, status, event, conditions.
- `explain(session, shortfalls)`: why nodes are blocked, e.g. `needs 8 x {nvidia.com/gpu: 8}; 5 nodes fit;
  3 more blocked by: insufficient nvidia.com/gpu (3), taint dedicated=infer (2)`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from gangsched.core.fit.affinity import one_per_domain
from gangsched.core.fit.capacity import ClassIndex, class_index
from gangsched.core.fit.filters import block_reason, filters_for
from gangsched.core.fit.matching import static_block
from gangsched.core.memory.gangs import GangState
from gangsched.core.memory.plan import Event, GangStatus, PodCondition, UnitBackoff
from gangsched.core.transaction.lacking import lacking, reason
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.records import PodRecord, SchedulingClass
from gangsched.core.values.resources import format_resources
from gangsched.core.values.units import UnitKey


@dataclass(slots=True)
class Shortfall:
    """Pods of one scheduling class that could not all be placed."""

    cls: SchedulingClass
    need: int
    placed: int
    reason: str | None = None  # already known (topology miss)


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


def report_status(session: CycleSession, gang: GangState, status: GangStatus) -> None:
    if gang.spec is not None and gang.last_status != status:
        session.plan.gang_status[gang.key] = status


def event(session: CycleSession, kind: str, key: str, type_: str, reason: str, message: str) -> None:
    namespace, name = _split(key)
    session.plan.events.append(Event(kind, namespace, name, type_, reason, message))


def conditions(session: CycleSession, pods: Iterable[PodRecord], reason: str, message: str) -> None:
    """PodScheduled=False on each pod, except gated pods: the apiserver's SchedulingGated condition stays."""
    for pod in pods:
        if not pod.gated:
            session.plan.conditions.append(PodCondition(pod.key, reason, message))


def changed(session: CycleSession, unit: UnitKey, message: str) -> bool:
    """Record `message` as the unit's last reported reason; True when it differs from the last one."""
    state = session.state.queue.unit_state(unit)
    if state is not None and state.waiting_reason == message:
        return False
    session.plan.waiting_reasons[unit] = message
    return True


def backoff(session: CycleSession, unit: UnitKey) -> None:
    state = session.state.queue.unit_state(unit)
    attempts = (state.attempts if state is not None else 0) + 1
    until = session.now + session.config.backoff_seconds(attempts)
    session.plan.unit_backoffs[unit] = UnitBackoff(attempts, until, session.now)


def success(session: CycleSession, unit: UnitKey) -> None:
    state = session.state.queue.unit_state(unit)
    if state is not None and (state.attempts or state.waiting_reason is not None):
        session.plan.unit_success.append(unit)


def wait(session: CycleSession, gang: GangState, reason: str, message: str) -> None:
    if changed(session, gang.unit, message):
        pods = session.store.pods
        conditions(session, (pods[k] for k in gang.pending), reason, message)
        m = session.members(gang)
        status = GangStatus(len(m.bound), len(m.reserved), len(m.pending), reason, message)
        report_status(session, gang, status)


def fail(
    session: CycleSession,
    gang: GangState,
    message: str,
    pods: list[PodRecord],
    *,
    scheduled: int,
    reserved: int,
    pending: int,
) -> None:
    unit = gang.unit
    backoff(session, unit)
    report_status(session, gang, GangStatus(scheduled, reserved, pending, "Unschedulable", message))
    if changed(session, unit, message):
        event(session, "PodGroup", gang.key, "Warning", "Unschedulable", message)
        conditions(session, pods, "Unschedulable", message)


def _static_reasons(session: CycleSession, idx: ClassIndex) -> dict[str, int]:
    """Nodes the class can never use (selector, affinity, taints, unschedulable) by reason: kept on its index,
    which is rebuilt whenever a node's static properties change."""
    if idx.blocked is None:
        eligible = idx.pref
        blocked = (static_block(idx.cls, n) for name, n in session.store.nodes.items() if name not in eligible)
        idx.blocked = Counter(why or "unschedulable" for why in blocked)
    return idx.blocked


def _blocked_by(session: CycleSession, short: Shortfall) -> tuple[int, Counter[str]]:
    """How many nodes fit one more pod of the class, and why the others do not (the statically eligible nodes'
    resources from core/transaction/lacking.py's memo; a class with per-node filters is looked at node by node)."""
    cls = short.cls
    idx = class_index(session.store, cls, spread=session.workspace.spread)
    reasons: Counter[str] = Counter(_static_reasons(session, idx))
    if not filters_for(cls):
        fit, short_of = lacking(session, idx)
        reasons.update(short_of)
        return fit, reasons
    fit = 0
    used, nodes = session.store.used, session.store.nodes
    workspace = session.workspace
    extra, usage = workspace.extra, workspace.usage
    requests = sorted((r, q) for r, q in cls.requests.items() if q > 0)
    none: dict[str, int] = {}
    for name in idx.pref:
        why = block_reason(cls, name, usage)
        if why is None:
            why = reason(requests, nodes[name].allocatable, used.get(name) or none, extra.get(name) or none)
            if why is None:
                fit += 1
                continue
        reasons[why] += 1
    return fit, reasons


def explain(session: CycleSession, shortfalls: list[Shortfall]) -> str:
    parts = []
    for short in shortfalls:
        head = f"needs {short.need} x {format_resources(short.cls.requests)}"
        if short.reason is not None:
            parts.append(f"{head}; {short.reason}")
            continue
        fit, reasons = _blocked_by(session, short)
        shown = ", ".join(f"{r} ({n})" for r, n in sorted(reasons.items(), key=lambda x: (-x[1], x[0])))
        more = short.need - short.placed
        ports = "one pod per node (host ports)" if short.cls.host_ports else None
        shown = shown or ports or one_per_domain(short.cls) or "no more nodes"
        parts.append(f"{head}; {fit} nodes fit; {more} more blocked by: {shown}")
    return "; ".join(parts)
