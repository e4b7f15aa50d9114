"""One scheduling cycle's session: a transaction over the SchedulerState (as Volcano's Statement, KAI's checkpoints).

Contract:
- `members(gang)`: bound, reserved and pending members; gated or unready pending members apart, never placed.
- `CycleSession(state, now, config)` never changes `state`; it holds the cycle's `plan`, its `workspace`
  (core/fit/capacity.py) and what the cycle decided so far (`members`, `nomination`, `is_satisfied`, ...).
- Every decision is an operation recording its effect and its undo: `place`, `reserve`, `bind`, `release`,
  `nominate`, `clear_nominations`, `evict`, `satisfy`, `time_out`, `set_wait_start`, `take_nominated`, `take_devices`
  (DRA claims, in the workspace's undo log; `bind` puts them in `plan.device_fits`). `checkpoint()`,
  `rollback(mark)` (undoes every operation and workspace change since), `commit(mark)`; undo only in a checkpoint.
- Preemptors' nominations are in the workspace from the start (`nominated`, keyed by gang or `preemptor_key(unit)`).
More: docs/modules.md#coretransactionsessionpy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from gangsched.core.devices import DeviceBook, PodFit
from gangsched.core.fit.capacity import Workspace
from gangsched.core.memory.gangs import GangState
from gangsched.core.memory.plan import GangTimeout, Plan
from gangsched.core.memory.podstate import BINDING, LEAVING, NOMINATED, RESERVED
from gangsched.core.memory.views import StateView
from gangsched.core.records.records import PodRecord
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.units import UnitKey

POD_PREEMPTOR = "pod/"  # prefix of the preemptor key of a pod alone (a gang key has no second "/")
Nomination = tuple[str, str, Mapping[str, int]]  # (pod_key, node, requests) nominated for a preemptor member
_NO_RANK = 1 << 62
V = TypeVar("V")


def preemptor_key(unit: UnitKey) -> str:
    """Where a unit's nominations are kept in `CycleSession.nominated`: its gang key, or "pod/" + its pod key."""
    return POD_PREEMPTOR + unit.key if unit.is_pod else unit.key


@dataclass(slots=True)
class Members:
    """A gang's members as this cycle sees them."""

    bound: list[str]  # bound and not leaving, binding (in flight or decided this cycle), or Succeeded
    reserved: list[tuple[str, str]]  # (pod_key, node) reserved in memory
    pending: list[PodRecord]  # waiting to be placed, in rank order
    gated: list[PodRecord] = field(default_factory=list)  # waiting, spec.schedulingGates not empty: never placed
    unready: list[PodRecord] = field(default_factory=list)  # waiting, with a required constraint gangsched ignores

    def roles(self, pods: Mapping[str, PodRecord], extra: Iterable[PodRecord] = ()) -> Counter[str | None]:
        counts: Counter[str | None] = Counter()
        for key in self.bound:
            counts[pods[key].role] += 1
        for key, _ in self.reserved:
            counts[pods[key].role] += 1
        for pod in extra:
            counts[pod.role] += 1
        return counts


Checkpoint = int  # a mark in the cycle's one undo log (the workspace's: placements and the session's undos)


class CycleSession:
    def __init__(self, state: StateView, now: float, config: SchedulerConfig) -> None:
        self.state = state
        self.store = state.store
        self.now = now
        self.config = config
        self.plan = Plan()
        self.workspace = Workspace(state.store, spread=config.score_strategy == "spread")
        self._open = 0  # checkpoints open (no undo is recorded without one)
        self._placed: dict[str, str] = {}  # pod -> node placed this cycle (not bound)
        self._released: set[str] = set()
        self._bound: set[str] = set()
        self._satisfied: set[str] = set()
        self._timed_out: set[str] = set()
        self._evicting: set[str] = set()
        self._cleared: set[str] = set()  # nominations cleared this cycle: their capacity is no longer taken
        self.nominated: dict[str, list[Nomination]] = {}  # preemptor gang (or pod alone) -> its members' nominations
        self._book: DeviceBook | None = None  # DRA: the devices and claims as this cycle took them
        self._fits: dict[str, PodFit] = {}  # pod placed this cycle -> its claims' allocation (take_devices)
        self.memo: dict[Any, Any] = {}  # facts that stay true for the whole cycle, by whoever derives them
        for pod_key, node in state.nominations():
            pod = state.pods.get(pod_key)
            if pod is not None:
                self.workspace.place(node, pod.sclass.requests)
                preemptor = pod.gang if pod.gang is not None else POD_PREEMPTOR + pod_key
                self.nominated.setdefault(preemptor, []).append((pod_key, node, pod.sclass.requests))

    # ----- transactions -----
    def checkpoint(self) -> Checkpoint:
        """Open a transaction: everything done from here can be rolled back, until it is committed."""
        self._open += 1
        return self.workspace.begin()

    def commit(self, mark: Checkpoint) -> None:
        """Keep what was done since `mark` (an enclosing checkpoint can still roll it back)."""
        self._open -= 1

    def rollback(self, mark: Checkpoint) -> None:
        self.workspace.rollback(mark)
        self._open -= 1

    def _record(self, undo: Callable[[], None]) -> None:
        self.workspace.record(undo)  # (only while a checkpoint is open: the callers check `_open`)

    # ----- the cycle's view -----
    def is_satisfied(self, gang: GangState) -> bool:
        return gang.satisfied or gang.key in self._satisfied

    @property
    def timed_out_now(self) -> AbstractSet[str]:
        """Gangs timed out by this cycle (read-only)."""
        return self._timed_out

    def is_timed_out(self, gang: GangState) -> bool:
        return gang.timed_out or gang.key in self._timed_out

    def is_evicting(self, pod_key: str) -> bool:
        return pod_key in self._evicting or pod_key in self.state.evicting

    def excluded_victims(self) -> set[str]:
        """Pods never chosen as victims now: being evicted (before or during this cycle), or leaving."""
        return self.state.evicting.keys() | self.state.leaving | self._evicting

    def is_placed(self, pod_key: str) -> bool:
        return pod_key in self._placed or pod_key in self._bound

    def nomination(self, pod_key: str) -> str | None:
        """The pod's nominated node, unless this cycle already cleared it."""
        if pod_key not in self.store.pods_in(NOMINATED) or pod_key in self._cleared:
            return None
        return self.store.nomination_of(pod_key)

    def members(self, gang: GangState) -> Members:
        pods = self.store.pods
        reserved_pods, binding_pods = self.store.pods_in(RESERVED), self.store.pods_in(BINDING)
        state_of = self.store.state_of
        bound: list[str] = []
        reserved: list[tuple[str, str]] = []
        pending: list[PodRecord] = []
        gated: list[PodRecord] = []
        unready: list[PodRecord] = []
        for key in gang.members:
            pod = pods.get(key)
            if pod is None or pod.phase == "Failed":
                continue
            if pod.node_name is not None:
                if pod.terminal or state_of(key) is not LEAVING:  # a leaving member holds no quorum
                    bound.append(key)
            elif pod.terminal:
                continue
            elif key in self._bound:
                bound.append(key)
            elif (node := self._placed.get(key)) is not None:
                reserved.append((key, node))
            elif (key in reserved_pods or key in binding_pods) and key not in self._released:
                reservation = self.store.reservation_of(key)
                assert reservation is not None
                if reservation[1]:
                    bound.append(key)
                else:
                    reserved.append((key, reservation[0]))
            elif pod.ours and not pod.timed_out:
                (gated if pod.gated else unready if pod.unready else pending).append(pod)
        if len(pending) > 1:
            self._rank_order(pending)
        return Members(bound, reserved, pending, gated, unready)

    def _rank_order(self, pending: list[PodRecord]) -> None:
        """Rank first (members without one last), then natural name order (w-2 before w-10)."""
        ranks = [p.rank for p in pending]
        if None not in ranks and len(set(ranks)) == len(ranks):  # distinct ranks: the names never matter
            pending.sort(key=lambda p: p.rank or 0)
            return
        name_key = self.store.name_key
        pending.sort(key=lambda p: (p.rank if p.rank is not None else _NO_RANK, name_key(p.key)))

    def drop_fits(self, pod_keys: Iterable[str]) -> None:
        """Forget the claims' allocations of pods whose placement the caller rolls back in the workspace itself."""
        for pod_key in pod_keys:
            previous = self._fits.pop(pod_key, None)
            if previous is not None and self._open:
                self._record(partial(self._restore, self._fits, pod_key, previous))

    # ----- operations -----
    def take_devices(self, pod: PodRecord, node: str) -> str | None:
        """Allocate the pod's DRA claims on `node` (core/devices DeviceBook.fit), tentatively, in the workspace's
        undo log: None when they fit (or it has none), else why not (upstream's words)."""
        devices = self.store.devices
        keys = devices.pod_claims.get(pod.key) if devices is not None else None
        if not keys or devices is None:
            return None
        if self._book is None:
            self._book = devices.book()
        rec = self.store.nodes.get(node)
        if rec is None:
            return f"node {node} not found"
        fit = self._book.fit(devices.allocator, node, rec.labels, keys, devices.specs)
        if not fit.fits:
            return fit.reason or "cannot allocate all claims"
        self.workspace.take_devices(self._book, fit)
        previous = self._fits.get(pod.key)
        self._fits[pod.key] = fit
        if self._open:
            self._record(lambda: self._restore(self._fits, pod.key, previous))
        return None

    def place(self, placements: list[tuple[str, str]]) -> None:
        """Tentatively placed this cycle: (pod_key, node) pairs whose capacity the workspace already took."""
        placed = self._placed
        if self._open:
            previous = [(pod_key, placed.get(pod_key)) for pod_key, _ in placements]

            def undo() -> None:
                for pod_key, node in reversed(previous):
                    self._restore(placed, pod_key, node)

            self._record(undo)
        placed.update(placements)

    def reserve(self, reservations: list[tuple[str, str]]) -> None:
        """Keep placements, (pod_key, node) pairs, as in-memory reservations."""
        start = len(self.plan.reservations)
        self.plan.reservations.extend(reservations)
        if self._open:
            self._record(lambda: self._truncate(self.plan.reservations, start))

    def bind(self, bindings: list[tuple[str, str]]) -> None:
        """Bind (pod_key, node) pairs: placed this cycle, reserved before, or new."""
        start = len(self.plan.bindings)
        unplaced = [(pod_key, self._placed.pop(pod_key)) for pod_key, _ in bindings if pod_key in self._placed]
        devices = self.store.devices
        fitted: list[str] = []
        if devices is not None:
            for pod_key, node in bindings:
                if pod_key not in devices.pod_claims:
                    continue
                why = None
                if pod_key not in self._fits:  # reserved in an earlier cycle: its claims are decided now
                    why = self.take_devices(self.store.pods[pod_key], node)
                fit = self._fits.get(pod_key)
                if why is not None:  # (the runtime does not bind it: its binding fails and it is tried again)
                    fit = PodFit(False, node, devices.pod_claims[pod_key], reason=why)
                if fit is not None:
                    self.plan.device_fits[pod_key] = fit
                    fitted.append(pod_key)
        self.plan.bindings.extend(bindings)
        self._bound.update(pod_key for pod_key, _ in bindings)
        if self._open:

            def undo() -> None:
                for pod_key in fitted:
                    self.plan.device_fits.pop(pod_key, None)
                self._truncate(self.plan.bindings, start)
                self._bound.difference_update(pod_key for pod_key, _ in bindings)
                self._placed.update(unplaced)

            self._record(undo)

    def release(self, pod_key: str, node: str) -> None:
        """Give a reservation up: its capacity is free for the rest of the cycle."""
        sclass = self.store.pods[pod_key].sclass
        self.workspace.release(node, sclass.requests, sclass.host_ports, cls=sclass)
        self.plan.releases.append(pod_key)
        self._released.add(pod_key)
        if self._open:

            def undo() -> None:
                self.plan.releases.pop()
                self._released.discard(pod_key)

            self._record(undo)

    def nominate(self, gang_key: str, pods: list[PodRecord], nodes: list[str]) -> None:
        """Nominate each member on its node; the workspace holds that capacity for the rest of the cycle (under
        `gang_key`: the gang, or the pod alone; the preemptor's nominations of other pods stay)."""
        noms: list[Nomination] = []
        for pod, node in zip(pods, nodes, strict=True):
            self.workspace.place(node, pod.sclass.requests)
            self.plan.nominations.append((pod.key, node))
            noms.append((pod.key, node, pod.sclass.requests))
        start = len(self.plan.nominations) - len(noms)
        previous = self.nominated.get(gang_key)
        if previous:
            renominated = {pod.key for pod in pods}
            noms = [nom for nom in previous if nom[0] not in renominated] + noms
        self.nominated[gang_key] = noms
        if self._open:

            def undo() -> None:
                self._truncate(self.plan.nominations, start)
                self._restore(self.nominated, gang_key, previous)

            self._record(undo)

    def clear_nominations(self, pod_keys: Iterable[str]) -> None:
        for pod_key in pod_keys:
            if self.nomination(pod_key) is not None:
                self.plan.nomination_clears.append(pod_key)
                self._cleared.add(pod_key)
                if self._open:
                    self._record(partial(self._unclear, pod_key))

    def _unclear(self, pod_key: str) -> None:
        self.plan.nomination_clears.pop()
        self._cleared.discard(pod_key)

    def evict(self, gang_key: str, victims: tuple[str, ...], deadline: float | None = None) -> None:
        """Evict victims for a preemptor; `deadline`: when they must be gone at the latest (their grace)."""
        start = len(self.plan.evictions)
        self._evicting.update(victims)
        self.plan.evictions.extend(victims)
        self.plan.preemptions[gang_key] = victims
        if deadline is not None:
            self.plan.victim_deadlines[gang_key] = deadline
        if self._open:

            def undo() -> None:
                del self.plan.evictions[start:]
                self.plan.preemptions.pop(gang_key, None)
                self.plan.victim_deadlines.pop(gang_key, None)
                self._evicting.difference_update(victims)

            self._record(undo)

    def satisfy(self, gang_key: str) -> None:
        """The gang reached its quorum (satisfied while members bound or finished hold it); its waiting time ends."""
        self._satisfied.add(gang_key)
        self.plan.satisfied.append(gang_key)
        had = gang_key in self.plan.first_reserved
        previous = self.plan.first_reserved.pop(gang_key, None)
        if self._open:

            def undo() -> None:
                self.plan.satisfied.pop()
                self._satisfied.discard(gang_key)
                if had:
                    self.plan.first_reserved[gang_key] = previous

            self._record(undo)

    def time_out(self, gang_key: str, pods: tuple[str, ...]) -> None:
        self.plan.timeouts.append(GangTimeout(gang_key, pods))
        self._timed_out.add(gang_key)
        if self._open:

            def undo() -> None:
                self.plan.timeouts.pop()
                self._timed_out.discard(gang_key)

            self._record(undo)

    def set_wait_start(self, gang_key: str, start: float | None) -> None:
        """Start (a time) or clear (None) the gang's waiting time."""
        had = gang_key in self.plan.first_reserved
        previous = self.plan.first_reserved.get(gang_key)
        self.plan.first_reserved[gang_key] = start
        if self._open:

            def undo() -> None:
                if had:
                    self.plan.first_reserved[gang_key] = previous
                else:
                    self.plan.first_reserved.pop(gang_key, None)

            self._record(undo)

    def take_nominated(self, gang_key: str, pods: AbstractSet[str] | None = None) -> list[Nomination]:
        """Forget a preemptor's nominations (only those of `pods` when given) for the rest of the cycle (their capacity
        is handled by the caller)."""
        noms = self.nominated.pop(gang_key, [])
        if pods is not None and noms:
            kept = [nom for nom in noms if nom[0] not in pods]
            if kept:
                self.nominated[gang_key] = kept
            taken = [nom for nom in noms if nom[0] in pods]
        else:
            taken = noms
        if taken and self._open:
            self._record(lambda: self._restore(self.nominated, gang_key, noms))
        return taken

    @staticmethod
    def _truncate(items: list[tuple[str, str]], length: int) -> None:
        del items[length:]

    @staticmethod
    def _restore(table: dict[str, V], key: str, previous: V | None) -> None:
        if previous is None:
            table.pop(key, None)
        else:
            table[key] = previous
