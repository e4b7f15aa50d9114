"""Restart safety and cache consistency in the core and the cache (issue 4 item 6, issue 6 item 3).

- Assumed pods: a stale watch event (generated before our binding, delivered after the binder's answer) never
  makes a bound pod pending again; explicit event orders, in the Cluster and through the ClusterCache.
- A new leader restores nominations and their terminating victims from the API (pods' status and
  deletionTimestamp): it holds the nominated nodes, evicts nobody else, and binds there once the victims go.
- Leaving pods (deletionTimestamp set) are never chosen as victims.
- A NonStrict gang's waiting time restarts from its PodGroup's scheduleStartTime, not from the restart.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from gangsched.core.cycle.scheduler import schedule
from gangsched.core.cycle.simulate import step
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangspec import GangMode, GangSpec
from gangsched.models.node import node_from_api
from gangsched.state.cache import ClusterCache
from tests.builders import add_gang, add_nodes, add_pod, node_obj

CFG = SchedulerConfig(max_units_per_cycle=10)
HIGH = 1000


def _pending(c: SchedulerState) -> set[str]:
    return {k for gs in c.gangs.values() for k in gs.pending} | set(c.queue.alone_pending())


def _gpu(c: SchedulerState) -> int:
    return sum(u.get("nvidia.com/gpu", 0) for u in c.used.values())


# --------------------------------------------------------------------------- assumed pods (stale events)


def _bound_alone(c: SchedulerState) -> tuple[str, str]:
    """One pod without a gang, scheduled and bound by us (bind_succeeded): (key, node)."""
    add_nodes(c, 1, gpu=8)
    key = add_pod(c, "p", gpu=8)
    plan = schedule(c, 0.0, CFG)
    c.apply(plan)
    ((bkey, node),) = plan.bindings
    assert bkey == key
    c.bind_succeeded(key)
    return key, node


def _version(c: SchedulerState, key: str, *, node: str | None, uid: str | None = None, phase: str = "Pending") -> None:
    pod = c.pods[key]
    c.upsert_pod(dataclasses.replace(pod, node_name=node, uid=uid or pod.uid, phase=phase))


@pytest.mark.parametrize(
    ("events", "pending", "node_kept", "assumed"),
    [
        pytest.param([("stale", None)], False, True, True, id="stale-event-keeps-it-bound"),
        pytest.param([("stale", None), ("stale", None)], False, True, True, id="two-stale-events"),
        pytest.param(
            [("bound", None), ("stale-after-confirm", None)],
            True,
            False,
            False,
            id="confirmed-then-unbound-is-believed",
        ),
        pytest.param([("stale", None), ("bound", None)], False, True, False, id="stale-then-confirmed"),
        pytest.param([("recreated", "uid-other")], True, False, False, id="same-name-other-uid-is-a-new-pod"),
        pytest.param([("failed", None)], False, False, False, id="terminal-ends-the-assumption"),
    ],
)
def test_stale_events_after_our_binding(
    events: list[tuple[str, str | None]], pending: bool, node_kept: bool, assumed: bool
) -> None:
    c = SchedulerState()
    key, node = _bound_alone(c)
    for what, uid in events:
        if what in ("stale", "stale-after-confirm"):
            _version(c, key, node=None)
        elif what == "bound":
            _version(c, key, node=node)
        elif what == "recreated":
            _version(c, key, node=None, uid=uid)
        elif what == "failed":
            _version(c, key, node=None, phase="Failed")
    assert (key in _pending(c)) == pending
    assert (c.pods[key].node_name == node) == node_kept
    assert (key in c.assumed) == assumed
    assert _gpu(c) == (8 if node_kept else 0)  # charged once, or not at all
    if not pending:
        assert schedule(c, 1.0, CFG).bindings == []  # never placed a second time


def test_deleting_an_assumed_pod_forgets_it() -> None:
    c = SchedulerState()
    key, _ = _bound_alone(c)
    c.remove_pod(key)
    assert key not in c.assumed and _gpu(c) == 0


def _raw(uid: str = "u-1", rv: str = "5", node: str | None = None, **status: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "gangsched",
        "priority": 0,
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}],
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p0",
            "namespace": "ns",
            "uid": uid,
            "resourceVersion": rv,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": spec,
        "status": {"phase": "Pending", **status},
    }


def test_cache_event_order_binding_answer_before_an_older_status_event() -> None:
    """Order seen by the operator: ADDED (rv 5); our decision; the binder's 201; MODIFIED rv 6 (a condition
    written before the binding, so no nodeName); MODIFIED rv 7 (bound)."""
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_node(None, node_obj("n0"))
    cache.on_pod_event("ADDED", _raw())
    plan = schedule(cache.cluster, 0.0, CFG)
    cache.cluster.apply(plan)
    assert plan.bindings == [("ns/p0", "n0")]
    cache.cluster.bind_succeeded("ns/p0")
    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    cache.on_pod_event("MODIFIED", _raw(rv="6", conditions=[cond]))
    assert cache.cluster.pods["ns/p0"].node_name == "n0"
    assert "ns/p0" not in _pending(cache.cluster)
    assert schedule(cache.cluster, 1.0, CFG).bindings == []
    cache.on_pod_event("MODIFIED", _raw(rv="7", node="n0", conditions=[cond]))
    assert cache.cluster.pods["ns/p0"].node_name == "n0"
    assert cache.cluster.assumed == {}  # confirmed (through the quick path: the record did not change)
    cache.on_pod_event("DELETED", _raw(rv="8", node="n0"))
    assert "ns/p0" not in cache.cluster.pods and cache.cluster.used == {}


def test_cache_recreated_pod_of_the_same_name_is_pending_again() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    cache.on_node(None, node_obj("n0"))
    cache.on_pod_event("ADDED", _raw())
    plan = schedule(cache.cluster, 0.0, CFG)
    cache.cluster.apply(plan)
    cache.cluster.bind_succeeded("ns/p0")
    cache.on_pod_event("ADDED", _raw(uid="u-2", rv="9"))  # deleted and recreated while the watch lagged
    assert cache.cluster.pods["ns/p0"].node_name is None and "ns/p0" in _pending(cache.cluster)


@pytest.mark.parametrize(
    ("deleting", "leaving"),
    [pytest.param(True, True, id="deletionTimestamp-set"), pytest.param(False, False, id="no-deletionTimestamp")],
)
def test_cache_marks_leaving_pods(deleting: bool, leaving: bool) -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    obj = _raw(node="n0")
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    cache.on_pod_event("ADDED", obj)  # first seen already terminating (a new leader's list)
    assert ("ns/p0" in cache.cluster.leaving) == leaving
    later = copy.deepcopy(obj)
    later["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    later["metadata"]["resourceVersion"] = "6"
    cache.on_pod_event("MODIFIED", later)  # (the quick path: only metadata moved)
    assert "ns/p0" in cache.cluster.leaving
    cache.on_pod_event("DELETED", later)
    assert cache.cluster.leaving == set()


def test_cache_keeps_schedule_start_time() -> None:
    cache = ClusterCache(scheduler_name="gangsched")
    pg: dict[str, Any] = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": "g",
            "namespace": "ns",
            "uid": "pg-1",
            "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"minMember": 2},
        "status": {"phase": "Scheduling", "scheduleStartTime": "2026-01-01T00:00:10Z"},
    }
    cache.on_podgroup(None, pg)
    info = cache.podgroup("ns/g")
    assert info is not None and info.schedule_start_iso == "2026-01-01T00:00:10Z"
    first = info.schedule_start
    assert first is not None
    pg["status"]["scheduleStartTime"] = "2026-01-01T00:00:20Z"  # a status-only update (same generation)
    cache.on_podgroup("MODIFIED", pg)
    info = cache.podgroup("ns/g")
    assert info is not None and info.schedule_start == first + 10


# --------------------------------------------------------------------------- restored nominations


def _satisfied_by_its_pods(c: SchedulerState, gang: str, priority: int) -> None:
    """Two more members of the gang (minMember 2) run on new nodes: satisfied by its pods, as after a restart."""
    for i in range(2):
        c.upsert_node(node_from_api(node_obj(f"{gang}-extra{i}", gpu=8)))
        add_pod(
            c,
            f"{gang}-run{i}",
            gang=f"default/{gang}",
            node=f"{gang}-extra{i}",
            phase="Running",
            gpu=8,
            priority=priority,
        )
    assert c.gangs[f"default/{gang}"].satisfied


def _preempting_cluster() -> tuple[SchedulerState, list[str], list[str]]:
    """2 nodes of 8 GPUs: gang low (priority 0) runs on both; gang high (2 x 8 GPUs) preempts it."""
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    c.upsert_gang(GangSpec("default", "low", 2))
    c.mark_satisfied("default/low")
    low = [add_pod(c, f"low-{i}", gang="default/low", rank=i, node=f"n{i}", phase="Running", gpu=8) for i in range(2)]
    c.upsert_gang(GangSpec("default", "high", 2))
    high = [add_pod(c, f"high-{i}", gang="default/high", rank=i, gpu=8, priority=HIGH) for i in range(2)]
    return c, low, high


def _after_restart(c: SchedulerState) -> SchedulerState:
    """A new leader's Cluster: what the API shows (pods with their status and deletionTimestamp), nothing else (the
    records reused as parsed, so their classes' registry too)."""
    n = SchedulerState(classes=c.classes)
    for node in c.nodes.values():
        n.upsert_node(node)
    for _gk, gs in c.gangs.items():
        if gs.spec is not None:
            n.upsert_gang(gs.spec)
    n.mark_satisfied("default/low")  # its PodGroup still says Running
    for key, pod in c.pods.items():
        n.upsert_pod(dataclasses.replace(pod, nominated_node=c.nomination_of(key)))
        if key in c.evicting:
            n.set_leaving(key, True)  # evicted, held by a finalizer: Terminating
    return n


def test_new_leader_holds_nominated_nodes_and_evicts_nobody_else() -> None:
    c, low, _high = _preempting_cluster()
    plan = step(c, CFG, 0.0)
    assert sorted(plan.evictions) == sorted(low)
    nominated = dict(plan.nominations)
    n = _after_restart(c)
    late = add_gang(n, "late", 1, gpu=8)  # a lower-priority gang arriving meanwhile
    assert n.restore_nominations(now=5.0) == []
    assert dict(n.nominations()) == nominated
    assert sorted(n.victims_of("default/high")) == sorted(low)
    assert not n.gangs["default/low"].satisfied  # preempted whole: its stale Running status does not count
    n.mark_satisfied("default/low")  # (a late echo of that status)
    assert not n.gangs["default/low"].satisfied
    for t in (6.0, 20.0):
        plan = step(n, CFG, t)
        assert plan.evictions == [] and plan.nominations == [] and plan.bindings == []
        assert plan.nomination_clears == []
        assert plan.gang_status.get("default/high") is None or plan.gang_status["default/high"].reason == "Preempting"
    for k in low:  # the victims' finalizers go
        n.remove_pod(k)
    plan = step(n, CFG, 30.0)
    assert dict(plan.bindings) == nominated
    assert not any(k in dict(plan.bindings) or k in dict(plan.reservations) for k in late)


def test_without_restore_leaving_pods_are_never_victims_again() -> None:
    c, _low, _ = _preempting_cluster()
    step(c, CFG, 0.0)
    n = _after_restart(c)
    plan = step(n, CFG, 5.0)  # (no restore): the victims are terminating: nothing to evict
    assert plan.evictions == []


def test_restore_assigns_leaving_pods_only_of_lower_priority_on_nominated_nodes() -> None:
    c, low, high = _preempting_cluster()
    add_nodes(c, 1, prefix="m", gpu=8)
    other = add_pod(c, "other", node="m0", phase="Running", gpu=8)  # leaving, but on no nominated node
    peer = add_pod(c, "peer", node="n0", phase="Running", cpu="1", priority=HIGH)  # leaving, not lower
    for k in high:
        c.upsert_pod(dataclasses.replace(c.pods[k], nominated_node="n" + k[-1]))
    for k in [*low, other, peer]:
        c.set_leaving(k, True)
    assert c.restore_nominations(now=1.0) == []
    assert sorted(c.victims_of("default/high")) == sorted(low)
    assert c.gangs["default/high"].first_reserved == 1.0  # the waiting time bounds the hold


@pytest.mark.parametrize(
    "setup",
    [
        pytest.param(lambda c: c.remove_gang("default/high"), id="podgroup-gone"),
        pytest.param(lambda c: _satisfied_by_its_pods(c, "high", HIGH), id="gang-satisfied"),
        pytest.param(lambda c: setattr(c.gangs["default/high"], "timed_out", True), id="gang-timed-out"),
        pytest.param(lambda c: c.remove_node("n0") or c.remove_node("n1"), id="node-gone"),
        pytest.param(
            lambda c: [
                c.upsert_pod(dataclasses.replace(c.pods[k], timed_out=True)) for k in list(c.pods) if "high" in k
            ],
            id="pods-marked-timed-out",
        ),
    ],
)
def test_nominations_the_gang_cannot_use_are_not_restored_but_cleared(setup: Any) -> None:
    c, _low, high = _preempting_cluster()
    for k in high:
        c.upsert_pod(dataclasses.replace(c.pods[k], nominated_node="n" + k[-1]))
    setup(c)
    assert sorted(c.restore_nominations(now=1.0)) == sorted(high)
    assert dict(c.nominations()) == {} and c.victims_of("default/high") == []


# --------------------------------------------------------------------------- waiting time across a restart


@pytest.mark.parametrize(
    ("restored_start", "timed_out_at_12"),
    [
        pytest.param(2.0, True, id="clock-from-scheduleStartTime"),
        pytest.param(None, False, id="no-start-recorded-clock-restarts"),
    ],
)
def test_nonstrict_waiting_time_survives_a_restart(restored_start: float | None, timed_out_at_12: bool) -> None:
    """A NonStrict gang (3 of 3, 2 fit) reserved at t=2 with a 10 s wait; the operator restarts at t=8."""
    c = SchedulerState()
    add_nodes(c, 2, gpu=8)
    keys = add_gang(c, "g", 3, mode=GangMode.NON_STRICT, wait=10.0, gpu=8)
    if restored_start is not None:
        c.restore_wait_start("default/g", restored_start)
    plan = step(c, CFG, 8.0)
    assert len(plan.reservations) == 2  # the gang re-places
    assert c.gangs["default/g"].first_reserved == (restored_start if restored_start is not None else 8.0)
    plan = step(c, CFG, 12.0)
    assert bool(plan.timeouts) == timed_out_at_12
    if timed_out_at_12:
        assert sorted(plan.timeouts[0].pods) == sorted(keys) and _gpu(c) == 0


@pytest.mark.parametrize(
    "prepare",
    [
        pytest.param(lambda c: _satisfied_by_its_pods(c, "g", 0), id="satisfied"),
        pytest.param(lambda c: setattr(c.gangs["default/g"], "timed_out", True), id="timed-out"),
    ],
)
def test_restore_wait_start_ignores_gangs_not_waiting(prepare: Any) -> None:
    c = SchedulerState()
    add_nodes(c, 1, gpu=8)
    add_gang(c, "g", 2, mode=GangMode.NON_STRICT, wait=10.0, gpu=8)
    prepare(c)
    c.restore_wait_start("default/g", 0.0)
    assert c.gangs["default/g"].first_reserved is None
    assert all(t.gang_key != "default/g" for t in step(c, CFG, 100.0).timeouts)


def test_restore_wait_start_keeps_a_start_already_known() -> None:
    c = SchedulerState()
    add_nodes(c, 1, gpu=8)
    add_gang(c, "g", 2, mode=GangMode.NON_STRICT, wait=10.0, gpu=8)
    step(c, CFG, 5.0)
    c.restore_wait_start("default/g", 0.0)
    assert c.gangs["default/g"].first_reserved == 5.0
