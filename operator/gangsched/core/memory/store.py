"""The store: nodes, pods, gangs and each pod's lifecycle state, with the resource accounting that follows from it.

Contract (fed by core/memory/scheduler_state.py, read by the scheduler through its public readers):
- Nodes: `upsert_node`, `remove_node`; pods: `upsert_pod`, `remove_pod`. Each pod's `PodState` changes only
  through `_transition` (illegal ones raise); a pod charges its node's `used` (and host ports) exactly while its
  state charges, incrementally.
- An observed record decides the state (terminal, bound, leaving); an ASSUMED pod keeps its node on a stale event.
- Decisions: `nominate`, `clear_nomination`, `reserve`, `bind_all`, `release`, `bind_succeeded`, `bind_failed`.
- A pod that changes gang leaves the old one (a reservation is released) and joins the new one. Gangs:
  core/memory/gangs.py; pending pods go to the `PendingSink`.
- For caches: `static_gen`, `changes_since`, `freed_gen`, `caches` (core/fit/store_cache.py), `pod_counts`, `coming`.
More: docs/modules.md#corememorystorepy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sized

from gangsched.core.devices import DeviceState
from gangsched.core.fit.filters import PortTable
from gangsched.core.fit.pod_counts import PodCounts
from gangsched.core.fit.store_cache import StoreCaches
from gangsched.core.memory.accounting import Accounting
from gangsched.core.memory.coming import Coming
from gangsched.core.memory.gangs import GangState, GangTable, GangTransition, PendingSink, holds_quorum
from gangsched.core.memory.podstate import (
    ASSUMED,
    BINDING,
    BOUND,
    CHARGING,
    LEAVING,
    NOMINATED,
    PENDING,
    PENDING_STATES,
    RESERVED,
    TABLE,
    TERMINAL,
    IllegalTransition,
    PodState,
    Transition,
)
from gangsched.core.memory.priorities import PriorityCounts
from gangsched.core.memory.slots import PodSlot, SlotReaders
from gangsched.core.records.records import ClassRegistry, NodeRecord, PodRecord
from gangsched.core.topology import TopologyTree
from gangsched.core.values.gangspec import GangSpec
from gangsched.core.values.resources import Resources, sub_into

T = Transition
_BINDABLE = frozenset({PENDING, NOMINATED, RESERVED})
_INDEXED = (NOMINATED, RESERVED, BINDING, ASSUMED)


class ClusterStore(SlotReaders):
    def __init__(self, sink: PendingSink, classes: ClassRegistry | None = None) -> None:
        self.classes = ClassRegistry() if classes is None else classes  # where its pods' classes come from
        self.nodes: dict[str, NodeRecord] = {}
        self.pods: dict[str, PodRecord] = {}
        self.gang_table = GangTable(sink)
        self.gangs: dict[str, GangState] = self.gang_table.gangs
        self.accounting = Accounting()
        self.used: dict[str, Resources] = self.accounting.used
        self.pods_on: dict[str, dict[str, None]] = self.accounting.pods_on  # node -> pods charged there
        self.ports = PortTable()  # host ports in use (core/fit/filters.py), charged with the resources
        self.host_ports = self.ports.by_node
        self.pod_counts = PodCounts(self.nodes)  # pods matching pod selectors (core/fit/pod_counts.py), charged alike
        self._label_gen = 0  # classes.label_keys_gen() our pods' classes are projected for
        self.topology: TopologyTree | None = None
        self.devices: DeviceState | None = None  # DRA: slices, claims, pods' claims (state/dra.py)
        self.leaving: set[str] = set()  # pods with metadata.deletionTimestamp set (an API fact)
        self.coming = Coming()  # per node, what the pods there that will end request (`_follow_coming`)
        self.caches = StoreCaches()  # the incremental caches its readers keep (core/fit/store_cache.py)
        self._sink = sink
        self._slots: dict[str, PodSlot] = {}
        self._by_state: dict[PodState, dict[str, None]] = {s: {} for s in _INDEXED}  # pods by (some) state
        self._nominated = self._by_state[NOMINATED]
        self._reserved = self._by_state[RESERVED]
        self._binding = self._by_state[BINDING]
        self._assumed = self._by_state[ASSUMED]
        self.priorities = PriorityCounts()

    # ----- readers -----
    def reserving(self) -> Iterator[str]:
        """Gangs whose waiting time runs (a waiting-time start, not satisfied)."""
        return self.gang_table.reserving()

    def lowest_priority(self) -> int | None:
        """The lowest priority of any pod (None without pods): preemption looks for victims only below it."""
        return self.priorities.lowest()

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
        tables: dict[str, Sized] = {"pods": self.pods, "gangs": self.gangs, "slots": self._slots, "used": self.used}
        tables.update(ports=self.ports, pod_counts=self.pod_counts, priorities=self.priorities, leaving=self.leaving)
        tables.update(coming=self.coming)
        out = {name: len(table) for name, table in tables.items()}
        out.update({state.value: len(pods) for state, pods in self._by_state.items()})
        out.update(reserving=self.gang_table.reserving_count(), change_log=self.accounting.log_length())
        return out

    # ----- nodes -----
    def upsert_node(self, node: NodeRecord) -> None:
        old = self.nodes.get(node.name)
        self.nodes[node.name] = node
        self.pod_counts.node_changed(node.name, old, node)
        static = (node.allocatable, node.labels, node.taints, node.unschedulable)
        if old is None or (old.allocatable, old.labels, old.taints, old.unschedulable) != static:
            self.accounting.static_gen += 1
            self.accounting.freed_gen += 1

    def remove_node(self, name: str) -> None:
        if (old := self.nodes.pop(name, None)) is None:
            return
        self.pod_counts.node_changed(name, old, None)
        self.accounting.static_gen += 1
        for key, slot in list(self._slots.items()):
            if slot.node == name and slot.state is BINDING:  # (RESERVED: released by the next cycle, recheck.py)
                self._transition(key, T.NODE_GONE)

    # ----- pods -----
    def upsert_pod(self, pod: PodRecord) -> None:
        classes = self.classes
        if self._label_gen != classes.label_keys_gen():  # a selector reads a new label key: our pods' classes again
            self._label_gen = classes.label_keys_gen()
            self.pods.update({k: classes.projected(p) for k, p in self.pods.items()})
        pod = classes.projected(pod)
        key = pod.key
        slot = self._slots.get(key)
        stale = False
        if (
            slot is not None
            and slot.state is ASSUMED
            and pod.node_name is None
            and not pod.terminal
            and pod.uid == slot.uid
        ):
            pod = dataclasses.replace(pod, node_name=slot.node)  # a stale event from before our binding
            stale = True
        old = self.pods.get(key)
        self.pods[key] = pod
        if old is None or old.priority != pod.priority:
            self.priorities.count(pod.priority, 1)
            if old is not None:
                self.priorities.count(old.priority, -1)
        moved = old is not None and old.gang != pod.gang
        if moved:
            assert old is not None
            self._leave_gang(old)
        if pod.gang is not None:
            self.gang_table.join(pod)
        if slot is None:
            slot = self._slots[key] = PodSlot(PENDING)
        if not stale:
            self._transition(key, self._observation(pod))
        else:
            self._recharge(key, slot)
        if moved and slot.state is RESERVED:  # held for the gang it left: released (kube-scheduler's Unreserve)
            self._transition(key, T.RELEASE)
        self._refresh_pending(key)
        self._follow_coming(key)

    def _observation(self, pod: PodRecord) -> Transition:
        if pod.terminal:
            return T.OBSERVE_TERMINAL
        if pod.node_name is not None:
            return T.OBSERVE_LEAVING if pod.key in self.leaving else T.OBSERVE_BOUND
        return T.OBSERVE_UNBOUND

    def remove_pod(self, key: str) -> PodRecord | None:
        if (pod := self.pods.pop(key, None)) is not None:
            self.priorities.count(pod.priority, -1)
        self.leaving.discard(key)
        self.coming.follow(key, None, len(self.nodes))
        if (slot := self._slots.pop(key, None)) is not None:
            if slot.state is NOMINATED:
                self.accounting.freed_gen += 1
            self._by_state.get(slot.state, {}).pop(key, None)
            if slot.charge is not None:
                self.accounting.uncharge(slot.charge, len(self.nodes), key)
        self.ports.charge(key, None, ())
        self.pod_counts.charge(key, None, None)
        if pod is not None:
            self._leave_gang(pod)
            self._set_pending(key, pod, False)
        return pod

    def set_leaving(self, pod_key: str, flag: bool) -> None:
        """The pod's metadata.deletionTimestamp is set (flag) or not: a bound pod becomes LEAVING."""
        if flag:
            if pod_key in self.pods:
                self.leaving.add(pod_key)
                if self.state_of(pod_key) is BOUND:
                    self._transition(pod_key, T.MARK_LEAVING)
        else:
            self.leaving.discard(pod_key)
            if self.state_of(pod_key) is LEAVING:
                self._transition(pod_key, T.OBSERVE_BOUND)
        self._follow_coming(pod_key)

    # ----- decisions -----
    def nominate(self, key: str, node: str) -> None:
        """Legal for a PENDING or NOMINATED pod; a changed node frees the capacity held before."""
        slot = self._slots[key]
        if slot.state is NOMINATED and slot.node != node:
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
        self._follow_coming(key)

    def _follow_coming(self, key: str) -> None:
        """`coming` counts the pod on its node while it is charged on the node it is bound to, not finished, and
        declares a run time or is leaving (the deadlock check's capacity that will come free)."""
        pod = self.pods.get(key)
        target = None
        if pod is not None and (node := pod.node_name) is not None and not pod.terminal:
            ends = pod.run_seconds is not None or key in self.leaving
            target = (node, pod.requests) if ends and key in self.pods_on.get(node, ()) else None
        self.coming.follow(key, target, len(self.nodes))

    def bind_all(self, bindings: list[tuple[str, str]]) -> None:
        """Start binding each (pod, node) whose pod is still waiting or reserved (others are skipped: the API
        showed them bound, finished or gone since the cycle)."""
        slots, bind = self._slots, T.BIND
        for key, node in bindings:
            slot = slots.get(key)
            if slot is not None and slot.state in _BINDABLE:
                self._transition(key, bind, node)

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

    def gang_transition(self, key: str, transition: GangTransition) -> bool:
        """A change of the gang's satisfaction (core/memory/gangs.py); True when the flag changed."""
        return self.gang_table.transition(key, transition)

    def set_wait_start(self, key: str, start: float | None) -> None:
        """Start (or clear, None) the gang's waiting time."""
        self.gang_table.set_wait_start(key, start)

    def set_timed_out(self, key: str) -> None:
        for pod_key in self.gang_table.set_timed_out(key):
            self._refresh_pending(pod_key)

    def set_topology(self, tree: TopologyTree | None) -> None:
        """A new topology moves nodes between domains: a change of their static properties (every cache keyed on
        `static_gen` is rebuilt, e.g. the hard-topology domain trees and the holds' targets), and may free room."""
        if tree != self.topology:
            self.accounting.static_gen += 1
            self.accounting.freed_gen += 1
        self.topology = tree

    def bump_freed(self) -> None:
        """Capacity may be available again (e.g. a victim's eviction was refused): backed-off units retry."""
        self.accounting.freed_gen += 1

    # ----- internals: the state machine and the accounting -----
    def _transition(self, key: str, transition: Transition, node: str | None = None) -> None:
        """The one place a pod's state changes: checked against the table; the charge and the pending set follow.
        (advance() and the pending refresh are inlined: this is the hot path.)"""
        slot = self._slots[key]
        old = slot.state
        new = TABLE.get((old, transition))
        if new is None:
            raise IllegalTransition(old, transition, key)
        if new is not old:
            by_state = self._by_state
            if old in by_state:
                del by_state[old][key]
            if new in by_state:
                by_state[new][key] = None
            slot.state = new
        if new is PENDING or new is TERMINAL:
            slot.node = None
        elif new is BOUND or new is LEAVING:
            slot.node = self.pods[key].node_name
        elif node is not None:
            slot.node = node
        if slot.uid and new is not ASSUMED:
            slot.uid = ""
        if slot.charge is not None or new in CHARGING:
            self._recharge(key, slot)
        if (old in PENDING_STATES) is not (new in PENDING_STATES):
            self._refresh_pending(key)
        pod = self.pods[key]
        if pod.gang is not None:
            self.gang_table.set_holding(key, pod.gang, holds_quorum(new, pod))
        if pod.run_seconds is not None or key in self.leaving or key in self.coming.of:
            self._follow_coming(key)

    def _recharge(self, key: str, slot: PodSlot) -> None:
        """Make the charge follow the state: (node, requests) while the state charges, nothing otherwise."""
        target = slot.node if slot.state in CHARGING else None
        charge = slot.charge
        if target is None:
            if charge is not None:
                slot.charge = self.accounting.charge(charge, None, None, len(self.nodes), key)
                self.ports.charge(key, None, ())
                self.pod_counts.charge(key, None, None)
            return
        sclass = (pod := self.pods[key]).sclass
        requests = sclass.requests
        if charge is None or target != charge[0] or requests is not charge[1]:
            slot.charge = self.accounting.charge(charge, target, requests, len(self.nodes), key)
            self.ports.charge(key, target, sclass.host_ports)
        self.pod_counts.charge_pod(key, target, pod.namespace, pod.labels, sclass.anti_affinity, slot.state is LEAVING)

    # ----- internals: gang membership and the pending set -----
    def _leave_gang(self, pod: PodRecord) -> None:
        if pod.gang is None:
            self._sink.pod_pending(pod.key, None, False)
        else:
            self.gang_table.leave(pod, self.pods)

    def _refresh_pending(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is not None:
            state = self._slots[key].state
            pending = (state is PENDING or state is NOMINATED) and pod.ours and not pod.timed_out
            pending = pending and not (pod.gated and pod.gang is None)
            self._set_pending(key, pod, pending)

    def _set_pending(self, key: str, pod: PodRecord, pending: bool) -> None:
        if pod.gang is None:
            self._sink.pod_pending(key, None, pending)
        else:
            self.gang_table.set_pending(key, pod.gang, pending)
