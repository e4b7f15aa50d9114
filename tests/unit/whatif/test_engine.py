"""The what-if engine (operator/gangsched/whatif/engine.py) with tiny contrived workloads, through the real core
(gangsched) and the two simplified baselines (pod-by-pod-fifo, permit-wait-600s).

Oracles: the workload model of issue 15 (a job progresses only while its minMember pods run); kube-scheduler
without gangs binds each pod on its own as it fits (pkg/scheduler/schedule_one.go: one pod per cycle, no group);
scheduler-plugins coscheduling (pkg/coscheduling/coscheduling.go `Permit`: pods wait until minMember are assumed,
rejected together when the waiting time ends; core `QueueSort` by priority then PodGroup creation);
kube-scheduler's DefaultPreemption evicts lower-priority pods for a pending pod whose preemptionPolicy allows it.
"""

from __future__ import annotations

from dataclasses import replace

from gangsched.core.topology import Domain
from gangsched.whatif.engine import JobResult, Replay, replay
from gangsched.whatif.lineup import BASELINES, make_policy
from gangsched.whatif.model import JobSpec, NodeEvent, Workload
from tests.builders import whatif_job, whatif_nodes

GIB = 1024


def run(
    policy: str, jobs: list[JobSpec], n: int = 2, wait: float = 600.0, events: tuple[NodeEvent, ...] = ()
) -> tuple[Replay, dict[str, JobResult]]:
    workload = Workload(tuple(sorted(jobs, key=lambda j: j.submit)), whatif_nodes(n), node_events=events)
    result = replay(workload, make_policy(policy, workload, wait))
    return result, {j.id: j for j in result.jobs}


def test_a_job_progresses_only_while_whole() -> None:
    # A holds one of the two nodes until t=100; B (2 x 8 GPUs, 50 s of work) arrives at t=1.
    jobs = [whatif_job("a", 0, 100, 1, 8), whatif_job("b", 1, 50, 2, 8)]
    partial, by_id = run("pod-by-pod-fifo", jobs)
    b = by_id["b"]
    assert b.started_partially  # pod-by-pod started one member at t=1 ...
    assert (b.start, b.end) == (100, 150)  # ... which did nothing: B's 50 s of work begin when it is whole
    assert partial.gpu_seconds - partial.useful_gpu_seconds == 8 * 99  # 8 GPUs held idle from t=1 to t=100
    whole, by_id = run("gangsched", jobs)
    assert (by_id["b"].start, by_id["b"].end) == (100, 150)
    assert not by_id["b"].started_partially
    assert whole.gpu_seconds == whole.useful_gpu_seconds == 8 * 100 + 16 * 50


def deadlock_jobs(wait: float | None) -> list[JobSpec]:
    """n0 busy with two 4-GPU jobs until t=10 and t=20, n1 with an 8-GPU job until t=30. B (2 x 8 GPUs) arrives
    first, C (3 x 4 GPUs) second: C's members fit each half of n0 as it frees, B's first member n1 when it frees;
    then B misses 8 GPUs, C misses 4, nothing runs: none can complete."""
    return [
        whatif_job("y1", 0, 10, 1, 4),
        whatif_job("y2", 0, 20, 1, 4),
        whatif_job("y3", 0, 30, 1, 8),
        whatif_job("b", 1, 40, 2, 8, wait_seconds=wait),
        whatif_job("c", 2, 40, 3, 4, wait_seconds=wait),
    ]


def test_pod_by_pod_starts_partial_jobs_and_deadlocks_while_gangsched_starts_none() -> None:
    result, by_id = run("pod-by-pod-fifo", deadlock_jobs(None))
    assert by_id["b"].started_partially and by_id["c"].started_partially
    assert by_id["b"].end is None and by_id["c"].end is None  # a deadlock for good: no timeout, no preemption
    assert [(d.start, d.end, d.held_gpus) for d in result.deadlocks] == [(30, None, 16)]
    result, by_id = run("gangsched", deadlock_jobs(None))
    assert not any(j.started_partially for j in result.jobs)
    assert result.deadlocks == []
    assert by_id["b"].end is not None and by_id["c"].end is not None
    assert result.gpu_seconds == result.useful_gpu_seconds  # nothing held by an incomplete gang


def test_gangsched_resolves_a_nonstrict_deadlock_in_the_instant_it_forms_and_the_replay_reports_it() -> None:
    # the same knot with NonStrict gangs: C reserves n0's halves as they free (t=10, 20), B n1 at t=30; then B
    # waits for 8 GPUs C holds, C for 4 B holds. core/gang/deadlock.py's rule: the victim is the lowest priority, then
    # the newest (C); its reservations go at once and B starts whole in the same instant.
    jobs = [replace(j, mode="NonStrict") if j.id in ("b", "c") else j for j in deadlock_jobs(None)]
    result, by_id = run("gangsched", jobs)
    assert [(d.formed, d.resolved, d.gangs, d.held_gpus, d.released_gpus) for d in result.resolved] == [
        (30, 30, 2, 16, 8)
    ]
    assert result.deadlocks == []  # the engine's own check never saw it standing after an instant
    assert (by_id["b"].start, by_id["b"].end) == (30, 70) and (by_id["c"].start, by_id["c"].end) == (70, 110)
    assert not any(j.started_partially for j in result.jobs)


def test_permit_wait_releases_every_reservation_at_the_timeout() -> None:
    result, by_id = run("permit-wait-600s", deadlock_jobs(100.0))
    assert not any(j.started_partially for j in result.jobs)  # reserved at Permit, never running partially
    # C reserved first at t=10, so its Permit wait ends at t=110: its reservations go, B gets n0 and starts whole
    assert result.permit_timeouts == 1
    assert [(d.start, d.end) for d in result.deadlocks] == [(30, 110)]
    assert (by_id["b"].start, by_id["b"].end) == (110, 150)
    assert by_id["c"].start == 150 and by_id["c"].end == 190  # retried after its backoff, whole when B is done
    held_idle = result.gpu_seconds - result.useful_gpu_seconds
    assert held_idle == 4 * (20 - 10) + 8 * (30 - 20) + 16 * (110 - 30)  # C's and B's reservations while waiting


def test_gangsched_preempts_and_restarts_the_victim_from_zero() -> None:
    jobs = [whatif_job("low", 0, 1000, 1, 8), whatif_job("high", 5, 10, 1, 8, priority=100)]
    _, by_id = run("gangsched", jobs, n=1)
    low, high = by_id["low"], by_id["high"]
    assert (low.evictions, low.incarnations, low.evicted_gpu_seconds) == (1, 2, 8 * 5)
    assert high.start is not None and high.start >= 5 and high.end == high.start + 10
    assert low.start is not None and low.start >= high.end and low.end == low.start + 1000  # its 5 s were lost
    _result, by_id = run("gangsched+nopreempt", jobs, n=1)
    assert by_id["low"].evictions == 0 and by_id["high"].start == 1000


def test_every_policy_completes_a_feasible_workload_and_conserves_resources() -> None:
    jobs = [whatif_job(f"j{i}", i * 7.0, 30 + i, 1 + i % 3, 4 if i % 2 else 8) for i in range(20)]
    for policy in ("gangsched", "gangsched+spread+notopo", "gangsched+nonstrict", *BASELINES):
        result, _ = run(policy, jobs, n=3)
        assert all(0 <= p[2] <= p[1] <= result.gpu_capacity for p in result.timeline), policy
        if policy == "kube-scheduler":  # no gangs and LeastAllocated spreading: two partial jobs deadlock for good
            assert [(d.held_gpus, d.end) for d in result.deadlocks] == [(24, None)]
            continue
        assert all(j.end is not None for j in result.jobs), policy
        assert result.timeline[-1][1:] == (0,) * 7, policy  # everything given back, nothing held or pending
        assert all(0 <= p[2] <= p[1] <= result.gpu_capacity for p in result.timeline), policy


def test_the_placement_tier_is_the_one_the_core_reports() -> None:
    domains = (  # two units of two nodes under one leaf
        Domain(1, "u0", ("leaf",), ("n0", "n1")),
        Domain(1, "u1", ("leaf",), ("n2", "n3")),
        Domain(2, "leaf", (), ("u0", "u1")),
    )
    jobs = (
        whatif_job("g", 0, 10, 2, 8, topology="hard", highest_tier=1),
        whatif_job("h", 1, 10, 4, 8, topology="soft"),
        whatif_job("x", 30, 10, 1, 1),
    )
    workload = Workload(jobs, whatif_nodes(4), domains)
    result = {j.id: j for j in replay(workload, make_policy("gangsched", workload, 600.0)).jobs}
    assert (result["g"].tier, result["g"].start) == (1, 0)  # within one unit
    assert (result["h"].tier, result["h"].start) == (2, 10)  # needs both units: once g is done
    assert result["x"].tier is None  # no network topology asked
    workload = Workload(jobs, whatif_nodes(4), domains)
    result = {j.id: j for j in replay(workload, make_policy("gangsched+notopo", workload, 600.0)).jobs}
    assert result["g"].tier is None and result["h"].tier is None


def test_a_node_going_down_kills_the_jobs_on_it_which_restart_from_zero_when_they_fit_again() -> None:
    # a (2 x 8 GPUs, 100 s) runs on n0 and n1 from t=0; n1 goes down at t=30 and is back at t=50: a dies with its
    # member (no checkpoint) and its new incarnation starts whole at t=50, ending at t=150. b (1 x 8 GPUs, 10 s)
    # arrives at t=35: gangsched leaves n0 free (a cannot be whole before t=50) and b runs from 35 to 45; pod-by-pod
    # starts a's new incarnation partially on n0 at t=30, permit-wait holds n0 for it at Permit: b waits until 150;
    # kube-scheduler binds a's first member on n0 as pod-by-pod does; kube-scheduler-gang holds nothing between pod
    # group cycles and coscheduling's PostFilter rejects the waiting member (half of minMember is missing), so b runs.
    # coscheduling: a's new pods fail its PreFilter (minResources: 16 GPUs, 8 up) and wait in unschedulablePods; the
    # node coming back is no event Coscheduling registers (coscheduling.go EventsToRegister: Pod Add, PodGroup
    # Add|Update), so they wait for the 5 min leftover flush after their last rejection at 45 (the tick at 360)
    jobs = [whatif_job("a", 0, 100, 2, 8), whatif_job("b", 35, 10, 1, 8)]
    events = (NodeEvent(30, "n1", False), NodeEvent(50, "n1", True))
    expected: dict[str, tuple[tuple[float | None, float | None], bool]] = {
        "gangsched": ((35, 45), False), "pod-by-pod-fifo": ((150, 160), True), "permit-wait-600s": ((150, 160), False),
        "kube-scheduler": ((150, 160), True), "kube-scheduler-gang": ((35, 45), False),
        "coscheduling": ((35, 45), False),
    }  # fmt: skip
    for policy, (b_run, partial) in expected.items():
        result, by_id = run(policy, jobs, events=events)
        a, b = by_id["a"], by_id["b"]
        a_run: tuple[float | None, float | None] = (360, 460) if policy == "coscheduling" else (50, 150)
        assert (a.failures, a.incarnations, a.failed_gpu_seconds) == (1, 2, 16 * 30), policy
        assert (a.start, a.end) == a_run and (b.start, b.end) == b_run, policy
        assert a.started_partially == partial, policy
        assert result.timeline[-1][1:] == (0,) * 7, policy
