"""Gang rules of schedule(): pods alone, missing PodGroups, quorum and minResources, Strict and NonStrict waiting,
timeouts, gang groups, roles, queue order, bind failures, scores and topology tiers; table-driven where the shape
allows (the scenarios of issue 3)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gangsched.core.cycle.scheduler import schedule
from gangsched.core.cycle.simulate import run_until_quiet, step
from gangsched.core.memory.plan import Plan
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.topology import Domain, TopologyTree
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode, GangSpec, NetworkTopology, TopologyMode
from gangsched.core.values.units import UnitKey
from gangsched.models.node import node_from_api
from tests.builders import add_gang, add_nodes, add_pod, node_obj, pod_obj, pod_record

CFG = SchedulerConfig(max_units_per_cycle=1)


def _gpu_used(c: SchedulerState) -> int:
    return sum(u.get("nvidia.com/gpu", 0) for u in c.used.values())


def test_pod_without_gang_schedules_alone() -> None:
    c = SchedulerState()
    add_nodes(c, 2)
    key = add_pod(c, "solo", cpu="4")
    plan = step(c, CFG, 0.0)
    assert [k for k, _ in plan.bindings] == [key]
    assert c.pods[key].node_name is not None
    assert sum(u["cpu"] for u in c.used.values()) == 4000


def test_missing_podgroup_waits_then_schedules() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    keys = add_gang(c, "g", 2, spec=False, gpu=1)
    plan = step(c, CFG, 0.0)
    assert not plan.bindings and not plan.reservations
    assert {(x.pod_key, x.reason) for x in plan.conditions} == {(k, "WaitingForPodGroup") for k in keys}
    assert step(c, CFG, 1.0).empty  # reported once, not every cycle
    c.upsert_gang(GangSpec("default", "g", 2))
    assert sorted(k for k, _ in step(c, CFG, 2.0).bindings) == keys


def test_fewer_pods_than_min_member_waits_and_reserves_nothing() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    (first,) = add_gang(c, "g", 1, min_member=2, gpu=1)
    plan = step(c, CFG, 0.0)
    assert not plan.bindings and not plan.reservations and not c.used
    assert plan.gang_status["default/g"].reason == "WaitingForPods"
    second = add_pod(c, "g-1", gang="default/g", rank=1, gpu=1)
    assert sorted(k for k, _ in step(c, CFG, 1.0).bindings) == [first, second]


def test_min_resources_larger_than_free_cluster_fails_fast() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    c.upsert_gang(GangSpec("default", "g", 1, min_resources=(("nvidia.com/gpu", 32),)))
    add_pod(c, "g-0", gang="default/g", gpu=1)
    plan = step(c, CFG, 0.0)
    assert not plan.bindings and not plan.reservations
    assert plan.unit_backoffs[UnitKey.gang("default/g")].until == 1.0
    (event,) = plan.events  # the PodGroup's; the pod's:
    assert event.type == "Warning" and "minResources {nvidia.com/gpu: 32}" in event.message
    assert "nvidia.com/gpu: 16" in event.message
    (member,) = plan.pod_events
    assert (member.pod_keys, member.reason, member.message) == (("default/g-0",), "FailedScheduling", event.message)


def test_quorum_counts_already_bound_members() -> None:
    c = SchedulerState()
    nodes = add_nodes(c, 3, gpu=8)
    c.upsert_gang(GangSpec("default", "g", 3))
    add_pod(c, "g-0", gang="default/g", gpu=8, node=nodes[0], phase="Running")
    add_pod(c, "g-1", gang="default/g", gpu=8, node=nodes[1], phase="Running")
    late = add_pod(c, "g-2", gang="default/g", gpu=8)
    plan = step(c, CFG, 0.0)
    assert plan.bindings == [(late, nodes[2])]
    assert plan.gang_status["default/g"].reason == "Binding"  # Scheduled once the binds succeeded
    assert plan.gang_status["default/g"].scheduled == 3


@pytest.mark.parametrize(
    ("mode", "reserved", "why"),
    [
        pytest.param(
            GangMode.STRICT, 0, "5 nodes fit; 5 more pods blocked by: no more nodes", id="strict-releases-all"
        ),
        pytest.param(
            GangMode.NON_STRICT,
            5,
            "0 nodes fit; 5 more pods blocked by: insufficient nvidia.com/gpu (5 nodes)",
            id="nonstrict-keeps",
        ),
    ],
)
def test_member_six_of_ten_does_not_fit(mode: GangMode, reserved: int, why: str) -> None:
    c = SchedulerState()
    add_nodes(c, 5, gpu=8)
    add_gang(c, "g", 10, mode=mode, gpu=8)
    plan = step(c, CFG, 0.0)
    assert not plan.bindings
    assert len(plan.reservations) == reserved
    assert _gpu_used(c) == 8 * reserved
    assert plan.unit_backoffs[UnitKey.gang("default/g")].attempts == 1
    status = plan.gang_status["default/g"]
    assert (status.reserved, status.reason) == (reserved, "Unschedulable")
    assert "needs 10 pods x {cpu: 1, nvidia.com/gpu: 8}" in status.message
    assert why in status.message
    # backed off: nothing happens before the backoff ends, and the next failure doubles it
    assert schedule(c, 0.5, CFG).unit_backoffs == {}
    again = step(c, CFG, 1.0)
    assert again.unit_backoffs[UnitKey.gang("default/g")].until == 3.0


def test_nonstrict_completes_when_capacity_arrives() -> None:
    c = SchedulerState()
    add_nodes(c, 5, gpu=8)
    keys = add_gang(c, "g", 10, mode=GangMode.NON_STRICT, gpu=8)
    step(c, CFG, 0.0)
    add_nodes(c, 5, prefix="m", gpu=8)
    plan = step(c, CFG, 2.0)
    assert sorted(k for k, _ in plan.bindings) == sorted(keys)  # the 5 reserved ones and 5 new ones
    assert _gpu_used(c) == 80


def test_timeout_releases_and_marks() -> None:
    c = SchedulerState()
    add_nodes(c, 5, gpu=8)
    keys = add_gang(c, "g", 10, mode=GangMode.NON_STRICT, wait=30.0, gpu=8)
    first = step(c, CFG, 0.0)
    assert first.next_wakeup == 1.0  # the backoff ends before the waiting time
    assert _gpu_used(c) == 40
    plan = step(c, CFG, 30.0)
    assert sorted(plan.releases) == sorted(k for k, _ in first.reservations)
    (timeout,) = plan.timeouts
    assert timeout.gang_key == "default/g" and sorted(timeout.pods) == sorted(keys)
    assert plan.gang_status["default/g"].reason == "GangTimeout"
    assert any(e.reason == "GangTimeout" and e.kind == "PodGroup" for e in plan.events)
    assert _gpu_used(c) == 0
    add_nodes(c, 5, prefix="m", gpu=8)
    assert run_until_quiet(c, CFG, now=100.0).bound == []  # a timed-out gang is never retried


def test_gang_group_binds_only_when_every_gang_is_satisfied() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    group = ("default/a", "default/b")
    a = add_gang(c, "a", 2, group=group, created=1.0, gpu=8)
    b = add_gang(c, "b", 2, group=group, created=2.0, gpu=8)
    plan = step(c, CFG, 0.0)  # a fits and reserves, waiting for b
    assert not plan.bindings and sorted(k for k, _ in plan.reservations) == a
    assert plan.gang_status["default/a"].reason == "WaitingForGangGroup"
    plan = step(c, CFG, 0.0)  # b does not fit: nothing binds
    assert not plan.bindings and not plan.reservations
    assert all(c.pods[k].node_name is None for k in a + b)
    add_nodes(c, 2, prefix="m", gpu=8)
    plan = step(c, CFG, 5.0)
    assert sorted(k for k, _ in plan.bindings) == sorted(a + b)
    assert set(plan.satisfied) == {"default/a", "default/b"}


def test_satisfied_gang_replacement_schedules_alone() -> None:
    c = SchedulerState()
    nodes = add_nodes(c, 4, gpu=8)
    keys = add_gang(c, "g", 4, gpu=8)
    run_until_quiet(c, CFG)
    assert all(c.pods[k].node_name for k in keys)
    c.remove_pod(keys[0])  # a member dies; its replacement comes alone, below minMember
    repl = add_pod(c, "g-new", gang="default/g", gpu=8)
    plan = step(c, CFG, 1.0)
    assert [k for k, _ in plan.bindings] == [repl]
    assert plan.bindings[0][1] in nodes


def test_restart_believes_status_only_when_the_pods_show_it() -> None:
    """Issue 13 item 5: a PodGroup status saying Scheduled is no proof; the bound members are
    (tests/unit/core/gang/test_gang_incarnations.py has the full table)."""
    c = SchedulerState()
    add_nodes(c, 1, gpu=8)
    c.upsert_gang(GangSpec("default", "g", 4))
    c.mark_satisfied("default/g")
    add_pod(c, "g-9", gang="default/g", gpu=1)
    assert not c.gangs["default/g"].satisfied
    assert not step(c, CFG, 0.0).bindings


def test_queue_order_priority_creation_and_backoff() -> None:
    c = SchedulerState()
    add_nodes(c, 1, gpu=8)
    add_gang(c, "big", 2, gpu=8, priority=100, created=1.0)  # never fits: 16 GPUs
    add_gang(c, "low", 1, gpu=1, priority=0, created=0.0)
    add_gang(c, "old", 1, gpu=1, priority=10, created=2.0)
    add_gang(c, "new", 1, gpu=1, priority=10, created=3.0)
    order = []
    for now in (10.0, 10.1, 10.2, 10.3):
        plan = step(c, CFG, now)
        order.append(next((u.key for u in plan.unit_backoffs), None) or plan.bindings[0][0])
    assert order == ["default/big", "default/old-0", "default/new-0", "default/low-0"]
    # the failed gang is re-sorted by its failure time: a younger gang of its priority goes first
    add_gang(c, "young", 1, gpu=1, priority=100, created=5.0)  # younger than big, older than its failure
    plan = step(c, CFG, 12.0)
    assert plan.bindings == [("default/young-0", "n0")]


def test_roles_each_need_their_minimum() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    c.upsert_gang(GangSpec("default", "job", 3, roles=(("ps", 1), ("worker", 2))))
    w = [add_pod(c, f"w{i}", gang="default/job", role="worker", gpu=1) for i in range(3)]
    plan = step(c, CFG, 0.0)
    assert not plan.bindings and plan.gang_status["default/job"].message.startswith("role ps: 0 of 1")
    ps = add_pod(c, "ps", gang="default/job", role="ps", cpu="1")
    assert sorted(k for k, _ in step(c, CFG, 1.0).bindings) == sorted([*w, ps])


def test_event_names_what_blocks_the_gang() -> None:
    c = SchedulerState()
    add_nodes(c, 5, gpu=8)
    add_nodes(c, 3, prefix="busy", gpu=4)
    for i in range(2):
        c.upsert_node(
            node_from_api(
                node_obj(f"infer{i}", gpu=8, taints=[{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}])
            )
        )
    add_gang(c, "g", 8, gpu=8, cpu=None)
    plan = step(c, CFG, 0.0)
    (event,) = plan.events
    assert event.message.endswith(
        "needs 8 pods x {nvidia.com/gpu: 8}; 5 nodes fit; 3 more pods blocked by: "
        "insufficient nvidia.com/gpu (3 nodes), taint dedicated=infer (2 nodes)"
    )
    # every member, not only the first, gets a FailedScheduling with the gang's message (kube-scheduler records one
    # per pod and attempt: pkg/scheduler/schedule_one.go handleSchedulingFailure)
    (members,) = plan.pod_events  # one entry for the attempt, its message built once, written to each member
    assert (members.type, members.reason, members.message) == ("Warning", "FailedScheduling", event.message)
    assert sorted(members.pod_keys) == [f"default/g-{i}" for i in range(8)]


def test_bind_failure_requeues_the_member_alone() -> None:
    c = SchedulerState()
    add_nodes(c, 3, gpu=8)
    keys = add_gang(c, "g", 2, gpu=8)
    plan = schedule(c, 0.0, CFG)
    c.apply(plan)
    assert _gpu_used(c) == 16  # bindings in flight are charged ...
    again = schedule(c, 0.0, CFG)
    assert not again.bindings  # ... and not handed out twice
    c.bind_succeeded(keys[0])
    c.bind_failed(keys[1])
    assert _gpu_used(c) == 8
    retry = step(c, CFG, 0.0)
    assert [k for k, _ in retry.bindings] == [keys[1]]


def test_bound_event_replaces_reservation_without_double_count() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    keys = add_gang(c, "g", 2, mode=GangMode.NON_STRICT, min_member=3, gpu=4)
    add_pod(c, "g-2", gang="default/g", gpu=4, node="n1", phase="Running")  # an already bound member
    plan = schedule(c, 0.0, CFG)
    c.apply(plan)
    assert _gpu_used(c) == 12 and len(list(c.bindings_in_flight())) == 2
    for key, node in plan.bindings:  # the watch shows the pods bound
        c.upsert_pod(replace(c.pods[key], node_name=node, phase="Running"))
    assert _gpu_used(c) == 12 and not list(c.bindings_in_flight())
    c.upsert_pod(replace(c.pods[keys[0]], phase="Succeeded"))
    assert _gpu_used(c) == 8
    c.remove_pod(keys[1])
    assert _gpu_used(c) == 4


@pytest.mark.parametrize(
    ("strategy", "per_node"),
    [pytest.param("binpack", [4, 0, 0, 0], id="binpack"), pytest.param("spread", [1, 1, 1, 1], id="spread")],
)
def test_score_strategy(strategy: str, per_node: list[int]) -> None:
    c = SchedulerState()
    nodes = add_nodes(c, 4, gpu=8)
    add_gang(c, "g", 4, gpu=2)
    plan = step(c, SchedulerConfig(score_strategy=strategy), 0.0)
    counts = sorted((sum(1 for _, n in plan.bindings if n == node) for node in nodes), reverse=True)
    assert counts == sorted(per_node, reverse=True)


def test_preferred_affinity_wins_over_binpack() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    c.upsert_node(node_from_api(node_obj("fast", gpu=8, labels={"speed": "fast"})))
    pref = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 50,
                    "preference": {"matchExpressions": [{"key": "speed", "operator": "In", "values": ["fast"]}]},
                }
            ]
        }
    }
    add_pod(c, "busy", gpu=4)  # makes n0 the binpack favourite
    step(c, CFG, 0.0)
    add_pod(c, "p", gpu=1, spec_extra={"affinity": pref})
    assert step(c, CFG, 1.0).bindings == [("default/p", "fast")]


def test_topology_gang_reports_tier() -> None:
    c = SchedulerState()
    add_nodes(c, 4, gpu=8)
    tree = TopologyTree.from_domains(
        [
            Domain(1, "tor-a", parents=("spine",), children=("n0", "n1")),
            Domain(1, "tor-b", parents=("spine",), children=("n2", "n3")),
            Domain(2, "spine"),
        ]
    )
    c.set_topology(tree)
    add_pod(c, "blocker", gpu=8, node="n0", phase="Running")
    c.upsert_gang(GangSpec("default", "g", 2, network_topology=NetworkTopology(TopologyMode.HARD, 1)))
    keys = [add_pod(c, f"g-{i}", gang="default/g", rank=i, gpu=8) for i in range(2)]
    plan = step(c, CFG, 0.0)
    assert sorted(plan.bindings) == sorted(zip(keys, ["n2", "n3"], strict=True))
    assert plan.gang_status["default/g"].tier == 1


def test_many_units_per_cycle_are_separate_transactions() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    a = add_gang(c, "a", 2, gpu=8, created=1.0)
    add_gang(c, "b", 2, gpu=8, created=2.0)  # cannot fit once a is placed
    plan: Plan = step(c, SchedulerConfig(max_units_per_cycle=10), 0.0)
    assert sorted(k for k, _ in plan.bindings) == a
    assert UnitKey.gang("default/b") in plan.unit_backoffs and _gpu_used(c) == 16


def test_every_attempt_records_failed_scheduling_on_each_member_and_conditions_only_where_missing() -> None:
    """kube-scheduler's handleSchedulingFailure (pkg/scheduler/schedule_one.go) records FailedScheduling on the pod
    at every failed attempt (the event recorder aggregates the repeats) and, through updatePod, patches the
    PodScheduled condition only when it differs from the pod's: so a member re-created while the message stays the
    same gets the condition, the others are not written again."""
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    add_gang(c, "g", 3, gpu=16)
    first = step(c, CFG, 0.0)
    assert sorted(p.pod_key for p in first.conditions) == ["default/g-0", "default/g-1", "default/g-2"]
    assert {p.reason for p in first.conditions} == {"Unschedulable"}
    assert [e.kind for e in first.events] == ["PodGroup"]
    again = step(c, CFG, 1.0)  # the backoff (1 s) is over: a second attempt, the same message
    assert not again.conditions and not again.events  # the PodGroup's event: only when the message changes
    (failed,) = again.pod_events
    assert sorted(failed.pod_keys) == ["default/g-0", "default/g-1", "default/g-2"]
    assert failed.reason == "FailedScheduling" and failed.message == first.conditions[0].message
    c.remove_pod("default/g-1")  # its controller re-creates it: same name, another UID
    obj = pod_obj("g-1", gpu=16)
    obj["metadata"]["uid"] = "uid-g-1-again"
    c.upsert_pod(pod_record(obj, c, gang="default/g", ours=True))
    third = step(c, CFG, 3.0).conditions  # (the second backoff, 2 s, is over)
    assert [p.pod_key for p in third] == ["default/g-1"]


def test_nonstrict_members_held_in_memory_say_they_wait_for_their_gang() -> None:
    """Every waiting member says why: the members a NonStrict gang holds get the gang's message with reason
    WaitingForGang (they found a node: no FailedScheduling for them), the one that found none Unschedulable."""
    c = SchedulerState()
    add_nodes(c, 3, gpu=8)
    add_gang(c, "g", 4, gpu=8, mode=GangMode.NON_STRICT)
    plan = step(c, CFG, 0.0)
    assert len(plan.reservations) == 3 and not plan.bindings
    reasons = {cond.pod_key: cond.reason for cond in plan.conditions}
    (unplaced,) = [key for key, reason in reasons.items() if reason == "Unschedulable"]
    assert sorted(reasons) == [f"default/g-{i}" for i in range(4)]
    assert sorted(key for key, reason in reasons.items() if reason == "WaitingForGang") == sorted(
        key for key, _node in plan.reservations
    )
    assert len({cond.message for cond in plan.conditions}) == 1  # one message, "holding 3 of minMember 4: ..."
    assert plan.conditions[0].message.startswith("holding 3 of minMember 4")
    (failed,) = plan.pod_events
    assert failed.pod_keys == (unplaced,)
