"""Pods without a gang, and gangs whose members have different sizes, preempt too (issue 13 item 7 (d)), with
kube-scheduler's DefaultPreemption semantics for a single pod.

Oracle: pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go (`SelectVictimsOnNode`,
`PodEligibleToPreemptOthers`: preemptionPolicy Never does not preempt) and its test table
default_preemption_test.go (`TestSelectBestCandidate`: "a pod that fits on a machine with no preemption" needs no
victim, "machine with min highest priority pod is picked", "when highest priorities are the same, minimum sum of
priorities is picked", "... minimum number of pods is picked"); pkg/scheduler/framework/preemption/
preemption.go (the preemptor is nominated, `nominatedNodeName`, and binds once its victims are gone).
"""

from __future__ import annotations

import dataclasses

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.podstate import NOMINATED
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.topology import Domain, TopologyTree
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangSpec, NetworkTopology
from tests.builders import add_nodes, add_pod

CFG = SchedulerConfig(max_units_per_cycle=8)


def cluster() -> SchedulerState:
    c = SchedulerState()
    add_nodes(c, 2, prefix="node", gpu=8)
    return c


def test_a_pod_without_a_gang_evicts_a_lower_priority_pod_and_binds_once_it_is_gone() -> None:
    c = cluster()
    low = [add_pod(c, f"low-{i}", node=f"node{i}", phase="Running", gpu=8, priority=i) for i in range(2)]
    high = add_pod(c, "high", gpu=8, priority=100)
    plan = step(c, CFG, 0.0)
    assert plan.evictions == [low[0]]  # the node whose highest victim priority is the lowest
    assert plan.nominations == [(high, "node0")]
    assert c.state_of(high) is NOMINATED
    assert any(e.reason == "Preempted" and e.message == f"Preempted by pod {high} on node node0" for e in plan.events)
    assert any(cond.reason == "Preempting" for cond in plan.conditions)
    plan = step(c, CFG, 1.0)  # still terminating: it waits, nothing else is evicted
    assert not plan.evictions and not plan.bindings
    c.remove_pod(low[0])
    plan = step(c, CFG, 2.0)
    assert plan.bindings == [(high, "node0")]


def test_fewest_victims_on_equal_priorities() -> None:
    c = cluster()
    add_pod(c, "a", node="node0", phase="Running", gpu=4, priority=0)
    add_pod(c, "b", node="node0", phase="Running", gpu=4, priority=0)
    one = add_pod(c, "c", node="node1", phase="Running", gpu=8, priority=0)
    add_pod(c, "high", gpu=8, priority=100)
    assert step(c, CFG, 0.0).evictions == [one]


def test_never_and_equal_priority_do_not_preempt() -> None:
    c = cluster()
    for i in range(2):
        add_pod(c, f"low-{i}", node=f"node{i}", phase="Running", gpu=8, priority=5)
    add_pod(c, "never", gpu=8, priority=100, spec_extra={"preemptionPolicy": "Never"})
    add_pod(c, "peer", gpu=8, priority=5)
    plan = step(c, CFG, 0.0)
    assert not plan.evictions
    assert any(e.reason == "FailedScheduling" for e in plan.pod_events)


def test_a_victim_gang_is_taken_whole() -> None:
    c = cluster()
    c.upsert_gang(GangSpec("default", "g", 2))
    c.mark_satisfied("default/g")
    g = [add_pod(c, f"g-{i}", gang="default/g", rank=i, node=f"node{i}", phase="Running", gpu=8) for i in range(2)]
    add_pod(c, "high", gpu=8, priority=100)
    assert sorted(step(c, CFG, 0.0).evictions) == g


def mixed_gang(c: SchedulerState, gpus: list[int], priority: int = 100) -> list[str]:
    c.upsert_gang(GangSpec("default", "mixed", len(gpus)))
    return [
        add_pod(c, f"mixed-{i}", gang="default/mixed", rank=i, gpu=g, priority=priority) for i, g in enumerate(gpus)
    ]


def test_a_gang_with_members_of_different_sizes_preempts_class_by_class() -> None:
    """Issue 13 (d): a 6-GPU and two 1-GPU members on two full 8-GPU nodes: the lowest-priority pods go, the
    6-GPU member (the largest, placed first) and the 1-GPU members are nominated where they freed room."""
    c = cluster()
    low = [add_pod(c, f"low-{i}", node=f"node{i}", phase="Running", gpu=8, priority=i) for i in range(2)]
    members = mixed_gang(c, [6, 1, 1])
    plan = step(c, CFG, 0.0)
    assert plan.evictions == [low[0]]  # one node freed holds all three
    assert sorted(plan.nominations) == sorted((k, "node0") for k in members)
    c.remove_pod(low[0])
    plan = step(c, CFG, 1.0)
    assert sorted(k for k, _ in plan.bindings) == sorted(members)


def test_a_mixed_gang_that_needs_two_nodes_takes_both() -> None:
    c = cluster()
    low = [add_pod(c, f"low-{i}", node=f"node{i}", phase="Running", gpu=8, priority=i) for i in range(2)]
    mixed_gang(c, [8, 4])
    plan = step(c, CFG, 0.0)
    assert sorted(plan.evictions) == low


def test_a_mixed_gang_with_topology_says_why_it_does_not_preempt() -> None:
    c = cluster()
    c.set_topology(TopologyTree.from_domains([Domain(1, "unit0", (), ("node0", "node1"))]))
    for i in range(2):
        add_pod(c, f"low-{i}", node=f"node{i}", phase="Running", gpu=8, priority=0)
    c.upsert_gang(GangSpec("default", "mixed", 2, network_topology=NetworkTopology(group_size=1)))
    for i, g in enumerate((6, 1)):
        add_pod(c, f"mixed-{i}", gang="default/mixed", rank=i, gpu=g, priority=100)
    plan = step(c, CFG, 0.0)
    assert not plan.evictions
    assert any(e.reason == "PreemptionUnsupported" and "different sizes" in e.message for e in plan.events)


def test_a_new_leader_restores_a_lone_preemptors_nomination_and_victim() -> None:
    """After a restart the pod's status.nominatedNodeName and its leaving victim are taken back: it waits for that
    victim and evicts nobody else (kube-scheduler keeps nominated pods across restarts from the same field)."""
    c = cluster()
    low = [add_pod(c, f"low-{i}", node=f"node{i}", phase="Running", gpu=8, priority=0) for i in range(2)]
    c.set_leaving(low[0], True)
    high = add_pod(c, "high", gpu=8, priority=100)
    c.upsert_pod(dataclasses.replace(c.pods[high], nominated_node="node0"))  # status.nominatedNodeName
    assert c.restore_nominations(now=0.0) == []
    assert c.nomination_of(high) == "node0" and c.victims_of(high) == [low[0]]
    plan = step(c, CFG, 1.0)
    assert not plan.evictions and not plan.bindings
    c.remove_pod(low[0])
    assert step(c, CFG, 2.0).bindings == [(high, "node0")]
