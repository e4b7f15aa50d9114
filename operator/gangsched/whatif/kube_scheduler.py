"""The `kube-scheduler` baseline: what a cluster runs without any gang scheduler, modelled on kube-scheduler's default
profile as of Kubernetes 1.37.

Reproduces (machinery in whatif/kube/): one pod per scheduling cycle, no notion of a job (partial jobs hold what
they got); the PrioritySort queue with per-pod backoff and event-driven requeue (queue.py); NodeResourcesFit,
percentageOfNodesToScore's sampled search, the default scores, random tie-break (cluster.py); DefaultPreemption as
the PostFilter (preemption.py).
Deviations: victims terminate at once; a bound pod's eviction ends its whole job; the binding cycle is instant and
never fails; no PDBs; score plugins that rate every node of a replay alike are left out; a pod is tried at most
once per virtual instant. More: docs/modules.md#whatifkube_schedulerpy.
"""

from __future__ import annotations

from collections.abc import Iterable

from gangsched.whatif.kube.cluster import KPod
from gangsched.whatif.kube.framework import KubeFramework
from gangsched.whatif.model import NodeSpec
from gangsched.whatif.policies import CycleOutcome

NAME = "kube-scheduler"


class KubeScheduler(KubeFramework):
    def __init__(self, nodes: Iterable[NodeSpec], seed: int = 0) -> None:
        super().__init__(NAME, nodes, seed)

    def schedule_one(self, pod: KPod, now: float, out: CycleOutcome) -> None:
        node, cand = self.place(pod)
        if node is not None:
            self.bind(pod, node, now, out)
            return
        if cand is not None:
            self.preempted(pod, cand, now, out)
        else:
            self.cluster.clear_nomination(pod)
        self.queue.failed(pod.key, now)
