"""The mutable, incremental, pure in-memory model of the cluster that the scheduler decides against.

Contract (the state/ layer feeds it from watch events; the runtime applies plans to it):
- Nodes: `upsert_node(NodeRecord)`, `remove_node(name)` (reservations on a removed node are dropped and
  their pods become pending again).
- Pods by key "namespace/name": `upsert_pod(PodRecord)`, `remove_pod(key)`. A pod is charged to a node
  while it is bound (spec.nodeName) and not Succeeded/Failed, or while it holds a reservation or a binding in
  flight; it is never charged twice. A watch event showing a reserved pod bound replaces the reservation by
  the bound accounting. Per-node used resources are maintained incrementally, so the cost of a decision
  does not depend on how many pods are bound.
- Gangs by key "namespace/name": `upsert_gang(spec, *, created=None)`, `remove_gang(key)`. Pods whose gang
  has no spec yet are collected and wait. `mark_satisfied(key)` restores the once-satisfied flag at startup
  (from PodGroup status).
- `set_topology(tree | None)`: the topology tree handed to placement (see core/topology_adapter.py).
- `apply(plan)`: records what a cycle decided (reservations, releases, bindings in flight, timeouts,
  satisfied flags, waiting-time starts, backoffs, last reported statuses).
- Preemption (issue 6, see core/preemption.py): `plan.nominations` record each preemptor member's
  nominated node until the member is bound or reserved, deleted, or listed in `plan.nomination_clears`.
  Nominations are not charged to `used` (the victims still are, so `used` never exceeds allocatable); the
  scheduler holds that capacity for the gang in each cycle's workspace (no gang of lower or equal
  priority is given it). `plan.preemptions`
  (gang -> victim pods) records victims being evicted: they are never chosen again while they exist.
  `eviction_failed(pod_key)`: the Eviction API refused (429): the victim is marked refused (treated as
  protected from then on) and its preemptor chooses again. `set_protected(pod_key, flag)`: the pod is
  selected by a PodDisruptionBudget. A gang preempted whole is no longer satisfied (its members must reach
  the quorum again) and `mark_satisfied` ignores it until the scheduler satisfies it again. Readers:
  `nomination_of(pod_key)`, `victims_of(gang_key)`, `evicting`, `protected`.
- `bind_succeeded(pod_key)`: the binder bound the pod: it is *assumed* bound to its node (kube-scheduler's
  assumed pod) until a watch event shows it bound (any node), terminal, or deleted, or a pod of the same name
  with another uid appears. Meanwhile a stale event (generated before the binding, delivered after the binder's
  answer: nodeName unset) updates the record but keeps the node: the pod never becomes pending again.
  Reader: `assumed` (pod -> (node, uid)). `bind_failed(pod_key)`: the binding failed: the charge goes and the pod is
  pending again, scheduling alone if its gang is satisfied. A binding in flight is never handed out again.
- Restart safety (issue 4 item 6, issue 6 item 3): `set_leaving(pod_key, flag)` marks a pod whose
  metadata.deletionTimestamp is set (`leaving`): it is never chosen as a victim. A new leader calls
  `restore_wait_start(gang, start)` for gangs whose PodGroup was Scheduling (status.scheduleStartTime: the
  waiting time is not restarted by a restart), then `restore_nominations(now=...)`: every pod whose
  status.nominatedNodeName names an existing node, pending and of a gang still able to use it (spec known,
  not satisfied, not timed out, pod not leaving) gets its nomination back (capacity held), and the leaving,
  lower-priority pods bound on its gang's nominated nodes become that gang's victims (soon free: the gang waits
  for them and evicts nobody else); such a gang without a waiting-time start starts it at `now`. Returns the
  pods whose status shows a nomination that was not restored (the runtime clears them).
Readers: `nodes`, `pods`, `gangs`, `used`, `reservation_of(pod_key)`, `free(node)`, `bindings_in_flight()`.
Everything else (underscored) is for core/scheduler.py and core/capacity.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gangsched.core.gangspec import GangSpec
from gangsched.core.plan import GangStatus, Plan
from gangsched.core.records import NodeRecord, PodRecord
from gangsched.core.resources import Resources, add_into, sub_into
from gangsched.core.topology import TopologyTree

ALONE_PREFIX = "pod:"  # queue-unit keys of pods scheduled alone: "pod:namespace/name"


def alone_key(pod_key: str) -> str:
    return ALONE_PREFIX + pod_key


@dataclass(slots=True)
class UnitState:
    """Queue bookkeeping of one scheduling unit (a gang, or a pod scheduled alone)."""

    key: str
    attempts: int = 0
    backoff_until: float = 0.0
    failed_at: float | None = None
    freed_gen: int = 0  # Cluster.freed_gen when it backed off: capacity freed since then ends the backoff
    waiting_reason: str | None = None  # last waiting reason reported (to report a change once)


@dataclass(slots=True)
class GangState(UnitState):
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


class Cluster:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeRecord] = {}
        self.pods: dict[str, PodRecord] = {}
        self.gangs: dict[str, GangState] = {}
        self.used: dict[str, Resources] = {}
        self.topology: TopologyTree | None = None
        self._charged: dict[str, tuple[str, Mapping[str, int]]] = {}
        self._reservations: dict[str, tuple[str, bool]] = {}  # pod -> (node, binding in flight)
        self._alone: dict[str, UnitState] = {}  # alone_key -> state (only while pending)
        self._alone_pending: dict[str, None] = {}  # pod keys of pending pods scheduled alone
        self._queued_gangs: dict[str, None] = {}  # gangs with pending members
        self._reserving: dict[str, None] = {}  # gangs with a waiting-time start and not satisfied
        # change tracking for capacity caches (core/capacity.py)
        self._static_gen = 0  # bumped when any node's static properties change
        # bumped whenever capacity may have grown (a charge left a node, a node joined or changed): a unit
        # backed off before that is tried again at once, as kube-scheduler requeues on cluster events
        self.freed_gen = 0
        self._log: list[str] = []  # nodes whose used resources changed, since _log_base
        self._log_base = 0
        self._class_caches: dict[Any, Any] = {}
        # preemption (issue 6)
        self._nominations: dict[str, str] = {}  # preemptor pod -> nominated node (charged there)
        self._preempting: dict[str, dict[str, None]] = {}  # preemptor gang -> victims being evicted
        self.evicting: dict[str, str] = {}  # victim pod -> preemptor gang
        self.protected: set[str] = set()  # pods selected by a PodDisruptionBudget, or whose eviction was refused
        self._preempted: set[str] = set()  # gangs preempted whole, not satisfied again since
        self._priorities: dict[int, int] = {}  # pod priority -> pods (a quick "no victims possible" test)
        # restart safety and cache consistency
        self.leaving: set[str] = set()  # pods with metadata.deletionTimestamp set
        self.assumed: dict[str, tuple[str, str]] = {}  # pod bound by us, not yet seen bound -> (node, uid)

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
            self._static_gen += 1
            self.freed_gen += 1

    def remove_node(self, name: str) -> None:
        if self.nodes.pop(name, None) is None:
            return
        self._static_gen += 1
        for pod_key, (node, _binding) in list(self._reservations.items()):
            if node == name:
                self._drop_reservation(pod_key)

    # ----- pods -----
    def upsert_pod(self, pod: PodRecord) -> None:
        key = pod.key
        assumed = self.assumed.get(key)
        if assumed is not None:
            if pod.node_name is None and not pod.terminal and pod.uid == assumed[1]:
                pod = dataclasses.replace(pod, node_name=assumed[0])  # a stale event from before our binding
            else:
                del self.assumed[key]  # seen bound (the confirmation), finished, or another pod of that name
        old = self.pods.get(key)
        self.pods[key] = pod
        if old is None or old.priority != pod.priority:
            self._count_priority(pod.priority, 1)
            if old is not None:
                self._count_priority(old.priority, -1)
        if pod.node_name is not None or pod.terminal:
            self._reservations.pop(key, None)
            self._nominations.pop(key, None)
        if old is not None and old.gang != pod.gang:
            self._leave_gang(old)
        if pod.gang is not None:
            gs = self._gang(pod.gang)
            gs.members[key] = None
            gs.priority = max(gs.priority, pod.priority)
            gs.member_created = min(gs.member_created, pod.created)
        self._recharge(key)
        self._refresh_pending(key)

    def remove_pod(self, key: str) -> None:
        pod = self.pods.pop(key, None)
        if pod is not None:
            self._count_priority(pod.priority, -1)
        self._reservations.pop(key, None)
        self.assumed.pop(key, None)
        self.leaving.discard(key)
        if self._nominations.pop(key, None) is not None:
            self.freed_gen += 1
        self._forget_victim(key)
        self.protected.discard(key)
        self._recharge(key)
        if pod is not None:
            self._leave_gang(pod)
            self._set_pending(pod, False)
        self._alone.pop(alone_key(key), None)

    # ----- gangs -----
    def upsert_gang(self, spec: GangSpec, *, created: float | None = None) -> None:
        gs = self._gang(spec.key)
        gs.spec = spec
        if created is not None:
            gs.created = created

    def remove_gang(self, key: str) -> None:
        gs = self.gangs.get(key)
        if gs is None:
            return
        gs.spec = None
        gs.created = None
        self._preempted.discard(key)
        self._forget_if_empty(gs)

    def mark_satisfied(self, key: str) -> None:
        if key in self._preempted:
            return  # a stale PodGroup status of a gang preempted whole: it must reach its quorum again
        self._set_satisfied(key)

    def _set_satisfied(self, key: str) -> None:
        self._preempted.discard(key)
        gs = self._gang(key)
        gs.satisfied = True
        gs.first_reserved = None
        self._reserving.pop(key, None)

    def set_topology(self, tree: TopologyTree | None) -> None:
        self.topology = tree

    # ----- readers -----
    def reservation_of(self, pod_key: str) -> tuple[str, bool] | None:
        """(node, binding_in_flight) of a pod's reservation, or None."""
        return self._reservations.get(pod_key)

    def nomination_of(self, pod_key: str) -> str | None:
        return self._nominations.get(pod_key)

    def lowest_priority(self) -> int | None:
        """The lowest priority of any pod (None without pods): preemption looks for victims only below it."""
        return min(self._priorities) if self._priorities else None

    def _count_priority(self, priority: int, delta: int) -> None:
        n = self._priorities.get(priority, 0) + delta
        if n:
            self._priorities[priority] = n
        else:
            self._priorities.pop(priority, None)

    def nominations(self) -> Iterator[tuple[str, str]]:
        """(pod_key, node) of every nomination in force."""
        return iter(self._nominations.items())

    def victims_of(self, gang_key: str) -> list[str]:
        """Victims evicted for this gang that still exist."""
        return list(self._preempting.get(gang_key, ()))

    def set_protected(self, pod_key: str, flag: bool) -> None:
        if flag:
            self.protected.add(pod_key)
        else:
            self.protected.discard(pod_key)

    def set_leaving(self, pod_key: str, flag: bool) -> None:
        """The pod's metadata.deletionTimestamp is set (flag) or not: a leaving pod is never a victim."""
        if flag:
            if pod_key in self.pods:
                self.leaving.add(pod_key)
        else:
            self.leaving.discard(pod_key)

    def restore_wait_start(self, gang_key: str, start: float) -> None:
        """A new leader: the gang was reserving since `start` (its PodGroup's scheduleStartTime)."""
        gs = self.gangs.get(gang_key)
        if gs is None or gs.satisfied or gs.timed_out or gs.first_reserved is not None:
            return
        gs.first_reserved = start
        self._reserving[gang_key] = None

    def restore_nominations(self, *, now: float) -> list[str]:
        """A new leader: nominations (and their victims) back from the pods' status; see the module docstring."""
        stale: list[str] = []
        held: dict[str, set[str]] = {}  # gang -> nominated nodes
        for key, pod in self.pods.items():
            node = pod.nominated_node
            if node is None or key in self._nominations:
                continue
            gs = self.gangs.get(pod.gang) if pod.gang is not None else None
            if (
                gs is None
                or gs.spec is None
                or gs.satisfied
                or gs.timed_out
                or node not in self.nodes
                or not pod.ours
                or pod.node_name is not None
                or pod.terminal
                or pod.timed_out
                or key in self._reservations
                or key in self.leaving
            ):
                stale.append(key)
                continue
            self._nominations[key] = node
            held.setdefault(gs.key, set()).add(node)
        if not held:
            return stale
        victim_gangs: set[str] = set()
        owner: dict[str, str] = {}  # nominated node -> the highest-priority gang holding it
        for gk in sorted(held, key=lambda g: (-self.gangs[g].priority, g)):
            for held_node in held[gk]:
                owner.setdefault(held_node, gk)
        for key in self.leaving:
            victim = self.pods.get(key)
            if victim is None or victim.node_name is None or victim.terminal or key in self.evicting:
                continue
            preemptor = owner.get(victim.node_name)
            if preemptor is not None and victim.priority < self.gangs[preemptor].priority:
                self.evicting[key] = preemptor
                self._preempting.setdefault(preemptor, {})[key] = None
                if victim.gang is not None:
                    victim_gangs.add(victim.gang)
        self._mark_preempted(victim_gangs)  # (its PodGroup may still say Running: it must reach its quorum again)
        for gk in held:
            gs = self.gangs[gk]
            if gs.first_reserved is None:  # the waiting time bounds how long it holds nodes
                gs.first_reserved = now
                self._reserving[gk] = None
        return stale

    def _mark_preempted(self, victim_gangs: set[str]) -> None:
        for vg in victim_gangs:  # a gang evicted whole must gather its quorum again
            vs = self.gangs.get(vg)
            if vs is not None and all(
                k in self.evicting
                for k in vs.members
                if k in self.pods and self.pods[k].node_name and not self.pods[k].terminal
            ):
                vs.satisfied = False
                self._preempted.add(vg)

    def eviction_failed(self, pod_key: str) -> None:
        """The eviction of a victim was refused: its preemptor chooses again, avoiding it."""
        if pod_key in self.pods:
            self.protected.add(pod_key)
        self._forget_victim(pod_key)
        self.freed_gen += 1

    def _forget_victim(self, pod_key: str) -> None:
        gk = self.evicting.pop(pod_key, None)
        if gk is not None:
            victims = self._preempting.get(gk)
            if victims is not None:
                victims.pop(pod_key, None)
                if not victims:
                    del self._preempting[gk]

    def bindings_in_flight(self) -> Iterator[tuple[str, str]]:
        return ((k, n) for k, (n, b) in self._reservations.items() if b)

    def free(self, node: str) -> Resources:
        rec = self.nodes[node]
        out = dict(rec.allocatable)
        sub_into(out, self.used.get(node, {}))
        return out

    # ----- plan application and binder feedback -----
    def apply(self, plan: Plan) -> None:  # noqa: C901 (predates the complexity ceiling)
        for key in plan.nomination_clears:
            if self._nominations.pop(key, None) is not None:
                self.freed_gen += 1  # held capacity is free again
        for key, node in plan.nominations:
            pod = self.pods.get(key)
            if pod is not None and pod.node_name is None and not pod.terminal and key not in self._reservations:
                old = self._nominations.get(key)
                self._nominations[key] = node
                if old is not None and old != node:
                    self.freed_gen += 1
        for gk, victims in plan.preemptions.items():
            victim_gangs: set[str] = set()
            for v in victims:
                if v in self.pods and v not in self.evicting:
                    self.evicting[v] = gk
                    self._preempting.setdefault(gk, {})[v] = None
                    vgang = self.pods[v].gang
                    if vgang is not None:
                        victim_gangs.add(vgang)
            self._mark_preempted(victim_gangs)
        for key in plan.releases:
            if key in self._reservations and not self._reservations[key][1]:
                self._drop_reservation(key)
        for key, node in plan.reservations:
            self._reserve(key, node, binding=False)
        for key, node in plan.bindings:
            self._reserve(key, node, binding=True)
        for gk, start in plan.first_reserved.items():
            gs = self._gang(gk)
            if start is None:
                gs.first_reserved = None
                self._reserving.pop(gk, None)
            elif gs.first_reserved is None and not gs.satisfied:
                gs.first_reserved = start
                self._reserving[gk] = None
        for gk in plan.satisfied:
            self._set_satisfied(gk)
        for to in plan.timeouts:
            gs = self._gang(to.gang_key)
            gs.timed_out = True
            gs.first_reserved = None
            self._reserving.pop(to.gang_key, None)
            for key in list(gs.pending):
                self._refresh_pending(key)
        for uk, backoff in plan.unit_backoffs.items():
            st = self._unit(uk)
            if st is not None:
                st.attempts, st.backoff_until, st.failed_at = backoff.attempts, backoff.until, backoff.failed_at
                st.freed_gen = self.freed_gen
        for uk in plan.unit_success:
            st = self._unit(uk)
            if st is not None:
                st.attempts, st.backoff_until, st.failed_at, st.waiting_reason = 0, 0.0, None, None
        for uk, reason in plan.waiting_reasons.items():
            st = self._unit(uk)
            if st is not None:
                st.waiting_reason = reason
        for gk, status in plan.gang_status.items():
            self._gang(gk).last_status = status

    def bind_succeeded(self, pod_key: str) -> None:
        res = self._reservations.get(pod_key)
        pod = self.pods.get(pod_key)
        if res is None or pod is None:
            return
        self.upsert_pod(dataclasses.replace(pod, node_name=res[0]))
        self.assumed[pod_key] = (res[0], pod.uid)

    def bind_failed(self, pod_key: str) -> None:
        if pod_key in self._reservations:
            self._drop_reservation(pod_key)

    # ----- internals -----
    def _gang(self, key: str) -> GangState:
        gs = self.gangs.get(key)
        if gs is None:
            gs = self.gangs[key] = GangState(key)
        return gs

    def _unit(self, unit_key: str) -> UnitState | None:
        if unit_key.startswith(ALONE_PREFIX):
            pod_key = unit_key[len(ALONE_PREFIX) :]
            if pod_key not in self.pods:
                return None
            st = self._alone.get(unit_key)
            if st is None:
                st = self._alone[unit_key] = UnitState(unit_key)
            return st
        return self._gang(unit_key)

    def _leave_gang(self, pod: PodRecord) -> None:
        if pod.gang is None:
            self._alone_pending.pop(pod.key, None)
            return
        gs = self.gangs.get(pod.gang)
        if gs is None:
            return
        gs.members.pop(pod.key, None)
        if pod.key in gs.pending:
            del gs.pending[pod.key]
            if not gs.pending:
                self._queued_gangs.pop(gs.key, None)
        gs.priority = max((self.pods[k].priority for k in gs.members if k in self.pods), default=0)
        gs.member_created = min((self.pods[k].created for k in gs.members if k in self.pods), default=float("inf"))
        if not gs.members:
            gs.timed_out = False
            gs.first_reserved = None
            self._reserving.pop(gs.key, None)
        self._forget_if_empty(gs)

    def _forget_if_empty(self, gs: GangState) -> None:
        if not gs.members and gs.spec is None:
            self.gangs.pop(gs.key, None)
            self._queued_gangs.pop(gs.key, None)
            self._reserving.pop(gs.key, None)

    def _is_pending(self, pod: PodRecord) -> bool:
        return (
            pod.ours
            and pod.node_name is None
            and not pod.terminal
            and not pod.timed_out
            and pod.key not in self._reservations
        )

    def _refresh_pending(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is not None:
            self._set_pending(pod, self._is_pending(pod))

    def _set_pending(self, pod: PodRecord, pending: bool) -> None:
        key = pod.key
        if pod.gang is None:
            if pending:
                self._alone_pending[key] = None
            else:
                self._alone_pending.pop(key, None)
                st = self._alone.get(alone_key(key))
                if st is not None and st.attempts == 0:
                    self._alone.pop(alone_key(key), None)
            return
        gs = self.gangs.get(pod.gang)
        if gs is None:
            return
        if pending:
            gs.pending[key] = None
            self._queued_gangs[gs.key] = None
        elif key in gs.pending:  # (values are None: pop(key, None) cannot tell presence)
            del gs.pending[key]
            if not gs.pending:
                self._queued_gangs.pop(gs.key, None)

    def _reserve(self, key: str, node: str, *, binding: bool) -> None:
        pod = self.pods.get(key)
        if pod is None or pod.node_name is not None or pod.terminal:
            return
        self._reservations[key] = (node, binding)
        self._nominations.pop(key, None)
        self._recharge(key)
        self._set_pending(pod, False)

    def _drop_reservation(self, key: str) -> None:
        self._reservations.pop(key, None)
        self._recharge(key)
        self._refresh_pending(key)

    def _recharge(self, key: str) -> None:
        pod = self.pods.get(key)
        target: str | None = None
        if pod is not None and not pod.terminal:
            if pod.node_name is not None:
                target = pod.node_name
            else:
                res = self._reservations.get(key)
                if res is not None:
                    target = res[0]
        current = self._charged.get(key)
        requests = pod.sclass.requests if pod is not None else None
        if current is not None and target == current[0] and requests is current[1]:
            return
        if current is not None:
            node, req = current
            used = self.used.get(node)
            if used is not None:
                sub_into(used, req)
                if not used:
                    del self.used[node]
            self._log.append(node)
            del self._charged[key]
            if target != node:
                self.freed_gen += 1
        if target is not None and requests is not None:
            used = self.used.get(target)
            if used is None:
                used = self.used[target] = {}
            add_into(used, requests)
            self._charged[key] = (target, requests)
            self._log.append(target)
        if len(self._log) > 4 * len(self.nodes) + 10_000:
            self._log_base += len(self._log)
            self._log.clear()
