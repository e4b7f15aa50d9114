"""The baseline policies, implemented in the simulator (not the core): what a cluster without gang scheduling does.

Contract (both implement whatif/policies.py `Policy`; best-fit placement by whatif/freecap.py `FreeIndex`):
- `PodByPod`: kube-scheduler without gangs: every member a pod of its own, in arrival order; a member that fits
  binds and runs at once, so partial jobs hold resources until they complete (no timeout, no preemption).
- `PermitWait`: scheduler-plugins coscheduling: gangs in (priority desc, creation, key) order reserve members (HELD)
  until minMember are reserved, then all bind; a gang waiting past its timeout releases everything and retries
  after `BACKOFF_SECONDS` (10 s).
`node_down` ends every incarnation with a pod on the node and takes it out of the free index until `node_up`. Each
pass is timed as one decision; a pod shape that did not fit is not tried again within a pass (the same decisions
as trying every pod). More: docs/modules.md#whatifbaselinespy.
"""

from __future__ import annotations

import bisect
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from gangsched.whatif.freecap import FreeIndex
from gangsched.whatif.model import JobSpec, NodeSpec
from gangsched.whatif.policies import CycleOutcome, Ended, PodMove, PodPhase

BACKOFF_SECONDS = 10.0


@dataclass(slots=True)
class _Pod:
    job: str
    gpus: int
    cpu_milli: int
    memory_mib: int
    model: str | None
    node: str | None = None

    @property
    def shape(self) -> tuple[int, int, int, str | None]:
        return (self.gpus, self.cpu_milli, self.memory_mib, self.model)


def _pods(job: JobSpec, key: str) -> list[_Pod]:
    return [
        _Pod(key, role.gpus, role.cpu_milli, role.memory_mib, job.gpu_model)
        for role in job.roles
        for _ in range(role.count)
    ]


class PodByPod:
    def __init__(self, nodes: Iterable[NodeSpec]) -> None:
        self.name = "pod-by-pod-fifo"
        self.free = FreeIndex(nodes)
        self.pending: dict[int, _Pod] = {}  # arrival order
        self.placed: dict[str, list[_Pod]] = {}
        self.shapes: Counter[tuple[int, int, int, str | None]] = Counter()  # pending pods per shape
        self.seq = 0
        self.dirty = False

    def submit(self, job: JobSpec, key: str, now: float) -> None:
        self.placed[key] = []
        for pod in _pods(job, key):
            self.pending[self.seq] = pod
            self.shapes[pod.shape] += 1
            self.seq += 1
        self.dirty = True

    def cycle(self, now: float) -> CycleOutcome:
        out = CycleOutcome()
        if not self.dirty:
            return out
        t0 = time.perf_counter()
        self.dirty = False
        started = []
        dead: set[tuple[int, int, int, str | None]] = set()  # shapes that did not fit: free only shrinks in a pass
        for seq, pod in self.pending.items():
            shape = pod.shape
            if shape in dead:
                continue
            node = self.free.take(pod.gpus, pod.cpu_milli, pod.memory_mib, pod.model)
            if node is None:
                dead.add(shape)
                if len(dead) == len(self.shapes):
                    break  # no pending pod can fit any more
                continue
            self.shapes[shape] -= 1
            if not self.shapes[shape]:
                del self.shapes[shape]
            pod.node = node
            self.placed[pod.job].append(pod)
            started.append(seq)
            out.moves.append(PodMove(pod.job, pod.gpus, pod.cpu_milli, PodPhase.NONE, PodPhase.RUNNING, node))
        for seq in started:
            del self.pending[seq]
        out.decision_seconds.append(time.perf_counter() - t0)
        return out

    def finish(self, key: str, now: float) -> list[PodMove]:
        moves = []
        for pod in self.placed.pop(key, []):
            assert pod.node is not None
            self.free.give(pod.node, pod.gpus, pod.cpu_milli, pod.memory_mib)
            moves.append(PodMove(key, pod.gpus, pod.cpu_milli, PodPhase.RUNNING, PodPhase.NONE, pod.node))
        self.dirty = True
        return moves

    def node_down(self, name: str, now: float) -> CycleOutcome:
        out = CycleOutcome()
        hit = [key for key, pods in self.placed.items() if any(p.node == name for p in pods)]
        for key in hit:
            out.moves += self.finish(key, now)
            for seq in [seq for seq, pod in self.pending.items() if pod.job == key]:
                shape = self.pending.pop(seq).shape
                self.shapes[shape] -= 1
                if not self.shapes[shape]:
                    del self.shapes[shape]
            out.ended.append(Ended(key, "failure"))
        self.free.set_down(name)
        return out

    def node_up(self, name: str, now: float) -> None:
        self.free.set_up(name)
        self.dirty = True


@dataclass(slots=True)
class _Gang:
    key: str
    order: tuple[int, float, str]  # (-priority, creation, key): coscheduling's QueueSort
    min_member: int
    wait: float
    pending: list[_Pod]
    reserved: list[_Pod] = field(default_factory=list)
    running: list[_Pod] = field(default_factory=list)
    first_reserved: float | None = None
    backoff_until: float = 0.0


class PermitWait:
    def __init__(self, nodes: Iterable[NodeSpec], wait_seconds: float) -> None:
        self.name = "permit-wait-600s"
        self.free = FreeIndex(nodes)
        self.default_wait = wait_seconds
        self.gangs: dict[str, _Gang] = {}
        self.queue: list[tuple[tuple[int, float, str], str]] = []  # sorted; gangs with pending members
        self.reserving: dict[str, _Gang] = {}  # gangs waiting at Permit (first_reserved set)
        self.backed: dict[str, _Gang] = {}  # gangs in backoff after a timeout
        self.shapes: Counter[tuple[int, int, int, str | None]] = Counter()  # pending pods per shape

    def submit(self, job: JobSpec, key: str, now: float) -> None:
        wait = job.wait_seconds if job.wait_seconds is not None else self.default_wait
        gang = _Gang(key, (-job.priority, now, key), job.min_member, wait, _pods(job, key))
        self.gangs[key] = gang
        self.shapes.update(p.shape for p in gang.pending)
        bisect.insort(self.queue, (gang.order, key))

    def cycle(self, now: float) -> CycleOutcome:
        out = CycleOutcome()
        for gang in [g for g in self.reserving.values() if g.first_reserved is not None]:
            if gang.first_reserved is not None and gang.first_reserved + gang.wait <= now:
                self._release(gang, now, out)
        for key in [k for k, g in self.backed.items() if g.backoff_until <= now]:
            del self.backed[key]
        t0 = time.perf_counter()
        dead: set[tuple[int, int, int, str | None]] = set()  # shapes that did not fit: free only shrinks in a pass
        done = []
        for _, key in self.queue:
            gang = self.gangs[key]
            if key not in self.backed and self._try(gang, now, out, dead):
                done.append((gang.order, key))
            if len(dead) == len(self.shapes):
                break  # no pending pod can fit any more
        for entry in done:
            self.queue.remove(entry)
        out.decision_seconds.append(time.perf_counter() - t0)
        wakeups = [g.first_reserved + g.wait for g in self.reserving.values() if g.first_reserved is not None]
        wakeups += [g.backoff_until for g in self.backed.values()]
        out.next_wakeup = min(wakeups, default=None)
        return out

    def _try(self, gang: _Gang, now: float, out: CycleOutcome, dead: set[tuple[int, int, int, str | None]]) -> bool:
        """Reserve what fits of the gang, bind it at minMember; True when it has no pending member left."""
        while gang.pending:
            pod = gang.pending[-1]
            shape = pod.shape
            node = None if shape in dead else self.free.take(pod.gpus, pod.cpu_milli, pod.memory_mib, pod.model)
            if node is None:
                dead.add(shape)
                break
            pod.node = node
            self._uncount(shape)
            gang.reserved.append(gang.pending.pop())
            out.moves.append(PodMove(gang.key, pod.gpus, pod.cpu_milli, PodPhase.NONE, PodPhase.HELD, node))
            if gang.first_reserved is None:
                gang.first_reserved = now
                self.reserving[gang.key] = gang
        if len(gang.reserved) + len(gang.running) >= gang.min_member and gang.reserved:
            for pod in gang.reserved:
                node = pod.node or ""
                out.moves.append(PodMove(gang.key, pod.gpus, pod.cpu_milli, PodPhase.HELD, PodPhase.RUNNING, node))
            gang.running += gang.reserved
            gang.reserved = []
            gang.first_reserved = None
            self.reserving.pop(gang.key, None)
        return not gang.pending

    def _uncount(self, shape: tuple[int, int, int, str | None]) -> None:
        self.shapes[shape] -= 1
        if not self.shapes[shape]:
            del self.shapes[shape]

    def _release(self, gang: _Gang, now: float, out: CycleOutcome) -> None:
        for pod in gang.reserved:
            assert pod.node is not None
            self.free.give(pod.node, pod.gpus, pod.cpu_milli, pod.memory_mib)
            out.moves.append(PodMove(gang.key, pod.gpus, pod.cpu_milli, PodPhase.HELD, PodPhase.NONE, pod.node))
            pod.node = None
        self.shapes.update(p.shape for p in gang.reserved)
        gang.pending += gang.reserved
        gang.reserved = []
        gang.first_reserved = None
        self.reserving.pop(gang.key, None)
        gang.backoff_until = now + BACKOFF_SECONDS
        self.backed[gang.key] = gang
        out.timeouts += 1

    def finish(self, key: str, now: float) -> list[PodMove]:
        gang = self.gangs.pop(key)
        moves = []
        for pods, old in ((gang.running, PodPhase.RUNNING), (gang.reserved, PodPhase.HELD)):
            for pod in pods:
                assert pod.node is not None
                self.free.give(pod.node, pod.gpus, pod.cpu_milli, pod.memory_mib)
                moves.append(PodMove(key, pod.gpus, pod.cpu_milli, old, PodPhase.NONE, pod.node))
        for pod in gang.pending:
            self._uncount(pod.shape)
        if gang.pending:
            self.queue.remove((gang.order, key))
        self.reserving.pop(key, None)
        self.backed.pop(key, None)
        return moves

    def node_down(self, name: str, now: float) -> CycleOutcome:
        out = CycleOutcome()
        hit = [k for k, g in self.gangs.items() if any(p.node == name for p in (*g.running, *g.reserved))]
        for key in hit:
            out.moves += self.finish(key, now)
            out.ended.append(Ended(key, "failure"))
        self.free.set_down(name)
        return out

    def node_up(self, name: str, now: float) -> None:
        self.free.set_up(name)
