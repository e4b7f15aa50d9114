"""The `gangsched` policy of a replay: the real scheduling core driven offline (never a copy of its logic).

Contract (implements whatif/policies.py `Policy`):
- Nodes become `NodeRecord`s and jobs' incarnations gangs `sim/<key>` with one `PodRecord` per member, as models/
  would read them; the workload's topology domains become the state's `TopologyTree` (variant `notopo`: none).
- `cycle(now)`: `run_cycle` (schedule, then apply) until a plan is empty; the plan is carried out at once (binds
  succeed; reservations reported HELD / NONE); an eviction or a timeout ends the whole incarnation (`Ended`); the
  bind tier is the placement tier; resolved deadlocks are reported (`ResolvedDeadlock`).
- `finish(key)`: pods Succeeded, then removed with their gang. `node_down(name)` ends the incarnations charged on
  the node and removes it; `node_up(name)` adds it back empty.
Variants (lineup.py): `spread`, `strict`/`nonstrict`, `notopo`, `nopreempt`, `nohold`.
More: docs/modules.md#whatifcore_policypy.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

from gangsched.core import (
    ClassRegistry,
    GangMode,
    GangSpec,
    NetworkTopology,
    NodeRecord,
    Plan,
    PodRecord,
    SchedulerConfig,
    SchedulerState,
    SchedulingClass,
    TopologyMode,
    TopologyTree,
    run_cycle,
)
from gangsched.whatif.model import JobSpec, NodeSpec, RoleSpec, Workload
from gangsched.whatif.policies import CycleOutcome, Ended, EndReason, PodMove, PodPhase, ResolvedDeadlock

GPU = "nvidia.com/gpu"
GPU_MODEL_LABEL = "gangsched.io/gpu-model"
NAMESPACE = "sim"
MAX_CYCLES_PER_INSTANT = 100_000  # a guard: the core converges long before (an empty plan)


@dataclass(frozen=True, slots=True)
class VariantOptions:
    score_strategy: str = "binpack"
    mode: GangMode | None = None  # None: each job's own
    topology: bool = True
    preemption: bool = True
    starvation_hold: bool = True  # core/gang/starvation.py holds capacity for the longest-starving gang
    pack: bool = True  # core/placement/packing.py packs gangs without a network topology into one domain


def variant_options(variants: Sequence[str]) -> VariantOptions:
    opts = VariantOptions()
    for v in variants:
        if v == "spread":
            opts = dataclasses.replace(opts, score_strategy="spread")
        elif v in ("strict", "nonstrict"):
            opts = dataclasses.replace(opts, mode=GangMode.STRICT if v == "strict" else GangMode.NON_STRICT)
        elif v == "notopo":
            opts = dataclasses.replace(opts, topology=False)
        elif v == "nopreempt":
            opts = dataclasses.replace(opts, preemption=False)
        elif v == "nohold":
            opts = dataclasses.replace(opts, starvation_hold=False)
        elif v == "nopack":
            opts = dataclasses.replace(opts, pack=False)
        else:
            raise ValueError(f"unknown gangsched variant {v!r}")
    return opts


def node_record(node: NodeSpec) -> NodeRecord:
    alloc = {"cpu": node.cpu_milli, "memory": node.memory_mib << 20, "pods": 110}
    if node.gpus:
        alloc[GPU] = node.gpus
    labels = {"kubernetes.io/hostname": node.name, **node.labels}
    if node.gpu_model:
        labels[GPU_MODEL_LABEL] = node.gpu_model
    return NodeRecord(node.name, alloc, labels)


def role_class(role: RoleSpec, gpu_model: str | None, classes: ClassRegistry) -> SchedulingClass:
    requests = {"cpu": role.cpu_milli, "memory": role.memory_mib << 20}
    if role.gpus:
        requests[GPU] = role.gpus
    selector = ((GPU_MODEL_LABEL, gpu_model),) if gpu_model else ()
    return classes.scheduling_class(requests, node_selector=selector)


class CorePolicy:
    def __init__(self, name: str, workload: Workload, options: VariantOptions, wait_seconds: float) -> None:
        self.name = name
        self.options = options
        self.config = SchedulerConfig(
            score_strategy=options.score_strategy,
            default_wait_seconds=wait_seconds,
            hold_after_seconds=SchedulerConfig().hold_after_seconds if options.starvation_hold else 0.0,
            pack_gangs=options.pack,
        )
        self.state = SchedulerState()
        self.nodes = {node.name: node for node in workload.nodes}
        for node in workload.nodes:
            self.state.upsert_node(node_record(node))
        if options.topology and workload.domains:
            self.state.set_topology(TopologyTree.from_domains(workload.domains, source=workload.source or "workload"))
        self.pods: dict[str, tuple[str, int, int]] = {}  # pod key -> (incarnation, gpus, cpu)
        self.phase: dict[str, PodPhase] = {}
        self.members: dict[str, list[str]] = {}  # incarnation -> pod keys
        self.where: dict[str, str] = {}  # pod key -> node it holds resources on (HELD or RUNNING)

    def submit(self, job: JobSpec, key: str, now: float) -> None:
        mode = self.options.mode or GangMode(job.mode)
        topo = None
        if self.options.topology and job.topology != "none":
            topo = NetworkTopology(TopologyMode(job.topology), job.highest_tier)
        roles = tuple((r.name, r.min_count) for r in job.roles if r.name and r.min_count is not None)
        spec = GangSpec(
            NAMESPACE, key, job.min_member, job.members, mode, job.wait_seconds, roles=roles, network_topology=topo
        )
        self.state.upsert_gang(spec, created=now)
        policy = "PreemptLowerPriority" if self.options.preemption else "Never"
        keys = []
        rank = 0
        for role in job.roles:
            sclass = role_class(role, job.gpu_model, self.state.classes)
            for _ in range(role.count):
                pod = PodRecord(
                    NAMESPACE, f"{key}-{rank}", f"uid-{key}-{rank}", sclass, priority=job.priority,
                    preemption_policy=policy, created=now, gang=spec.key, role=role.name or None, rank=rank,
                    run_seconds=job.declared_seconds,
                )  # fmt: skip
                self.state.upsert_pod(pod)
                self.pods[pod.key] = (key, role.gpus, role.cpu_milli)
                self.phase[pod.key] = PodPhase.NONE
                keys.append(pod.key)
                rank += 1
        self.members[key] = keys

    def cycle(self, now: float) -> CycleOutcome:
        out = CycleOutcome()
        for _ in range(MAX_CYCLES_PER_INSTANT):
            t0 = time.perf_counter()
            plan = run_cycle(self.state, now, self.config)  # schedule, then record the plan in the state
            out.decision_seconds.append(time.perf_counter() - t0)
            self._carry_out(plan, out, now)
            if plan.empty:
                out.next_wakeup = plan.next_wakeup
                out.held_gpus = self._hold_gpus()
                return out
        raise RuntimeError(f"the core did not converge at t={now} within {MAX_CYCLES_PER_INSTANT} cycles")

    def _carry_out(self, plan: Plan, out: CycleOutcome, now: float) -> None:
        for deadlock in plan.deadlocks:  # (before the releases: what the cycle's gangs held when it was found)
            held = sum(self._held_gpus(gang.removeprefix(NAMESPACE + "/")) for gang in deadlock.cycle)
            released = deadlock.held.get(GPU, 0)
            out.resolved.append(ResolvedDeadlock(deadlock.formed, len(deadlock.cycle), held, released))
        for pod_key, node in plan.reservations:
            self._move(pod_key, PodPhase.HELD, out.moves, node)
        for pod_key in plan.releases:
            self._move(pod_key, PodPhase.NONE, out.moves)
        for pod_key, node in plan.bindings:
            self.state.bind_succeeded(pod_key)
            pod = self.state.pods[pod_key]
            self.state.upsert_pod(dataclasses.replace(pod, node_name=node, phase="Running", started=now))
            self._move(pod_key, PodPhase.RUNNING, out.moves, node)
        for gang_key, status in plan.gang_status.items():
            if status.tier is not None and status.scheduled:  # (the plan says Binding; Scheduled comes after)
                out.tiers[gang_key.removeprefix(NAMESPACE + "/")] = status.tier
        ended: dict[str, EndReason] = {}
        for pod_key in plan.evictions:
            if pod_key in self.pods:
                ended[self.pods[pod_key][0]] = "evicted"
        for timeout in plan.timeouts:
            ended.setdefault(timeout.gang_key.removeprefix(NAMESPACE + "/"), "timeout")
        for key, reason in ended.items():
            out.moves += self._remove(key, succeeded=False)
            out.ended.append(Ended(key, reason))

    def _held_gpus(self, key: str) -> int:
        return sum(self.pods[k][1] for k in self.members.get(key, ()) if self.phase[k] == PodPhase.HELD)

    def _hold_gpus(self) -> int:
        """GPUs held for starving gangs now: on each target node of each hold (core/gang/starvation.py, in the queue's
        order), the free GPUs up to what the gang would use there, as `_take` takes them in a cycle's workspace."""
        free: dict[str, int] = {}
        nodes = self.state.store.nodes
        held = 0
        for hold in self.state.queue.holds.values():
            for name, target in hold.targets:  # (a remembered record without targets holds nothing)
                if name not in nodes:
                    continue
                left = free[name] if name in free else self.state.free(name).get(GPU, 0)
                take = min(target.get(GPU, 0), max(left, 0))
                free[name] = left - take
                held += take
        return held

    def _move(self, pod_key: str, new: PodPhase, moves: list[PodMove], node: str = "") -> None:
        old = self.phase.get(pod_key)
        if old is None or old == new:
            return
        self.phase[pod_key] = new
        if new == PodPhase.NONE:
            node = self.where.pop(pod_key, "")
        elif node:
            self.where[pod_key] = node
        key, gpus, cpu = self.pods[pod_key]
        moves.append(PodMove(key, gpus, cpu, old, new, node))

    def _remove(self, key: str, *, succeeded: bool) -> list[PodMove]:
        """Every pod of the incarnation goes (Succeeded first when it completed), then its gang."""
        moves: list[PodMove] = []
        for pod_key in self.members.pop(key, []):
            pod = self.state.pods.get(pod_key)
            if succeeded and pod is not None and pod.node_name:
                self.state.upsert_pod(dataclasses.replace(pod, phase="Succeeded"))
            self.state.remove_pod(pod_key)
            self._move(pod_key, PodPhase.NONE, moves)
            del self.pods[pod_key], self.phase[pod_key]
        self.state.remove_gang(f"{NAMESPACE}/{key}")
        return moves

    def finish(self, key: str, now: float) -> list[PodMove]:
        return self._remove(key, succeeded=True)

    def node_down(self, name: str, now: float) -> CycleOutcome:
        out = CycleOutcome()
        hit = {self.pods[k][0] for k in self.state.store.pods_on.get(name, ()) if k in self.pods}
        for key in sorted(hit):  # (bound, binding or reserved there: charged)
            out.moves += self._remove(key, succeeded=False)
            out.ended.append(Ended(key, "failure"))
        self.state.remove_node(name)
        return out

    def node_up(self, name: str, now: float) -> None:
        self.state.upsert_node(node_record(self.nodes[name]))
