"""The `kube-scheduler` baseline: what a cluster runs without any gang scheduler, modelled on kube-scheduler's
default profile (KubeSchedulerConfiguration v1 defaults) as of Kubernetes 1.37.

Reproduces (the machinery is in whatif/kube/):
- one pod per scheduling cycle (pkg/scheduler/schedule_one.go `scheduleOne`), no notion of a job or gang: a job
  whose members do not all fit starts partially and holds what it got, doing nothing, until the rest bind;
- the PrioritySort queue (priority desc, then queue timestamp) with per-pod backoff 1 s doubling to 10 s,
  unschedulable pods re-queued on cluster events (pod deleted, node up) or after 5 min, pop from backoffQ when
  activeQ is empty (whatif/kube/queue.py);
- NodeResourcesFit's Filter, percentageOfNodesToScore's adaptive default (numFeasibleNodesToFind) with the rotating
  start index, the nominated node tried first, LeastAllocated plus BalancedAllocation scores, random tie-break
  (whatif/kube/cluster.py);
- DefaultPreemption as the PostFilter: minimal victims per node, the node by upstream's ordering, the preemptor
  nominated (whatif/kube/preemption.py); preemptionPolicy PreemptLowerPriority (the default).
Deviations (and why): victims terminate at once (the replay's evictions are instant for every policy); a bound
pod's eviction ends its whole job (the replay's workload model: a distributed job dies with any member); the binding
cycle is instant and never fails; no PDBs (the replayed workloads declare none); plugins that score every node of the
replay alike (TaintToleration, NodeAffinity, PodTopologySpread with no spread constraint, InterPodAffinity,
ImageLocality) are left out; a pod is tried at most once per virtual instant (activated again, it waits 1 s:
whatif/kube/queue.py), where upstream would retry within milliseconds.
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
