"""Preemption beyond Strict gangs in the core: a victim gang a PodDisruptionBudget would cut short is not chosen,
pods scheduled alone and late members reclaim and preempt, NonStrict gangs preempt.

Oracles: kube-scheduler's preemption rejects a lower-priority pod waiting in Permit instead of evicting it, for any
preemptor (pkg/scheduler/framework/preemption/preemption.go `prepareCandidate`: `fh.GetWaitingPod(victim.UID)` ...
`waitingPod.Reject`), and a higher-priority pod may take a lower-priority pod's nominated node
(pkg/scheduler/framework/runtime/framework.go `addGEPriorityNominatedPods`: only nominated pods of equal or
greater priority are counted in Filter); DefaultPreemption for one pod (pkg/scheduler/framework/plugins/
defaultpreemption/default_preemption.go `SelectVictimsOnNode`); Koordinator's job preemption evaluates a gang's
pending pods together whatever its mode (pkg/scheduler/plugins/coscheduling/core/preemption.go `preempt`); the
Eviction API refuses a pod whose PodDisruptionBudget's status allows no disruption (pkg/registry/core/pod/storage/
eviction.go, 429), and kube-scheduler merely prefers candidates without PDB violations
(pkg/scheduler/framework/preemption/preemption.go `pickOneNodeForPreemption`, `filterPodsWithPDBViolation`) since it
knows no gangs; here a gang evicted but for a refused member would run below its quorum.
"""

from __future__ import annotations

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.podstate import NOMINATED, RESERVED
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.topology import Domain, TopologyTree
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode, GangSpec, NetworkTopology, TopologyMode
from tests.builders import add_gang, add_nodes, add_pod

CFG = SchedulerConfig(max_units_per_cycle=8)


def gang(c: SchedulerState, name: str, n: int, min_member: int, *, priority: int, nonstrict: bool = False) -> list[str]:
    mode = GangMode.NON_STRICT if nonstrict else GangMode.STRICT
    return add_gang(c, name, n, min_member=min_member, mode=mode, gpu=8, priority=priority)


def test_a_pod_without_a_gang_takes_lower_priority_reservations_before_evicting() -> None:
    c = SchedulerState()
    add_nodes(c, 3, prefix="node", gpu=8)
    gang(c, "slow", 4, 4, priority=0, nonstrict=True)
    plan = step(c, CFG, 0.0)
    assert len(plan.reservations) == 3 and not plan.bindings
    urgent = add_pod(c, "urgent", gpu=8, priority=1000)
    plan = step(c, CFG, 1.0)
    assert [k for k, _ in plan.bindings] == [urgent]
    assert not plan.evictions
    lost = [e for e in plan.events if e.reason == "ReservationsReleased" and e.name == "slow"]
    assert lost and lost[0].message.startswith("reservations released for higher-priority pod default/urgent")
    assert any(e.reason == "Preempting" and e.name == "urgent" for e in plan.events)
    assert len(c.store.pods_in(RESERVED)) == 2  # slow reserves again what is left


def test_an_equal_priority_pod_does_not_take_reservations() -> None:
    c = SchedulerState()
    add_nodes(c, 3, prefix="node", gpu=8)
    gang(c, "slow", 4, 4, priority=5, nonstrict=True)
    step(c, CFG, 0.0)
    add_pod(c, "peer", gpu=8, priority=5)
    plan = step(c, CFG, 1.0)
    assert not plan.bindings and not plan.releases
    assert any(e.reason == "FailedScheduling" and "default/peer" in e.pod_keys for e in plan.pod_events)


def test_a_pod_takes_a_lower_priority_preemptors_nominated_node() -> None:
    """A lower-priority pod nominated on node0 (its victim gone) does not keep a higher-priority pod out."""
    c = SchedulerState()
    add_nodes(c, 1, prefix="node", gpu=8)
    low = add_pod(c, "low", node="node0", phase="Running", gpu=8, priority=0)
    mid = add_pod(c, "mid", gpu=8, priority=10)
    plan = step(c, CFG, 0.0)
    assert plan.evictions == [low] and plan.nominations == [(mid, "node0")]
    c.remove_pod(low)
    high = add_pod(c, "high", gpu=8, priority=100)
    plan = step(c, CFG, 1.0)
    assert plan.bindings == [(high, "node0")]
    assert mid in plan.nomination_clears
    lost = [e for e in plan.events if e.reason == "NominationLost" and e.name == "mid"]
    assert lost and "higher-priority pod default/high" in lost[0].message


def satisfied(c: SchedulerState, nodes: list[str], **spec: object) -> str:
    c.upsert_gang(GangSpec("default", "sat", 2, **spec))  # type: ignore[arg-type]
    c.mark_satisfied("default/sat")
    for i, node in enumerate(nodes):
        add_pod(c, f"sat-{i}", gang="default/sat", rank=i, node=node, phase="Running", gpu=8, priority=100)
    return add_pod(c, "sat-9", gang="default/sat", rank=9, gpu=8, priority=100)


def test_a_late_member_preempts_as_a_pod_alone_does() -> None:
    c = SchedulerState()
    add_nodes(c, 3, prefix="node", gpu=8)
    late = satisfied(c, ["node0", "node1"])
    cheap = add_pod(c, "cheap", node="node2", phase="Running", gpu=8, priority=0)
    plan = step(c, CFG, 0.0)
    assert plan.evictions == [cheap] and plan.nominations == [(late, "node2")]
    assert c.state_of(late) is NOMINATED
    assert any(e.reason == "Preempted" and e.message == f"Preempted by pod {late} on node node2" for e in plan.events)
    plan = step(c, CFG, 1.0)  # its victim terminates: it waits, nobody else is evicted
    assert not plan.evictions and not plan.bindings
    c.remove_pod(cheap)
    assert step(c, CFG, 2.0).bindings == [(late, "node2")]


def test_late_member_victims_are_whole_gangs() -> None:
    c = SchedulerState()
    add_nodes(c, 4, prefix="node", gpu=8)
    late = satisfied(c, ["node0", "node1"])
    c.upsert_gang(GangSpec("default", "v", 2))
    c.mark_satisfied("default/v")
    v = [add_pod(c, f"v-{i}", gang="default/v", rank=i, node=f"node{i + 2}", phase="Running", gpu=8) for i in range(2)]
    plan = step(c, CFG, 0.0)
    assert sorted(plan.evictions) == v  # not one member of v, which would leave it below its quorum
    assert [k for k, _ in plan.nominations] == [late]


def test_a_late_member_with_a_hard_topology_preempts_only_inside_the_gangs_domain() -> None:
    """Two tier-1 domains: the gang runs in u0 (node0, node1); the cheapest victim is in u1 (priority 0), but
    a hard topology (highestTierAllowed 1) lets the late member preempt only in u0 (priority 5)."""
    c = SchedulerState()
    add_nodes(c, 4, prefix="node", gpu=8)
    tree = TopologyTree.from_domains(
        [
            Domain(1, "u0", (), ("node0", "node1")),
            Domain(1, "u1", (), ("node2", "node3")),
        ]
    )
    c.set_topology(tree)
    nt = NetworkTopology(mode=TopologyMode.HARD, highest_tier_allowed=1)
    c.upsert_gang(GangSpec("default", "sat", 1, network_topology=nt))
    c.mark_satisfied("default/sat")
    add_pod(c, "sat-0", gang="default/sat", rank=0, node="node0", phase="Running", gpu=8, priority=100)
    late = add_pod(c, "sat-1", gang="default/sat", rank=1, gpu=8, priority=100)
    inside = add_pod(c, "inside", node="node1", phase="Running", gpu=8, priority=5)
    add_pod(c, "outside", node="node2", phase="Running", gpu=8, priority=0)
    add_pod(c, "outside-2", node="node3", phase="Running", gpu=8, priority=0)
    plan = step(c, CFG, 0.0)
    assert plan.evictions == [inside]
    assert plan.nominations == [(late, "node1")]


def test_a_nonstrict_gang_preempts_whole_victim_gangs_and_binds_once_they_are_gone() -> None:
    c = SchedulerState()
    add_nodes(c, 3, prefix="node", gpu=8)
    cheap = [add_pod(c, f"cheap-{i}", node=f"node{i}", phase="Running", gpu=8, priority=i) for i in range(3)]
    ns = gang(c, "ns", 2, 2, priority=1000, nonstrict=True)
    plan = step(c, CFG, 0.0)
    assert sorted(plan.evictions) == cheap[:2]  # the two lowest priorities
    assert sorted(k for k, _ in plan.nominations) == ns
    assert any(e.reason == "Preempting" and e.name == "ns" for e in plan.events)
    plan = step(c, CFG, 1.0)  # still terminating: it waits, reserving nothing and evicting nobody else
    assert not plan.evictions and not plan.bindings and not plan.reservations
    for key in cheap[:2]:
        c.remove_pod(key)
    plan = step(c, CFG, 2.0)
    assert sorted(k for k, _ in plan.bindings) == ns


def test_a_nonstrict_gang_holding_reservations_preempts_for_the_rest() -> None:
    """ns (3, minMember 3) holds node2's reservation from an earlier cycle; the rest preempt, its reservation kept."""
    c = SchedulerState()
    add_nodes(c, 3, prefix="node", gpu=8)
    ns = gang(c, "ns", 3, 3, priority=1000, nonstrict=True)
    cheap = [add_pod(c, f"cheap-{i}", node=f"node{i}", phase="Running", gpu=8, priority=1000) for i in range(2)]
    plan = step(c, CFG, 0.0)  # equal priority: nothing to preempt, it keeps what fits
    assert len(plan.reservations) == 1 and not plan.evictions
    for key in cheap:  # now they are of lower priority (a PriorityClass cannot change; re-created pods can)
        c.remove_pod(key)
    cheap = [add_pod(c, f"low-{i}", node=f"node{i}", phase="Running", gpu=8, priority=0) for i in range(2)]
    plan = step(c, CFG, 30.0)
    assert sorted(plan.evictions) == cheap
    assert sorted(k for k, _ in plan.nominations) == ns[1:]
    assert c.store.reservation_of(ns[0]) == ("node2", False) and not plan.releases
    status = plan.gang_status["default/ns"]
    assert (status.reason, status.reserved, status.pending) == ("Preempting", 1, 2)


def test_a_nonstrict_gang_without_anything_lower_keeps_what_fits() -> None:
    c = SchedulerState()
    add_nodes(c, 3, prefix="node", gpu=8)
    add_pod(c, "peer", node="node0", phase="Running", gpu=8, priority=1000)
    gang(c, "ns", 3, 3, priority=1000, nonstrict=True)
    plan = step(c, CFG, 0.0)
    assert len(plan.reservations) == 2 and not plan.evictions and not plan.nominations


def _vg_setup() -> tuple[SchedulerState, list[str]]:
    """The issue's case: vg (3 x 8 GPU, minMember 3, priority 0) runs on the 3 nodes; a budget protects vg-2 only."""
    c = SchedulerState()
    add_nodes(c, 3, prefix="node", gpu=8)
    c.upsert_gang(GangSpec("default", "vg", 3))
    c.mark_satisfied("default/vg")
    vg = [add_pod(c, f"vg-{i}", gang="default/vg", rank=i, node=f"node{i}", phase="Running", gpu=8) for i in range(3)]
    c.set_protected(vg[2], True)  # state/budgets.py: minAvailable 1 over vg-2 alone, disruptionsAllowed 0
    return c, vg


def test_a_victim_gang_with_a_protected_member_is_not_chosen_under_respect() -> None:
    c, vg = _vg_setup()
    gang(c, "high", 3, 3, priority=1000)
    plan = step(c, CFG, 0.0)
    assert not plan.evictions and not plan.nominations
    refused = [e for e in plan.events if e.reason == "PreemptionRefused" and e.name == "high"]
    assert refused and "victim gang(s) default/vg below their quorum" in refused[0].message
    c.set_protected(vg[2], False)  # the budget allows it now: high is attempted again at once (no backoff)
    plan = step(c, CFG, 0.5)
    assert sorted(plan.evictions) == vg


def test_under_prefer_the_protected_gang_is_a_last_resort() -> None:
    c, vg = _vg_setup()
    gang(c, "high", 3, 3, priority=1000)
    plan = step(c, SchedulerConfig(max_units_per_cycle=8, preemption_pdb="prefer"), 0.0)
    assert sorted(plan.evictions) == vg  # the runtime deletes vg-2 past its budget (runtime/preemption.py)


def test_a_refused_member_keeps_its_gang_from_being_taken_without_it() -> None:
    """Status raced: vg-2's eviction was refused after the choice; the preemptor never takes vg-0 and vg-1 alone."""
    c = SchedulerState()
    add_nodes(c, 3, prefix="node", gpu=8)
    c.upsert_gang(GangSpec("default", "vg", 3))
    c.mark_satisfied("default/vg")
    vg = [add_pod(c, f"vg-{i}", gang="default/vg", rank=i, node=f"node{i}", phase="Running", gpu=8) for i in range(3)]
    gang(c, "high", 2, 2, priority=1000)
    assert sorted(step(c, CFG, 0.0).evictions) == vg
    c.eviction_failed(vg[2])
    for key in vg[:2]:  # runtime/preemption.py gives the rest up (issue 22 item 2)
        c.victim_spared(key)
    for prefer in (False, True):
        cfg = SchedulerConfig(max_units_per_cycle=8, preemption_pdb="prefer" if prefer else "respect")
        plan = step(c, cfg, 100.0 + prefer)
        assert not plan.evictions, prefer


def test_each_late_member_preempts_for_itself() -> None:
    c = SchedulerState()
    add_nodes(c, 4, prefix="node", gpu=8)
    first = satisfied(c, ["node0", "node1"])
    second = add_pod(c, "sat-10", gang="default/sat", rank=10, gpu=8, priority=100)
    cheap = [add_pod(c, f"cheap-{i}", node=f"node{i + 2}", phase="Running", gpu=8, priority=i) for i in range(2)]
    plan = step(c, CFG, 0.0)
    assert sorted(plan.evictions) == cheap
    assert sorted(plan.nominations) == sorted([(first, "node2"), (second, "node3")])  # rank order, cheapest first
    assert plan.preemptions == {first: (cheap[0],), second: (cheap[1],)}
    for key in cheap:
        c.remove_pod(key)
    assert sorted(step(c, CFG, 1.0).bindings) == sorted([(first, "node2"), (second, "node3")])
