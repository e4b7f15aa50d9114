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
from dataclasses import dataclass
from typing import Any

from gangsched.core.accounting import Accounting, Charge
from gangsched.core.gangs import GangState, GangTable, PendingSink
from gangsched.core.gangspec import GangSpec
from gangsched.core.naming import natural_key
from gangsched.core.podstate import PENDING_STATES, TABLE, IllegalTransition, PodState, Transition, charges
from gangsched.core.records import NodeRecord, PodRecord
from gangsched.core.resources import Resources, sub_into
from gangsched.core.topology import TopologyTree

S = PodState
T = Transition


@dataclass(slots=True)
class PodSlot:
    """One pod's lifecycle state and what follows from it."""

    state: PodState
    name_key: tuple[tuple[int, int | str], ...]  # natural order of the name (members without a rank)
    node: str | None = None  # the node of every state but PENDING and TERMINAL (NOMINATED: the nominated node)
    uid: str = ""  # ASSUMED: the uid of the pod we bound
    charge: Charge | None = None  # (node, requests) counted in `used`


class ClusterStore:
    def __init__(self, sink: PendingSink) -> None:
        self.nodes: dict[str, NodeRecord] = {}
        self.pods: dict[str, PodRecord] = {}
        self.gang_table = GangTable(sink)
        self.gangs: dict[str, GangState] = self.gang_table.gangs
        self.accounting = Accounting()
        self.used: dict[str, Resources] = self.accounting.used
        self.topology: TopologyTree | None = None
        self.leaving: set[str] = set()  # pods with metadata.deletionTimestamp set (an API fact)
        self.class_caches: dict[Any, Any] = {}  # capacity.py's per-class indexes
        self._sink = sink
        self._slots: dict[str, PodSlot] = {}
        self._nominated: dict[str, None] = {}  # index of NOMINATED pods
        self._binding: dict[str, None] = {}  # index of BINDING pods
        self._in_memory: dict[str, None] = {}  # index of RESERVED and BINDING pods
        self._assumed: dict[str, None] = {}  # index of ASSUMED pods
        self._priorities: dict[int, int] = {}  # pod priority -> pods

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

    @property
    def placed_in_memory(self) -> Mapping[str, None]:
        """The RESERVED and BINDING pods (read-only)."""
        return self._in_memory

    @property
    def nominated(self) -> Mapping[str, None]:
        """The NOMINATED pods (read-only)."""
        return self._nominated

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
        return self.gang_table.reserving()

    def lowest_priority(self) -> int | None:
        """The lowest priority of any pod (None without pods): preemption looks for victims only below it."""
        return min(self._priorities) if self._priorities else None

    def free(self, node: str) -> Resources:
        out = dict(self.nodes[node].allocatable)
        sub_into(out, self.used.get(node, {}))
        return out

    @property
    def static_gen(self) -> int:
        return self.accounting.static_gen

    @property
    def freed_gen(self) -> int:
        return self.accounting.freed_gen

    def log_end(self) -> int:
        return self.accounting.log_end()

    def changes_since(self, position: int) -> list[str] | None:
        return self.accounting.changes_since(position)

    def sizes(self) -> dict[str, int]:
        """Sizes of every per-pod and per-gang structure (tests: nothing grows without bound)."""
        return {
            "pods": len(self.pods),
            "gangs": len(self.gangs),
            "slots": len(self._slots),
            "nominated": len(self._nominated),
            "binding": len(self._binding),
            "in_memory": len(self._in_memory),
            "assumed": len(self._assumed),
            "reserving": self.gang_table.reserving_count(),
            "priorities": len(self._priorities),
            "leaving": len(self.leaving),
            "change_log": self.accounting.log_length(),
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
            self.accounting.static_gen += 1
            self.accounting.freed_gen += 1

    def remove_node(self, name: str) -> None:
        if self.nodes.pop(name, None) is None:
            return
        self.accounting.static_gen += 1
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
                self.accounting.freed_gen += 1
            self._unindex(key, slot.state)
            if slot.charge is not None:
                self.accounting.uncharge(slot.charge, len(self.nodes))
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
            self.accounting.freed_gen += 1
        self._transition(key, T.NOMINATE, node)

    def clear_nomination(self, key: str) -> None:
        self._transition(key, T.CLEAR_NOMINATION)
        self.accounting.freed_gen += 1  # held capacity is free again

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
        return self.gang_table.get(key)

    def upsert_gang(self, spec: GangSpec, *, created: float | None = None) -> None:
        self.gang_table.upsert(spec, created)

    def remove_gang(self, key: str) -> None:
        self.gang_table.remove(key)

    def set_satisfied(self, key: str, flag: bool = True) -> None:
        self.gang_table.set_satisfied(key, flag)

    def set_wait_start(self, key: str, start: float | None) -> None:
        """Start (or clear, None) the gang's waiting time."""
        self.gang_table.set_wait_start(key, start)

    def set_timed_out(self, key: str) -> None:
        for pod_key in self.gang_table.set_timed_out(key):
            self._refresh_pending(pod_key)

    def bump_freed(self) -> None:
        """Capacity may be available again (e.g. a victim's eviction was refused): backed-off units retry."""
        self.accounting.freed_gen += 1

    # ----- internals: the state machine and the accounting -----
    def _transition(self, key: str, transition: Transition, node: str | None = None) -> None:
        slot = self._slots[key]
        old = slot.state
        new = TABLE.get((old, transition))  # (advance(), inlined: this is the hot path)
        if new is None:
            raise IllegalTransition(old, transition, key)
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
        if (old in PENDING_STATES) is not (new in PENDING_STATES):
            self._refresh_pending(key)

    def _index(self, key: str, state: PodState) -> None:
        if state is S.NOMINATED:
            self._nominated[key] = None
        elif state is S.RESERVED:
            self._in_memory[key] = None
        elif state is S.BINDING:
            self._binding[key] = None
            self._in_memory[key] = None
        elif state is S.ASSUMED:
            self._assumed[key] = None

    def _unindex(self, key: str, state: PodState) -> None:
        if state is S.NOMINATED:
            del self._nominated[key]
        elif state is S.RESERVED:
            del self._in_memory[key]
        elif state is S.BINDING:
            del self._binding[key]
            del self._in_memory[key]
        elif state is S.ASSUMED:
            del self._assumed[key]

    def _recharge(self, key: str, slot: PodSlot) -> None:
        """Make the charge follow the state: (node, requests) while the state charges, nothing otherwise."""
        target = slot.node if charges(slot.state) else None
        requests = self.pods[key].sclass.requests if target is not None else None
        slot.charge = self.accounting.charge(slot.charge, target, requests, len(self.nodes))

    def _count_priority(self, priority: int, delta: int) -> None:
        n = self._priorities.get(priority, 0) + delta
        if n:
            self._priorities[priority] = n
        else:
            self._priorities.pop(priority, None)

    # ----- internals: gang membership and the pending set -----
    def _join_gang(self, pod: PodRecord) -> None:
        self.gang_table.join(pod)

    def _leave_gang(self, pod: PodRecord) -> None:
        if pod.gang is None:
            self._sink.pod_pending(pod.key, None, False)
        else:
            self.gang_table.leave(pod, self.pods)

    def _refresh_pending(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is not None:
            slot = self._slots[key]
            waiting = slot.state is S.PENDING or slot.state is S.NOMINATED
            self._set_pending(pod, waiting and pod.ours and not pod.timed_out)

    def _set_pending(self, pod: PodRecord, pending: bool) -> None:
        if pod.gang is None:
            self._sink.pod_pending(pod.key, None, pending)
        else:
            self.gang_table.set_pending(pod.key, pod.gang, pending)
