"""The `kube-scheduler-gang` baseline: Kubernetes 1.37's own gang scheduling (KEP-4671): kube-scheduler with the
GangScheduling plugin and the pod group scheduling cycle, every job a PodGroup with a Gang policy of minCount =
minMember.

Reproduces, on whatif/kube_scheduler.py's machinery: PreEnqueue until minCount pods exist; a member popped takes its
group's unscheduled pods with it; one pod group cycle on one snapshot (each pod filtered and scored with earlier
siblings assumed, DefaultPreemption's nomination counting as a place); feasible when minCount are assumed or bound:
bound together, or, only with preemption, victims evicted and pods nominated (delayed preemption); otherwise all
back to the queue, nothing held between cycles. A hard topology makes each domain of its tier a placement; soft has
no upstream counterpart and is ignored. Deviations: those of whatif/kube_scheduler.py; the first feasible placement
in inventory order is taken; WorkloadAwarePreemption (alpha, off) is not modelled.
More: docs/modules.md#whatifkube_gangpy.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from gangsched.core import Domain
from gangsched.whatif.kube.cluster import KPod, Node
from gangsched.whatif.kube.framework import KubeFramework
from gangsched.whatif.kube.preemption import preempt
from gangsched.whatif.model import JobSpec, NodeSpec
from gangsched.whatif.policies import CycleOutcome, PodPhase

NAME = "kube-scheduler-gang"


@dataclass(slots=True)
class GroupResult:
    feasible: bool = False
    placed: list[tuple[KPod, Node]] = field(default_factory=list)
    victims: list[KPod] = field(default_factory=list)


def domain_nodes(domains: Iterable[Domain]) -> dict[int, list[frozenset[str]]]:
    """Per tier, the node names under each of its domains (tier 1 domains list nodes, higher tiers list domains)."""
    by_name = {d.name: d for d in domains}
    memo: dict[str, frozenset[str]] = {}

    def under(name: str) -> frozenset[str]:
        if name not in memo:
            d = by_name[name]
            parts = [under(c) if c in by_name else frozenset((c,)) for c in d.children]
            memo[name] = frozenset().union(*parts)
        return memo[name]

    tiers: dict[int, list[frozenset[str]]] = {}
    for d in by_name.values():
        tiers.setdefault(d.layer, []).append(under(d.name))
    return tiers


class KubeSchedulerGang(KubeFramework):
    def __init__(self, nodes: Iterable[NodeSpec], domains: Iterable[Domain] = (), seed: int = 0) -> None:
        super().__init__(NAME, nodes, seed)
        self.tiers = domain_nodes(domains)

    def placements(self, spec: JobSpec) -> list[Collection[str] | None]:
        if spec.topology == "hard" and spec.highest_tier in self.tiers:
            return list(self.tiers[spec.highest_tier])
        return [None]

    def schedule_one(self, pod: KPod, now: float, out: CycleOutcome) -> None:
        group = pod.job
        spec = self.specs[group]
        members = [p for p in self.jobs[group] if p.phase == PodPhase.NONE]
        for other in members:
            if other is not pod:
                self.queue.take(other.key, now)
        members.sort(key=lambda p: -p.priority)
        result = GroupResult()
        for placement in self.placements(spec):
            result = self.algorithm(members, spec, placement)
            if result.feasible:
                break
        if result.feasible and result.victims:
            self.evict(result.victims, now, out)
            for p, node in result.placed:
                self.cluster.nominate(p, node.name)
        elif result.feasible:
            for p, node in result.placed:
                self.bind(p, node, now, out)
        else:
            for p in members:
                self.cluster.clear_nomination(p)
        placed = {p.key for p, _ in result.placed} if result.feasible and not result.victims else set()
        for p in members:
            if p.key not in placed:
                self.queue.failed(p.key, now)

    def algorithm(self, members: list[KPod], spec: JobSpec, placement: Collection[str] | None) -> GroupResult:
        """One pod group cycle on the current snapshot; every assumption (and victim removal) undone at the end."""
        bound = sum(p.phase == PodPhase.RUNNING for p in self.jobs[members[0].job]) if members else 0
        result = GroupResult()
        removed: list[tuple[KPod, Node]] = []
        try:
            for p in members:
                feasible, short = self.cluster.find_feasible(p, placement)
                if feasible:
                    node = self.cluster.select_host(p, feasible)
                else:
                    cand = preempt(self.cluster, p, short, self.rng)
                    if cand is None:
                        continue  # rejected: the group may still reach minCount without it
                    node = cand.node
                    for victim in cand.victims:
                        removed.append((victim, node))
                        self.cluster.forget(victim)
                    result.victims += cand.victims
                self.cluster.charge(p, node)
                result.placed.append((p, node))
                if bound + len(result.placed) >= spec.min_member:
                    result.feasible = True
        finally:
            for p, _ in result.placed:
                self.cluster.forget(p)
            for victim, node in reversed(removed):
                self.cluster.charge(victim, node)
        return result
