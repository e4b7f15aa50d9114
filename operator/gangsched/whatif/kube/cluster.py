"""kube-scheduler's view of the nodes for the faithful baselines: NodeResourcesFit filtering, the default scores, the
sampled node search (percentageOfNodesToScore) and the nominator. No queue, no preemption (queue.py, preemption.py).

Contract (CPU millicores, memory MiB, GPUs whole devices):
- `KPod`: one pod of a replayed job. `Cluster(nodes, seed)`: per node its allocatable, what its pods request, up.
- `fit(pod, node, removed)`: NodeResourcesFit's Filter with higher-or-equal-priority nominated pods counted;
  `UNRESOLVABLE` (down, other GPU model), `UNSCHEDULABLE` (resources short), `FIT`.
- `find_feasible(pod)`: `findNodesThatFitPod` (nominated node first; from the rotating index until enough feasible
  nodes); returns the feasible nodes and, when none, those short of resources only. `placement` restricts the nodes.
- `select_host(pod, feasible)`: LeastAllocated + BalancedAllocation, random tie-break from a seeded generator.
- `assume`, `forget`, `charge`, `nominate`, `clear_nomination`, `set_up`, `free_total()`, `version` (bumped by any
  change that could let a failed pod fit). More: docs/modules.md#whatifkubeclusterpy.
"""

from __future__ import annotations

import bisect
import functools
import random
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from itertools import chain
from operator import itemgetter

from gangsched.whatif.model import NodeSpec
from gangsched.whatif.policies import PodPhase

MAX_NODE_SCORE = 100
MIN_FEASIBLE_NODES_TO_FIND = 100  # schedule_one.go minFeasibleNodesToFind
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5  # schedule_one.go minFeasibleNodesPercentageToFind
PODS_PER_NODE = 110  # the kubelet's default maxPods: the node's allocatable "pods"
ANY_MODEL = "*any*"  # `roomy` key of a pod without a GPU model
MAX_GPUS = 255  # `roomy` stores free GPUs as bytes


class Fit(IntEnum):
    FIT = 0
    UNSCHEDULABLE = 1  # resources short: preemption may help
    UNRESOLVABLE = 2  # node down or wrong GPU model: preemption cannot help


@dataclass(slots=True, eq=False)
class KPod:
    key: str
    job: str  # the incarnation key
    priority: int
    gpus: int
    cpu_milli: int
    memory_mib: int
    model: str | None
    created: float
    preempt: bool = True  # preemptionPolicy PreemptLowerPriority (False: Never)
    node: str | None = None  # assumed (HELD) or bound (RUNNING) there
    phase: PodPhase = PodPhase.NONE
    start: float = 0.0  # when it was bound (victims are ordered by it)
    nominated: str | None = None


@dataclass(slots=True, eq=False)
class Node:
    name: str
    gpus: int
    cpu_milli: int
    memory_mib: int
    model: str | None
    up: bool = True
    index: int = 0  # its position in the inventory
    pods: dict[str, KPod] = field(default_factory=dict)  # assumed or bound here
    req: list[int] = field(default_factory=lambda: [0, 0, 0])  # gpus, cpu, memory requested by `pods`


def num_feasible_nodes_to_find(num_all: int, percentage: int = 0) -> int:
    """schedule_one.go `numFeasibleNodesToFind`: every node below 100; else `percentage` (0: adaptive, 50 - nodes /
    125, at least 5) percent of them, at least 100."""
    if num_all < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all
    if percentage == 0:
        percentage = max(50 - num_all // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


@functools.cache
def at_least(gpus: int) -> re.Pattern[bytes]:
    """A byte of value `gpus` or more (a node of `roomy` with that many GPUs free)."""
    return re.compile(b"[" + re.escape(bytes([gpus])) + b"-\xff]")


def least_allocated(requested: tuple[int, ...], allocatable: tuple[int, ...]) -> int:
    """least_allocated.go `leastResourceScorer` with weight 1 per resource: the mean of (free after the pod) x 100 /
    allocatable, integer arithmetic, 0 for a resource requested beyond allocatable."""
    total = 0
    for req, cap in zip(requested, allocatable, strict=True):
        total += 0 if cap == 0 or req > cap else (cap - req) * MAX_NODE_SCORE // cap
    return total // len(requested)


def balanced_allocation(requested: tuple[int, ...], allocatable: tuple[int, ...]) -> int:
    """balanced_allocation.go `balancedResourceScorer`: (1 - standard deviation of the requested fractions) x 100,
    the fractions capped at 1; for two resources the deviation is |f1 - f2| / 2."""
    fractions = [min(req / cap, 1.0) for req, cap in zip(requested, allocatable, strict=True) if cap > 0]
    if len(fractions) == 2:
        std = abs(fractions[0] - fractions[1]) / 2
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = (sum((f - mean) ** 2 for f in fractions) / len(fractions)) ** 0.5
    else:
        std = 0.0
    return int((1 - std) * MAX_NODE_SCORE)


class Cluster:
    def __init__(self, nodes: Iterable[NodeSpec], seed: int = 0, percentage: int = 0) -> None:
        self.nodes = [Node(n.name, n.gpus, n.cpu_milli, n.memory_mib, n.gpu_model) for n in nodes]
        for i, node in enumerate(self.nodes):
            node.index = i
            if not 0 <= node.gpus <= MAX_GPUS:
                raise ValueError(f"node {node.name}: gpus {node.gpus}: the replay's nodes have 0 to {MAX_GPUS} GPUs")
        self.by_name = {n.name: n for n in self.nodes}
        self.by_model: dict[str | None, list[int]] = {}  # GPU model -> the indexes of its nodes, ascending
        for i, node in enumerate(self.nodes):
            self.by_model.setdefault(node.model, []).append(i)
        self.next_start = 0
        self.percentage = percentage
        self.rng = random.Random(seed)
        self.nominated: dict[str, dict[str, KPod]] = {}  # node -> pods nominated there
        self.placements: dict[frozenset[str], list[Node]] = {}  # `restricted` memo
        self.scores: dict[tuple[int, int, int, int], int] = {}  # `score` memo
        self.version = 0  # bumped whenever a pod is placed or removed, a nomination cleared, a node up or down
        self.priorities: dict[int, int] = {}  # priority -> assumed or bound pods of it
        self.used = [0, 0, 0, 0]  # gpus, cpu, memory, pods of every assumed or bound pod
        self.capacity = [0, 0, 0, 0]  # of the nodes that are up
        self.grown: list[int] = []  # nodes whose room grew (pod removed, nomination cleared, up or down), in order
        self.nofit: dict[tuple[object, ...], int] = {}  # request -> len(grown) when it last fitted on no node
        self.usable: dict[tuple[object, ...], tuple[list[int], list[Node]]] = {}  # `_usable` memo
        self.indexes: dict[frozenset[str], list[int]] = {}  # `_indexes` memo
        # per GPU model (and ANY_MODEL): each node's free GPUs (0 for nodes of other models), one byte per node
        self.roomy: dict[str | None, bytearray] = {m: bytearray(len(self.nodes)) for m in (*self.by_model, ANY_MODEL)}
        for node in self.nodes:
            self._count(node, 1)
            self._room(node, node.gpus)

    def _count(self, node: Node, sign: int) -> None:
        for i, value in enumerate((node.gpus, node.cpu_milli, node.memory_mib, PODS_PER_NODE)):
            self.capacity[i] += sign * value

    def set_up(self, name: str, up: bool) -> None:
        """A node goes down (it must hold no pod any more) or comes back."""
        node = self.by_name[name]
        if node.up != up:
            node.up = up
            self._count(node, 1 if up else -1)
            self.version += 1
            self.grown.append(node.index)
            self.usable.clear()

    def free_total(self) -> list[int]:
        """GPUs, CPU, memory and pods left on the nodes that are up, summed."""
        return [c - u for c, u in zip(self.capacity, self.used, strict=True)]

    def fit(self, pod: KPod, node: Node, removed: Collection[KPod] = ()) -> Fit:
        if not node.up or (pod.model is not None and node.model != pod.model):
            return Fit.UNRESOLVABLE
        gpus, cpu, mem = node.req
        if not removed and node.name not in self.nominated:  # the common case, without the bookkeeping below
            if (
                gpus + pod.gpus > node.gpus
                or cpu + pod.cpu_milli > node.cpu_milli
                or mem + pod.memory_mib > node.memory_mib
                or len(node.pods) >= PODS_PER_NODE
            ):
                return Fit.UNSCHEDULABLE
            return Fit.FIT
        count = len(node.pods)
        for other in removed:
            gpus, cpu, mem, count = gpus - other.gpus, cpu - other.cpu_milli, mem - other.memory_mib, count - 1
        for other in self.nominated.get(node.name, {}).values():
            if other is not pod and other.node is None and other.priority >= pod.priority:
                gpus, cpu, mem, count = gpus + other.gpus, cpu + other.cpu_milli, mem + other.memory_mib, count + 1
        if (
            count + 1 > PODS_PER_NODE
            or gpus + pod.gpus > node.gpus
            or cpu + pod.cpu_milli > node.cpu_milli
            or mem + pod.memory_mib > node.memory_mib
        ):
            return Fit.UNSCHEDULABLE
        return Fit.FIT

    def find_feasible(self, pod: KPod, placement: Collection[str] | None = None) -> tuple[list[Node], list[Node]]:
        nodes = self.nodes if placement is None else self.restricted(placement)
        if pod.nominated is not None and (placement is None or pod.nominated in placement):  # evaluateNominatedNode
            node = self.by_name.get(pod.nominated)
            if node is not None and self.fit(pod, node) == Fit.FIT:
                return [node], []
        total = len(nodes)
        wanted = num_feasible_nodes_to_find(total, self.percentage)
        feasible: list[Node] = []
        short: list[Node] = []
        if not total:
            return feasible, short
        start = self.next_start % total
        key: tuple[object, ...] | None = None
        if pod.nominated is None and (placement is None or isinstance(placement, frozenset)):
            key = (placement, pod.gpus, pod.cpu_milli, pod.memory_mib, pod.model, pod.priority)
            if self._still_nofit(pod, key, placement, total):
                self.next_start = start  # (next_start + total) % total, as below
                return feasible, self._usable(placement, pod.model, nodes, start)
        processed = total  # unless enough feasible nodes are found first
        gpus, cpu, mem, model = pod.gpus, pod.cpu_milli, pod.memory_mib, pod.model
        nominated = self.nominated
        if gpus > 0:  # only the nodes with `gpus` GPUs free (of its model) can be feasible
            processed = self._search_roomy(pod, nodes, placement, start, wanted, feasible)
            self.next_start = (self.next_start + processed) % total
            if feasible:
                return feasible, short
            if key is not None:
                self.nofit[key] = len(self.grown)
            return feasible, self._usable(placement, model, nodes, start)  # every usable node failed
        if placement is None and model is not None:  # only the nodes of its model can be anything but UNRESOLVABLE
            index = self.by_model.get(model, [])
            k = bisect.bisect_left(index, start)
            positions = index[k:] + index[:k]
        else:
            positions = list(range(start, total)) + list(range(start))
        # `fit` inlined for the common case (a node up, of the pod's model, with no nominated pod): same answers
        for j in positions:
            node = nodes[j]
            if not node.up or (model is not None and node.model != model):
                continue  # UNRESOLVABLE
            req = node.req
            if req[0] + gpus > node.gpus:
                short.append(node)  # GPUs short (nominated pods only add to what is requested)
                continue
            if node.name in nominated:
                status = self.fit(pod, node)
            elif req[1] + cpu > node.cpu_milli or req[2] + mem > node.memory_mib or len(node.pods) >= PODS_PER_NODE:
                status = Fit.UNSCHEDULABLE
            else:
                status = Fit.FIT
            if status == Fit.FIT:
                feasible.append(node)
                if len(feasible) >= wanted:
                    processed = (j - start) % total + 1
                    break
            else:
                short.append(node)
        self.next_start = (self.next_start + processed) % total
        if key is not None and not feasible:
            self.nofit[key] = len(self.grown)
        return feasible, short

    def _search_roomy(
        self,
        pod: KPod,
        nodes: list[Node],
        placement: Collection[str] | None,
        start: int,
        wanted: int,
        feasible: list[Node],
    ) -> int:
        """`find_feasible`'s search for a pod requesting GPUs, visiting only the nodes (all, or a placement's) with
        enough GPUs free (the others fail for resources); fills `feasible`, returns the nodes processed."""
        nominated, cpu, mem, total = self.nominated, pod.cpu_milli, pod.memory_mib, len(nodes)
        free: bytes | bytearray | None = self.roomy.get(ANY_MODEL if pod.model is None else pod.model)
        if free is None or pod.gpus > MAX_GPUS:
            return total  # no node has that many
        if placement is not None:  # the placement's nodes' bytes, in its order
            indexes = self._indexes(placement, nodes)
            free = bytes([free[indexes[0]]]) if total == 1 else bytes(itemgetter(*indexes)(free))
        pattern = at_least(pod.gpus)
        for m in chain(pattern.finditer(free, start), pattern.finditer(free, 0, start)):
            j = m.start()
            node = nodes[j]
            if not node.up:
                continue
            if node.name in nominated:
                if self.fit(pod, node) != Fit.FIT:
                    continue
            else:
                req = node.req  # `fit` inlined: the GPUs fit
                if req[1] + cpu > node.cpu_milli or req[2] + mem > node.memory_mib or len(node.pods) >= PODS_PER_NODE:
                    continue
            feasible.append(node)
            if len(feasible) >= wanted:
                return (j - start) % total + 1
        return total

    def _still_nofit(self, pod: KPod, key: tuple[object, ...], placement: Collection[str] | None, total: int) -> bool:
        """Whether a request that fitted on no node of the placement (no nomination of its own) still fits on none:
        since then only the nodes in `grown` got more room (placing pods and nominating them only takes room), so
        those are checked again, unless there are too many of them (then the caller searches every node)."""
        seen = self.nofit.get(key)
        if seen is None:
            return False
        grown = self.grown
        if len(grown) - seen > total // 8:
            return False
        nodes = self.nodes
        for i in set(grown[seen:]):
            node = nodes[i]
            if (placement is None or node.name in placement) and self.fit(pod, node) == Fit.FIT:
                return False
        self.nofit[key] = len(grown)
        return True

    def _usable(
        self, placement: Collection[str] | None, model: str | None, nodes: list[Node], start: int
    ) -> list[Node]:
        """The nodes of the placement that are up and of the model, from `start` on and wrapping around: what
        `find_feasible` returns as failing for resources when no node fits (the usable nodes by position are
        memoized until a node goes down or comes back)."""
        memo = self.usable.get((placement, model))
        if memo is None:
            if placement is None and model is not None:
                positions = [i for i in self.by_model.get(model, []) if nodes[i].up]
            else:
                positions = [i for i, n in enumerate(nodes) if n.up and (model is None or n.model == model)]
            memo = self.usable[(placement, model)] = (positions, [nodes[i] for i in positions])
        positions, usable = memo
        k = bisect.bisect_left(positions, start)
        return usable[k:] + usable[:k]

    def _indexes(self, placement: Collection[str], nodes: list[Node]) -> list[int]:
        """The inventory positions of a placement's nodes (memoized per placement, as `restricted`)."""
        if not isinstance(placement, frozenset):
            return [n.index for n in nodes]
        found = self.indexes.get(placement)
        if found is None:
            found = self.indexes[placement] = [n.index for n in nodes]
        return found

    def restricted(self, placement: Collection[str]) -> list[Node]:
        """The nodes of a placement in inventory order (memoized per placement: pod group cycles pass the same
        domains again and again)."""
        if not isinstance(placement, frozenset):
            return [n for n in self.nodes if n.name in placement]
        nodes = self.placements.get(placement)
        if nodes is None:
            nodes = self.placements[placement] = [n for n in self.nodes if n.name in placement]
        return nodes

    def score(self, pod: KPod, node: Node) -> int:
        """LeastAllocated plus BalancedAllocation (memoized on what they depend on: the same integers)."""
        key = (node.req[1] + pod.cpu_milli, node.req[2] + pod.memory_mib, node.cpu_milli, node.memory_mib)
        cached = self.scores.get(key)
        if cached is None:
            requested, allocatable = key[:2], key[2:]
            cached = least_allocated(requested, allocatable) + balanced_allocation(requested, allocatable)
            if len(self.scores) > 1_000_000:
                self.scores.clear()
            self.scores[key] = cached
        return cached

    def select_host(self, pod: KPod, feasible: list[Node]) -> Node:
        """schedule_one.go `selectHost`: the highest total score, ties broken uniformly by reservoir sampling.
        `score`'s memo is read inline, and `randrange(n)` is called as `_randbelow(n)`, which is all CPython's
        `randrange` does for one positive argument (the same draws from the same generator)."""
        scores, score = self.scores, self.score
        randbelow = getattr(self.rng, "_randbelow", self.rng.randrange)
        cpu, mem = pod.cpu_milli, pod.memory_mib
        best, best_score, ties = feasible[0], score(pod, feasible[0]), 1
        for node in feasible[1:]:
            req = node.req
            value = scores.get((req[1] + cpu, req[2] + mem, node.cpu_milli, node.memory_mib))
            if value is None:
                value = score(pod, node)
            if value > best_score:
                best, best_score, ties = node, value, 1
            elif value == best_score:
                ties += 1
                if randbelow(ties) == 0:
                    best = node
        return best

    def assume(self, pod: KPod, node: Node) -> None:
        self.clear_nomination(pod)
        self.charge(pod, node)

    def charge(self, pod: KPod, node: Node) -> None:
        """The pod counts on the node (its nomination untouched: a pod group cycle's tentative placement)."""
        node.pods[pod.key] = pod
        if pod.gpus:
            self._room(node, node.gpus - node.req[0] - pod.gpus)
        node.req[0] += pod.gpus
        node.req[1] += pod.cpu_milli
        node.req[2] += pod.memory_mib
        self._use(pod, 1)
        pod.node = node.name
        self.version += 1  # (a lower-priority pod placed may give a preemption candidate)

    def _room(self, node: Node, free: int) -> None:
        """The node has `free` GPUs free now: the `roomy` index follows."""
        value = min(max(free, 0), MAX_GPUS)
        self.roomy[node.model][node.index] = value
        self.roomy[ANY_MODEL][node.index] = value

    def _use(self, pod: KPod, sign: int) -> None:
        for i, value in enumerate((pod.gpus, pod.cpu_milli, pod.memory_mib, 1)):
            self.used[i] += sign * value
        count = self.priorities.get(pod.priority, 0) + sign
        if count:
            self.priorities[pod.priority] = count
        else:
            del self.priorities[pod.priority]

    def forget(self, pod: KPod) -> None:
        if pod.node is None:
            return
        node = self.by_name[pod.node]
        del node.pods[pod.key]
        if pod.gpus:
            self._room(node, node.gpus - node.req[0] + pod.gpus)
        node.req[0] -= pod.gpus
        node.req[1] -= pod.cpu_milli
        node.req[2] -= pod.memory_mib
        self._use(pod, -1)
        pod.node = None
        self.version += 1
        self.grown.append(node.index)

    def nominate(self, pod: KPod, node: str) -> None:
        self.clear_nomination(pod)
        pod.nominated = node
        self.nominated.setdefault(node, {})[pod.key] = pod

    def clear_nomination(self, pod: KPod) -> None:
        if pod.nominated is not None:
            there = self.nominated.get(pod.nominated, {})
            there.pop(pod.key, None)
            if not there:
                self.nominated.pop(pod.nominated, None)
            node = self.by_name.get(pod.nominated)
            if node is not None:
                self.grown.append(node.index)
            pod.nominated = None
            self.version += 1
