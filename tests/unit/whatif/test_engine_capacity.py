"""The what-if engine's capacity figures (operator/gangsched/whatif/engine.py): GPUs held for starving gangs
(gangsched's capacity holds, core/gang/starvation.py, reported in `CycleOutcome.held_gpus`), fragmentation (free
GPUs no pending per-member shape can use) and the deadlock check counted per scheduling shape, not GPU totals.

Oracles: the engine's documented definitions (module docstring), on workloads small enough to count by hand.
"""

from __future__ import annotations

from dataclasses import replace

from gangsched.whatif.engine import replay
from gangsched.whatif.lineup import POLICY_NAMES, make_policy
from gangsched.whatif.metrics import summarize
from gangsched.whatif.model import JobSpec, NodeEvent, NodeSpec, RoleSpec, Workload
from gangsched.whatif.policies import CycleOutcome, PodMove, PodPhase, Policy

GIB = 1024
HOLD_AFTER = 60.0  # core/values/config.py SchedulerConfig.hold_after_seconds default


def job(id: str, submit: float, duration: float, pods: int, gpus: int, model: str | None = None) -> JobSpec:
    return JobSpec(id, submit, duration, (RoleSpec(pods, 1000, GIB, gpus),), pods, gpu_model=model)


def nodes(*gpus: int, model: str | None = None) -> tuple[NodeSpec, ...]:
    return tuple(NodeSpec(f"n{i}", 64_000, 512 * GIB, g, model) for i, g in enumerate(gpus))


def test_capacity_held_for_a_starving_gang_is_held_idle_and_nohold_holds_none() -> None:
    # A takes n0 until t=1000; B (2 x 8 GPUs) arrives at t=1 and cannot start before t=1000. Once B has been
    # unschedulable for hold_after_seconds, gangsched holds n1's 8 free GPUs for it until it starts.
    workload = Workload((job("a", 0, 1000, 1, 8), job("b", 1, 100, 2, 8)), nodes(8, 8))
    held = replay(workload, make_policy("gangsched", workload, 600.0))
    assert {j.id: j.start for j in held.jobs} == {"a": 0, "b": 1000}
    assert 8 * (1000 - 1 - HOLD_AFTER - 1) <= held.hold_gpu_seconds <= 8 * (1000 - 1 - HOLD_AFTER)
    assert held.timeline[-1][6] == 0  # nothing held once B started
    s = summarize(held, (0, 1000))
    assert s["starvation_hold_gpu_hours"] == round(held.hold_gpu_seconds / 3600, 2) > 0
    assert s["held_idle_gpu_hours"] == s["reserved_idle_gpu_hours"] + s["starvation_hold_gpu_hours"]
    nohold = replay(workload, make_policy("gangsched+nohold", workload, 600.0))
    assert nohold.hold_gpu_seconds == 0 and summarize(nohold, (0, 1000))["starvation_hold_gpu_hours"] == 0
    baseline = replay(workload, make_policy("pod-by-pod-fifo", workload, 600.0))
    assert baseline.hold_gpu_seconds == 0  # a policy reporting no held_gpus holds none


def test_fragmented_gpus_are_free_gpus_no_pending_shape_fits() -> None:
    # A and C (6 GPUs each) leave 2 free on each node until t=100; B (one 4-GPU member) waits from t=1 to t=100:
    # 2 + 2 free GPUs fit no pending shape for 99 s. Nothing pending afterwards: 0.
    workload = Workload((job("a", 0, 100, 1, 6), job("c", 0, 100, 1, 6), job("b", 1, 50, 1, 4)), nodes(8, 8))
    for policy in ("pod-by-pod-fifo", "gangsched", "kube-scheduler"):
        result = replay(workload, make_policy(policy, workload, 600.0))
        assert result.fragmented_gpu_seconds == 4 * 99, policy
        assert summarize(result, (0, 199))["fragmented_gpus_mean"] == round(4 * 99 / 199, 2), policy


def test_fragmentation_counts_only_gpu_models_a_pending_job_asks_for() -> None:
    # Same, with the pending 4-GPU job asking for B200 (no node has one): the A100 nodes' 2 + 2 free GPUs are idle
    # for it, not fragmented; a pending job of any model finds them fragmented again.
    inventory = (*nodes(8, 8, model="A100"), NodeSpec("h0", 64000, 512 * GIB, 8, "H100"))
    busy = (job("a", 0, 100, 1, 6, "A100"), job("c", 0, 100, 1, 6, "A100"), job("h", 0, 100, 1, 8, "H100"))
    for pending, expected in ((job("b", 1, 50, 1, 4, "B200"), 0), (job("b", 1, 50, 1, 4), 4 * 99)):
        workload = Workload((*busy, pending), inventory)
        result = replay(workload, make_policy("pod-by-pod-fifo", workload, 600.0))
        assert result.fragmented_gpu_seconds == expected, pending.gpu_model


class Scripted:
    """A policy that holds the given pods at t=0 and then nothing (a frozen partial state for the deadlock check)."""

    name = "scripted"

    def __init__(self, holds: list[tuple[str, str, int]]) -> None:
        self.holds = holds
        self.keys: dict[str, str] = {}

    def submit(self, job: JobSpec, key: str, now: float) -> None:
        self.keys[job.id] = key

    def cycle(self, now: float) -> CycleOutcome:
        moves = [PodMove(self.keys[j], g, 1000, PodPhase.NONE, PodPhase.HELD, n) for j, n, g in self.holds]
        self.holds = []
        return CycleOutcome(moves)

    def finish(self, key: str, now: float) -> list[PodMove]:
        return []

    def node_down(self, name: str, now: float) -> CycleOutcome:
        return CycleOutcome()

    def node_up(self, name: str, now: float) -> None:
        pass


def test_deadlock_counts_per_shape_not_gpu_totals() -> None:
    # B (2 x 8) holds n0, C (3 x 5) holds 5 on n1 and on n2: 3 + 3 GPUs free. C misses 5 GPUs, fewer than the 6
    # free in total (the GPU-total rule saw no deadlock) but no node has room for a 5-GPU member, nor for B's 8.
    jobs = (job("b", 0, 10, 2, 8), job("c", 0, 10, 3, 5))
    workload = Workload(jobs, nodes(8, 8, 8))
    result = replay(workload, Scripted([("b", "n0", 8), ("c", "n1", 5), ("c", "n2", 5)]))
    assert [(d.start, d.end, d.held_gpus, d.gangs) for d in result.deadlocks] == [(0, None, 18, 2)]
    assert result.timeline[-1][7] == 6  # and the 3 + 3 free GPUs fit neither pending shape: fragmented


def test_no_deadlock_when_each_missing_member_fits_a_node() -> None:
    # C (3 x 4) holds 4 on n1 and on n2: its missing 4-GPU member fits n1's 4 free GPUs. Not stuck, so no deadlock.
    jobs = (job("b", 0, 10, 2, 8), job("c", 0, 10, 3, 4))
    workload = Workload(jobs, nodes(8, 8, 8))
    result = replay(workload, Scripted([("b", "n0", 8), ("c", "n1", 4), ("c", "n2", 4)]))
    assert result.deadlocks == []


class Recording:
    """Wraps a policy and keeps every move it reports."""

    def __init__(self, inner: Policy) -> None:
        self.inner, self.name = inner, inner.name
        self.moves: list[PodMove] = []

    def submit(self, job: JobSpec, key: str, now: float) -> None:
        self.inner.submit(job, key, now)

    def _keep(self, out: CycleOutcome) -> CycleOutcome:
        self.moves += out.moves
        return out

    def cycle(self, now: float) -> CycleOutcome:
        return self._keep(self.inner.cycle(now))

    def finish(self, key: str, now: float) -> list[PodMove]:
        moves = self.inner.finish(key, now)
        self.moves += moves
        return moves

    def node_down(self, name: str, now: float) -> CycleOutcome:
        return self._keep(self.inner.node_down(name, now))

    def node_up(self, name: str, now: float) -> None:
        self.inner.node_up(name, now)


def test_every_policy_says_where_a_removed_pod_was() -> None:
    # Completions, a preemption (high-priority D), waiting-time ends (C's 50 s) and a node failure (n1 at t=300):
    # every move of a pod that held resources back to NONE names its node, so the per-node figures are exact.
    jobs = (
        job("a", 0, 100, 1, 8),
        job("b", 0, 400, 1, 4),
        replace(job("c", 1, 50, 2, 8), wait_seconds=50.0),
        replace(job("d", 150, 50, 2, 8), priority=100),
        job("e", 200, 500, 2, 4),
    )
    workload = Workload(jobs, nodes(8, 8), node_events=(NodeEvent(300, "n1", False), NodeEvent(400, "n1", True)))
    for name in POLICY_NAMES:
        policy = Recording(make_policy(name, workload, 600.0))
        result = replay(workload, policy)
        removed = [m for m in policy.moves if m.new == PodPhase.NONE and m.old != PodPhase.NONE and m.gpus]
        assert removed and all(m.node for m in removed), name
        assert result.timeline[-1][1:] == (0,) * 7, name
