"""The faithful baselines of the replay (operator/gangsched/whatif/kube_scheduler.py, coscheduling.py, kube_gang.py)
on tiny workloads through the engine, each case reproducing upstream's documented behaviour or test case.

Oracles: kubernetes/kubernetes pkg/scheduler (schedule_one.go, DefaultPreemption, the nominator, backoff);
kubernetes-sigs/scheduler-plugins v0.34.7 pkg/coscheduling/coscheduling_test.go (`TestLess`,
`TestLessAfterScheduleFailure`, `TestPostFilter`, `TestPostFilterRejectThreshold`, `TestPermit`) and
apis/config/v1/defaults.go; kubernetes/kubernetes pkg/scheduler/schedule_one_podgroup.go (the pod group cycle) and
framework/plugins/gangscheduling/gangscheduling.go.
"""

from __future__ import annotations

from gangsched.core.topology import Domain
from gangsched.whatif.coscheduling import Coscheduling
from gangsched.whatif.engine import JobResult, Replay, replay
from gangsched.whatif.lineup import make_policy
from gangsched.whatif.metrics import queue_delay
from gangsched.whatif.model import JobSpec, NodeSpec, Workload
from tests.builders import whatif_job, whatif_nodes


def run(
    policy: str, jobs: list[JobSpec], n: int = 2, gpus: int = 8, domains: tuple[Domain, ...] = ()
) -> tuple[Replay, dict[str, JobResult]]:
    workload = Workload(tuple(sorted(jobs, key=lambda j: j.submit)), whatif_nodes(n, gpus), domains)
    result = replay(workload, make_policy(policy, workload, 600.0))
    return result, {j.id: j for j in result.jobs}


def test_kube_scheduler_preempts_nominates_and_binds_after_the_backoff() -> None:
    """DefaultPreemption (default_preemption.go): the high-priority pod evicts the low one and is nominated to its node;
    the victim's deletion during its attempt sends it to backoffQ (scheduling_queue.go moveRequestCycle), 1 s
    (podInitialBackoffSeconds), and the nominated node is tried first (evaluateNominatedNode). The victim's new pod
    cannot take the node meanwhile: the nomination counts for pods of lower priority."""
    _result, by_id = run(
        "kube-scheduler", [whatif_job("low", 0, 1000, 1, 8), whatif_job("high", 5, 10, 1, 8, priority=100)], n=1
    )
    low, high = by_id["low"], by_id["high"]
    assert (low.evictions, low.incarnations, low.evicted_gpu_seconds) == (1, 2, 8 * 5)
    assert (high.start, high.end) == (6, 16)
    assert (low.start, low.end) == (16, 1016)  # restarted from zero after the high job
    assert low.lost_run_seconds == 5 and queue_delay(low) == 16 - 5  # its 5 s of lost run time are not waiting


def test_kube_scheduler_starts_jobs_partially_pod_by_pod() -> None:
    """schedule_one.go: one pod per cycle, no gang; a 2-pod job with one node free binds one pod, which holds its GPUs
    doing nothing (the replay's workload model) until the other binds."""
    result, by_id = run("kube-scheduler", [whatif_job("a", 0, 100, 1, 8), whatif_job("b", 1, 50, 2, 8)])
    assert by_id["b"].started_partially and (by_id["b"].start, by_id["b"].end) == (100, 150)
    assert result.gpu_seconds - result.useful_gpu_seconds == 8 * 99


def test_kube_scheduler_gang_preempts_only_for_a_group_that_then_fits() -> None:
    """schedule_one_podgroup.go: a pod needing preemption is assumed on its nominated node with the victims removed in
    memory; the group is feasible only if Permit (minCount assumed) succeeds, and only then are victims evicted
    (KEP-5710 delayed preemption). kube-scheduler, pod by pod, evicts for the first pod whatever the second does."""
    jobs = [
        whatif_job("low", 0, 1000, 1, 8),
        whatif_job("vip", 0, 1000, 1, 8, priority=100),
        whatif_job("gang", 5, 10, 2, 8, priority=100),
    ]
    _, by_id = run("kube-scheduler-gang", jobs)
    assert by_id["low"].evictions == 0 and by_id["gang"].start == 1000
    _, by_id = run("kube-scheduler", jobs)
    assert by_id["low"].evictions == 1 and by_id["gang"].started_partially
    jobs = [
        whatif_job("low0", 0, 1000, 1, 8),
        whatif_job("low1", 0, 1000, 1, 8),
        whatif_job("gang", 5, 10, 2, 8, priority=100),
    ]
    _result, by_id = run("kube-scheduler-gang", jobs)
    assert (by_id["low0"].evictions, by_id["low1"].evictions) == (1, 1)
    assert (by_id["gang"].start, by_id["gang"].end) == (6, 16) and not by_id["gang"].started_partially


def test_kube_scheduler_gang_holds_nothing_between_cycles() -> None:
    """schedule_one_podgroup.go podGroupSchedulingDefaultAlgorithm: every pod of the group is assumed only for the
    cycle (revertFn deferred); an infeasible group goes back to the queue holding nothing, so a small job behind it
    runs on the node its first member would have taken."""
    jobs = [whatif_job("a", 0, 100, 1, 8), whatif_job("gang", 1, 50, 2, 8), whatif_job("small", 2, 10, 1, 8)]
    result, by_id = run("kube-scheduler-gang", jobs)
    assert result.gpu_seconds == result.useful_gpu_seconds  # nothing held idle, ever
    assert (by_id["small"].start, by_id["gang"].start) == (2, 100)


def test_kube_scheduler_gang_topology_constraint_keeps_the_group_in_one_domain() -> None:
    """schedule_one_podgroup.go podGroupSchedulingPlacementAlgorithm: with a TopologyConstraint each domain of the key
    is a placement and the group must fit in one; a soft preference has no upstream counterpart."""
    domains = (
        Domain(1, "u0", ("leaf",), ("n0", "n1")),
        Domain(1, "u1", ("leaf",), ("n2", "n3")),
        Domain(2, "leaf", (), ("u0", "u1")),
    )
    inventory = tuple(NodeSpec(f"n{i}", 64_000, 512 * 1024, 8, "m" if i % 2 == 0 else "o") for i in range(4))
    busy = [
        whatif_job("b0", 0, 100, 1, 8, gpu_model="m"),
        whatif_job("b2", 0, 200, 1, 8, gpu_model="m"),
    ]  # on n0 and n2
    for topology, highest, start in (("hard", 1, 100), ("soft", None, 1)):
        gang = whatif_job("g", 1, 10, 2, 8, topology=topology, highest_tier=highest)
        workload = Workload((*busy, gang), inventory, domains)
        by_id = {j.id: j for j in replay(workload, make_policy("kube-scheduler-gang", workload, 600.0)).jobs}
        assert (by_id["b0"].start, by_id["b2"].start) == (0, 0)
        assert by_id["g"].start == start, topology  # hard: a whole unit frees only when b0 ends


def test_coscheduling_queue_sort_by_priority_then_group_creation_then_last_failure() -> None:
    """coscheduling_test.go TestLess ("p1.priority greater than p2.priority", "equal priority. p1 is added to
    schedulingQ earlier than p2, p1 belongs to pg1 and p2 belongs to pg2") and TestLessAfterScheduleFailure (a
    group that failed sorts by its failure time, behind groups created before it)."""
    policy = Coscheduling(whatif_nodes(1))
    policy.submit(whatif_job("early", 0, 10, 2, 8), "early#1", 0.0)
    policy.submit(whatif_job("late", 0, 10, 2, 8), "late#1", 5.0)
    policy.submit(whatif_job("vip", 0, 10, 2, 8, priority=100), "vip#1", 9.0)
    order = sorted(policy.pods, key=lambda p: policy.sort_key(p, 0.0))
    assert order == ["vip#1-0", "vip#1-1", "early#1-0", "early#1-1", "late#1-0", "late#1-1"]
    policy.last_failed["early#1"] = 7.0
    assert sorted(policy.pods, key=lambda p: policy.sort_key(p, 0.0))[2:4] == ["late#1-0", "late#1-1"]


def test_coscheduling_postfilter_rejects_the_waiting_gang_and_frees_its_node() -> None:
    """coscheduling_test.go TestPostFilter "pod failed at filter phase, reject all pods": the second member fails Filter
    with half of minMember unassigned, so the waiting first member is rejected and its node freed; the small job behind
    runs there. permit-wait-600s (no PostFilter) keeps the reservation until its 600 s wait ends."""
    jobs = [whatif_job("a", 0, 100, 1, 8), whatif_job("gang", 1, 50, 2, 8), whatif_job("small", 2, 10, 1, 8)]
    result, by_id = run("coscheduling", jobs)
    assert (by_id["small"].start, by_id["gang"].start) == (2, 100)
    assert not by_id["gang"].started_partially and result.permit_timeouts == 0
    _, by_id = run("permit-wait-600s", jobs)
    assert by_id["small"].start == 150


def test_coscheduling_reject_threshold_and_permit_waiting_time() -> None:
    """coscheduling_test.go TestPostFilterRejectThreshold "default 10%: 9/10 assigned (10% gap) -> no rejection": the
    nine waiting pods stay until their Permit wait ends, permitWaitingTimeSeconds 60 s by default
    (apis/config/v1/defaults.go), the PodGroup's scheduleTimeoutSeconds when set (util.GetWaitTimeDuration);
    "default 10%: 8/10 assigned (20% gap) -> rejection": rejected at once, no Permit timeout. Nodes of 3 GPUs, gang
    pods of 2: a busy node keeps 1 GPU free, so the cluster-wide minResources check passes (core.go
    CheckClusterResource) while the pod fits nowhere."""
    one_busy = [whatif_job("busy", 0, 100, 1, 2), whatif_job("gang", 0, 10, 10, 2)]
    result, by_id = run("coscheduling", one_busy, n=10, gpus=3)
    # the waits end at 60 (the pods, rejected, are popped again at once from backoffQ: SchedulerPopFromBackoffQ,
    # activeQ being empty) and would again at 120, but the busy job ends at 100 and the tenth pod completes the gang
    assert result.permit_timeouts == 1 and result.timeline[0][1] == 2 + 9 * 2
    assert by_id["gang"].start == 100 and not by_id["gang"].started_partially
    one_busy[1] = whatif_job("gang", 0, 10, 10, 2, wait_seconds=30)
    result, _ = run("coscheduling", one_busy, n=10, gpus=3)
    assert result.permit_timeouts == 3  # at 30, 60 and 90
    two_busy = [whatif_job("busy", 0, 100, 1, 2), whatif_job("busy2", 0, 100, 1, 2), whatif_job("gang", 0, 10, 10, 2)]
    result, by_id = run("coscheduling", two_busy, n=10, gpus=3)
    assert result.permit_timeouts == 0 and by_id["gang"].start == 100
    assert result.gpu_seconds - result.useful_gpu_seconds < 16 * 60  # never held for a Permit wait


def test_coscheduling_prefilter_min_resources_holds_nothing_when_the_cluster_lacks_them() -> None:
    """core.go PreFilter -> CheckClusterResource: minResources (minMember members' requests, as training-operator's
    CalcPGMinResources sets them) beyond the free resources of the whole cluster reject the pod before Filter
    (UnschedulableAndUnresolvable: no preemption), so no member is ever assumed."""
    result, by_id = run(
        "coscheduling", [whatif_job("busy", 0, 100, 1, 1), whatif_job("gang", 0, 10, 10, 1)], n=10, gpus=1
    )
    assert result.gpu_seconds == result.useful_gpu_seconds and by_id["gang"].start == 100


def test_coscheduling_prefilter_rejections_wait_for_a_podgroup_event() -> None:
    """A pod rejected by Coscheduling's PreFilter has UnschedulablePlugins {Coscheduling} (schedule_one.go
    findNodesThatFitPod: diagnosis.AddPluginStatus), and v0.34.7 coscheduling.go EventsToRegister names Pod Add and
    PodGroup Add|Update only: a pod deletion leaves it in unschedulablePods (scheduling_queue.go isPodWorthRequeuing);
    a PodGroup created (a job submitted) or updated (the scheduler-plugins PodGroup controller's status counts,
    pkg/controllers/podgroup_controller.go Reconcile) moves it."""
    policy = Coscheduling(whatif_nodes(2, 1))
    policy.submit(whatif_job("busy", 0, 100, 1, 1), "busy", 0.0)
    policy.submit(whatif_job("gang", 0, 10, 2, 1), "gang", 0.0)
    out = policy.cycle(0.0)
    assert [m.job for m in out.moves] == ["busy"]
    gang = ["gang-0", "gang-1"]
    assert [policy.queue.where[p] for p in gang] == ["unschedulable"] * 2
    policy.queue.move_all(0.5)  # AssignedPodDelete alone
    assert [policy.queue.where[p] for p in gang] == ["unschedulable"] * 2
    policy.submit(whatif_job("later", 0.5, 10, 1, 1), "later", 0.5)  # its PodGroup is created
    assert [policy.queue.where[p] for p in gang] == ["backoff"] * 2
