"""Queueing hints (core/hints/queue_hints.py): a backed-off gang is retried early only when the capacity freed since
could let it progress.

Oracle: kube-scheduler's queueing hints (pkg/scheduler/framework/interface.go `QueueingHintFn`, KEP-4247): a
cluster event moves an unschedulable pod back to the active queue only when a plugin that rejected it says the
event may make it schedulable (NodeResourcesFit's `isSchedulableAfterPodEvent`: a deleted pod's freed resources
must fit the pod); otherwise the pod waits for its backoff (podMaxInUnschedulablePodsDuration). For a gang the
necessary condition is the gang's: minMember free slots of its members' classes.
"""

from __future__ import annotations

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.podstate import NOMINATED
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.topology import Domain, TopologyTree
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode, GangSpec, NetworkTopology, TopologyMode
from gangsched.core.values.units import UnitKey
from tests.builders import add_nodes, add_pod

CFG = SchedulerConfig()  # backoff 1 s after the first failure
BIG = UnitKey("gang", "default/big")


def cluster(*, priority: int = 0, mode: GangMode = GangMode.STRICT) -> SchedulerState:
    """Two 8-GPU nodes, each busy with a 4-GPU pod of another scheduler; `big` (2 x 8 GPUs) fails at t=0."""
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    for i in range(2):
        add_pod(c, f"busy{i}", gpu=4, node=f"n{i}", phase="Running", ours=False)
    c.upsert_gang(GangSpec("default", "big", 2, mode=mode), created=0.0)
    for i in range(2):
        add_pod(c, f"big-{i}", gang="default/big", rank=i, gpu=8, priority=priority)
    plan = step(c, CFG, 0.0)
    assert BIG in plan.unit_backoffs and not plan.bindings
    return c


def two_domains() -> SchedulerState:
    """Four 8-GPU nodes in two tier-1 domains (tor-a: n0, n1; tor-b: n2, n3) under one spine."""
    c = SchedulerState()
    add_nodes(c, 4, gpu=8)
    tor = {"tor-a": ("n0", "n1"), "tor-b": ("n2", "n3")}
    domains = [Domain(1, name, parents=("spine",), children=nodes) for name, nodes in tor.items()]
    c.set_topology(TopologyTree.from_domains([*domains, Domain(2, "spine")]))
    return c


def test_capacity_freed_that_cannot_make_room_leaves_the_gang_backed_off() -> None:
    c = cluster()
    c.remove_pod("default/busy0")  # n0 free: one slot of 8 GPUs, the gang needs two
    plan = step(c, CFG, 0.5)  # within the backoff (until t=1)
    assert plan.hint_skips == {BIG: c.store.freed_gen}
    assert not plan.unit_backoffs and not plan.events and not plan.gang_status  # not attempted, nothing repeated
    assert step(c, CFG, 0.6).hint_skips == {}  # the same capacity is not asked about again
    c.remove_pod("default/busy1")  # now two slots: retried at once, before its backoff ends
    plan = step(c, CFG, 0.7)
    assert sorted(k for k, _ in plan.bindings) == ["default/big-0", "default/big-1"]


def test_the_backoff_still_ends_with_time() -> None:
    c = cluster()
    c.remove_pod("default/busy0")
    assert step(c, CFG, 0.5).hint_skips
    plan = step(c, CFG, 1.0)  # backoff over: attempted (and fails again, saying so)
    assert BIG in plan.unit_backoffs and not plan.hint_skips


def test_a_gang_that_could_preempt_is_always_retried() -> None:
    # a lower-priority pod exists (the busy pods have priority 0): freed capacity plus victims may make room
    c = cluster(priority=100)
    c.remove_pod("default/busy0")
    plan = step(c, CFG, 0.5)
    assert not plan.hint_skips and (plan.evictions or plan.unit_backoffs or plan.bindings)


def test_a_nonstrict_gang_is_retried_when_one_member_fits() -> None:
    # NonStrict keeps partial placements: one free slot is progress (a reservation)
    c = cluster(mode=GangMode.NON_STRICT)
    c.remove_pod("default/busy0")
    plan = step(c, CFG, 0.5)
    assert not plan.hint_skips and [k for k, _ in plan.reservations] == ["default/big-0"]


def test_a_gang_that_fits_no_domain_even_empty_waits_for_a_node_change_even_when_it_could_preempt() -> None:
    # 3 x 8 GPUs, hard within a tier-1 domain of two 8-GPU nodes: unresolvable by freeing or preempting pods
    # (kube-scheduler's UnschedulableAndUnresolvable: only a node event requeues it)
    c = two_domains()
    add_pod(c, "low", gpu=8, node="n0", phase="Running", ours=False)  # priority 0: a possible victim
    network = NetworkTopology(TopologyMode.HARD, 1)
    c.upsert_gang(GangSpec("default", "big", 3, network_topology=network), created=0.0)
    for i in range(3):
        add_pod(c, f"big-{i}", gang="default/big", rank=i, gpu=8, priority=100)
    assert BIG in step(c, CFG, 0.0).unit_backoffs and not c.store.pods_in(NOMINATED)
    c.remove_pod("default/low")
    plan = step(c, CFG, 0.5)
    assert plan.hint_skips == {BIG: c.store.freed_gen} and plan.empty_fits[BIG][1] is False
    add_nodes(c, 1, prefix="m", gpu=8)  # a node event: judged again (it still fits no domain: m0 is in none)
    plan = step(c, CFG, 0.6)
    assert BIG in plan.empty_fits and plan.hint_skips


# ----- what a gang could reach with every lower-priority pod gone (core/hints/reach.py) -----
# Oracle: kube-scheduler's preemption, pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go
# `SelectVictimsOnNode`: "If the new pod does not fit after removing all the lower priority pods, we are almost done
# and this node is not suitable for preemption"; the bound here is that check, for the gang's members together.


def equal_priority_cluster() -> SchedulerState:
    """Two 8-GPU nodes, each half taken by a priority-100 pod of another scheduler, n1's other half by a priority-0
    one; `big` (priority 100, 2 x 8 GPUs) could preempt (a lower priority exists) but fails at t=0: even without
    the priority-0 pod, no node has 8 GPUs for it."""
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    for i in range(2):
        add_pod(c, f"peer{i}", gpu=4, node=f"n{i}", phase="Running", ours=False, priority=100)
    add_pod(c, "low", gpu=4, node="n1", phase="Running", ours=False)
    c.upsert_gang(GangSpec("default", "big", 2), created=0.0)
    for i in range(2):
        add_pod(c, f"big-{i}", gang="default/big", rank=i, gpu=8, priority=100)
    plan = step(c, CFG, 0.0)
    assert BIG in plan.unit_backoffs and not plan.evictions and not plan.bindings
    return c


def test_a_gang_that_could_preempt_is_not_retried_until_lower_priorities_gone_would_make_room() -> None:
    c = equal_priority_cluster()
    c.remove_pod("default/peer0")  # n0 empty: one slot; n1 would have 4 GPUs even without its priority-0 pod
    plan = step(c, CFG, 0.5)
    assert plan.hint_skips == {BIG: c.store.freed_gen} and not plan.evictions and not plan.events
    assert plan.reach_memos[BIG].fits is False and dict(plan.reach_memos[BIG].cap) == {"n0": 1}
    c.remove_pod("default/peer1")  # n1 would have 8 without the priority-0 pod: attempted at once, and preempts
    plan = step(c, CFG, 0.6)
    assert not plan.hint_skips and dict(plan.reach_memos[BIG].cap) == {"n0": 1, "n1": 1}
    assert plan.evictions == ["default/low"] and sorted(n for _, n in plan.nominations) == ["n0", "n1"]


def test_free_slots_in_the_wrong_domains_do_not_retry_a_gang_with_a_hard_topology() -> None:
    # 2 x 8 GPUs, hard within one tier-1 domain of two nodes; every pod has priority 0 (nothing to preempt)
    c = two_domains()
    for i in range(3):
        add_pod(c, f"busy{i}", gpu=8, node=f"n{i}", phase="Running", ours=False)
    c.upsert_gang(GangSpec("default", "big", 2, network_topology=NetworkTopology(TopologyMode.HARD, 1)), created=0.0)
    for i in range(2):
        add_pod(c, f"big-{i}", gang="default/big", rank=i, gpu=8)
    assert BIG in step(c, CFG, 0.0).unit_backoffs
    c.remove_pod("default/busy0")  # n0 and n3 free: two slots, one in each domain
    plan = step(c, CFG, 0.5)
    assert plan.hint_skips == {BIG: c.store.freed_gen} and plan.reach_memos[BIG].fits is False
    c.remove_pod("default/busy1")  # tor-a empty
    plan = step(c, CFG, 0.6)
    assert sorted(n for _, n in plan.bindings) == ["n0", "n1"]
