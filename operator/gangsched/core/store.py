"""The store: nodes, pods, gangs and each pod's lifecycle state, with the resource accounting that follows from it.

Contract (fed by core/schedstate.py, read by the scheduler through its public readers):
- Nodes: `upsert_node`, `remove_node` (pods reserved or binding on a removed node are pending again).
- Pods by key "namespace/name": `upsert_pod`, `remove_pod`. Each known pod has a `PodState`
  (core/podstate.py), changed only through `_transition`, the one place that checks the transition table and
  derives the accounting: a pod charges its node's `used` resources exactly while its state charges
  (RESERVED, BINDING, ASSUMED, BOUND, LEAVING); it is never charged twice. Per-node used resources are
  maintained incrementally, so a decision's cost does not depend on how many pods are bound.
- An observed record decides the state: Succeeded/Failed is TERMINAL, spec.nodeName is BOUND (LEAVING with a
  deletionTimestamp, see `set_leaving`); an unbound record keeps an in-memory state without a node. An ASSUMED
  pod (bound by us, `bind_succeeded`) keeps its node when a stale event (same uid, no nodeName) arrives.
- Decisions: `nominate`, `clear_nomination`, `reserve(binding=False|True)`, `release`, `bind_succeeded`,
  `bind_failed`; each is a named transition (illegal ones raise). A NOMINATED pod's node is not charged.
- Gangs by key: `GangState` (spec, members, pending members, waiting-time start, once-satisfied, timed out,
  last reported status). A gang is forgotten when it has neither members nor a spec.
- The pending set: a pod is pending when it is ours, not timed out and PENDING or NOMINATED. Changes are
  reported to the `PendingSink` (the scheduling queue).
- Change tracking for the capacity caches (core/capacity.py): `static_gen` (any node's static properties
  changed), `changes_since(position)` (nodes whose used resources changed), `freed_gen` (capacity may have
  grown: a unit backed off before that is tried again at once), `class_caches` (owned by capacity.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from gangsched.core.gangspec import GangSpec
from gangsched.core.naming import natural_key
from gangsched.core.plan import GangStatus
from gangsched.core.podstate import PodState, Transition, advance, charges
from gangsched.core.records import NodeRecord, PodRecord
from gangsched.core.resources import Resources, add_into, sub_into
from gangsched.core.topology import TopologyTree

S = PodState
T = Transition


class PendingSink(Protocol):
    """Told when a pod starts or stops pending, and when a gang is forgotten (the scheduling queue)."""

    def pod_pending(self, pod_key: str, gang_key: str | None, pending: bool) -> None: ...

    def gang_queued(self, gang_key: str, queued: bool) -> None: ...

    def gang_forgotten(self, gang_key: str) -> None: ...


@dataclass(slots=True)
class PodSlot:
    """One pod's lifecycle state and what follows from it."""

    state: PodState
    name_key: tuple[tuple[int, int | str], ...]  # natural order of the name (members without a rank)
    node: str | None = None  # the node of every state but PENDING and TERMINAL (NOMINATED: the nominated node)
    uid: str = ""  # ASSUMED: the uid of the pod we bound
    charge: tuple[str, Mapping[str, int]] | None = None  # (node, requests) counted in `used`


@dataclass(slots=True)
class GangState:
    key: str
    spec: GangSpec | None = None
    created: float | None = None  # the PodGroup's creation time; None: the earliest member's
    members: dict[str, None] = field(default_factory=dict)
    pending: dict[str, None] = field(default_factory=dict)
    first_reserved: float | None = None  # waiting-time start
    satisfied: bool = False  # once-satisfied: later members schedule alone
    timed_out: bool = False
    last_status: GangStatus | None = None
    priority: int = 0  # max priority over members
    member_created: float = float("inf")  # earliest member creation time


class ClusterStore:
    def __init__(self, sink: PendingSink) -> None:
        self.nodes: dict[str, NodeRecord] = {}
        self.pods: dict[str, PodRecord] = {}
        self.gangs: dict[str, GangState] = {}
        self.used: dict[str, Resources] = {}
        self.topology: TopologyTree | None = None
        self.leaving: set[str] = set()  # pods with metadata.deletionTimestamp set (an API fact)
        self.class_caches: dict[Any, Any] = {}  # capacity.py's per-class indexes
        self.static_gen = 0
        self.freed_gen = 0
        self._sink = sink
        self._slots: dict[str, PodSlot] = {}
        self._nominated: dict[str, None] = {}  # index of NOMINATED pods
        self._binding: dict[str, None] = {}  # index of BINDING pods
        self._assumed: dict[str, None] = {}  # index of ASSUMED pods
        self._reserving: dict[str, None] = {}  # gangs with a waiting-time start, not satisfied
        self._priorities: dict[int, int] = {}  # pod priority -> pods
        self._log: list[str] = []  # nodes whose used resources changed, since _log_base
        self._log_base = 0

    # ----- readers -----
    def state_of(self, pod_key: str) -> PodState | None:
        slot = self._slots.get(pod_key)
        return slot.state if slot is not None else None

    def name_key(self, pod_key: str) -> tuple[tuple[int, int | str], ...]:
        return self._slots[pod_key].name_key

    def reservation_of(self, pod_key: str) -> tuple[str, bool] | None:
        """(node, binding_in_flight) of a RESERVED or BINDING pod, or None."""
        slot = self._slots.get(pod_key)
        if slot is None or (slot.state is not S.RESERVED and slot.state is not S.BINDING):
            return None
        assert slot.node is not None
        return slot.node, slot.state is S.BINDING

    def nomination_of(self, pod_key: str) -> str | None:
        slot = self._slots.get(pod_key)
        return slot.node if slot is not None and slot.state is S.NOMINATED else None

    def nominations(self) -> Iterator[tuple[str, str]]:
        """(pod_key, node) of every NOMINATED pod."""
        for key in self._nominated:
            node = self._slots[key].node
            assert node is not None
            yield key, node

    def bindings_in_flight(self) -> Iterator[tuple[str, str]]:
        for key in self._binding:
            node = self._slots[key].node
            assert node is not None
            yield key, node

    @property
    def assumed(self) -> dict[str, tuple[str, str]]:
        """Pods bound by us, not yet seen bound: pod -> (node, uid)."""
        out = {}
        for key in self._assumed:
            slot = self._slots[key]
            assert slot.node is not None
            out[key] = (slot.node, slot.uid)
        return out

    def reserving(self) -> Iterator[str]:
        """Gangs whose waiting time runs (a waiting-time start, not satisfied)."""
        return iter(self._reserving)

    def lowest_priority(self) -> int | None:
        """The lowest priority of any pod (None without pods): preemption looks for victims only below it."""
        return min(self._priorities) if self._priorities else None

    def free(self, node: str) -> Resources:
        out = dict(self.nodes[node].allocatable)
        sub_into(out, self.used.get(node, {}))
        return out

    def log_end(self) -> int:
        return self._log_base + len(self._log)

    def changes_since(self, position: int) -> list[str] | None:
        """Nodes whose used resources changed since `position` (None: the log was trimmed past it)."""
        if position < self._log_base:
            return None
        return self._log[position - self._log_base :]

    def sizes(self) -> dict[str, int]:
        """Sizes of every per-pod and per-gang structure (tests: nothing grows without bound)."""
        return {
            "pods": len(self.pods),
            "gangs": len(self.gangs),
            "slots": len(self._slots),
            "nominated": len(self._nominated),
            "binding": len(self._binding),
            "assumed": len(self._assumed),
            "reserving": len(self._reserving),
            "priorities": len(self._priorities),
            "leaving": len(self.leaving),
            "change_log": len(self._log),
            "used": len(self.used),
        }

    # ----- nodes -----
    def upsert_node(self, node: NodeRecord) -> None:
        old = self.nodes.get(node.name)
        self.nodes[node.name] = node
        if (
            old is None
            or old.allocatable != node.allocatable
            or old.labels != node.labels
            or (old.taints != node.taints or old.unschedulable != node.unschedulable)
        ):
            self.static_gen += 1
            self.freed_gen += 1

    def remove_node(self, name: str) -> None:
        if self.nodes.pop(name, None) is None:
            return
        self.static_gen += 1
        for key, slot in list(self._slots.items()):
            if slot.node == name and (slot.state is S.RESERVED or slot.state is S.BINDING):
                self._transition(key, T.NODE_GONE)

    # ----- pods -----
    def upsert_pod(self, pod: PodRecord) -> None:
        key = pod.key
        slot = self._slots.get(key)
        stale = False
        if slot is not None and slot.state is S.ASSUMED:
            if pod.node_name is None and not pod.terminal and pod.uid == slot.uid:
                pod = dataclasses.replace(pod, node_name=slot.node)  # a stale event from before our binding
                stale = True
        old = self.pods.get(key)
        self.pods[key] = pod
        if old is None or old.priority != pod.priority:
            self._count_priority(pod.priority, 1)
            if old is not None:
                self._count_priority(old.priority, -1)
        if old is not None and old.gang != pod.gang:
            self._leave_gang(old)
        if pod.gang is not None:
            self._join_gang(pod)
        if slot is None:
            slot = self._slots[key] = PodSlot(S.PENDING, natural_key(pod.name))
        if not stale:
            self._transition(key, self._observation(pod))
        else:
            self._recharge(key, slot)
        self._refresh_pending(key)

    def _observation(self, pod: PodRecord) -> Transition:
        if pod.terminal:
            return T.OBSERVE_TERMINAL
        if pod.node_name is not None:
            return T.OBSERVE_LEAVING if pod.key in self.leaving else T.OBSERVE_BOUND
        return T.OBSERVE_UNBOUND

    def remove_pod(self, key: str) -> PodRecord | None:
        pod = self.pods.pop(key, None)
        if pod is not None:
            self._count_priority(pod.priority, -1)
        self.leaving.discard(key)
        slot = self._slots.pop(key, None)
        if slot is not None:
            if slot.state is S.NOMINATED:
                self.freed_gen += 1
            self._unindex(key, slot.state)
            self._uncharge(slot)
        if pod is not None:
            self._leave_gang(pod)
            self._set_pending(pod, False)
        return pod

    def set_leaving(self, pod_key: str, flag: bool) -> None:
        """The pod's metadata.deletionTimestamp is set (flag) or not: a bound pod becomes LEAVING."""
        if flag:
            if pod_key in self.pods:
                self.leaving.add(pod_key)
                if self.state_of(pod_key) is S.BOUND:
                    self._transition(pod_key, T.MARK_LEAVING)
        else:
            self.leaving.discard(pod_key)
            if self.state_of(pod_key) is S.LEAVING:
                self._transition(pod_key, T.OBSERVE_BOUND)

    # ----- decisions -----
    def nominate(self, key: str, node: str) -> None:
        """Legal for a PENDING or NOMINATED pod; a changed node frees the capacity held before."""
        slot = self._slots[key]
        if slot.state is S.NOMINATED and slot.node != node:
            self.freed_gen += 1
        self._transition(key, T.NOMINATE, node)

    def clear_nomination(self, key: str) -> None:
        self._transition(key, T.CLEAR_NOMINATION)
        self.freed_gen += 1  # held capacity is free again

    def reserve(self, key: str, node: str, *, binding: bool) -> None:
        self._transition(key, T.BIND if binding else T.RESERVE, node)

    def release(self, key: str) -> None:
        self._transition(key, T.RELEASE)

    def bind_succeeded(self, key: str) -> None:
        """The binder bound a BINDING pod: ASSUMED on its node until the watch shows it bound."""
        slot = self._slots[key]
        pod = self.pods[key]
        slot.uid = pod.uid
        self.pods[key] = dataclasses.replace(pod, node_name=slot.node)
        self._transition(key, T.BIND_SUCCEEDED, slot.node)

    def bind_failed(self, key: str) -> None:
        self._transition(key, T.BIND_FAILED)

    # ----- gangs -----
    def gang(self, key: str) -> GangState:
        """The gang's state, created empty when unknown."""
        gs = self.gangs.get(key)
        if gs is None:
            gs = self.gangs[key] = GangState(key)
        return gs

    def upsert_gang(self, spec: GangSpec, *, created: float | None = None) -> None:
        gs = self.gang(spec.key)
        gs.spec = spec
        if created is not None:
            gs.created = created

    def remove_gang(self, key: str) -> None:
        gs = self.gangs.get(key)
        if gs is None:
            return
        gs.spec = None
        gs.created = None
        self._forget_if_empty(gs)

    def set_satisfied(self, key: str, flag: bool = True) -> None:
        gs = self.gang(key)
        gs.satisfied = flag
        if flag:
            self.set_wait_start(key, None)

    def set_wait_start(self, key: str, start: float | None) -> None:
        """Start (or clear, None) the gang's waiting time."""
        gs = self.gang(key)
        gs.first_reserved = start
        if start is None:
            self._reserving.pop(key, None)
        else:
            self._reserving[key] = None

    def set_timed_out(self, key: str) -> None:
        gs = self.gang(key)
        gs.timed_out = True
        self.set_wait_start(key, None)
        for pod_key in list(gs.pending):
            self._refresh_pending(pod_key)

    def bump_freed(self) -> None:
        """Capacity may be available again (e.g. a victim's eviction was refused): backed-off units retry."""
        self.freed_gen += 1

    # ----- internals: the state machine and the accounting -----
    def _transition(self, key: str, transition: Transition, node: str | None = None) -> None:
        slot = self._slots[key]
        old = slot.state
        new = advance(old, transition, key)
        if new is not old:
            self._unindex(key, old)
            self._index(key, new)
        slot.state = new
        if new is S.PENDING or new is S.TERMINAL:
            slot.node = None
        elif new is S.BOUND or new is S.LEAVING:
            slot.node = self.pods[key].node_name
        elif node is not None:
            slot.node = node
        if new is not S.ASSUMED:
            slot.uid = ""
        self._recharge(key, slot)
        if old is not new:
            self._refresh_pending(key)

    def _index(self, key: str, state: PodState) -> None:
        if state is S.NOMINATED:
            self._nominated[key] = None
        elif state is S.BINDING:
            self._binding[key] = None
        elif state is S.ASSUMED:
            self._assumed[key] = None

    def _unindex(self, key: str, state: PodState) -> None:
        if state is S.NOMINATED:
            del self._nominated[key]
        elif state is S.BINDING:
            del self._binding[key]
        elif state is S.ASSUMED:
            del self._assumed[key]

    def _recharge(self, key: str, slot: PodSlot) -> None:
        """Make the charge follow the state: (node, requests) while the state charges, nothing otherwise."""
        target = slot.node if charges(slot.state) else None
        requests = self.pods[key].sclass.requests if target is not None else None
        current = slot.charge
        if current is not None and target == current[0] and requests is current[1]:
            return
        if current is not None:
            self._uncharge(slot, moving_to=target)
        if target is not None and requests is not None:
            used = self.used.get(target)
            if used is None:
                used = self.used[target] = {}
            add_into(used, requests)
            slot.charge = (target, requests)
            self._log_change(target)

    def _uncharge(self, slot: PodSlot, moving_to: str | None = None) -> None:
        if slot.charge is None:
            return
        node, requests = slot.charge
        slot.charge = None
        used = self.used.get(node)
        if used is not None:
            sub_into(used, requests)
            if not used:
                del self.used[node]
        self._log_change(node)
        if moving_to != node:
            self.freed_gen += 1

    def _log_change(self, node: str) -> None:
        self._log.append(node)
        if len(self._log) > 4 * len(self.nodes) + 10_000:
            self._log_base += len(self._log)
            self._log.clear()

    def _count_priority(self, priority: int, delta: int) -> None:
        n = self._priorities.get(priority, 0) + delta
        if n:
            self._priorities[priority] = n
        else:
            self._priorities.pop(priority, None)

    # ----- internals: gang membership and the pending set -----
    def _join_gang(self, pod: PodRecord) -> None:
        assert pod.gang is not None
        gs = self.gang(pod.gang)
        gs.members[pod.key] = None
        if pod.priority > gs.priority:
            gs.priority = pod.priority
        if pod.created < gs.member_created:
            gs.member_created = pod.created

    def _leave_gang(self, pod: PodRecord) -> None:
        if pod.gang is None:
            self._sink.pod_pending(pod.key, None, False)
            return
        gs = self.gangs.get(pod.gang)
        if gs is None:
            return
        gs.members.pop(pod.key, None)
        if pod.key in gs.pending:
            del gs.pending[pod.key]
            if not gs.pending:
                self._sink.gang_queued(gs.key, False)
        gs.priority = max((self.pods[k].priority for k in gs.members if k in self.pods), default=0)
        gs.member_created = min((self.pods[k].created for k in gs.members if k in self.pods), default=float("inf"))
        if not gs.members:
            gs.timed_out = False
            self.set_wait_start(gs.key, None)
        self._forget_if_empty(gs)

    def _forget_if_empty(self, gs: GangState) -> None:
        if not gs.members and gs.spec is None:
            self.gangs.pop(gs.key, None)
            self._reserving.pop(gs.key, None)
            self._sink.gang_forgotten(gs.key)

    def _refresh_pending(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is not None:
            slot = self._slots[key]
            waiting = slot.state is S.PENDING or slot.state is S.NOMINATED
            self._set_pending(pod, waiting and pod.ours and not pod.timed_out)

    def _set_pending(self, pod: PodRecord, pending: bool) -> None:
        key = pod.key
        if pod.gang is None:
            self._sink.pod_pending(key, None, pending)
            return
        gs = self.gangs.get(pod.gang)
        if gs is None:
            return
        if pending:
            if not gs.pending:
                self._sink.gang_queued(gs.key, True)
            gs.pending[key] = None
        elif key in gs.pending:  # (values are None: pop(key, None) cannot tell presence)
            del gs.pending[key]
            if not gs.pending:
                self._sink.gang_queued(gs.key, False)
