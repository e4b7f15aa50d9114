"""What a cycle tells users and the queue: PodGroup status, events, pod conditions, backoff, failure messages.

Contract (functions over a CycleSession, writing to its plan):
- `report_status(session, gang, status)`: only when it differs from the last reported.
- `tell(...)`: PodScheduled=False on the pods not saying this message yet; `changed(...)`: records the waiting
  reason, True when it changed (events, status and conditions follow a change; FailedScheduling every attempt).
- `failed_scheduling(session, pods, message)`: FailedScheduling on every pod of a failed attempt, as one entry.
- `event`, `conditions` (never on a gated pod), `backoff` (exponential), `success` (backoff reset); `wait` (a gang
  waiting without trying); `fail(...)` (a failed gang attempt: backoff, status, event, conditions).
- `explain(session, shortfalls)`: why nodes are blocked, every count naming what it counts, as kube-scheduler's
  FitError ("5 nodes fit; 3 more pods blocked by: insufficient nvidia.com/gpu (3 nodes)").
More: docs/modules.md#coretransactionmessagespy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from gangsched.core.devices import Shapes
from gangsched.core.fit.affinity import one_per_domain
from gangsched.core.fit.capacity import ClassIndex, class_index
from gangsched.core.fit.filters import block_reason, filters_for
from gangsched.core.fit.matching import static_block
from gangsched.core.memory.gangs import GangState
from gangsched.core.memory.plan import Event, GangStatus, PodCondition, PodEvents, UnitBackoff
from gangsched.core.records.records import PodRecord, SchedulingClass
from gangsched.core.transaction.fit_counts import fit_counts, reason
from gangsched.core.transaction.session import CycleSession
from gangsched.core.values.resources import format_resources
from gangsched.core.values.units import UnitKey


@dataclass(slots=True)
class Shortfall:
    """Pods of one scheduling class that could not all be placed."""

    cls: SchedulingClass
    need: int
    placed: int
    reason: str | None = None  # already known (topology miss)


WAITING_FOR_GANG = "WaitingForGang"  # a member placed in memory, waiting for the rest of its gang


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


def failed_scheduling(session: CycleSession, pods: Iterable[PodRecord], message: str) -> None:
    """A Warning FailedScheduling event on each pod of a failed attempt, on every attempt, as kube-scheduler's
    handleSchedulingFailure records one per pod and attempt (pkg/scheduler/schedule_one.go); the runtime's recorder
    aggregates the repeats into one Event per pod whose count rises (client-go events_cache.go). Gated pods are
    not attempted, so they get none. The message is the unit's, built once per attempt."""
    keys = tuple(pod.key for pod in pods if not pod.gated)
    if keys:
        session.plan.pod_events.append(PodEvents(keys, "Warning", "FailedScheduling", message))


def changed(session: CycleSession, unit: UnitKey, message: str) -> bool:
    """Record `message` as the unit's last reported reason; True when it differs from the last one."""
    state = session.state.queue.unit_state(unit)
    if state is not None and state.waiting_reason == message:
        return False
    session.plan.waiting_reasons[unit] = message
    return True


def tell(
    session: CycleSession,
    unit: UnitKey,
    pods: Iterable[PodRecord],
    reason: str,
    message: str,
    *,
    reserved_pods: Iterable[PodRecord] = (),
) -> bool:
    """PodScheduled=False (reason, message) on the unit's waiting pods that do not say it yet: all of them when the
    message changed, else only pods that joined since (a member created or re-created meanwhile: the unit remembers
    the UIDs it told), as kube-scheduler's updatePod writes the condition only where it differs
    (pkg/scheduler/schedule_one.go). `reserved_pods`: members placed in memory that wait for the rest of their gang (a
    NonStrict gang's reservations): the same message, reason WaitingForGang. True when the message changed."""
    fresh = changed(session, unit, message)
    state = session.state.queue.unit_state(unit)
    told = frozenset() if fresh or state is None else state.told
    new = [pod for pod in pods if pod.uid not in told and not pod.gated]
    waiting = [pod for pod in reserved_pods if pod.uid not in told]
    if new:
        conditions(session, new, reason, message)
    if waiting:
        conditions(session, waiting, WAITING_FOR_GANG, message)
    if fresh or new or waiting:
        session.plan.waiting_told[unit] = told.union(pod.uid for pod in [*new, *waiting])
    return fresh


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
    pods = session.store.pods
    if tell(session, gang.unit, [pods[k] for k in gang.pending], reason, message):
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
    reserved_pods: Iterable[PodRecord] = (),
) -> None:
    unit = gang.unit
    backoff(session, unit)
    report_status(session, gang, GangStatus(scheduled, reserved, pending, "Unschedulable", message))
    failed_scheduling(session, pods, message)
    if tell(session, unit, pods, "Unschedulable", message, reserved_pods=reserved_pods):
        event(session, "PodGroup", gang.key, "Warning", "Unschedulable", message)


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
    resources from core/transaction/fit_counts.py's memo; a class with per-node filters is looked at node by node)."""
    cls = short.cls
    idx = class_index(session.store, cls, spread=session.workspace.spread)
    reasons: Counter[str] = Counter(_static_reasons(session, idx))
    if not filters_for(cls):
        fit, short_of = fit_counts(session, idx)
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


def counted(n: int, noun: str) -> str:
    """`1 node`, `3 nodes`: a count that says what it counts."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


_SHOWN = 5  # pod names shown in a message


def pod_names(keys: list[str]) -> str:
    """The names (namespace left out) of the first five pods of `keys`, and how many more, for a message."""
    names = [key.partition("/")[2] for key in keys[:_SHOWN]]
    more = f" and {len(keys) - _SHOWN} more" if len(keys) > _SHOWN else ""
    return ", ".join(names) + more


def _head(session: CycleSession, short: Shortfall) -> str:
    """`needs 9 pods x {cpu: 1}`, and per pod its DRA devices with the nodes that have them free: `+ 8 x
    gpu.nvidia.com with <selector> (3 nodes have them free)` (core/devices/index.py names them)."""
    requests = short.cls.requests
    plain = {r: q for r, q in requests.items() if not Shapes.is_resource(r)}
    head = f"needs {counted(short.need, 'pod')} x {format_resources(plain)}"
    for r, q in sorted(requests.items()):
        if Shapes.is_resource(r) and q > 0:
            free = _nodes_with_free(session, r, q)
            shown = Shapes.describe(r, q, session.store.classes.shapes)
            head += f" + {shown} ({counted(free, 'node')} {'has' if free == 1 else 'have'} them free)"
    return head


def _nodes_with_free(session: CycleSession, resource: str, quantity: int) -> int:
    used, extra = session.store.used, session.workspace.extra
    n = 0
    for name, node in session.store.nodes.items():
        have = node.allocatable.get(resource, 0)
        if have < quantity:
            continue
        have -= (used.get(name) or {}).get(resource, 0) + (extra.get(name) or {}).get(resource, 0)
        n += have >= quantity
    return n


def _reason_shown(session: CycleSession, why: str) -> str:
    """`insufficient devices.gangsched.io/...` as the devices it stands for."""
    name = why.removeprefix("insufficient ")
    if name != why and Shapes.is_resource(name):
        return f"not enough free {Shapes.describe(name, 0, session.store.classes.shapes).removeprefix('0 x ')}"
    return why


def explain(session: CycleSession, shortfalls: list[Shortfall]) -> str:
    parts = []
    for short in shortfalls:
        head = _head(session, short)
        if short.reason is not None:
            parts.append(f"{head}; {short.reason}")
            continue
        fit, counts = _blocked_by(session, short)
        reasons: Counter[str] = Counter()
        for why, n in counts.items():
            reasons[_reason_shown(session, why)] += n
        ranked = sorted(reasons.items(), key=lambda x: (-x[1], x[0]))
        shown = ", ".join(f"{r} ({counted(n, 'node')})" for r, n in ranked)
        more = short.need - short.placed
        ports = "one pod per node (host ports)" if short.cls.host_ports else None
        shown = shown or ports or one_per_domain(short.cls) or "no more nodes"
        fits = f"{counted(fit, 'node')} {'fits' if fit == 1 else 'fit'}"
        parts.append(f"{head}; {fits}; {counted(more, 'more pod')} blocked by: {shown}")
    return "; ".join(parts)
