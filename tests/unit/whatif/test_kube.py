"""The kube-scheduler machinery of the faithful baselines (operator/gangsched/whatif/kube/), each case taken from
upstream's own tests or code (kubernetes/kubernetes, files named per test).

Oracles: pkg/scheduler/schedule_one_test.go `TestNumFeasibleNodesToFind`; noderesources/least_allocated_test.go and
balanced_allocation_test.go ("nothing scheduled, resources requested, differently sized nodes");
backend/queue/scheduling_queue_test.go `TestBackOffFlow` and
`TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithQueueingHint`; queuesort/priority_sort_test.go `TestLess`;
defaultpreemption/default_preemption_test.go `TestSelectNodesForPreemption` and preemption/preemption.go
`pickOneNodeForPreemption`'s documented order.
"""

from __future__ import annotations

import random

import pytest

from gangsched.whatif.kube.cluster import (
    Cluster,
    Fit,
    KPod,
    balanced_allocation,
    least_allocated,
    num_feasible_nodes_to_find,
)
from gangsched.whatif.kube.preemption import Candidate, num_candidates, pick_one_node, preempt, select_victims_on_node
from gangsched.whatif.kube.queue import (
    ANY,
    COSCHEDULING,
    FIT,
    NODE_CHANGE,
    POD_DELETE,
    POD_GROUP,
    SchedulingQueue,
    backoff_duration,
)
from gangsched.whatif.model import NodeSpec


def pod(key: str, gpus: int, priority: int = 0, start: float = 0.0) -> KPod:
    return KPod(key, key, priority, gpus, 1000, 1024, None, 0.0, start=start)


def cluster(n: int, gpus: int = 8) -> Cluster:
    return Cluster([NodeSpec(f"n{i}", 64_000, 1 << 20, gpus) for i in range(n)])


@pytest.mark.parametrize(
    ("nodes", "percentage", "expected"),
    [
        (10, 0, 10),  # "not set percentageOfNodesToScore and nodes number not more than 50"
        (10, 40, 10),  # "set percentageOfNodesToScore and nodes number not more than 50"
        (1000, 0, 420),  # "not set percentageOfNodesToScore and nodes number more than 50"
        (1000, 40, 400),  # "set percentageOfNodesToScore and nodes number more than 50"
        (6000, 0, 300),  # "not set percentageOfNodesToScore and nodes number more than 50*125"
        (6000, 20, 1200),  # "set percentageOfNodesToScore and nodes number more than 50*125"
        (4278, 0, 684),  # the Alibaba 2026 inventory: 50 - 4278/125 = 16%
    ],
)
def test_num_feasible_nodes_to_find(nodes: int, percentage: int, expected: int) -> None:
    """schedule_one_test.go TestNumFeasibleNodesToFind (adaptive default: 50 - nodes/125 percent, >= 5%, >= 100)."""
    assert num_feasible_nodes_to_find(nodes, percentage) == expected


def test_the_node_search_stops_at_enough_feasible_nodes_and_rotates_its_start() -> None:
    """schedule_one.go findNodesThatPassFilters: stop after numFeasibleNodesToFind feasible nodes, then
    nextStartNodeIndex = (nextStartNodeIndex + processed) % nodes."""
    c = cluster(300)  # 50 - 300/125 = 48% -> 144 nodes
    feasible, short = c.find_feasible(pod("p", 1))
    assert [n.name for n in feasible] == [f"n{i}" for i in range(144)] and short == []
    feasible, _ = c.find_feasible(pod("q", 1))
    assert feasible[0].name == "n144" and feasible[-1].name == "n287"
    feasible, _ = c.find_feasible(pod("r", 1))
    assert feasible[0].name == "n288" and feasible[12].name == "n0"  # wraps around


def test_least_allocated_and_balanced_allocation_scores() -> None:
    """least_allocated_test.go and balanced_allocation_test.go, case "nothing scheduled, resources requested,
    differently sized nodes": pod cpu 3000, memory 5000; node1 4000/10000, node2 6000/10000."""
    assert least_allocated((3000, 5000), (4000, 10000)) == 37  # (25 + 50) / 2
    assert least_allocated((3000, 5000), (6000, 10000)) == 50
    assert balanced_allocation((3000, 5000), (4000, 10000)) == 87  # std (0.75 - 0.5) / 2
    assert balanced_allocation((3000, 5000), (6000, 10000)) == 100
    assert least_allocated((5000, 0), (4000, 10000)) == 50  # requested beyond allocatable scores 0 for it


def test_backoff_doubles_from_one_second_up_to_ten() -> None:
    """scheduling_queue_test.go TestBackOffFlow: 1s, 2s, 4s, 8s, 10s, 10s (podInitialBackoffSeconds 1,
    podMaxBackoffSeconds 10)."""
    assert [backoff_duration(a) for a in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def test_queue_order_backoff_and_unschedulable_pods() -> None:
    """priority_sort_test.go TestLess ("p1.priority less than p2.priority": p2 first; "equal priority. p1 is added to
    schedulingQ earlier than p2": p1 first); scheduling_queue.go: a pod failing with no cluster event during its
    attempt parks in unschedulablePods until an event (MoveAllToActiveOrBackoffQueue: backoffQ while its backoff
    lasts) or the 5 min leftover flush (run every 30 s); with an event during the attempt it goes to backoffQ."""
    prio = {"low": 0, "high": 10, "early": 5, "late": 5}
    q = SchedulingQueue(lambda p, ts: (-prio[p], ts, p))
    q.add("low", 0.0)
    q.add("late", 2.0)
    q.add("early", 1.0)
    q.add("high", 3.0)
    assert [q.pop(3.0) for _ in range(4)] == ["high", "early", "late", "low"]
    q.failed("high", 3.0)  # no event since its pop: unschedulable
    assert q.where["high"] == "unschedulable" and q.next_wakeup() == 330.0  # first 30 s tick after 303
    q.move_all(3.5)
    assert q.where["high"] == "backoff" and q.next_wakeup() == 4.0  # 1 s after its failure at 3
    q.flush(4.0)
    assert q.pop(4.0) == "high"
    q.move_all(4.0)  # an event during its attempt
    q.failed("high", 4.0)
    assert q.where["high"] == "backoff" and q.backoff_until("high") == 6.0  # second attempt: 2 s
    assert q.pop(4.0) is None  # tried at this instant already (SchedulerPopFromBackoffQ otherwise)
    assert q.pop(5.0) == "high"  # activeQ empty: popped from backoffQ before its backoff ends


def test_nominated_pods_of_higher_or_equal_priority_count_as_placed() -> None:
    """schedule_one.go findNodesThatPassFilters -> RunFilterPluginsWithNominatedPods: pods nominated to the node with
    priority >= the pod's are added before filtering; lower-priority nominations are ignored."""
    c = cluster(1)
    node = c.nodes[0]
    c.nominate(pod("nominee", 6, priority=50), "n0")
    assert c.fit(pod("low", 4, priority=0), node) == Fit.UNSCHEDULABLE
    assert c.fit(pod("high", 4, priority=100), node) == Fit.FIT
    feasible, short = c.find_feasible(pod("equal", 4, priority=50))
    assert feasible == [] and short == [node]


def test_minimal_victims_reprieve_the_most_important_pods_first() -> None:
    """default_preemption_test.go TestSelectNodesForPreemption, "medium priority pod is preempted, but lower priority
    one stays as it is small": all lower-priority pods are removed, then re-added most important first while the
    preemptor still fits; victims come back most important first."""
    c = cluster(1)
    node = c.nodes[0]
    small_low, big_mid, other_low = pod("small-low", 1, 0), pod("big-mid", 5, 50), pod("other-low", 2, 0, start=5)
    for p in (small_low, big_mid, other_low):
        c.assume(p, node)
    cand = select_victims_on_node(c, pod("preemptor", 5, 100), node)
    assert cand is not None and [v.key for v in cand.victims] == ["big-mid"]  # 3 GPUs left: both lows stay
    cand = select_victims_on_node(c, pod("preemptor", 6, 100), node)  # 2 left: the earlier-started low stays
    assert cand is not None and [v.key for v in cand.victims] == ["big-mid", "other-low"]
    cand = select_victims_on_node(c, pod("preemptor", 8, 100), node)
    assert cand is not None and [v.key for v in cand.victims] == ["big-mid", "small-low", "other-low"]
    assert select_victims_on_node(c, pod("same", 1, 0), node) is None  # nothing of lower priority
    assert select_victims_on_node(c, pod("too-big", 9, 100), node) is None  # does not fit even on an empty node


def test_pick_one_node_follows_upstream_order() -> None:
    """preemption.go pickOneNodeForPreemption: 1. fewest PDB violations, 2. lowest highest-victim priority, 3. smallest
    priority sum, 4. fewest victims, 5. latest start among the highest-priority victims, 6. the first. Cases of
    default_preemption_test.go TestPickOneNodeForPreemption ("machine with min highest priority pod is picked",
    "when highest priorities are the same, minimum sum of lower priority pods is picked", "when highest priority and
    sum are the same, minimum number of pods is picked", "same priority, same number of victims, different start
    time for each node's pod")."""
    c = cluster(2)
    a, b = c.nodes

    def cand(node: object, *victims: KPod, pdb: int = 0) -> Candidate:
        return Candidate(node, victims, pdb)  # type: ignore[arg-type]

    assert pick_one_node([cand(a, pod("x", 1, 10)), cand(b, pod("y", 1, 5))]).node is b  # type: ignore[union-attr]
    pair = [cand(a, pod("x", 1, 10), pod("x2", 1, 5)), cand(b, pod("y", 1, 10), pod("y2", 1, 1))]
    assert pick_one_node(pair).node is b  # type: ignore[union-attr]
    pair = [cand(a, pod("x", 1, 10), pod("x2", 1, 0), pod("x3", 1, 0)), cand(b, pod("y", 1, 10), pod("y2", 1, 0))]
    assert pick_one_node(pair).node is b  # type: ignore[union-attr]  # (sums: 2^31 offset per victim)
    pair = [cand(a, pod("x", 1, 10, start=100)), cand(b, pod("y", 1, 10, start=50))]
    assert pick_one_node(pair).node is a  # type: ignore[union-attr]
    pair = [cand(a, pod("x", 1, 0), pdb=1), cand(b, pod("y", 1, 50))]
    assert pick_one_node(pair).node is b  # type: ignore[union-attr]  # a PDB violation outweighs priority
    assert pick_one_node([]) is None


def test_preemption_tries_candidate_nodes_and_honours_preemption_policy_never() -> None:
    """default_preemption.go calculateNumCandidates (10% of the nodes, at least 100, at most all) and
    PodEligibleToPreemptOthers (preemptionPolicy Never does not preempt)."""
    assert (num_candidates(32), num_candidates(4278), num_candidates(500)) == (32, 427, 100)
    c = cluster(2)
    c.assume(pod("low0", 8, 0, start=1), c.nodes[0])
    c.assume(pod("low1", 8, 0, start=2), c.nodes[1])
    preemptor = pod("high", 8, 100)
    feasible, short = c.find_feasible(preemptor)
    assert feasible == [] and len(short) == 2
    chosen = preempt(c, preemptor, short, random.Random(0))
    assert chosen is not None and chosen.node.name == "n1"  # equal victims: the later start is preferred
    preemptor.preempt = False
    assert preempt(c, preemptor, short, random.Random(0)) is None


def test_pods_whose_eviction_would_violate_a_pdb_are_reprieved_first() -> None:
    """default_preemption.go SelectVictimsOnNode: the lower-priority pods are split by filterPodsWithPDBViolation and
    the violating ones are reprieved first, so a non-violating pod is evicted in their place when only one of them
    can stay; a violating victim is counted (NumPDBViolations)."""
    c = cluster(1)
    node = c.nodes[0]
    protected, plain = pod("protected", 4, 0, start=5), pod("plain", 4, 0, start=1)
    c.assume(plain, node)
    c.assume(protected, node)
    cand = select_victims_on_node(c, pod("preemptor", 4, 100), node, violates=lambda p: p.key == "protected")
    assert cand is not None and [v.key for v in cand.victims] == ["plain"] and cand.pdb_violations == 0
    cand = select_victims_on_node(c, pod("preemptor", 4, 100), node)  # no PDB: the earlier start is reprieved
    assert cand is not None and [v.key for v in cand.victims] == ["protected"]
    cand = select_victims_on_node(c, pod("preemptor", 8, 100), node, violates=lambda p: p.key == "protected")
    assert cand is not None and {v.key for v in cand.victims} == {"plain", "protected"} and cand.pdb_violations == 1


def test_unschedulable_pods_are_requeued_only_by_events_their_rejecting_plugin_registers() -> None:
    """scheduling_queue.go isPodWorthRequeuing (QueueingHints, GA): an unschedulable pod moves on a cluster event only
    when a plugin in its UnschedulablePlugins registered the event (scheduling_queue_test.go
    TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithQueueingHint: a QueueSkip leaves it in unschedulablePods).
    NodeResourcesFit registers pod deletion and node changes (fit.go EventsToRegister, isSchedulableAfterPodEvent);
    scheduler-plugins v0.34.7 Coscheduling only Pod Add and PodGroup Add|Update (coscheduling.go EventsToRegister;
    Pod Add moves no pod here: AssignedPodAdded takes only pods with cross-topology affinity terms). Events that
    happened during the attempt count the same way (determineSchedulingHintForInFlightPod)."""
    q = SchedulingQueue(lambda p, ts: (ts, p))
    for name in ("fit", "cosched", "inflight"):
        q.add(name, 0.0)
    assert [q.pop(0.0), q.pop(0.0)] == ["cosched", "fit"]
    q.failed("fit", 0.0, FIT)
    q.failed("cosched", 0.0, COSCHEDULING)
    q.move_all(0.5, POD_DELETE)
    assert (q.where["fit"], q.where["cosched"]) == ("backoff", "unschedulable")
    q.move_all(0.5, POD_GROUP)
    assert q.where["cosched"] == "backoff"
    assert q.pop(5.0) == "inflight"
    q.move_all(5.0, POD_DELETE)  # during its attempt: not one Coscheduling registered
    q.failed("inflight", 5.0, COSCHEDULING)
    assert q.where["inflight"] == "unschedulable"
    q.move_all(5.0, NODE_CHANGE)
    assert q.where["inflight"] == "unschedulable"
    q.flush(306.0)  # the 5 min leftover flush moves it whatever rejected it
    assert q.where["inflight"] == "active"


def test_a_pod_rejected_at_permit_is_not_moved_by_its_own_deletion_event() -> None:
    """schedule_one.go handleBindingCycleError: a pod rejected at Permit is unreserved and re-queued first, then the
    deferred MoveAllToActiveOrBackoffQueue(AssignedPodDelete) moves the others, not the pod itself ("Avoid moving the
    assumed Pod itself as it's always Unschedulable")."""
    q = SchedulingQueue(lambda p, ts: (ts, p))
    q.add("rejected", 0.0)
    q.add("other", 0.0)
    assert q.pop(0.0) == "other"
    q.failed("other", 0.0)
    assert q.pop(0.0) == "rejected"
    q.failed("rejected", 0.0, ANY)
    q.move_all(0.0, POD_DELETE, exclude={"rejected"})
    assert (q.where["rejected"], q.where["other"]) == ("unschedulable", "backoff")
