"""The what-if engine: a discrete-event replay of a `Workload` through one `Policy`, in virtual time.

Contract: `replay(workload, policy, *, horizon=None, progress=None, speed=None) -> Replay`.
- Events (arrivals, completions, node events, the policy's wakeups) in time order; after each instant the policy
  schedules until it has nothing left to decide; ended incarnations are submitted again at once (from zero).
- A job progresses only while `min_member` members run; it completes `duration` x its slowdown (whatif/speed.py)
  after it became whole.
- Accounting, integrated exactly between events: GPUs and CPU allocated, held whole, useful work, lost work, held
  for starving gangs, fragmented (`timeline`); per-node histograms, never a pass over every node or pod.
- Deadlocks: those the scheduler resolved, as reported; and, for every policy, gangs that could not complete even
  if every running job ended (can miss some, never invents one). Ends when no event is left or at `horizon`
  (unfinished jobs reported); `progress(done, total)` after each instant. More: docs/modules.md#whatifenginepy.
"""

from __future__ import annotations

import heapq
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from gangsched.whatif.model import JobSpec, Workload
from gangsched.whatif.policies import CycleOutcome, PodMove, PodPhase, Policy
from gangsched.whatif.speed import SpeedModel, TierMap, slowdown

ARRIVAL, WAKEUP, COMPLETE, NODE_DOWN, NODE_UP = 0, 1, 2, 3, 4
# (t, gpus allocated, useful work in GPUs, cpu allocated, cpu held whole, gpus held whole, gpus held for starving
# gangs, fragmented gpus)
TimelinePoint = tuple[float, int, float, int, int, int, int, int]
Shape = tuple[str | None, int]  # (GPU model, None: any; GPUs per member)


@dataclass(slots=True)
class JobResult:
    """One job's outcome across its incarnations."""

    id: str
    members: int
    gpus: int
    submit: float
    start: float | None = None  # when the completing (or last) incarnation became whole
    end: float | None = None  # completion (None: unfinished)
    incarnations: int = 0
    evictions: int = 0
    timeouts: int = 0
    started_partially: bool = False  # some member ran while fewer than min_member did
    tier: int | None = None  # placement tier reported by the scheduler
    evicted_gpu_seconds: float = 0.0  # GPU-seconds of work lost to evictions
    failures: int = 0  # incarnations ended by a node going down
    failed_gpu_seconds: float = 0.0  # GPU-seconds of work lost to node failures
    span_tier: int | None = None  # network tier its running members spanned when it became whole (whatif/speed.py)
    placement_slowdown: float = 1.0  # its run time's factor from that placement (1: as fast as at its ideal tier)
    priority: int = 0
    duration: float = 0.0  # the run time it needs (its JCT when it starts at once and is never ended)
    mode: str = "Strict"  # the job's gang mode
    topology: str = "none"  # its network topology ask (none | soft | hard)
    lost_run_seconds: float = 0.0  # time earlier incarnations ran whole before an eviction or failure ended them


@dataclass(slots=True)
class _Run:
    job: JobSpec
    result: JobResult
    held: int = 0
    running: int = 0
    gpus: int = 0
    cpu: int = 0
    whole_since: float | None = None
    nodes: Counter[str] = field(default_factory=Counter)  # running members per node
    where: Counter[str] = field(default_factory=Counter)  # GPUs allocated (HELD or RUNNING) per node
    pending: bool = False  # some member holds nothing: its shapes count as pending demand (fragmentation)


@dataclass(slots=True)
class Deadlock:
    start: float
    held_gpus: int
    gangs: int
    end: float | None = None  # None: unresolved


@dataclass(frozen=True, slots=True)
class SchedulerDeadlock:
    """A deadlock the scheduler resolved itself (policies.py `ResolvedDeadlock`), when it did."""

    formed: float
    resolved: float
    gangs: int
    held_gpus: int  # held by the cycle's gangs before the release
    released_gpus: int


@dataclass(slots=True)
class Replay:
    policy: str
    jobs: list[JobResult]
    end_time: float
    gpu_capacity: int
    cpu_capacity: int
    gpu_seconds: float = 0.0  # allocated
    useful_gpu_seconds: float = 0.0  # work done: GPU time of whole incarnations at their ideal speed
    whole_gpu_seconds: float = 0.0  # GPU time held by whole incarnations (allocated - this: held by incomplete)
    cpu_seconds: float = 0.0
    useful_cpu_seconds: float = 0.0
    hold_gpu_seconds: float = 0.0  # free GPUs held for starving gangs (CycleOutcome.held_gpus)
    fragmented_gpu_seconds: float = 0.0  # free GPUs no pending shape can use (module docstring)
    timeline: list[TimelinePoint] = field(default_factory=list)
    decision_seconds: list[float] = field(default_factory=list)
    deadlocks: list[Deadlock] = field(default_factory=list)
    resolved: list[SchedulerDeadlock] = field(default_factory=list)  # by the scheduler itself
    events: int = 0
    wall_seconds: float = 0.0
    permit_timeouts: int = 0
    # work an eviction or a node failure destroyed: (whole since, ended at, GPUs / placement slowdown) per incarnation
    lost_work: list[tuple[float, float, float]] = field(default_factory=list)


class _Engine:
    def __init__(self, workload: Workload, policy: Policy, horizon: float, speed: SpeedModel) -> None:
        self.policy, self.horizon, self.now = policy, horizon, 0.0
        self.speed, self.tier_map = speed, TierMap(workload.nodes, workload.domains)
        self.heap: list[tuple[float, int, int, str]] = []
        self.seq = 0
        self.jobs = {j.id: j for j in workload.jobs}
        self.results = {
            j.id: JobResult(
                j.id,
                j.members,
                j.gpus,
                j.submit,
                priority=j.priority,
                duration=j.duration,
                mode=j.mode,
                topology=j.topology,
            )
            for j in workload.jobs
        }
        self.runs: dict[str, _Run] = {}  # active incarnations
        self.partial: dict[str, _Run] = {}  # the active ones holding GPUs while not whole (the deadlock check's)
        self.wakeups: set[float] = set()
        self.alloc = [0, 0, 0, 0]  # gpus, gpus of whole incarnations, cpu, cpu of whole incarnations
        self.work = 0.0  # GPUs of whole incarnations, each divided by its slowdown
        cpu_cap = sum(n.cpu_milli for n in workload.nodes)
        self.out = Replay(policy.name, list(self.results.values()), 0.0, workload.gpu_capacity, cpu_cap)
        self.deadlock: Deadlock | None = None
        self.fragmented = 0  # free GPUs no pending shape can use, at the last instant
        self.hold = 0  # GPUs held for starving gangs, as the policy last reported
        # per node: GPU model, capacity, GPUs allocated, GPUs of whole incarnations; nodes down; and per GPU model
        # the histograms of free GPUs and of free + whole GPUs over the nodes up (a few buckets each: the
        # fragmentation and deadlock checks read these, never every node)
        self.model = {n.name: n.gpu_model for n in workload.nodes if n.gpus}
        self.cap = {n.name: n.gpus for n in workload.nodes if n.gpus}
        self.used: Counter[str] = Counter()
        self.whole_on: Counter[str] = Counter()
        self.down: set[str] = set()
        self.free_hist: dict[str | None, dict[int, int]] = {}  # GPU model -> {free GPUs: nodes}
        self.avail_hist: dict[str | None, dict[int, int]] = {}  # GPU model -> {free + whole GPUs: nodes}
        for name in self.cap:
            self._hist(name, 1)
        self.pending_shapes: Counter[Shape] = Counter()  # over incarnations with a member holding nothing
        self.done = 0  # jobs completed
        for job in workload.jobs:
            self._push(job.submit, ARRIVAL, job.id)
        for ev in workload.node_events:
            self._push(ev.time, NODE_UP if ev.up else NODE_DOWN, ev.node)
        self.again: list[JobSpec] = []  # incarnations a node failure ended this instant: submitted again

    def _push(self, t: float, kind: int, ref: str) -> None:
        heapq.heappush(self.heap, (t, self.seq, kind, ref))
        self.seq += 1

    def _advance(self, t: float) -> None:
        dt = t - self.now
        if dt > 0:
            g, ug, c, uc = self.alloc
            o = self.out
            o.gpu_seconds += g * dt
            o.whole_gpu_seconds += ug * dt
            o.useful_gpu_seconds += self.work * dt
            o.cpu_seconds += c * dt
            o.useful_cpu_seconds += uc * dt
            o.hold_gpu_seconds += self.hold * dt
            o.fragmented_gpu_seconds += self.fragmented * dt
        self.now = t

    def _submit(self, job: JobSpec) -> None:
        result = self.results[job.id]
        result.incarnations += 1
        key = f"{job.id}#{result.incarnations}"
        run = self.runs[key] = _Run(job, result)
        self._set_pending(run, True)
        self.policy.submit(job, key, self.now)

    def _apply(self, moves: list[PodMove]) -> None:
        """Apply one batch of moves (what one scheduler decision did), then settle whole-ness: a gang bound in one
        decision starts whole, never partially."""
        touched: dict[str, _Run] = {}
        for move in moves:
            run = touched[move.job] = self.runs[move.job]
            sign = (move.new != PodPhase.NONE) - (move.old != PodPhase.NONE)
            run.held += sign
            run.gpus += sign * move.gpus
            run.cpu += sign * move.cpu_milli
            self.alloc[0] += sign * move.gpus
            self.alloc[2] += sign * move.cpu_milli
            if run.whole_since is not None:
                self.alloc[1] += sign * move.gpus
                self.alloc[3] += sign * move.cpu_milli
                self.work += sign * move.gpus / run.result.placement_slowdown
            if sign and move.gpus:
                self._place(run, move.node, sign * move.gpus)
            run.running += (move.new == PodPhase.RUNNING) - (move.old == PodPhase.RUNNING)
            if move.new == PodPhase.RUNNING:
                if not move.node:
                    raise ValueError(f"policy {self.policy.name}: a pod of {move.job} runs on no node (PodMove.node)")
                run.nodes[move.node] += 1
            elif move.old == PodPhase.RUNNING and move.node:  # (a removal may not say where: the run ends)
                run.nodes[move.node] -= 1
        for key, run in touched.items():
            if run.whole_since is None and run.running >= run.job.min_member:
                run.whole_since = run.result.start = self.now
                factor = self._slowdown(run)
                self.alloc[1] += run.gpus
                self.alloc[3] += run.cpu
                self.work += run.gpus / factor
                for node, gpus in run.where.items():
                    self._node(node, 0, gpus)
                self._push(self.now + run.job.duration * factor, COMPLETE, key)
            elif run.whole_since is None and run.running > 0:
                run.result.started_partially = True
            if run.whole_since is None and run.gpus > 0:
                self.partial[key] = run
            else:
                self.partial.pop(key, None)
            if key in self.runs:
                self._set_pending(run, run.held < run.job.members)

    def _place(self, run: _Run, node: str, gpus: int) -> None:
        """GPUs (negative: given back) of the incarnation on a node, for the per-node accounting. A removal that does
        not say where is taken from a node of the incarnation holding as many (then any it holds GPUs on)."""
        if gpus < 0 and run.where[node] < -gpus:
            node = next((n for n, g in run.where.items() if g >= -gpus), None) or next(
                (n for n, g in run.where.items() if g > 0), node
            )
        if not node:
            return  # (a pod placed nowhere said: outside the per-node figures)
        run.where[node] += gpus
        if run.where[node] <= 0:
            del run.where[node]
        self._node(node, gpus, gpus if run.whole_since is not None else 0)

    def _node(self, node: str, used: int, whole: int) -> None:
        if node not in self.cap:
            return
        self._hist(node, -1)
        self.used[node] += used
        self.whole_on[node] += whole
        self._hist(node, 1)

    def _hist(self, node: str, sign: int) -> None:
        if node in self.down:
            return
        model, free = self.model[node], self.cap[node] - self.used[node]
        for hist, value in ((self.free_hist, free), (self.avail_hist, free + self.whole_on[node])):
            counts = hist.get(model)
            if counts is None:
                counts = hist[model] = {}
            left = counts.get(value, 0) + sign
            if left:
                counts[value] = left
            else:
                del counts[value]

    def _set_pending(self, run: _Run, pending: bool) -> None:
        if run.pending == pending:
            return
        run.pending = pending
        for shape in _shapes(run.job):
            self.pending_shapes[shape] += 1 if pending else -1
            if not self.pending_shapes[shape]:
                del self.pending_shapes[shape]

    def _gone(self, key: str) -> _Run:
        """The incarnation ended or completed (its pods' moves to NONE applied): out of every live structure."""
        run = self.runs.pop(key)
        self.partial.pop(key, None)
        self._set_pending(run, False)
        for node, gpus in run.where.items():  # (left only when a policy did not report every pod's removal)
            self._node(node, -gpus, -gpus if run.whole_since is not None else 0)
        run.where.clear()
        return run

    def _slowdown(self, run: _Run) -> float:
        """The incarnation's run-time factor from where its running members are (recorded on its result)."""
        job, tiers = run.job, self.tier_map
        span = tiers.span(node for node, count in run.nodes.items() if count > 0)
        run.result.span_tier = span
        run.result.placement_slowdown = slowdown(self.speed, job, span, tiers.ideal(job.gpus))
        return run.result.placement_slowdown

    def _outcome(self, out: CycleOutcome) -> list[JobSpec]:
        self.out.decision_seconds += out.decision_seconds
        self.out.permit_timeouts += out.timeouts
        self._apply(out.moves)
        for d in out.resolved:
            self.out.resolved.append(SchedulerDeadlock(d.formed, self.now, d.gangs, d.held_gpus, d.released_gpus))
        for key, tier in out.tiers.items():
            if key in self.runs:
                self.runs[key].result.tier = tier
        again = []
        for ended in out.ended:
            run = self._gone(ended.job)
            ran = self.now - run.whole_since if run.whole_since is not None else 0.0
            lost = run.job.gpus * ran
            run.result.lost_run_seconds += ran
            if run.whole_since is not None and ended.reason != "timeout":
                rate = run.job.gpus / run.result.placement_slowdown
                self.out.lost_work.append((run.whole_since, self.now, rate))
            if ended.reason == "evicted":
                run.result.evictions += 1
                run.result.evicted_gpu_seconds += lost
            elif ended.reason == "failure":
                run.result.failures += 1
                run.result.failed_gpu_seconds += lost
            else:
                run.result.timeouts += 1
            again.append(run.job)
        if out.held_gpus is not None:
            self.hold = out.held_gpus
        if out.next_wakeup is not None and out.next_wakeup > self.now and out.next_wakeup not in self.wakeups:
            self.wakeups.add(out.next_wakeup)
            self._push(out.next_wakeup, WAKEUP, "")
        return again

    def _event(self, kind: int, ref: str) -> None:
        if kind == ARRIVAL:
            self._submit(self.jobs[ref])
        elif kind == COMPLETE and ref in self.runs:
            self._apply(self.policy.finish(ref, self.now))
            self._gone(ref).result.end = self.now
            self.done += 1
        elif kind == WAKEUP:
            self.wakeups.discard(self.now)
        elif kind == NODE_DOWN:
            self.again += self._outcome(self.policy.node_down(ref, self.now))
            if ref in self.cap and ref not in self.down:
                self._hist(ref, -1)
                self.down.add(ref)
        elif kind == NODE_UP:
            self.policy.node_up(ref, self.now)
            if ref in self.down:
                self.down.discard(ref)
                self._hist(ref, 1)

    def run(self, progress: Callable[[int, int], None] | None) -> Replay:
        wall = time.perf_counter()
        while self.heap and self.heap[0][0] <= self.horizon:
            self._advance(self.heap[0][0])
            while self.heap and self.heap[0][0] == self.now:
                _, _, kind, ref = heapq.heappop(self.heap)
                self.out.events += 1
                self._event(kind, ref)
            for job in self.again:
                self._submit(job)
            self.again = []
            again = self._outcome(self.policy.cycle(self.now))
            while again:
                for job in again:
                    self._submit(job)
                again = self._outcome(self.policy.cycle(self.now))
            self.fragmented = self._fragmented()
            self._sample()
            self._detect_deadlock()
            if progress is not None:
                progress(self.done, len(self.jobs))
        end = min(self.horizon, self.now) if self.heap else self.now
        self._advance(end)
        self.out.end_time = end
        self.out.wall_seconds = time.perf_counter() - wall
        return self.out

    def _sample(self) -> None:
        g, whole, c, uc = self.alloc
        work = round(self.work, 6)  # (sums of fractions: no drift in the samples)
        tl = self.out.timeline
        values = (g, work, c, uc, whole, self.hold, self.fragmented)
        if not tl or tl[-1][1:] != values:
            tl.append((self.now, *values))

    def _fragmented(self) -> int:
        """Free GPUs on nodes up where no pending per-member shape fits (module docstring)."""
        if not self.pending_shapes:
            return 0
        need: dict[str | None, int] = {}  # the smallest pending per-member GPU ask per model (None: any model's)
        for model, gpus in self.pending_shapes:
            need[model] = min(need.get(model, gpus), gpus)
        total = 0
        for model, hist in self.free_hist.items():
            asks = [gpus for gpus in (need.get(model), need.get(None)) if gpus is not None]
            if asks:  # (a model no pending job asks for: idle, not fragmented)
                total += sum(free * n for free, n in hist.items() if 0 < free < min(asks))
        return total

    def _room(self, job: JobSpec, cache: dict[Shape, int]) -> int:
        """GPUs the job's smallest per-member shape finds on its GPU model's nodes if every whole job ended: per node
        up, (free + whole GPUs) // shape members of the shape."""
        shape = (job.gpu_model, min((r.gpus for r in job.roles if r.gpus), default=0))
        if shape not in cache:
            model, size = shape
            hists = [self.avail_hist.get(model, {})] if model is not None else list(self.avail_hist.values())
            cache[shape] = sum(a // size * size * n for h in hists for a, n in h.items()) if size else 0
        return cache[shape]

    def _detect_deadlock(self) -> None:
        partial = list(self.partial.values())
        cache: dict[Shape, int] = {}
        stuck = len(partial) >= 2 and all(_missing(r) > self._room(r.job, cache) for r in partial)
        if stuck and self.deadlock is None:
            self.deadlock = Deadlock(self.now, sum(r.gpus for r in partial), len(partial))
            self.out.deadlocks.append(self.deadlock)
        elif not stuck and self.deadlock is not None:
            self.deadlock.end = self.now
            self.deadlock = None


def _shapes(job: JobSpec) -> set[Shape]:
    return {(job.gpu_model, r.gpus) for r in job.roles if r.gpus}


def _missing(run: _Run) -> int:
    """GPUs the incarnation still needs to run whole (its min_member members' share of the job's GPUs)."""
    job = run.job
    return -(-job.gpus * job.min_member // max(job.members, 1)) - run.gpus


def default_horizon(workload: Workload) -> float:
    if not workload.jobs:
        return 0.0
    work = sum(j.gpus * j.duration for j in workload.jobs)
    cap = max(workload.gpu_capacity, 1)
    longest = max(j.duration for j in workload.jobs)
    return workload.jobs[-1].submit + 2 * work / cap + 2 * longest + 3600.0


def replay(
    workload: Workload,
    policy: Policy,
    *,
    horizon: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    speed: SpeedModel | None = None,
) -> Replay:
    """Replay the workload through the policy (speed: whatif/speed.py, default the placement-aware model); see the
    module docstring."""
    model = SpeedModel() if speed is None else speed
    engine = _Engine(workload, policy, default_horizon(workload) if horizon is None else horizon, model)
    return engine.run(progress)
