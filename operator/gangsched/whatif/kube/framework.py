"""The pod bookkeeping every faithful baseline shares (implements whatif/policies.py `Policy`): the pods of job
incarnations in a `Cluster` and a `SchedulingQueue`, on completion, node failure, preemption; cycle: `schedule_one`.

Contract (`KubeFramework(name, nodes, seed)`):
- `submit`: one `KPod` per member, queued (`admit` may hold it back: PreEnqueue).
- `cycle(now)`: the subclass's timers (`expire`), the queue's flush, then `schedule_one` for every pod popped at
  `now` (one decision); `next_wakeup`: the queue's or the subclass's (`wakeup()`), whichever first.
- `bind` (RUNNING), `hold` (HELD at Permit), `release` (rejected at Permit, back to the queue).
- `evict(victim)`: a bound victim ends its whole incarnation; a waiting one is rejected at Permit; victims terminate
  at once (upstream honours the grace period). Pod deletions and a node coming back are cluster events
  (`move_all`); `group_changed`; `finish`, `node_down`, `node_up` as the protocol says.
More: docs/modules.md#whatifkubeframeworkpy.
"""

from __future__ import annotations

import random
import time
from collections.abc import Collection, Iterable
from typing import Any

from gangsched.whatif.kube.cluster import Cluster, KPod, Node
from gangsched.whatif.kube.preemption import Candidate, preempt
from gangsched.whatif.kube.queue import ANY, NODE_CHANGE, SchedulingQueue
from gangsched.whatif.model import JobSpec, NodeSpec
from gangsched.whatif.policies import CycleOutcome, Ended, EndReason, PodMove, PodPhase


class KubeFramework:
    def __init__(self, name: str, nodes: Iterable[NodeSpec], seed: int = 0) -> None:
        self.name = name
        self.cluster = Cluster(nodes, seed)
        self.queue = SchedulingQueue(self.sort_key)
        self.rng = random.Random(seed + 1)  # preemption's random offset
        self.pods: dict[str, KPod] = {}
        self.jobs: dict[str, list[KPod]] = {}  # incarnation -> its pods
        self.specs: dict[str, JobSpec] = {}
        self.created: dict[str, float] = {}  # incarnation -> creation (its PodGroup's)
        self.hopeless: dict[tuple[object, ...], int] = {}  # pod shape -> cluster version it found no place at

    # -- hooks ------------------------------------------------------------------------------------------------
    def sort_key(self, pod: str, timestamp: float) -> tuple[Any, ...]:
        """PrioritySort (queuesort/priority_sort.go `Less`): priority desc, then the queue timestamp."""
        return (-self.pods[pod].priority, timestamp, pod)

    def schedule_one(self, pod: KPod, now: float, out: CycleOutcome) -> None:
        raise NotImplementedError

    def expire(self, now: float, out: CycleOutcome) -> None:
        """Timers due at `now` (none here)."""

    def wakeup(self) -> float | None:
        return None

    def reject_waiting(self, pod: KPod, now: float, out: CycleOutcome) -> None:
        """A waiting pod chosen as a victim is rejected by DefaultPreemption (no EnqueueExtensions: any event)."""
        self.release([pod], now, out, ANY)

    def group_changed(self, now: float) -> None:
        """A job's group object was created or changed status (none here)."""

    # -- protocol ---------------------------------------------------------------------------------------------
    def submit(self, job: JobSpec, key: str, now: float) -> None:
        pods = []
        rank = 0
        for role in job.roles:
            for _ in range(role.count):
                pod = KPod(
                    f"{key}-{rank}", key, job.priority, role.gpus, role.cpu_milli, role.memory_mib, job.gpu_model,
                    now,
                )  # fmt: skip
                self.pods[pod.key] = pod
                pods.append(pod)
                rank += 1
        self.jobs[key] = pods
        self.specs[key] = job
        self.created[key] = now
        for pod in pods:
            self.queue.add(pod.key, now)
        self.group_changed(now)

    def cycle(self, now: float) -> CycleOutcome:
        out = CycleOutcome()
        self.expire(now, out)
        self.queue.flush(now)
        t0 = time.perf_counter()
        while (key := self.queue.pop(now)) is not None:
            self.schedule_one(self.pods[key], now, out)
        out.decision_seconds.append(time.perf_counter() - t0)
        wakeups = [t for t in (self.queue.next_wakeup(), self.wakeup()) if t is not None]
        out.next_wakeup = min(wakeups, default=None)
        return out

    def finish(self, key: str, now: float) -> list[PodMove]:
        moves = self._remove(key)
        self.queue.move_all(now)
        self.group_changed(now)
        return moves

    def node_down(self, name: str, now: float) -> CycleOutcome:
        out = CycleOutcome()
        node = self.cluster.by_name[name]
        for key in sorted({p.job for p in node.pods.values()}):
            self.end(key, "failure", now, out)
        self.cluster.set_up(name, False)
        return out

    def node_up(self, name: str, now: float) -> None:
        self.cluster.set_up(name, True)
        self.queue.move_all(now, NODE_CHANGE)

    def place(self, pod: KPod) -> tuple[Node | None, Candidate | None]:
        """Filter and score (the node), else DefaultPreemption (the candidate), else (None, None). A pod without a
        nomination whose shape found neither since the cluster last made room is not searched again (the same
        answer, computed once: nothing was placed, removed or un-nominated since)."""
        shape = (pod.gpus, pod.cpu_milli, pod.memory_mib, pod.model, pod.priority, pod.preempt)
        if pod.nominated is None and self.hopeless.get(shape) == self.cluster.version:
            return None, None
        feasible, short = self.cluster.find_feasible(pod)
        if feasible:
            return self.cluster.select_host(pod, feasible), None
        cand = preempt(self.cluster, pod, short, self.rng)
        if cand is None and pod.nominated is None:
            self.hopeless[shape] = self.cluster.version
        return None, cand

    # -- actions ----------------------------------------------------------------------------------------------
    def bind(self, pod: KPod, node: Node, now: float, out: CycleOutcome) -> None:
        if pod.node is None:
            self.cluster.assume(pod, node)
        self.cluster.clear_nomination(pod)
        out.moves.append(PodMove(pod.job, pod.gpus, pod.cpu_milli, pod.phase, PodPhase.RUNNING, pod.node or node.name))
        pod.phase = PodPhase.RUNNING
        pod.start = now
        self.queue.remove(pod.key)

    def hold(self, pod: KPod, node: Node, out: CycleOutcome) -> None:
        self.cluster.assume(pod, node)
        out.moves.append(PodMove(pod.job, pod.gpus, pod.cpu_milli, pod.phase, PodPhase.HELD, node.name))
        pod.phase = PodPhase.HELD

    def release(self, pods: Collection[KPod], now: float, out: CycleOutcome, rejector: str) -> None:
        for pod in pods:
            out.moves.append(PodMove(pod.job, pod.gpus, pod.cpu_milli, pod.phase, PodPhase.NONE, pod.node or ""))
            self.cluster.forget(pod)
            pod.phase = PodPhase.NONE
            self.queue.failed(pod.key, now, rejector)
        self.queue.move_all(now, exclude={pod.key for pod in pods})  # deferred, not moving the pods themselves

    def end(self, key: str, reason: EndReason, now: float, out: CycleOutcome) -> None:
        out.moves += self._remove(key)
        out.ended.append(Ended(key, reason))
        self.queue.move_all(now)
        self.group_changed(now)

    def evict(self, victims: Iterable[KPod], now: float, out: CycleOutcome) -> None:
        for victim in victims:
            if victim.key not in self.pods:
                continue  # gone with an earlier victim of its incarnation
            if victim.phase == PodPhase.RUNNING:
                self.end(victim.job, "evicted", now, out)
            elif victim.phase == PodPhase.HELD:
                self.reject_waiting(victim, now, out)

    def preempted(self, pod: KPod, cand: Candidate, now: float, out: CycleOutcome) -> None:
        """PostFilter succeeded: the victims go, lower-priority pods nominated there lose their nomination (and are
        activated), the preemptor is nominated to the node."""
        self.evict(cand.victims, now, out)
        lower = [p for p in self.cluster.nominated.get(cand.node.name, {}).values() if p.priority < pod.priority]
        for other in lower:
            self.cluster.clear_nomination(other)
        self.queue.activate((p.key for p in lower), now)
        self.cluster.nominate(pod, cand.node.name)

    def _remove(self, key: str) -> list[PodMove]:
        moves = []
        for pod in self.jobs.pop(key, []):
            if pod.phase != PodPhase.NONE:
                moves.append(PodMove(key, pod.gpus, pod.cpu_milli, pod.phase, PodPhase.NONE, pod.node or ""))
            self.cluster.forget(pod)
            self.cluster.clear_nomination(pod)
            pod.phase = PodPhase.NONE
            self.queue.remove(pod.key)
            del self.pods[pod.key]
        self.specs.pop(key, None)
        self.created.pop(key, None)
        return moves
