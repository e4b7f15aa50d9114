"""Reservations and nominations re-checked before binding; a deleted PodGroup releases them at once (issue 13 item 8).

Oracles:
- kubelet admission (pkg/kubelet/lifecycle/predicate.go `generalFilter`: `AdmissionCheck` for NodeResourcesFit,
  NodePorts, NodeAffinity and NodeName, then the NoExecute taints): a pod bound over a node's allocatable, onto
  a port in use or onto a node it no longer matches is rejected (`OutOfnvidia.com/gpu`); a reservation that would
  now fail these checks must not be bound. kube-scheduler's filters for the node itself: NodeUnschedulable
  (pkg/scheduler/framework/plugins/nodeunschedulable: a cordoned node takes no new pod) and TaintToleration
  (NoSchedule and NoExecute must be tolerated; PreferNoSchedule never blocks). A NotReady node is seen through the
  taint the node lifecycle controller puts on it (pkg/controller/nodelifecycle/node_lifecycle_controller.go
  `nodeConditionToTaintKeyStatusMap`: Ready=False -> node.kubernetes.io/not-ready:NoSchedule), as kube-scheduler
  itself sees it (it has no node-condition filter).
- kube-scheduler's Reserve/Unreserve (pkg/scheduler/framework/interface.go `ReservePlugin`: Unreserve undoes a
  reservation when a later step fails; schedule_one.go `handleBindingCycleError` unreserves and requeues): a
  reservation that no longer fits is given up and the pod scheduled again, never bound as decided.
- scheduler-plugins coscheduling (pkg/coscheduling/coscheduling.go `Permit`: `PodGroupNotFound` ->
  `Unschedulable, "PodGroup not found"`, the waiting pods are rejected at once, not left to time out).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gangsched.core.cycle.simulate import run_until_quiet, step
from gangsched.core.memory.plan import Plan
from gangsched.core.memory.podstate import BOUND, NOMINATED, RESERVED
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode, GangSpec
from gangsched.models.node import node_from_api
from tests.builders import add_gang, add_nodes, add_pod, node_obj

CFG = SchedulerConfig(max_units_per_cycle=1)
GPU = "nvidia.com/gpu"


def _bound_gpus(c: SchedulerState) -> dict[str, int]:
    """GPUs of the pods bound (or being bound) per node: what the kubelets would see."""
    out: dict[str, int] = defaultdict(int)
    for key, pod in c.pods.items():
        node = pod.node_name
        if node is None:
            reservation = c.reservation_of(key)
            node = reservation[0] if reservation is not None and reservation[1] else None
        if node is not None and not pod.terminal:
            out[node] += pod.requests.get(GPU, 0)
    return out


def _never_overcommitted(c: SchedulerState) -> None:
    for node, gpus in _bound_gpus(c).items():
        assert gpus <= c.nodes[node].allocatable.get(GPU, 0) if node in c.nodes else True, (node, gpus)


def _reserved_on(c: SchedulerState) -> dict[str, str]:
    out = {}
    for key in c.store.pods_in(RESERVED):
        reservation = c.reservation_of(key)
        assert reservation is not None
        out[key] = reservation[0]
    return out


def _holding(nodes: int = 2) -> tuple[SchedulerState, list[str]]:
    """A NonStrict gang of 3 x 8 GPUs (minMember 3) holds the `nodes` 8-GPU nodes n0.. and waits for room."""
    c = SchedulerState()
    add_nodes(c, nodes, gpu=8)
    keys = add_gang(c, "g", 3, mode=GangMode.NON_STRICT, wait=60.0, gpu=8)
    plan = step(c, CFG, 0.0)
    assert sorted(n for _, n in plan.reservations) == [f"n{i}" for i in range(nodes)] and not plan.bindings
    return c, keys


def _messages(plan: Plan, reason: str) -> list[str]:
    return [e.message for e in plan.events if e.reason == reason]


# --------------------------------------------------------------------------- a deleted PodGroup


def test_deleted_podgroup_releases_reservations_at_once_and_nothing_times_out() -> None:
    """The Why: a deleted PodGroup kept its reservations until the waiting time, then marked its pods timed out."""
    c, keys = _holding()
    reserved = sorted(_reserved_on(c))
    c.remove_gang("default/g")  # kubectl delete podgroup g (the pods only carry the label)
    other = add_gang(c, "other", 2, gpu=8)  # a Strict gang that needs both nodes
    plan = step(c, CFG, 0.5)  # (g backed off until 1.0: the release does not wait for it)
    assert sorted(plan.releases) == reserved
    assert sorted(k for k, _ in plan.bindings) == other  # the room went to the other gang in the same cycle
    assert _messages(plan, "ReservationsReleased") == [
        "2 reservations released: PodGroup default/g no longer exists (or is invalid)"
    ]
    waiting = {x.pod_key for x in plan.conditions if x.reason == "WaitingForPodGroup"}
    assert waiting >= set(reserved)  # the released members are told why at once, with the one that was pending
    assert c.gangs["default/g"].first_reserved is None and not c.store.pods_in(RESERVED)
    result = run_until_quiet(c, CFG, now=1.0, advance_timers=True)
    assert not any(p.timeouts for p in result.plans)  # never timed out, however long it waits
    assert not c.gangs["default/g"].timed_out and not any(c.pods[k].timed_out for k in keys)
    assert {x.reason for p in result.plans for x in p.conditions if x.pod_key in keys} <= {"WaitingForPodGroup"}


def test_deleted_podgroup_recreated_is_scheduled_afresh() -> None:
    c, keys = _holding()
    c.remove_gang("default/g")
    step(c, CFG, 0.5)
    add_nodes(c, 1, prefix="m", gpu=8)
    c.upsert_gang(GangSpec("default", "g", 3, mode=GangMode.NON_STRICT, wait_seconds=60.0))
    result = run_until_quiet(c, CFG, now=2.0)
    assert sorted(k for k, _ in result.bound) == keys


def test_a_spec_that_goes_away_while_the_waiting_time_ends_marks_nothing_timed_out() -> None:
    c, keys = _holding()
    reserved = sorted(_reserved_on(c))
    c.remove_gang("default/g")
    plan = step(c, CFG, 61.0)  # the waiting time (60 s) ended at the same time
    assert not plan.timeouts and sorted(plan.releases) == reserved
    assert not any(c.pods[k].timed_out for k in keys) and not c.gangs["default/g"].timed_out


def test_a_preemptor_whose_podgroup_is_deleted_loses_its_nominations_at_once() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    c.upsert_gang(GangSpec("default", "low", 2))
    for i in range(2):
        add_pod(c, f"low-{i}", gang="default/low", rank=i, node=f"n{i}", phase="Running", gpu=8)
    high = add_gang(c, "high", 2, gpu=8, priority=1000)
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.nominations) == high
    c.remove_gang("default/high")
    plan = step(c, CFG, 0.5)
    assert sorted(plan.nomination_clears) == high and not plan.timeouts
    assert not list(c.nominations())


# --------------------------------------------------------------------------- the node changed


NODE_CHANGES: list[Any] = [
    pytest.param({"unschedulable": True}, "node cordoned", id="cordoned"),
    pytest.param(
        {"taints": [{"key": "maintenance", "value": "now", "effect": "NoSchedule"}]},
        "node tainted maintenance=now:NoSchedule",
        id="taint-noschedule",
    ),
    pytest.param(
        {"taints": [{"key": "maintenance", "effect": "NoExecute"}]},
        "node tainted maintenance:NoExecute",
        id="taint-noexecute",
    ),
    pytest.param(
        {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]},
        "node tainted node.kubernetes.io/not-ready:NoSchedule",
        id="not-ready",
    ),
    pytest.param(None, "node deleted", id="deleted"),
]


def _change_node(c: SchedulerState, name: str, change: dict[str, Any] | None) -> None:
    if change is None:
        c.remove_node(name)
    else:
        c.upsert_node(node_from_api(node_obj(name, gpu=8, **change)))


@pytest.mark.parametrize(("change", "why"), NODE_CHANGES)
def test_a_reservation_on_a_node_that_no_longer_takes_it_moves(change: dict[str, Any] | None, why: str) -> None:
    c, keys = _holding()
    moved = next(k for k, n in _reserved_on(c).items() if n == "n0")
    _change_node(c, "n0", change)
    add_nodes(c, 1, prefix="m", gpu=8)  # room elsewhere
    plan = step(c, CFG, 0.5)  # still inside g's backoff: the move does not wait for it
    assert plan.releases == [moved]
    assert _messages(plan, "ReservationsReleased") == [f"reservation on n0 released: {why}"]
    assert sorted(_reserved_on(c).values()) == ["m0", "n1"]  # placed again in the same cycle
    c.upsert_node(node_from_api(node_obj("m1", gpu=8)))
    result = run_until_quiet(c, CFG, now=1.0)
    assert sorted(k for k, _ in result.bound) == keys
    assert "n0" not in {node for _, node in result.bound}
    assert not any(e.reason == "GangTimeout" for p in result.plans for e in p.events)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"taints": [{"key": "soft", "effect": "PreferNoSchedule"}]}, id="prefer-no-schedule"),
        pytest.param({"labels": {"kubernetes.io/hostname": "n0", "zone": "b"}}, id="labels"),
        pytest.param({"cpu": "64"}, id="allocatable-grows"),
    ],
)
def test_a_node_change_that_still_admits_the_pod_keeps_the_reservation(change: dict[str, Any]) -> None:
    c, _keys = _holding()
    before = _reserved_on(c)
    _change_node(c, "n0", change)
    plan = step(c, CFG, 0.5)
    assert not plan.releases and _reserved_on(c) == before


def test_a_tolerated_taint_keeps_the_reservation() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    tolerations = [{"key": "maintenance", "operator": "Exists"}]
    add_gang(c, "g", 3, mode=GangMode.NON_STRICT, gpu=8, spec_extra={"tolerations": tolerations})
    step(c, CFG, 0.0)
    before = _reserved_on(c)
    c.upsert_node(node_from_api(node_obj("n0", gpu=8, taints=[{"key": "maintenance", "effect": "NoSchedule"}])))
    assert not step(c, CFG, 0.5).releases and _reserved_on(c) == before


def test_a_reservation_no_longer_matching_its_node_affinity_moves() -> None:
    c = SchedulerState()
    for name in ("n0", "n1", "n2"):
        c.upsert_node(node_from_api(node_obj(name, gpu=8, labels={"pool": "train"})))
    selector = {"nodeSelector": {"pool": "train"}}
    add_gang(c, "g", 4, mode=GangMode.NON_STRICT, gpu=8, spec_extra=selector)
    step(c, CFG, 0.0)
    c.upsert_node(node_from_api(node_obj("n0", gpu=8, labels={"pool": "infer"})))  # relabelled
    plan = step(c, CFG, 0.5)
    assert _messages(plan, "ReservationsReleased") == ["reservation on n0 released: node selector no longer matches"]


# --------------------------------------------------------------------------- pods bound by others since


def test_another_schedulers_pod_bound_on_a_reserved_node_moves_the_reservation() -> None:
    """The Why: another scheduler's pod bound onto a reserved node led to 16 GPUs bound on an 8-GPU node."""
    c, keys = _holding()
    moved = next(k for k, n in _reserved_on(c).items() if n == "n0")
    add_pod(c, "intruder", ours=False, node="n0", phase="Running", gpu=8)  # kubectl run with spec.nodeName
    plan = step(c, CFG, 0.5)
    assert plan.releases == [moved]
    assert _messages(plan, "ReservationsReleased") == [
        "reservation on n0 released: insufficient nvidia.com/gpu (pods bound since)"
    ]
    add_nodes(c, 2, prefix="m", gpu=8)
    result = run_until_quiet(c, CFG, now=1.0)
    assert sorted(k for k, _ in result.bound) == keys and "n0" not in {n for _, n in result.bound}
    _never_overcommitted(c)


def test_only_the_reservations_that_no_longer_fit_move() -> None:
    """Two 4-GPU reservations on an 8-GPU node, another scheduler binds 4 GPUs there: one of them moves."""
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    keys = add_gang(c, "g", 5, mode=GangMode.NON_STRICT, gpu=4)
    step(c, CFG, 0.0)
    on_n0 = sorted(k for k, n in _reserved_on(c).items() if n == "n0")
    assert len(on_n0) == 2
    add_pod(c, "intruder", ours=False, node="n0", phase="Running", gpu=4)
    plan = step(c, CFG, 0.5)
    assert plan.releases == [on_n0[-1]]  # the last in rank order goes; the first stays
    assert on_n0[0] in _reserved_on(c)
    add_nodes(c, 1, prefix="m", gpu=8)
    result = run_until_quiet(c, CFG, now=1.0)
    assert sorted(k for k, _ in result.bound) == keys
    _never_overcommitted(c)


def test_a_host_port_taken_by_another_pod_moves_the_reservation() -> None:
    ports = {"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}
    c = SchedulerState()
    add_nodes(c, 2)
    add_gang(c, "g", 3, mode=GangMode.NON_STRICT, spec_extra=ports)
    step(c, CFG, 0.0)
    assert sorted(_reserved_on(c).values()) == ["n0", "n1"]
    add_pod(c, "web", ours=False, node="n0", phase="Running", spec_extra=ports)
    plan = step(c, CFG, 0.5)
    assert _messages(plan, "ReservationsReleased") == ["reservation on n0 released: host port 8080/TCP in use"]
    assert sorted(_reserved_on(c).values()) == ["n1"]


def test_a_gang_group_never_binds_a_reservation_that_no_longer_fits() -> None:
    """Strict gang a reached its quorum and waits (reserved) for its partner b; a's node gets another
    scheduler's pod; when b can go, the group binds without over-committing that node."""
    c = SchedulerState()
    add_nodes(c, 3, gpu=8)
    group = ("default/a", "default/b")
    a = add_gang(c, "a", 2, group=group, gpu=8)
    b = add_gang(c, "b", 2, group=group, gpu=8)
    CFG8 = SchedulerConfig(max_units_per_cycle=8)
    step(c, CFG8, 0.0)
    assert len(_reserved_on(c)) == 2  # one gang holds two nodes, the other does not fit
    reserved = _reserved_on(c)
    node = next(iter(reserved.values()))
    add_pod(c, "intruder", ours=False, node=node, phase="Running", gpu=8)
    add_nodes(c, 2, prefix="m", gpu=8)
    result = run_until_quiet(c, CFG8, now=5.0)
    assert sorted(k for k, _ in result.bound) == sorted(a + b)
    assert node not in {n for _, n in result.bound}
    _never_overcommitted(c)


# --------------------------------------------------------------------------- nominations


def _nominated() -> tuple[SchedulerState, list[str]]:
    """Gang high (2 x 8 GPUs) preempts gang low from n0 and n1 and is nominated there; n2 is busy."""
    c = SchedulerState()
    add_nodes(c, 3, gpu=8)
    c.upsert_gang(GangSpec("default", "low", 2))
    for i in range(2):
        add_pod(c, f"low-{i}", gang="default/low", rank=i, node=f"n{i}", phase="Running", gpu=8)
    add_pod(c, "busy", ours=False, node="n2", phase="Running", gpu=8, priority=5000)
    high = add_gang(c, "high", 2, gpu=8, priority=1000)
    plan = step(c, CFG, 0.0)
    assert sorted(n for _, n in plan.nominations) == ["n0", "n1"]
    return c, high


@pytest.mark.parametrize(("change", "why"), [NODE_CHANGES[0], NODE_CHANGES[-1]])
def test_a_nomination_on_a_node_that_no_longer_takes_it_is_released(change: dict[str, Any] | None, why: str) -> None:
    c, high = _nominated()
    _change_node(c, "n0", change)
    plan = step(c, CFG, 0.5)
    assert sorted(plan.nomination_clears) == high  # the gang's nominations go together: it chooses again
    assert _messages(plan, "NominationLost") == [f"nomination on n0 released: {why}; it will choose again"]
    assert not c.store.pods_in(NOMINATED) or all(node != "n0" for _, node in c.nominations())


def test_nothing_changed_releases_nothing() -> None:
    c, _ = _holding()
    before = _reserved_on(c)
    plan = step(c, CFG, 0.5)
    assert not plan.releases and not plan.events and _reserved_on(c) == before
    c2, _high = _nominated()
    assert not step(c2, CFG, 0.5).nomination_clears


def test_bound_pods_are_never_touched() -> None:
    """Bound pods are the kubelet's business (NoExecute evicts them there): only reservations move."""
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    keys = add_gang(c, "g", 2, gpu=8)
    step(c, CFG, 0.0)
    for key in keys:
        c.upsert_pod(replace(c.pods[key], node_name=c.assumed[key][0], phase="Running"))
    c.upsert_node(node_from_api(node_obj("n0", gpu=8, unschedulable=True)))
    plan = step(c, CFG, 0.5)
    assert plan.empty and all(c.state_of(k) is BOUND for k in keys)


# ------------------------------------------------------------- property: the cluster moves under reservations

_disturbances = st.lists(
    st.tuples(
        st.sampled_from(["intruder", "cordon", "uncordon", "taint", "delete-node", "add-node", "delete-podgroup"]),
        st.integers(0, 5),  # which node (or gang)
        st.integers(1, 8),  # the intruder's GPUs
    ),
    max_size=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.integers(1, 5),
    gang_list=st.lists(
        st.tuples(st.integers(1, 5), st.integers(1, 5), st.booleans(), st.integers(1, 8)), min_size=1, max_size=4
    ),
    disturbances=_disturbances,
)
@example(nodes=2, gang_list=[(3, 3, True, 8)], disturbances=[("intruder", 0, 8), ("add-node", 0, 1)])
@example(nodes=2, gang_list=[(3, 3, True, 8)], disturbances=[("cordon", 0, 1), ("add-node", 0, 1)])
@example(nodes=2, gang_list=[(3, 3, True, 8)], disturbances=[("delete-podgroup", 0, 1), ("add-node", 0, 1)])
def test_whatever_moves_no_binding_over_commits_a_node_or_lands_where_it_may_not(
    nodes: int, gang_list: list[tuple[int, int, bool, int]], disturbances: list[tuple[str, int, int]]
) -> None:
    """Other schedulers bind pods where our reservations are (each intruder fits what is *bound* on its node, as
    another scheduler that cannot see our reservations would decide), nodes are cordoned, tainted, deleted and
    added, PodGroups deleted: no binding of ours ever lands on a node that is gone, cordoned or tainted, or
    over-commits a node, and no gang ever times out for want of a PodGroup."""
    c = SchedulerState()
    add_nodes(c, nodes, gpu=8)
    for g, (size, minimum, nonstrict, gpu) in enumerate(gang_list):
        mode = GangMode.NON_STRICT if nonstrict else GangMode.STRICT
        add_gang(c, f"g{g}", size, min_member=min(minimum, size), mode=mode, wait=30.0, gpu=gpu)
    config = SchedulerConfig(max_units_per_cycle=3)
    steps = iter(disturbances)
    now, added, specless = 0.0, 0, set()
    for _ in range(30):
        plan = step(c, config, now)
        for key, node in plan.bindings:
            rec = c.nodes.get(node)
            assert rec is not None and not rec.unschedulable and not rec.taints, (key, node)
        assert not any(t.gang_key in specless for t in plan.timeouts)
        for node, gpus in _bound_gpus(c).items():
            assert node not in c.nodes or gpus <= 8, (node, gpus)
        what, index, gpus = next(steps, ("", 0, 0))
        names = sorted(c.nodes)
        target = names[index % len(names)] if names else None
        if what == "intruder" and target is not None and _bound_gpus(c).get(target, 0) + gpus <= 8:
            add_pod(c, f"x{now:g}", ours=False, node=target, phase="Running", gpu=gpus)
        elif what in ("cordon", "uncordon", "taint") and target is not None:
            taints = [{"key": "t", "effect": "NoSchedule"}] if what == "taint" else []
            c.upsert_node(node_from_api(node_obj(target, gpu=8, unschedulable=what == "cordon", taints=taints)))
        elif what == "delete-node" and target is not None and not _bound_gpus(c).get(target):
            c.remove_node(target)  # (a node with bound pods: their deletion is the node controller's business)
        elif what == "add-node":
            added += 1
            c.upsert_node(node_from_api(node_obj(f"new{added}", gpu=8)))
        elif what == "delete-podgroup" and gang_list:
            key = f"default/g{index % len(gang_list)}"
            if c.gangs.get(key) is not None and not c.gangs[key].satisfied:
                c.remove_gang(key)
                specless.add(key)
        now += 1.0 if plan.next_wakeup is None else max(plan.next_wakeup - now, 0.5)
