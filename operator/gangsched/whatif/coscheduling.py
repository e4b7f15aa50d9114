"""The `coscheduling` baseline: kube-scheduler with scheduler-plugins' Coscheduling plugin (release v0.34.7),
configured as its manifests/coscheduling/scheduler-config.yaml does (DefaultPreemption before its PostFilter).

Reproduces, on whatif/kube_scheduler.py's machinery (each job a PodGroup of minMember): QueueSort (priority, then
the group's creation or last failure time); PreFilter (backoff, too few pods, minResources not fitting the free
cluster: UnschedulableAndUnresolvable); Permit (pods wait HELD until minMember are assumed, within the group's
timeout or permitWaitingTimeSeconds 60 s; a wait ending rejects the group); PostFilter's optimistic rejection; a
waiting victim rejects its siblings; rejected pods re-queue only on PodGroup events or the 5 min flush.
minResources are those of minMember members (as Kubeflow fills them; `min_resources=False`: unset).
Deviations: those of whatif/kube_scheduler.py; the group's failure time is virtual time.
More: docs/modules.md#whatifcoschedulingpy.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gangsched.whatif.kube.cluster import KPod, Node
from gangsched.whatif.kube.framework import KubeFramework
from gangsched.whatif.kube.queue import ANY, COSCHEDULING, POD_GROUP
from gangsched.whatif.model import NodeSpec
from gangsched.whatif.policies import CycleOutcome, PodMove, PodPhase

NAME = "coscheduling"
RELEASE = "v0.34.7"
PERMIT_WAITING_TIME_SECONDS = 60.0  # apis/config/v1/defaults.go defaultPermitWaitingTimeSeconds
POD_GROUP_BACKOFF_SECONDS = 0.0  # defaultPodGroupBackoffSeconds
POD_GROUP_REJECT_PERCENTAGE = 10  # defaultPodGroupRejectPercentage


class Coscheduling(KubeFramework):
    def __init__(
        self,
        nodes: Iterable[NodeSpec],
        seed: int = 0,
        *,
        permit_wait: float = PERMIT_WAITING_TIME_SECONDS,
        backoff: float = POD_GROUP_BACKOFF_SECONDS,
        reject_percentage: int = POD_GROUP_REJECT_PERCENTAGE,
        min_resources: bool = True,
    ) -> None:
        super().__init__(NAME, nodes, seed)
        self.permit_wait, self.backoff, self.min_resources = permit_wait, backoff, min_resources
        self.reject_threshold = reject_percentage / 100
        self.last_failed: dict[str, float] = {}  # group -> its last scheduling failure
        self.permitted: dict[str, float] = {}  # group -> until when its minResources pass is cached
        self.backed_off: dict[str, float] = {}  # group -> until when PreFilter rejects it
        self.waiting: dict[str, dict[str, float]] = {}  # group -> waiting pod -> when its wait ends
        self.need: dict[str, tuple[int, ...]] = {}  # group -> its minResources (GPUs, CPU, memory, pods)

    def sort_key(self, pod: str, timestamp: float) -> tuple[Any, ...]:
        p = self.pods[pod]
        return (-p.priority, self.last_failed.get(p.job, self.created[p.job]), pod)

    def schedule_one(self, pod: KPod, now: float, out: CycleOutcome) -> None:
        if not self.prefilter(pod, now):
            self.postfilter(pod, now, out)
            self.queue.failed(pod.key, now, COSCHEDULING)
            return
        node, cand = self.place(pod)
        if node is not None:
            self.permit(pod, node, now, out)
            return
        if cand is not None:
            self.preempted(pod, cand, now, out)
        else:
            self.cluster.clear_nomination(pod)
            self.postfilter(pod, now, out)
        self.queue.failed(pod.key, now)

    def assigned(self, group: str) -> int:
        return sum(p.phase != PodPhase.NONE for p in self.jobs[group])

    def prefilter(self, pod: KPod, now: float) -> bool:
        group = pod.job
        if self.backed_off.get(group, now) > now:
            return False
        if not self.min_resources or self.permitted.get(group, now) > now:
            return True
        need = self.need.get(group)
        if need is None:  # the group's pods and their requests never change: computed once
            members = sorted(self.jobs[group], key=lambda p: -p.priority)[: self.specs[group].min_member]
            need = (sum(p.gpus for p in members), sum(p.cpu_milli for p in members))
            need += (sum(p.memory_mib for p in members), len(members))
            self.need[group] = need
        gpus, cpu, mem, count = self.cluster.free_total()  # (nodes that are down hold no pod)
        for p in self.jobs[group]:
            if p.node is not None:
                gpus, cpu, mem, count = gpus + p.gpus, cpu + p.cpu_milli, mem + p.memory_mib, count + 1
        if need[0] > gpus or need[1] > cpu or need[2] > mem or need[3] > count:
            return False
        self.permitted[group] = now + self.permit_wait
        return True

    def permit(self, pod: KPod, node: Node, now: float, out: CycleOutcome) -> None:
        group = pod.job
        spec = self.specs[group]
        assigned = self.assigned(group) + 1
        if assigned >= spec.min_member:
            self.last_failed.pop(group, None)  # ClearPodGroupScheduleFailure
            for other in self.jobs[group]:
                if other.phase == PodPhase.HELD:
                    self.bind(other, self.cluster.by_name[other.node or node.name], now, out)
            self.waiting.pop(group, None)
            self.bind(pod, node, now, out)
            self.group_changed(now)  # the PodGroup controller counts the group's running pods
            return
        self.hold(pod, node, out)
        wait = spec.wait_seconds if spec.wait_seconds else self.permit_wait
        self.waiting.setdefault(group, {})[pod.key] = now + wait
        if assigned == 1:
            self.queue.activate((p.key for p in self.jobs[group] if p.phase == PodPhase.NONE and p is not pod), now)

    def postfilter(self, pod: KPod, now: float, out: CycleOutcome) -> None:
        group = pod.job
        spec = self.specs[group]
        assigned = self.assigned(group)
        if assigned >= spec.min_member or (spec.min_member - assigned) / spec.min_member <= self.reject_threshold:
            return
        if self.backoff > 0:
            self.backed_off[group] = now + self.backoff
        self.reject_group(group, now, out)

    def reject_group(self, group: str, now: float, out: CycleOutcome, victim: KPod | None = None) -> None:
        """Every waiting pod of the group is rejected (by Coscheduling; a preemption `victim` by DefaultPreemption);
        the group is marked failed (sorted by this failure) and its minResources pass forgotten
        (`DeletePermittedPodGroup`, `MarkPodGroupScheduleFailure`)."""
        self.last_failed[group] = now
        self.permitted.pop(group, None)
        self.waiting.pop(group, None)
        if victim is not None and victim.phase == PodPhase.HELD:
            self.release([victim], now, out, ANY)
        held = [p for p in self.jobs[group] if p.phase == PodPhase.HELD]
        if held:
            self.release(held, now, out, COSCHEDULING)

    def reject_waiting(self, pod: KPod, now: float, out: CycleOutcome) -> None:
        self.reject_group(pod.job, now, out, pod)

    def group_changed(self, now: float) -> None:
        """The PodGroup was created or its status changed (the scheduler-plugins controller's counts of running and
        succeeded pods): a PodGroup Add/Update event, the only one that requeues pods Coscheduling rejected."""
        self.queue.move_all(now, POD_GROUP)

    def expire(self, now: float, out: CycleOutcome) -> None:
        for group in [g for g, w in self.waiting.items() if min(w.values()) <= now]:
            self.reject_group(group, now, out)
            out.timeouts += 1

    def wakeup(self) -> float | None:
        return min((t for w in self.waiting.values() for t in w.values()), default=None)

    def _remove(self, key: str) -> list[PodMove]:
        for table in (self.last_failed, self.permitted, self.backed_off, self.waiting, self.need):
            table.pop(key, None)
        return super()._remove(key)
