"""kube-scheduler's DefaultPreemption for the faithful baselines (default_preemption.go and preemption/preemption.go).

Contract:
- `select_victims_on_node(cluster, pod, node, violates)`: every lower-priority pod removed (None when the preemptor
  still does not fit), then reprieved most important first (PDB-violating first); the victims with their PDB
  violation count.
- `pick_one_node(candidates)`: upstream's `pickOneNodeForPreemption` ordering.
- `preempt(cluster, pod, short, violates, rng)`: None when the pod may not preempt or no node gives a candidate;
  the nodes short of resources only are tried from a random offset until `num_candidates` candidates are found
  (`DryRunPreemption`), PDB-respecting ones first.
`violates(pod)`: whether evicting the pod violates a PDB (always False in replays; the rule keeps upstream's order).
More: docs/modules.md#whatifkubepreemptionpy.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gangsched.whatif.kube.cluster import Cluster, Fit, KPod, Node

MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100
INT32_OFFSET = 2**31  # math.MaxInt32 + 1

Violates = Callable[[KPod], bool]


@dataclass(frozen=True, slots=True)
class Candidate:
    node: Node
    victims: tuple[KPod, ...]  # most important first
    pdb_violations: int = 0


def more_important(pod: KPod) -> tuple[int, float]:
    """Sort key of `MoreImportantPod`: higher priority first, then the earlier start."""
    return (-pod.priority, pod.start)


def no_pdb(_pod: KPod) -> bool:
    return False


def select_victims_on_node(cluster: Cluster, pod: KPod, node: Node, violates: Violates = no_pdb) -> Candidate | None:
    potential = [p for p in node.pods.values() if p.priority < pod.priority]
    if not potential:
        return None
    removed = set(potential)
    if cluster.fit(pod, node, removed) != Fit.FIT:
        return None
    potential.sort(key=more_important)
    violating = [p for p in potential if violates(p)]
    rest = [p for p in potential if not violates(p)]
    victims: list[KPod] = []
    pdb = 0
    for group, is_violating in ((violating, True), (rest, False)):
        for p in group:
            removed.discard(p)  # reprieve it if the preemptor still fits
            if cluster.fit(pod, node, removed) != Fit.FIT:
                removed.add(p)
                victims.append(p)
                pdb += is_violating
    if violating and rest:
        victims.sort(key=more_important)
    return Candidate(node, tuple(victims), pdb)


def _earliest_top_start(c: Candidate) -> float:
    top = c.victims[0].priority
    return min(v.start for v in c.victims if v.priority == top)


def pick_one_node(candidates: Sequence[Candidate]) -> Candidate | None:
    if not candidates:
        return None
    scores: list[Callable[[Candidate], float]] = [
        lambda c: -c.pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(v.priority + INT32_OFFSET for v in c.victims),
        lambda c: -len(c.victims),
        _earliest_top_start,  # the later, the better
    ]
    remaining = list(candidates)
    for score in scores:
        best = max(score(c) for c in remaining)
        remaining = [c for c in remaining if score(c) == best]
        if len(remaining) == 1:
            break
    return remaining[0]


def num_candidates(nodes: int) -> int:
    """default_preemption.go `calculateNumCandidates`."""
    n = nodes * MIN_CANDIDATE_NODES_PERCENTAGE // 100
    return min(max(n, MIN_CANDIDATE_NODES_ABSOLUTE), nodes)


def preempt(
    cluster: Cluster, pod: KPod, short: Sequence[Node], rng: random.Random, violates: Violates = no_pdb
) -> Candidate | None:
    if not pod.preempt or not short:
        return None
    wanted = num_candidates(len(short))
    offset = rng.randrange(len(short))
    clean: list[Candidate] = []
    violating: list[Candidate] = []
    priority = pod.priority
    if all(p >= priority for p in cluster.priorities):
        return None  # no pod of lower priority anywhere: no node gives a candidate (the offset drawn all the same)
    for i in range(len(short)):
        node = short[(offset + i) % len(short)]
        if all(p.priority >= priority for p in node.pods.values()):
            continue  # no lower-priority pod: `select_victims_on_node` would say None (checked without the call)
        cand = select_victims_on_node(cluster, pod, node, violates)
        if cand is None or not cand.victims:
            continue
        (violating if cand.pdb_violations else clean).append(cand)
        if clean and len(clean) + len(violating) >= wanted:
            break
    return pick_one_node(clean + violating)
